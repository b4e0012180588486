"""What the pytest plugin's Spark fixtures do, kept here so the plugin imports nothing heavy."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .errors import SparkUnavailable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def session_or_skip() -> Iterator["SparkSession"]:
    """Yield the run's one local session, stopping it at the end (and then writing the Spark
    class-data archive if this run is the one building it); skip (with the reason) when
    Spark cannot start here. Any other failure to start is an error, never a silent skip."""
    import pytest

    from .session import finish_archive, local_session

    before = _sigint_handler()
    try:
        spark = local_session()
    except SparkUnavailable as e:
        pytest.skip(str(e))
    _restore_sigint(before)
    try:
        yield spark
    finally:
        for query in spark.streams.active:
            query.stop()
        spark.stop()
        finish_archive()  # when this run built the class-data archive: put it in place now


def _sigint_handler() -> Any:
    """The SIGINT handler now (None when not on the main thread, where none can be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.getsignal(signal.SIGINT)


def _restore_sigint(before: Any) -> None:
    """Put back the SIGINT handler the test runner had before the SparkContext started.

    PySpark's SparkContext replaces it when created on the main thread: its handler cancels the
    jobs and raises KeyboardInterrupt, and once the context is stopped it fails in the handler
    (``'NoneType' object has no attribute 'sc'``). In a test run Ctrl-C belongs to pytest (and
    to pytest-xdist, whose execnet sends a worker SIGINT when the worker is still busy 5 s after
    the controller shut it down): its KeyboardInterrupt ends the run, and the fixture's teardown
    then stops the session, which cancels whatever Spark was doing."""
    if before is not None and signal.getsignal(signal.SIGINT) is not before:
        signal.signal(signal.SIGINT, before)


def child_session(spark: "SparkSession", conf: Mapping[str, object]) -> "SparkSession":
    """A new session on the same SparkContext with ``conf`` set (only settings Spark can change
    at run time; a data source registration is per session, so it is repeated here)."""
    from .session import register

    child = spark.newSession()
    for key, value in conf.items():
        if not child.conf.isModifiable(key):
            raise ConfigError(
                f"Spark setting {key!r} cannot change in a running JVM (it is fixed when the "
                f"first session starts); run such a test in its own process with "
                f"local_session({key!r}=...)")
        child.conf.set(key, str(value).lower() if isinstance(value, bool) else str(value))
    register(child)
    return child
