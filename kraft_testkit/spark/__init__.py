"""Spark face of the kit: a local session for tests, the ``kraft-metadata`` data source (batch
and streaming, from files or a live cluster), typed views, and seed sweeps.

Importing this package loads no pyspark; each name loads its module on first use.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "local_session": "session", "check_java": "session", "register": "session",
    "serve": "serving", "ServedLog": "serving", "start_stream": "streams", "sweep": "sweeps",
    "SparkUnavailable": "errors", "MetadataSourceError": "errors", "EndpointError": "errors",
    "SourceOptionError": "errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kraft_testkit.spark' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
