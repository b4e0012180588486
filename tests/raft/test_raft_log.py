"""The replicated log: epochs, divergence, truncation, recovery from torn tails, quorum-state."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.protocol.records import RecordBatch, encode_batch
from kraft_testkit.errors import StorageError
from kraft_testkit.raft.errors import CorruptFile
from kraft_testkit.raft.log import DIR, QUORUM_STATE, RaftLog, segment_name
from kraft_testkit.raft.log_recovery import recover_log
from kraft_testkit.raft.snapshot import encode_snapshot, file_name
from kraft_testkit.raft.state import ElectionState, decode_quorum_state, encode_quorum_state
from kraft_testkit.sim import MemoryDisk
from kraft_testkit.sim.node import Delete, Replace, Truncate

GOLDEN = str(Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc")


def build(epochs: list[int], start: int = 0) -> tuple[RaftLog, MemoryDisk]:
    """A log with one two-record batch per entry of ``epochs``, mirrored on a disk."""
    log = RaftLog(start)
    disk = MemoryDisk()
    for name in log.segments[0].files():  # the segment with its .index and .timeindex
        disk.apply(Replace(name, b""))
    for e in epochs:
        batch = RecordBatch.build(log.end_offset, [b"a", b"b"], timestamp_ms=0, leader_epoch=e)
        for op in log.append(batch, encode_batch(batch)):
            disk.apply(op)
    disk.sync()
    return log, disk


def test_epochs_and_end_offset_for_epoch():
    log, _ = build([1, 1, 3, 3, 4])
    assert (log.end_offset, log.last_epoch) == (10, 4)
    assert log.epochs == [(1, 0), (3, 4), (4, 8)]
    assert log.end_offset_for_epoch(4) == (4, 10)
    assert log.end_offset_for_epoch(9) == (4, 10)
    assert log.end_offset_for_epoch(3) == (3, 8)
    assert log.end_offset_for_epoch(2) == (1, 4)  # the largest epoch <= 2 is 1, ending at 4
    assert log.end_offset_for_epoch(0) == (0, 0)


def test_validate_fetch_positions():
    log, _ = build([1, 1, 3])
    assert log.validate(4, 1) == ("valid", None)
    assert log.validate(6, 3) == ("valid", None)
    assert log.validate(0, 0) == ("valid", None)
    assert log.validate(5, 1) == ("diverging", (1, 4))  # epoch 1 ended at 4 here
    assert log.validate(6, 2) == ("diverging", (1, 4))  # no epoch 2: truncate to epoch 1's end
    assert log.validate(7, 3) == ("diverging", (3, 6))  # ahead of the log


def test_truncate_and_truncation_point():
    log, disk = build([1, 2, 2])
    assert log.truncation_point(1, 2) == 2
    ops = log.truncate_to(2)
    assert ops == [Truncate(segment_name(0), log.size)] and log.end_offset == 2
    assert log.epochs == [(1, 0)] and log.last_epoch == 1
    for op in ops:
        disk.apply(op)
    assert recover_log(disk.view())[0].end_offset == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=8).map(sorted), st.integers(1, 400))
def test_recovery_cuts_a_torn_tail_at_the_last_whole_batch(epochs, cut):
    log, disk = build(epochs)
    data = disk.view()[log.segment]
    torn = data[: max(0, len(data) - cut)]
    files = {log.segment: torn}
    back, ops = recover_log(files)
    ends = [p + len(d) for p, d in zip(log.positions, log.data) if p + len(d) <= len(torn)]
    assert back.size == (ends[-1] if ends else 0) and back.size <= len(torn)
    assert back.batches == log.batches[: len(ends)]
    cuts = [op for op in ops if isinstance(op, Truncate)]
    assert cuts == ([Truncate(log.segment, back.size)] if back.size < len(torn) else [])


def test_recovery_refuses_a_corrupt_batch_naming_file_and_offset():
    """Damage is not a torn tail: cutting the log there could drop committed records, so the
    node must not start (Kafka stops on a corrupt metadata log)."""
    log, disk = build([1, 1, 1])
    data = bytearray(disk.view()[log.segment])
    data[log.positions[2] + 30] ^= 0xFF  # flip a byte the CRC covers
    with pytest.raises(CorruptFile) as info:
        recover_log({log.segment: bytes(data)})
    err = info.value
    assert err.file == log.segment and err.offset == log.positions[2] + 17  # the CRC field
    assert "CRC" in str(err) and isinstance(err, StorageError)


def test_recovery_cuts_only_a_partial_last_batch():
    log, disk = build([1, 1, 1])
    data = disk.view()[log.segment]
    back, ops = recover_log({log.segment: data[:log.positions[2] + 30]})
    assert back.end_offset == 4
    assert [op for op in ops if isinstance(op, Truncate)] == [Truncate(log.segment, log.positions[2])]


def test_recovery_reads_every_segment_and_keeps_the_snapshots_from_the_log_start():
    """Kafka's metadata log starts at its first segment's base offset; snapshots below it go,
    the others stay, the newest is the one loaded."""
    snap = encode_snapshot(4, 1, [b"state"], 0)
    old = encode_snapshot(2, 1, [b"old"], 0)
    log, disk = build([1, 1, 1, 2])
    whole = disk.view()[segment_name(0)]
    head, tail = whole[:log.positions[2]], whole[log.positions[2]:]
    snaps = {f"{DIR}/{file_name(4, 1)}": snap.data, f"{DIR}/{file_name(2, 1)}": old.data}
    back, ops = recover_log({segment_name(0): head, segment_name(4): tail, **snaps})
    assert (back.start_offset, back.end_offset, back.data) == (0, 8, log.data)
    # below the snapshot loaded first only what fetches and truncation need stays decoded
    assert [type(b).__name__ for b in back.batches] == ["SettledBatch"] * 2 + ["RecordBatch"] * 2
    assert [s.snapshot_id for s in back.snapshots] == [(2, 1), (4, 1)]
    assert back.snapshot.snapshot_id == (4, 1)
    assert [type(op) for op in ops] == [Replace] * 4  # the missing indexes, rebuilt
    # the first segment deleted (cleaned): the log starts at 4, snapshot 2 goes
    back, ops = recover_log({segment_name(4): tail, **snaps})
    assert (back.start_offset, back.start_epoch, back.end_offset) == (4, 1, 8)
    assert [s.snapshot_id for s in back.snapshots] == [(4, 1)]
    assert Delete(f"{DIR}/{file_name(2, 1)}") in ops
    assert back.validate(2, 1)[0] == "snapshot"  # below the log start: fetch the snapshot


def test_recovery_refuses_a_log_start_no_snapshot_reaches():
    log, disk = build([1, 1, 1, 2])
    tail = disk.view()[segment_name(0)][log.positions[2]:]
    with pytest.raises(CorruptFile, match="no snapshot reaches it"):
        recover_log({segment_name(4): tail})
    with pytest.raises(CorruptFile, match="starts at offset 6"):
        recover_log({segment_name(0): disk.view()[segment_name(0)][:log.positions[2]],
                         segment_name(6): tail[log.positions[3] - log.positions[2]:]})


def test_a_snapshot_taken_here_keeps_the_log_start():
    log, disk = build([1, 1, 2, 2])
    ops = log.install_snapshot(encode_snapshot(4, 1, [b"s"], 0))
    assert ops == [Replace(f"{DIR}/{file_name(4, 1)}", ops[0].data)]
    assert (log.start_offset, log.end_offset, log.snapshot.snapshot_id) == (0, 8, (4, 1))
    for op in ops:
        disk.apply(op)
    back, _ = recover_log(disk.view())
    assert (back.start_offset, back.end_offset, back.batches) == (0, 8, log.batches)


def test_a_fetched_snapshot_past_the_log_truncates_it_fully():
    log, disk = build([1, 1])
    ops = log.install_snapshot(encode_snapshot(2, 1, [b"a"], 0))
    ops += log.install_fetched_snapshot(encode_snapshot(10, 3, [b"s"], 0))
    assert (log.start_offset, log.end_offset, log.last_epoch, len(log)) == (10, 10, 3, 0)
    assert log.validate(10, 3) == ("valid", None)
    assert [s.snapshot_id for s in log.snapshots] == [(10, 3)]
    for op in ops:
        disk.apply(op)
    names = sorted(disk.view())
    assert names == sorted([f"{DIR}/{file_name(10, 3)}", segment_name(10),
                            f"{DIR}/00000000000000000010.index",
                            f"{DIR}/00000000000000000010.timeindex"])
    assert recover_log(disk.view())[0].start_offset == 10


def test_append_refuses_gaps_and_older_epochs():
    log, _ = build([2])
    with pytest.raises(Exception, match="does not continue"):
        log.append(RecordBatch.build(5, [b"x"], timestamp_ms=0, leader_epoch=2), b"")
    with pytest.raises(Exception, match="older"):
        log.append(RecordBatch.build(2, [b"x"], timestamp_ms=0, leader_epoch=1), b"")


def test_quorum_state_is_kafkas_json():
    raw = encode_quorum_state(ElectionState(3, 1000, -1), [1000])
    golden = Path(f"{GOLDEN}/B_mv18_3brokers_restart/__cluster_metadata-0/quorum-state").read_bytes()
    assert raw == golden
    assert decode_quorum_state(golden) == ElectionState(3, 1000, -1)
    assert json.loads(encode_quorum_state(ElectionState(5, -1, 2), [3, 1, 2]))["currentVoters"] == [
        {"voterId": 1}, {"voterId": 2}, {"voterId": 3}]
    assert QUORUM_STATE == "__cluster_metadata-0/quorum-state"


def test_golden_segment_recovers_whole():
    data = Path(f"{GOLDEN}/B_mv18_3brokers_restart/__cluster_metadata-0/"
                "00000000000000000000.log").read_bytes()
    log, ops = recover_log({segment_name(0): data})
    assert not [op for op in ops if type(op) is not Replace]  # only the (absent) indexes
    assert log.end_offset == 26 and log.last_epoch == 2
    assert log.epochs == [(1, 0), (2, 25)]
    torn = data[: len(data) - random.Random(1).randint(1, 60)]
    log, ops = recover_log({segment_name(0): torn})
    assert log.end_offset == 25 and Truncate(segment_name(0), log.size) in ops


def test_a_replica_takes_over_a_data_directory_written_by_kafka(tmp_path):
    """Kafka's own files (golden log B: a single-voter quorum led by node 1000 in epoch 3, from the
    log directory of node 0) recover, and the replica (node 0, as meta.properties says) goes on
    writing them in Kafka's layout (readable by the log reader)."""
    import shutil

    from kraft_testkit.protocol.log import read_log
    from kraft_testkit.protocol.uuid import Uuid
    from kraft_testkit.raft.listener import DigestListener
    from kraft_testkit.raft.node import replica_factory
    from kraft_testkit.sim import Simulation
    from kraft_testkit.sim.directory_disk import DirectoryDisk

    shutil.copytree(f"{GOLDEN}/B_mv18_3brokers_restart", tmp_path / "data")
    dir_id = Uuid.parse("850bXYO4TaCvXty2WNo63w")  # from the golden meta.properties
    sim = Simulation(seed=1)
    listener = DigestListener()
    sim.add_node(0, replica_factory({0: dir_id}, listener=lambda _: listener),
                 disk=DirectoryDisk(tmp_path / "data"))
    replica = sim.process(0).machine
    sim.run_until(lambda s: replica.role == "leader" and replica.hw == 27, 5_000)
    assert replica.epoch == 4 and replica.is_voter and replica.log.end_offset == 27
    assert listener.offset == 27 and listener.count == 24  # 24 metadata + 3 LeaderChange
    on_disk = read_log(tmp_path / "data" / "__cluster_metadata-0" / "00000000000000000000.log")
    last = on_disk[-1].records[-1]
    assert (last.offset, last.payload.type_name) == (26, "LEADER_CHANGE")
    assert json.loads((tmp_path / "data" / QUORUM_STATE).read_text())["leaderEpoch"] == 4


def test_a_directory_of_another_node_is_refused(tmp_path):
    """meta.properties of golden log B says node.id=0: node 1000 must not start on it (Kafka
    refuses a log directory whose stored node id differs), and the error names file and value."""
    import shutil

    from kraft_testkit.protocol.uuid import Uuid
    from kraft_testkit.raft.node import replica_factory
    from kraft_testkit.sim import Simulation
    from kraft_testkit.sim.directory_disk import DirectoryDisk

    shutil.copytree(f"{GOLDEN}/B_mv18_3brokers_restart", tmp_path / "data")
    sim = Simulation(seed=1)
    process = sim.add_node(1000, replica_factory({1000: Uuid.parse("850bXYO4TaCvXty2WNo63w")}),
                           disk=DirectoryDisk(tmp_path / "data"))
    assert process.state.value == "failed" and process.machine is None
    err = process.failure
    assert isinstance(err, StorageError)
    assert err.file == str(tmp_path / "data" / "meta.properties")
    assert "node.id 0" in str(err) and "1000" in str(err)
    sim.run_for(1_000)  # the simulation goes on without it
