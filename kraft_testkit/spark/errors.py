"""Errors of the Spark face. They import nothing of pyspark, so the plugin can name them cheaply."""

from __future__ import annotations

from ..errors import ConfigError, KraftError


class SparkUnavailable(KraftError):
    """Spark cannot start here: no Java 17/21, or pyspark is not installed. The message says
    what is missing and how to install it, in one sentence."""


class MetadataSourceError(KraftError):
    """The ``kraft-metadata`` source cannot read what it was pointed at (a missing path, a file
    that is not a log, a damaged batch: with the file and the offset)."""


class SourceOptionError(MetadataSourceError, ConfigError):
    """An unknown or bad ``kraft-metadata`` option; names the option and what is allowed."""


class EndpointError(MetadataSourceError):
    """The live endpoint of :func:`kraft_testkit.spark.serve` refused or did not answer (a wrong
    token, a closed endpoint, a stopped cluster)."""
