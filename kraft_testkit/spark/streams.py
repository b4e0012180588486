"""Start a streaming query and return it once it runs, restarting it when Spark's reader process
was too slow to start.

Spark runs a Python streaming source's reader in a Python process of its own, started for each
query, and waits a fixed 10 s for it to connect back (``PythonWorkerFactory.createSimpleWorker``,
called from ``PythonStreamingSourceRunner.init``; the 10 s is not a setting in Spark 4). An idle
machine needs about 0.3 s; a loaded one can miss the 10 s, and the query then dies before its
first batch: ``[STREAM_FAILED] ... Python worker failed to connect back``. What a user does then
is start the query again, and :func:`start_stream` does that, a bounded number of times, and only
for a query that died before any batch ran (nothing was read, so a restart loses and repeats
nothing; with a checkpoint the restart is the same query).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kraft_testkit.arg_checks import an_int, bad

if TYPE_CHECKING:
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

CONNECT_BACK = "Python worker failed to connect back"
ATTEMPTS = 3
# A bound that only ends a run that went wrong: under a load of 20 on 2 cores a query's first
# micro-batch has taken minutes.
TIMEOUT_S = 600.0
POLL_S = 0.02


def start_stream(writer: "DataStreamWriter", *, attempts: int = ATTEMPTS,
                 timeout_s: float = TIMEOUT_S) -> "StreamingQuery":
    """``writer.start()``, returned once the query's first trigger has run (so a ``latest`` start
    is fixed: act on the cluster only after this) or the query has ended by itself (a
    ``Trigger.AvailableNow`` with nothing to read).

    A query that failed before its first batch because Spark's reader process did not connect
    back in time (see the module docstring) is started again, up to ``attempts`` starts in all;
    any other failure is raised as Spark's ``StreamingQueryException`` (as ``awaitTermination``
    would raise it). ``TimeoutError`` when the first trigger has not run after ``timeout_s``.
    """
    where = "start_stream"
    if not callable(getattr(writer, "start", None)):
        raise bad(where, "writer", writer, "a DataStreamWriter (spark.readStream...writeStream)")
    an_int(where, "attempts", attempts, low=1)
    if type(timeout_s) not in (int, float) or not timeout_s > 0:
        raise bad(where, "timeout_s", timeout_s, "a number of seconds > 0")
    for attempt in range(1, attempts + 1):
        query = writer.start()
        error = _first_trigger(query, timeout_s)
        if error is None:
            return query
        retry = CONNECT_BACK in str(error) and not query.recentProgress
        if not retry or attempt == attempts:
            raise error
    raise AssertionError("unreachable")


def _first_trigger(query: "StreamingQuery", timeout_s: float) -> Any:
    """Wait until ``query`` reported its first progress or ended; its exception, if it failed."""
    deadline = time.monotonic() + timeout_s
    while query.isActive and query.lastProgress is None:
        if time.monotonic() > deadline:
            query.stop()
            raise TimeoutError(f"streaming query {query.id} ran no trigger in {timeout_s:.0f} s "
                               f"(status: {query.status}); stopped")
        time.sleep(POLL_S)
    return None if query.isActive else query.exception()
