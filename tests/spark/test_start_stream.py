"""start_stream: a query that died before its first batch because Spark's reader process did not
connect back in time (a loaded machine) is started again, a bounded number of times; nothing
else is retried. Fakes stand in for Spark's writer and query here (the real failure needs a
machine loaded past Spark's fixed 10 s); the live tests in test_live.py start every stream with
it."""

from __future__ import annotations

import pytest

from kraft_testkit.errors import ArgumentError

from kraft_testkit.spark import start_stream
from kraft_testkit.spark.streams import CONNECT_BACK


class FakeQuery:
    """A query that either runs (reports progress) or has ended, with ``error`` or cleanly."""

    def __init__(self, error: Exception | None = None, *, progress: bool = False,
                 ended: bool = False) -> None:
        self.error, self.ended = error, ended or error is not None
        self.recentProgress = [{"batchId": 0}] if progress else []
        self.id, self.status, self.stopped = "q", {"message": "Initializing sources"}, False

    @property
    def isActive(self) -> bool:  # noqa: N802 - Spark's name
        return not self.ended and not self.stopped

    @property
    def lastProgress(self) -> dict | None:  # noqa: N802 - Spark's name
        return self.recentProgress[-1] if self.recentProgress else None

    def exception(self) -> Exception | None:
        return self.error

    def stop(self) -> None:
        self.stopped = True


class FakeWriter:
    def __init__(self, *queries: FakeQuery) -> None:
        self.queries, self.starts = list(queries), 0

    def start(self) -> FakeQuery:
        self.starts += 1
        return self.queries.pop(0)


def late() -> Exception:
    return RuntimeError(f"[STREAM_FAILED] Query terminated with exception: {CONNECT_BACK}.")


def test_a_query_that_runs_is_returned_at_once():
    running = FakeQuery(progress=True)
    writer = FakeWriter(running)
    assert start_stream(writer) is running and writer.starts == 1


def test_a_query_that_ended_cleanly_is_returned():
    done = FakeQuery(ended=True)  # Trigger.AvailableNow with nothing to read
    assert start_stream(FakeWriter(done)) is done


def test_a_late_reader_process_is_started_again():
    running = FakeQuery(progress=True)
    writer = FakeWriter(FakeQuery(late()), FakeQuery(late()), running)
    assert start_stream(writer) is running and writer.starts == 3


def test_the_restarts_are_bounded():
    writer = FakeWriter(FakeQuery(late()), FakeQuery(late()), FakeQuery(late()))
    with pytest.raises(RuntimeError, match=CONNECT_BACK):
        start_stream(writer, attempts=2)
    assert writer.starts == 2


def test_other_failures_are_raised_without_a_restart():
    writer = FakeWriter(FakeQuery(ValueError("streaming reads a live log")))
    with pytest.raises(ValueError, match="streaming reads a live log"):
        start_stream(writer)
    assert writer.starts == 1


def test_a_query_that_had_read_something_is_not_restarted():
    failed_late = FakeQuery(late(), progress=True)  # a restart could repeat its last batch
    writer = FakeWriter(failed_late, FakeQuery(progress=True))
    with pytest.raises(RuntimeError, match=CONNECT_BACK):
        start_stream(writer)
    assert writer.starts == 1


def test_no_first_trigger_within_the_bound_stops_the_query():
    stuck = FakeQuery()
    with pytest.raises(TimeoutError, match="ran no trigger in 0 s"):
        start_stream(FakeWriter(stuck), timeout_s=0.05)
    assert stuck.stopped


@pytest.mark.parametrize("kwargs, named", [
    ({"attempts": 0}, "attempts=0"), ({"attempts": "3"}, "attempts='3'"),
    ({"attempts": 1.5}, "attempts=1.5"), ({"timeout_s": 0}, "timeout_s=0"),
    ({"timeout_s": "10"}, "timeout_s='10'"),
])
def test_bad_arguments_are_a_typed_error_naming_them(kwargs, named):
    with pytest.raises(ArgumentError, match=f"start_stream: {named} is not allowed"):
        start_stream(FakeWriter(), **kwargs)
    with pytest.raises(ArgumentError, match="writer=.* must be a DataStreamWriter"):
        start_stream("spark.readStream")
