"""``RaftLog.append_run`` equals k ``RaftLog.append`` calls, for any log settings (Hypothesis).

Two logs with the same history get the same NoOp run, one batch by batch and one in bulk;
their in-memory state (batches, positions, epochs, every segment's bookkeeping) and the files
their disk ops leave on a memory disk must be equal, whatever the segment size and age, the
index interval, the index size, the timestamps (out of order too) and the history before.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.fastforward.noop_run import build_noop_batches
from kraft_testkit.raft.log import RaftLog
from kraft_testkit.raft.segments import LogConfig, Segment
from kraft_testkit.sim.disk import MemoryDisk

# small values make runs roll (batch by batch), large ones let them go in bulk
configs = st.builds(
    LogConfig,
    segment_bytes=st.one_of(st.integers(72, 5_000), st.integers(5_000, 1 << 30)),
    segment_ms=st.one_of(st.integers(1, 20_000), st.integers(20_000, 1 << 40)),
    index_interval_bytes=st.integers(0, 1_000),
    index_max_bytes=st.one_of(st.integers(8, 400), st.integers(400, 10 << 20)),
)


def _state(log: RaftLog) -> tuple:
    return (log.start_offset, log.end_offset, log.bases, log.batches, log.data, log.positions,
            log.epochs, [tuple(getattr(s, f) for f in Segment.__slots__) for s in log.segments])


def _apply(disk: MemoryDisk, ops: list) -> None:
    for op in ops:
        disk.apply(op)
    disk.sync()


@settings(max_examples=150, deadline=None)
@given(config=configs, before=st.integers(0, 60), k=st.integers(1, 120),
       start_ts=st.integers(0, 10_000), steps=st.lists(st.integers(-50, 700), min_size=1,
                                                         max_size=120),
       epoch_bump=st.booleans())
def test_append_run_equals_appends(config: LogConfig, before: int, k: int, start_ts: int,
                                   steps: list[int], epoch_bump: bool) -> None:
    stamps = [start_ts]
    for i in range(before + k - 1):
        stamps.append(max(0, stamps[-1] + steps[i % len(steps)]))
    history = build_noop_batches(0, 3, stamps[:before])
    run = build_noop_batches(before, 4 if epoch_bump else 3, stamps[before:])
    one, bulk = RaftLog(config=config), RaftLog(config=config)
    disk_one, disk_bulk = MemoryDisk(), MemoryDisk()
    for log, disk in ((one, disk_one), (bulk, disk_bulk)):
        _apply(disk, log.segments[0].create_ops())
        for batch, data in zip(history.leader, history.data):
            _apply(disk, log.append(batch, data))
    for batch, data in zip(run.replica, run.data):
        _apply(disk_one, one.append(batch, data))
    _apply(disk_bulk, bulk.append_run(run.replica, run.data))
    assert _state(bulk) == _state(one)
    assert dict(disk_bulk.view()) == dict(disk_one.view())
