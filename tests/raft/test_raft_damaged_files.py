"""Every damaged file of a metadata log directory gives a typed error naming the file (and, for
binary files, the byte offset): never a bare OverflowError, RecursionError or silent data loss."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.errors import KraftError, StorageError
from kraft_testkit.protocol.records import RecordBatch, encode_batch
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.errors import CorruptFile
from kraft_testkit.raft.log import DIR, QUORUM_STATE, segment_name
from kraft_testkit.raft.log_recovery import recover_log
from kraft_testkit.raft.snapshot import decode_snapshot, encode_snapshot, file_name
from kraft_testkit.raft.state import (
    ElectionState,
    decode_quorum_state,
    encode_meta_properties,
    encode_quorum_state,
    read_meta_properties,
)

GOOD_STATE = encode_quorum_state(ElectionState(3, 1, -1), [1, 2, 3])
DIR_ID = Uuid.parse("850bXYO4TaCvXty2WNo63w")


# ---------------------------------------------------------------- quorum-state

@pytest.mark.parametrize("raw, problem", [
    (b"[" * 100_000 + b"]" * 100_000, "RecursionError"),      # was a bare RecursionError
    (b'{"leaderEpoch": 1e400, "data_version": 0}', "leaderEpoch"),  # was an OverflowError
    (b'{"leaderEpoch": 99999999999999999999}', "leaderEpoch"),
    (b'{"leaderId": "2"}', "leaderId"),
    (b'{"votedId": true}', "votedId"),
    (b'{"data_version": 7}', "data_version 7"),
    (b"[1, 2]", "JSON object"),
    (b"\xff\xfe", "JSON"),
    (b"", "JSON"),
])
def test_damaged_quorum_state(raw, problem):
    with pytest.raises(CorruptFile) as info:
        decode_quorum_state(raw, QUORUM_STATE)
    assert info.value.file == QUORUM_STATE and problem in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.builds(lambda b, i, n: b[:i] + n + b[i:], st.just(GOOD_STATE),
                                            st.integers(0, len(GOOD_STATE)), st.binary(max_size=8)))
def test_any_bytes_as_quorum_state_decode_or_raise_corrupt_file(raw):
    try:
        state = decode_quorum_state(raw)
    except CorruptFile as e:
        assert e.file == "quorum-state"
    else:
        assert isinstance(state, ElectionState)


def test_a_quorum_state_from_the_future_names_its_version():
    raw = json.dumps({"leaderEpoch": 1, "data_version": 2}).encode()
    with pytest.raises(CorruptFile, match="data_version 2 is unknown"):
        decode_quorum_state(raw)


# ---------------------------------------------------------------- meta.properties

@pytest.mark.parametrize("text, problem", [
    ("node.id=1\ncluster.id=abc\ndirectory.id=850bXYO4TaCvXty2WNo63w\n", "version"),
    ("version=0\nbroker.id=1\ncluster.id=abc\n", "version"),
    ("version=1\ncluster.id=abc\n", "node.id"),
    ("version=1\nnode.id=x\ncluster.id=abc\n", "node.id"),
    ("version=1\nnode.id=1\n", "cluster.id"),
    ("version=1\nnode.id=1\ncluster.id=abc\ndirectory.id=!!\n", "directory.id"),
    ("version=1\nnode.id=1\ncluster.id=abc\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n", "reserved"),
    ("version=1\nnode.id=1\ncluster.id=abc\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ\n", "reserved"),
])
def test_damaged_meta_properties(text, problem):
    with pytest.raises(StorageError) as info:
        read_meta_properties(text.encode(), "data/meta.properties")
    assert info.value.file == "data/meta.properties" and problem in str(info.value)


def test_meta_properties_of_another_node_or_cluster():
    raw = encode_meta_properties(2, "clusterA", DIR_ID)
    assert read_meta_properties(raw, node_id=2, cluster_id="clusterA").directory_id == DIR_ID
    with pytest.raises(CorruptFile, match="node.id 2 does not match this node's id 3"):
        read_meta_properties(raw, node_id=3)
    with pytest.raises(CorruptFile, match="'clusterA', but this cluster is 'clusterB'"):
        read_meta_properties(raw, cluster_id="clusterB")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_any_bytes_as_meta_properties_raise_only_storage_errors(raw):
    try:
        read_meta_properties(raw)
    except StorageError:
        pass


# ---------------------------------------------------------------- segments and snapshots

def segment(batches: int = 4) -> bytes:
    out, offset = b"", 0
    for _ in range(batches):
        b = RecordBatch.build(offset, [b"a", b"b"], timestamp_ms=0, leader_epoch=1)
        out += encode_batch(b)
        offset += 2
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_flipped_byte_in_a_segment_is_refused_or_harmless(data):
    """No flipped byte makes recovery lose a whole batch silently: either the log is refused
    with the file and an offset, or (a byte no check covers) every batch is still there."""
    raw = bytearray(segment())
    pos = data.draw(st.integers(0, len(raw) - 1))
    raw[pos] ^= data.draw(st.integers(1, 255))
    try:
        log, _ = recover_log({segment_name(0): bytes(raw)})
    except CorruptFile as e:
        assert e.file == segment_name(0) and e.offset is not None and 0 <= e.offset < len(raw)
    else:
        size = len(raw) // 4
        if log.end_offset < 8:
            # the one blind spot, as in Kafka: a length field grown past the end of the file
            # reads as a torn tail (a crash's partial write), so the batch is cut there
            assert 8 <= pos % size < 12 and log.end_offset == 2 * (pos // size)


def test_damaged_snapshot_names_file_and_offset():
    snap = encode_snapshot(4, 1, [b"state"], 0)
    name = f"{DIR}/{file_name(4, 1)}"
    data = bytearray(snap.data)
    data[40] ^= 0xFF
    files = {name: bytes(data), segment_name(4): b""}
    with pytest.raises(CorruptFile) as info:
        recover_log(files)
    assert info.value.file == name and info.value.offset is not None
    with pytest.raises(CorruptFile, match="header or footer"):
        decode_snapshot(4, 1, snap.data[:0])


def test_storage_errors_are_kraft_errors():
    assert issubclass(CorruptFile, StorageError) and issubclass(StorageError, KraftError)
    err = CorruptFile("__cluster_metadata-0/x.log", "bad", offset=7).located("/data/controller-1")
    assert str(err) == "/data/controller-1/__cluster_metadata-0/x.log: bad (byte offset 7)"


# ---------------------------------------------------------------- leader-epoch-checkpoint

def test_leader_epoch_checkpoint_reads_kafkas_file_and_refuses_a_malformed_one():
    from pathlib import Path

    from kraft_testkit.raft.log import decode_epoch_checkpoint, encode_epoch_checkpoint

    golden = (Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc" /
              "B_mv18_3brokers_restart" / "__cluster_metadata-0" / "leader-epoch-checkpoint")
    raw = golden.read_bytes()
    assert decode_epoch_checkpoint(raw) == [(1, 0), (2, 25)]
    assert encode_epoch_checkpoint([(1, 0), (2, 25)]) == raw  # byte for byte as Kafka writes it
    for bad, problem in [(b"1\n0\n", "version"), (b"0\nx\n", "line 2"), (b"0\n2\n1 0\n", "2 entries"),
                         (b"0\n1\n1 zero\n", "line 3")]:
        with pytest.raises(CorruptFile, match=problem):
            decode_epoch_checkpoint(bad)


def test_a_bare_quorum_node_with_a_damaged_log_stays_down_and_says_why():
    from kraft_testkit.quorum import Quorum

    q = Quorum(3, seed=2)
    q.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
    q.append([b"x"])
    victim = next(n for n in q.nodes if n != q.active_controller)
    q.faults.kill(victim)
    q.sim.damage(victim, segment_name(0), 100)
    with pytest.raises(CorruptFile) as info:
        q.faults.start(victim)
    assert info.value.file == segment_name(0) and info.value.offset is not None
    assert q.sim.process(victim).state.value == "failed"
    q.append([b"y"])  # the other two go on
