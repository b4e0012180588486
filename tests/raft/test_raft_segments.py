"""Kafka's segment layout: rolling by size, by age and by full indexes, the .index and .timeindex
entries as Kafka writes them, truncation across segments, and recovery that rebuilds a damaged
index (Kafka's metadata log recovers every segment on every start)."""

from __future__ import annotations

import io
import struct
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.errors import ConfigError
from kraft_testkit.protocol.log import iter_log
from kraft_testkit.protocol.records import RecordBatch, encode_batch
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.errors import CorruptFile
from kraft_testkit.raft.log import DIR, RaftLog, segment_name
from kraft_testkit.raft.log_recovery import recover_log
from kraft_testkit.raft.segments import LogConfig, Segment
from kraft_testkit.sim import MemoryDisk
from kraft_testkit.sim.node import Delete, Replace
from kraft_testkit.tools.dump_index import dump_index, read_index

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc"
TINY = {"internal.metadata.log.segment.bytes": 1_000,
        "log.index.interval.bytes": 150}


def build(config: LogConfig, n: int, *, ts_step: int = 10, size: int = 40,
          epochs=None) -> tuple[RaftLog, MemoryDisk]:
    """``n`` one-record batches of ``size`` bytes, ``ts_step`` ms apart, applied to a disk."""
    log, ops = recover_log({}, config)
    disk = MemoryDisk()
    for op in ops:
        disk.apply(op)
    for i in range(n):
        epoch = epochs[i] if epochs else 1
        batch = RecordBatch.build(log.end_offset, [bytes([i % 256]) * size],
                                  timestamp_ms=1_000 + i * ts_step, leader_epoch=epoch)
        for op in log.append(batch, encode_batch(batch)):
            disk.apply(op)
    disk.sync()
    return log, disk


def kafka_index(log_bytes: bytes, base: int, interval: int) -> tuple[list, list]:
    """The entries Kafka's LogSegment.recover builds for a segment (written from its javadoc
    rules, independently of the kit's code): offset entries every ``interval`` bytes, time
    entries with the largest timestamp so far, and the largest one at the end."""
    offsets, times = [], []
    last_entry, max_ts, max_off = 0, -1, -1
    for b in iter_log(log_bytes, decode=False):
        if b.batch.max_timestamp > max_ts:
            max_ts, max_off = b.batch.max_timestamp, b.batch.last_offset
        if b.position - last_entry > interval:
            offsets.append((b.batch.last_offset, b.position))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_off))
            last_entry = b.position
    if max_ts >= 0 and (not times or max_ts > times[-1][0]):
        times.append((max_ts, max_off))
    return offsets, times


def write_files(tmp_path: Path, files) -> Path:
    for name, data in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return tmp_path / DIR


def test_segments_roll_by_size_with_indexes_kafka_would_write(tmp_path):
    config = LogConfig(segment_bytes=1_000, index_interval_bytes=150)
    log, disk = build(config, 60)
    files = disk.view()
    bases = [s.base for s in log.segments]
    assert len(bases) > 3 and bases[0] == 0
    for seg, nxt in zip(log.segments, log.segments[1:]):
        assert seg.size <= 1_000 < seg.size + len(log.data[log.bases.index(nxt.base)])
        assert nxt.base == log.bases[log.bases.index(nxt.base)]  # named by its first offset
    directory = write_files(tmp_path, files)
    for k, seg in enumerate(log.segments):
        data = files[seg.log]
        offsets, times = kafka_index(data, seg.base, 150)
        assert read_index(directory / f"{seg.base:020d}.index") == offsets and offsets
        on_disk_times = read_index(directory / f"{seg.base:020d}.timeindex")
        if k < len(log.segments) - 1:  # rolled: the largest timestamp was added on the roll
            assert on_disk_times == times
        else:  # the active segment gets it when it rolls or recovers, as in Kafka
            assert on_disk_times == times[:len(on_disk_times)] and len(times) - len(on_disk_times) <= 1
        out = io.StringIO()
        assert dump_index(directory / f"{seg.base:020d}.index", out) == []  # no mismatch
    # recovery rebuilds exactly these files (plus the active segment's last time entry)
    back, ops = recover_log(files, config)
    assert [s.base for s in back.segments] == bases and back.batches == log.batches
    assert ops == [Replace(log.segments[-1].timeindex, back.segments[-1].timeindex_bytes())] \
        or ops == []


def test_segments_roll_by_age_on_batch_timestamps():
    config = LogConfig(segment_ms=100)
    log, _ = build(config, 30, ts_step=30)  # 30 ms apart: a new segment every 4 batches
    assert [s.base for s in log.segments] == list(range(0, 30, 4))
    first = [log.batches[log.bases.index(s.base)].max_timestamp for s in log.segments]
    assert all(b - a > 100 for a, b in pairwise(first))


def test_a_full_index_rolls_the_segment():
    config = LogConfig(index_interval_bytes=0, index_max_bytes=8 * 3)  # 3 offset entries
    log, _ = build(config, 12)
    assert all(len(s.offsets) <= 3 for s in log.segments) and len(log.segments) >= 3


def test_truncation_across_segments_deletes_the_later_ones_and_cuts_the_indexes():
    config = LogConfig(segment_bytes=1_000, index_interval_bytes=150)
    log, disk = build(config, 60, epochs=[1] * 30 + [2] * 30)
    keep = log.segments[1]
    cut = keep.base + 5
    later = [s for s in log.segments if s.base > cut]
    ops = log.truncate_to(cut)
    for s in later:
        assert Delete(s.log) in ops and Delete(s.index) in ops and Delete(s.timeindex) in ops
    for op in ops:
        disk.apply(op)
    files = disk.view()
    assert [s.base for s in log.segments] == [0, keep.base] and log.end_offset == cut
    assert all(o < cut for o, _ in keep.offsets) and all(o < cut for _, o in keep.times)
    # what is on disk is what recovery rebuilds from the cut segment
    back, repair = recover_log(files, config)
    assert back.end_offset == cut and back.batches == log.batches
    assert back.segments[1].offsets == keep.offsets
    assert [type(op) for op in repair] in ([], [Replace])  # the active segment's time entry
    # appending after the cut goes on in the cut segment, then rolls again
    for i in range(30):
        batch = RecordBatch.build(log.end_offset, [b"x" * 40], timestamp_ms=5_000 + i,
                                  leader_epoch=3)
        for op in log.append(batch, encode_batch(batch)):
            disk.apply(op)
    assert recover_log(disk.view(), config)[0].batches == log.batches


@pytest.mark.parametrize("damage", ["missing", "truncated", "torn", "past-the-segment",
                                    "garbage"])
def test_a_damaged_index_is_rebuilt_not_fatal(damage):
    config = LogConfig(segment_bytes=1_000, index_interval_bytes=150)
    log, disk = build(config, 60)
    files = dict(disk.view())
    seg = log.segments[1]
    good = files[seg.index]
    if damage == "missing":
        del files[seg.index]
    elif damage == "truncated":
        files[seg.index] = good[:8]
    elif damage == "torn":
        files[seg.index] = good[:-3]
    elif damage == "past-the-segment":
        files[seg.index] = good + struct.pack(">ii", 500, 10 ** 6)
    else:
        files[seg.index] = b"\xff" * 40
    back, ops = recover_log(files, config)
    assert Replace(seg.index, good) in ops and back.batches == log.batches


def test_leftovers_and_orphans_go_and_a_stray_log_is_refused():
    config = LogConfig(segment_bytes=1_000)
    _, disk = build(config, 30)
    files = dict(disk.view())
    leftovers = [f"{DIR}/00000000000000000003.log.deleted", f"{DIR}/{'9' * 20}.index",
                 f"{DIR}/{'9' * 20}.timeindex", f"{DIR}/00000000000000000000-0000000001.checkpoint.part"]
    for name in leftovers:
        files[name] = b"junk"
    files[f"{DIR}/notes.txt"] = b"left alone, as Kafka does"
    _, ops = recover_log(files, config)
    assert {op.file for op in ops if isinstance(op, Delete)} == set(leftovers)
    files[f"{DIR}/segment-two.log"] = b""
    with pytest.raises(CorruptFile) as info:
        recover_log(files, config)
    assert info.value.file == f"{DIR}/segment-two.log" and "base offset" in str(info.value)


def test_a_torn_tail_is_cut_only_in_the_last_segment():
    config = LogConfig(segment_bytes=1_000)
    log, disk = build(config, 40)
    files = dict(disk.view())
    first = log.segments[0].log
    files[first] = files[first][:-5]
    with pytest.raises(CorruptFile) as info:
        recover_log(files, config)
    assert info.value.file == first and "later segments follow" in str(info.value)


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=64), st.binary(max_size=64))
def test_any_index_bytes_recover_to_the_rebuilt_index(index, timeindex):
    config = LogConfig(segment_bytes=600, index_interval_bytes=100)
    log, disk = build(config, 25)
    files = dict(disk.view())
    seg = log.segments[0]
    files[seg.index], files[seg.timeindex] = index, timeindex
    back, ops = recover_log(files, config)
    for op in ops:
        disk.apply(op)
    assert back.batches == log.batches
    assert disk.view()[seg.index] == seg.index_bytes()
    assert disk.view()[seg.timeindex] == seg.timeindex_bytes()


def test_the_golden_kafka_log_gets_the_index_kafka_recovery_builds(tmp_path):
    """Kafka's own segment (golden log A, 5,505 bytes): the rebuilt indexes are the entries
    Kafka's recovery makes (one offset entry past 4,096 bytes; the largest timestamp), and
    dump-index finds them consistent with the segment. (The golden files lack Kafka's own
    .index files, so this is the rule, not a byte comparison.)"""
    data = (GOLDEN / "A_mv16_3brokers" / DIR / "00000000000000000000.log").read_bytes()
    log, ops = recover_log({segment_name(0): data})
    seg = log.segments[0]
    offsets, times = kafka_index(data, 0, 4096)
    assert seg.offsets == offsets and len(offsets) == 1 and seg.times == times
    directory = write_files(tmp_path, {op.file: op.data for op in ops if isinstance(op, Replace)}
                            | {segment_name(0): data})
    assert dump_index(directory / "00000000000000000000.index", io.StringIO()) == []
    assert read_index(directory / "00000000000000000000.timeindex") == times


def test_segment_configs_by_kafka_name():
    """Kafka 4.2's ``MetadataLogConfig``: ``metadata.log.segment.bytes`` is at least 8 MiB; the
    internal key, unchecked, replaces it when set (``KafkaMetadataLog.apply``); the 4.0 key
    ``metadata.log.segment.min.bytes`` is gone (KAFKA-19080)."""
    c = RaftConfig.from_kafka(TINY)
    assert c.log_config() == LogConfig(segment_bytes=1_000, index_interval_bytes=150)
    assert "internal.metadata.log.segment.bytes" not in RaftConfig().to_kafka()  # null default
    assert RaftConfig().log_config().segment_bytes == 1 << 30
    with pytest.raises(ConfigError, match=r"metadata.log.segment.bytes must be .*\[8388608,"):
        RaftConfig.from_kafka({"metadata.log.segment.bytes": 1_000})
    with pytest.raises(ConfigError, match="removed in Kafka 4.1"):
        RaftConfig.from_kafka({"metadata.log.segment.min.bytes": 12})
    assert RaftConfig.from_kafka({"metadata.log.segment.bytes": 8 << 20,
                                  "internal.metadata.log.segment.bytes": 1}
                                 ).log_config().segment_bytes == 1
    with pytest.raises(ConfigError, match="metadata.max.retention.ms"):
        RaftConfig.from_kafka({"metadata.max.retention.ms": -2})


def test_a_quorum_with_tiny_segments_rolls_and_recovers():
    q = Quorum(3, seed=4, config=TINY)
    q.run_until(lambda q: q.active_controller is not None)
    for i in range(60):
        q.append([b"record-%03d" % i])
    q.run_until(Quorum.converged)
    leader = q.replica(q.active_controller)
    assert len(leader.log.segments) > 3
    for n in q.nodes:
        q.faults.kill(n)
    for n in q.nodes:
        q.faults.start(n)
    q.run_until(Quorum.converged, 20_000)
    assert len({r.listener.state() for r in q.replicas()}) == 1
    assert Segment  # the module's public class


def snapshot_at(log: RaftLog, offset: int, timestamp: int):
    from kraft_testkit.raft.snapshot import encode_snapshot

    return encode_snapshot(offset, 1, [b"s" * 100], timestamp)


def test_retention_by_size_walks_the_snapshots_oldest_first_as_kafka_does():
    """``maybeClean``: while log + snapshots exceed the limit and a newer snapshot exists, the
    log start moves to the next snapshot, the segments wholly below it and the older snapshots
    go; the newest snapshot always stays."""
    config = LogConfig(segment_bytes=1_000, retention_bytes=10**9)
    log, disk = build(config, 60)
    ops = []
    for offset in (10, 30, 50):
        ops += log.install_snapshot(snapshot_at(log, offset, 1_000 + offset * 10))
    for op in ops:
        disk.apply(op)
    assert log.maybe_clean(10**6) == [] and log.start_offset == 0  # under the limit
    sizes = sum(s.size for s in log.snapshots)
    # just over the limit: one step (start to 30), which brings it under
    log.config = LogConfig(segment_bytes=1_000, retention_bytes=log.size + sizes - 1)
    below = [s for s, nxt in pairwise(log.segments) if nxt.base <= 30]
    ops = log.maybe_clean(10**6)
    assert log.start_offset == 30 and [s.snapshot_id for s in log.snapshots] == [(30, 1), (50, 1)]
    assert {op.file for op in ops} == {f for s in below for f in s.files()} | {
        f"{DIR}/00000000000000000010-0000000001.checkpoint"}
    assert log.segments[0].base <= 30 < (log.segments[1].base if len(log.segments) > 1 else 61)
    for op in ops:
        disk.apply(op)
    back, _ = recover_log(disk.view(), config)
    assert back.start_offset == log.segments[0].base and back.snapshot.snapshot_id == (50, 1)
    # a limit nothing meets: all but the newest go
    log.config = LogConfig(segment_bytes=1_000, retention_bytes=0)
    log.maybe_clean(10**6)
    assert log.start_offset == 50 and [s.snapshot_id for s in log.snapshots] == [(50, 1)]
    assert log.maybe_clean(10**6) == []


def test_retention_by_age_keeps_the_newest_and_stops_at_a_young_one():
    config = LogConfig(segment_bytes=1_000, retention_ms=500)
    log, _ = build(config, 60)
    for offset, ts in ((10, 1_000), (30, 1_800), (50, 1_900)):
        log.install_snapshot(snapshot_at(log, offset, ts))
    log.maybe_clean(2_000)  # 10 is 1000 ms old, 30 only 200 ms: one step
    assert log.start_offset == 30 and [s.snapshot_id for s in log.snapshots] == [(30, 1), (50, 1)]
    log.maybe_clean(10**6)  # all old now: the newest stays
    assert log.start_offset == 50 and [s.snapshot_id for s in log.snapshots] == [(50, 1)]
    log.config = LogConfig(retention_ms=-1, retention_bytes=-1)
    log.install_snapshot(snapshot_at(log, 55, 0))
    assert log.maybe_clean(10**9) == [] and len(log.snapshots) == 2  # both off: nothing goes
