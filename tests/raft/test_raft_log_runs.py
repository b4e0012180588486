"""The settled prefix as runs (raft/log_runs.py): every read of a log whose settled batches
are held as runs of NoOp batches gives what the same log with every batch in its columns
gives, and its files are the same; cuts inside and after the prefix agree too."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.fastforward.noop_batches import build_noop_batches
from kraft_testkit.metadata.replay import NOOP_VALUE
from kraft_testkit.protocol.records import RecordBatch, decode_batch, encode_batch
from kraft_testkit.raft.log import RaftLog
from kraft_testkit.raft.log_runs import NoOpRun
from kraft_testkit.sim import MemoryDisk
from kraft_testkit.sim.node import Replace


def _twins(seed: int) -> tuple[RaftLog, RaftLog, MemoryDisk, MemoryDisk]:
    """Two equal logs: NoOps the warp builds (shared bytes) and stepped ones (decoded, each
    their own), data batches among them, an epoch change, timestamps with two strides."""
    rng = random.Random(seed)
    logs, disks = (RaftLog(), RaftLog()), (MemoryDisk(), MemoryDisk())
    for log, disk in zip(logs, disks):
        for name in log.segments[0].files():
            disk.apply(Replace(name, b""))
    ts, epoch = 1_000, 1
    for _ in range(rng.randint(6, 12)):
        kind = rng.choice(["warp", "warp", "stepped", "data", "epoch"])
        n = rng.randint(1, 40)
        if kind == "epoch":
            epoch += 1
            continue
        stride = rng.choice([500, 500, 250, 0])
        stamps = [ts + k * stride for k in range(n)]
        ts = stamps[-1] + 500
        for log, disk in zip(logs, disks):
            start = log.end_offset
            if kind == "warp":
                run = build_noop_batches(start, epoch, stamps)
                ops = log.append_run(run.replica, run.data)
            else:
                ops = []
                for k, t in enumerate(stamps):
                    values = [NOOP_VALUE] if kind == "stepped" else [b"x%d" % k, b"y"]
                    built = RecordBatch.build(log.end_offset, values, timestamp_ms=t,
                                              leader_epoch=epoch)
                    raw = encode_batch(built)
                    batch = decode_batch(raw)[0]
                    ops += log.append(batch, raw)
            for op in ops:
                disk.apply(op)
    return logs[0], logs[1], disks[0], disks[1]


def _same_reads(a: RaftLog, b: RaftLog) -> None:
    assert len(a) == len(b) and a.end_offset == b.end_offset
    assert [(s.base, s.size, s.max_ts, s.max_ts_offset) for s in a.segments] == \
        [(s.base, s.size, s.max_ts, s.max_ts_offset) for s in b.segments]
    assert list(a.bases) == list(b.bases) and list(a.positions) == list(b.positions)
    assert list(a.data) == list(b.data)
    for x, y in zip(a.batches, b.batches):
        assert type(x) is type(y)
        assert (x.base_offset, x.last_offset, x.partition_leader_epoch, x.max_timestamp) == \
            (y.base_offset, y.last_offset, y.partition_leader_epoch, y.max_timestamp)
    for offset in range(a.start_offset - 1, a.end_offset + 2):
        for max_bytes in (1, 200, 1_000, 1 << 20):
            assert a.read(offset, max_bytes) == b.read(offset, max_bytes), (offset, max_bytes)
            end = min(offset + 7, a.end_offset)
            assert a.read(offset, max_bytes, end) == b.read(offset, max_bytes, end)
        assert a.index_left(offset) == b.index_left(offset)
        assert a.index_right(offset) == b.index_right(offset)
        assert a.raw_between(offset, offset + 9) == b.raw_between(offset, offset + 9)
        got, want = a.batches_between(offset, offset + 9), b.batches_between(offset, offset + 9)
        assert [x.base_offset for x in got] == [y.base_offset for y in want]
        x, y = a.batch_at(offset), b.batch_at(offset)
        assert (x is None) == (y is None) and (x is None or x.base_offset == y.base_offset)


@pytest.mark.parametrize("seed", range(12))
def test_a_settled_prefix_of_runs_reads_as_the_batches_it_holds(seed: int) -> None:
    a, b, disk_a, disk_b = _twins(seed)
    cut = random.Random(seed).randint(1, a.end_offset)
    a.settle(cut)
    b.settle(cut)
    b._thaw()  # noqa: SLF001 - the same log with every batch in its columns
    assert a.cold is not None and b.cold is None
    runs = [e for e in a.cold.entries if type(e) is NoOpRun]
    assert runs and a.cold.count > len(a.cold.entries)  # runs, not a batch an entry
    _same_reads(a, b)
    # a cut after the prefix, in it (Kafka never cuts below its snapshot; kept exact anyway)
    # and a log start moved into it leave both the same
    tail = a.end_offset - 3
    for log, disk in ((a, disk_a), (b, disk_b)):
        for op in log.truncate_to(tail):
            disk.apply(op)
    _same_reads(a, b)
    assert disk_a.view() == disk_b.view()
    start = random.Random(seed + 1).randint(1, a.end_offset - 1)
    for log in (a, b):
        log.snapshots.append(type("Info", (), {"snapshot_id": (start, 1), "end_offset": start,
                                               "size": 0, "timestamp": 0})())
        log.snapshot = object()  # type: ignore[assignment]
        assert log.delete_before_snapshot((start, 1)) is not None
    assert a.start_offset == b.start_offset == start
    _same_reads(a, b)
    for log, disk in ((a, disk_a), (b, disk_b)):
        for op in log.truncate_to(start + 1):
            disk.apply(op)
    _same_reads(a, b)
    assert disk_a.view() == disk_b.view()
