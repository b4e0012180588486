"""Spark finds Python data sources in top-level ``pyspark_*`` modules that export
``DefaultSource``; this one makes ``format("kraft-metadata")`` work in every session
(including ``newSession()`` children and sessions the user builds) without a register call."""

from kraft_testkit.spark.source import KraftMetadataDataSource as DefaultSource

__all__ = ["DefaultSource"]
