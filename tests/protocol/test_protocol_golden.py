"""Golden bytes: real KRaft metadata logs written by Apache Kafka (see tests/golden/README.md).

Every batch and record of B and C decodes, CRCs verify, everything re-encodes to the same bytes,
and our decode agrees field by field with the independent decode stored beside each log.
Folder A is golden at batch level; its pre-release PartitionRecord v1 values must fail cleanly
with the released schema and decode with ``prerelease=True``.
"""

from __future__ import annotations

import json
import struct

import pytest
from crc32c import crc32c

from _protocol_support import DECODED_JSON, FOLDERS, requires_golden, segment_bytes, segment_path
from kraft_testkit.errors import KraftError
from kraft_testkit.protocol import frames, log, records
from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.frames import ControlRecord, MetadataRecord
from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.protocol.uuid import Uuid

pytestmark = requires_golden

EXPECTED_COUNTS = {"A": (45, 94), "B": (23, 26), "C": (21, 24)}  # batches, records (README)
SHA256 = {
    "A": "a5312024f75314892d0eccbbb227f0f734d369a44db61bfec3b5469267c79757",
    "B": "9d84f90ed1ac8bb312488582182b44f9fd6d7da5756b012311013bc49c621d1a",
    "C": "8a3ee8e6c6fcf9ec466a310d9d562bc9df0011ec1209ccb07441c5c3f75c0e01",
}


def decoded(folder: str, **kw) -> list[log.LogBatch]:
    return list(log.iter_log(segment_bytes(folder), **kw))


def independent(folder: str) -> list[dict]:
    return json.loads((FOLDERS[folder] / DECODED_JSON).read_text())


def payloads(folder: str, **kw):
    return [(r.offset, b, r) for b in decoded(folder, **kw) for r in b.records]


def metadata_of(folder: str, type_name: str, **kw):
    return [(off, r.payload.message) for off, _, r in payloads(folder, **kw)
            if isinstance(r.payload, MetadataRecord)
            and type(r.payload.message).__name__ == type_name]


# ------------------------------------------------------------------ the files are what we think


@pytest.mark.parametrize("folder", "ABC")
def test_golden_file_is_the_documented_one(folder):
    import hashlib

    assert hashlib.sha256(segment_bytes(folder)).hexdigest() == SHA256[folder]


def test_c_is_a_byte_prefix_of_b():
    b, c = segment_bytes("B"), segment_bytes("C")
    assert len(c) < len(b)
    assert b.startswith(c)
    # ... and the prefix ends exactly on a batch boundary: B's first 21 batches are C's
    b_batches = decoded("B")
    assert [x.batch for x in b_batches[:21]] == [x.batch for x in decoded("C")]
    assert b_batches[21].position == len(c)


# ------------------------------------------------------------------ decode, CRC, re-encode


@pytest.mark.parametrize("folder", "BC")
def test_every_batch_and_record_decodes_and_reencodes(folder):
    data = segment_bytes(folder)
    batches = decoded(folder)
    n_batches, n_records = EXPECTED_COUNTS[folder]
    assert len(batches) == n_batches
    assert sum(len(b.records) for b in batches) == n_records
    offsets = [r.offset for b in batches for r in b.records]
    assert offsets == list(range(n_records)), "offsets are dense from 0"
    for lb in batches:
        batch = lb.batch
        raw = data[lb.position:lb.position + lb.size]
        stored_crc = struct.unpack_from(">I", raw, 17)[0]
        assert batch.crc == stored_crc == crc32c(raw[21:])  # CRC32C over attributes..end
        assert batch.crc_valid
        assert batch.magic == 2 and batch.compression == "none"
        assert records.encode_batch(batch) == raw
        for r in lb.records:
            assert r.payload is not None
            if isinstance(r.payload, ControlRecord):
                assert batch.is_control
                key, value = frames.encode_control(r.payload.message, r.payload.version)
                assert (key, value) == (r.record.key, r.record.value)
            else:
                assert not batch.is_control and r.record.key is None
                assert frames.encode_record(r.payload) == r.record.value
        # Kafka built each batch the way RecordBatch.build does
        rebuilt = RecordBatch.build(
            batch.base_offset, [r.record.value for r in lb.records],
            keys=[r.record.key for r in lb.records], timestamp_ms=batch.base_timestamp,
            leader_epoch=batch.partition_leader_epoch, control=batch.is_control)
        assert rebuilt.encode() == raw
    assert log.write_log(batches) == data
    assert log.write_log(log.read_log(segment_path(folder))) == data


def test_a_round_trips_at_batch_level():
    data = segment_bytes("A")
    batches = list(log.iter_log(data, decode=False))
    n_batches, n_records = EXPECTED_COUNTS["A"]
    assert len(batches) == n_batches
    assert sum(len(b.batch.records) for b in batches) == n_records
    assert all(b.batch.crc_valid for b in batches)
    assert log.write_log(batches) == data
    assert records.encode_batches(b for _, b in records.iter_batches(data)) == data


def test_a_decodes_fully_with_prerelease_and_reencodes():
    data = segment_bytes("A")
    batches = decoded("A", prerelease=True)
    assert sum(len(b.records) for b in batches) == 94
    for lb in batches:
        for r in lb.records:
            if isinstance(r.payload, MetadataRecord):
                assert frames.encode_record(r.payload) == r.record.value
    assert log.write_log(batches) == data


# ------------------------------------------------------------------ agreement with the independent decode


def kafka_json(msg, version: int) -> dict:
    """Every field of ``version`` under Kafka's PascalCase names, uuids in base64url, like the
    independent decode (which shows tagged fields absent from the wire with their default)."""
    out = {}
    for f, value in zip(type(msg)._field_specs, msg):
        if version not in f.versions:
            continue
        if value is None:
            out[f.name] = None
        elif f.is_array:
            out[f.name] = [_kafka_scalar(x, version) for x in value]
        else:
            out[f.name] = _kafka_scalar(value, version)
    return out


def _kafka_scalar(value, version):
    if isinstance(value, Uuid):
        return str(value)
    if isinstance(value, tuple):  # a struct (messages are tuples)
        return kafka_json(value, version)
    return value


def _pascal(obj):
    """The independent decode without its ``_absentTaggedFields`` annotations (at any depth)."""
    if isinstance(obj, dict):
        return {k: _pascal(v) for k, v in obj.items() if k != "_absentTaggedFields"}
    if isinstance(obj, list):
        return [_pascal(x) for x in obj]
    return obj


def _camel_on_wire(obj):
    """The independent decode as ``to_json`` prints it: camelCase keys, absent tags left out."""
    if isinstance(obj, dict):
        absent = set(obj.get("_absentTaggedFields", ()))
        return {k[:1].lower() + k[1:]: _camel_on_wire(v) for k, v in obj.items()
                if k != "_absentTaggedFields" and k not in absent}
    if isinstance(obj, list):
        return [_camel_on_wire(x) for x in obj]
    return obj


def _compare_folder(folder: str, **kw) -> int:
    ours = decoded(folder, **kw)
    theirs = independent(folder)
    assert len(ours) == len(theirs)
    checked = 0
    for lb, jb in zip(ours, theirs):
        h = jb["header"]
        b = lb.batch
        assert (b.base_offset, b.partition_leader_epoch, b.magic, b.attributes, b.is_control,
                b.last_offset_delta, b.base_timestamp, b.max_timestamp, b.producer_id,
                b.producer_epoch, b.base_sequence, len(b.records), b.crc_valid) == (
            h["baseOffset"], h["partitionLeaderEpoch"], h["magic"], h["attributes"], h["control"],
            h["lastOffsetDelta"], h["baseTimestamp"], h["maxTimestamp"], h["producerId"],
            h["producerEpoch"], h["baseSequence"], h["records"], h["crcOk"])
        assert lb.batch_length == h["batchLength"]
        assert len(lb.records) == len(jb["records"])
        for r, jr in zip(lb.records, jb["records"]):
            assert r.offset == jr["offset"]
            assert r.record.value.hex() == jr["valueHex"]
            value = _pascal(jr["value"])
            p = r.payload
            if "control" in jr:
                assert isinstance(p, ControlRecord)
                assert p.control_type == jr["controlType"]
                assert type(p.message).__name__ == jr["control"]
                version = p.version
                assert version == value["Version"]
            else:
                assert isinstance(p, MetadataRecord)
                if kw.get("prerelease") and "note" not in jr:
                    # the independent decode used the released schema for this record
                    p = frames.decode_metadata(r.record.value)
                assert (p.frame_version, p.api_key, type(p.message).__name__, p.version) == (
                    jr["frameVersion"], jr["apiKey"], jr["type"], jr["version"])
                version = p.version
            assert kafka_json(p.message, version) == value, f"offset {r.offset}"
            # to_json (camelCase) shows exactly the fields that were on the wire
            assert p.message.to_json(version) == _camel_on_wire(jr["value"]), f"offset {r.offset}"
            checked += 1
    return checked


@pytest.mark.parametrize("folder", "BC")
def test_fields_match_the_independent_decode(folder):
    assert _compare_folder(folder) == EXPECTED_COUNTS[folder][1]


def test_a_fields_match_the_independent_decode_with_prerelease():
    """A's PartitionRecords were decoded with the pre-release layout there (they carry a "note"),
    everything else (PartitionChangeRecord v1 included) with the released one."""
    notes = [jr["offset"] for jb in independent("A") for jr in jb["records"] if "note" in jr]
    assert notes == [24, 25, 26, 27, 28, 42]
    assert _compare_folder("A", prerelease=True) == 94


# ------------------------------------------------------------------ known values


@pytest.mark.parametrize("folder", "ABC")
def test_known_cluster_facts(folder):
    kw = {"prerelease": True} if folder == "A" else {}
    regs = metadata_of(folder, "RegisterBrokerRecord", **kw)
    assert [m.broker_id for _, m in regs] == [0, 1, 2]
    epochs = {"A": [6, 10, 17], "B": [8, 14, 21], "C": [8, 14, 21]}[folder]
    # a broker's epoch is the offset of its registration record
    assert [m.broker_epoch for _, m in regs] == epochs == [off for off, _ in regs]
    for _, m in regs:
        assert m.fenced is True and m.rack is None
        assert [(e.name, e.host) for e in m.end_points] == [("PLAINTEXT", "localhost")]
    [(_, ctrl)] = metadata_of(folder, "RegisterControllerRecord", **kw)
    assert ctrl.controller_id == 1000
    assert [(e.name, e.host) for e in ctrl.end_points] == [("CONTROLLER", "localhost")]
    level = 16 if folder == "A" else 18
    assert [(m.name, m.feature_level) for _, m in metadata_of(folder, "FeatureLevelRecord", **kw)
            ] == [("metadata.version", level)]
    assert [(f.name, f.max_supported_version) for _, m in regs for f in m.features] == [
        ("metadata.version", level)] * 3
    # every broker's first change record unfences it at its registered epoch
    changes = metadata_of(folder, "BrokerRegistrationChangeRecord", **kw)
    first = {}
    for _, m in changes:
        first.setdefault(m.broker_id, m)
    assert {b: (m.broker_epoch, m.fenced) for b, m in first.items()} == {
        0: (epochs[0], -1), 1: (epochs[1], -1), 2: (epochs[2], -1)}
    leader_changes = [(off, b.batch.partition_leader_epoch, r.payload.message)
                      for off, b, r in payloads(folder, **kw) if isinstance(r.payload, ControlRecord)]
    assert leader_changes[0][:2] == (0, 1)
    for _, _, lc in leader_changes:
        assert lc.leader_id == 1000
        assert [v.voter_id for v in lc.voters] == [v.voter_id for v in lc.granting_voters] == [1000]


def test_b_register_broker_v3_log_dirs_and_second_leader_change():
    regs = {m.broker_id: m for _, m in metadata_of("B", "RegisterBrokerRecord")}
    assert str(regs[0].log_dirs[0]) == "850bXYO4TaCvXty2WNo63w"  # broker 0's directory.id
    assert all(len(m.log_dirs) == 2 for m in regs.values())
    versions = {r.payload.version for _, _, r in payloads("B")
                if type(r.payload.message).__name__ == "RegisterBrokerRecord"}
    assert versions == {3}
    last = decoded("B")[-1]
    [rec] = last.records
    assert last.batch.is_control and last.batch.partition_leader_epoch == 2
    assert rec.offset == 25
    assert rec.payload.type_name == "LEADER_CHANGE" and rec.payload.message.leader_id == 1000
    # C stops before the restart: one LeaderChangeMessage only
    assert sum(isinstance(r.payload, ControlRecord) for _, _, r in payloads("C")) == 1


def test_a_topics_and_partitions():
    topics = {m.name: m.topic_id for _, m in metadata_of("A", "TopicRecord", prerelease=True)}
    assert set(topics) == {"__consumer_offsets", "topic"}
    assert str(topics["__consumer_offsets"]) == "JiPG0GbKRRqpJrShexbMfw"
    assert str(topics["topic"]) == "X5HJ16TOTVq6t4OyiVmQOw"
    configs = {(m.resource_name, m.name): m.value
               for _, m in metadata_of("A", "ConfigRecord", prerelease=True)}
    assert configs == {("__consumer_offsets", "compression.type"): "producer",
                       ("__consumer_offsets", "cleanup.policy"): "compact",
                       ("__consumer_offsets", "segment.bytes"): "104857600"}
    parts = {(m.topic_id, m.partition_id): m
             for _, m in metadata_of("A", "PartitionRecord", prerelease=True)}
    offsets = topics["__consumer_offsets"]
    assert {p: (m.leader, m.replicas, m.isr) for (t, p), m in parts.items() if t == offsets} == {
        0: (1, (1,), (1,)), 1: (2, (2,), (2,)), 2: (0, (0,), (0,)), 3: (0, (0,), (0,)),
        4: (2, (2,), (2,))}
    topic0 = parts[(topics["topic"], 0)]
    assert (topic0.leader, topic0.replicas, topic0.isr) == (0, (0, 1, 2), (0, 1, 2))
    for m in parts.values():
        assert m.eligible_leader_replicas == () and m.last_known_elr == ()
        assert m.leader_epoch == 0 and m.partition_epoch == 0
    # ISR shrink and leader moves of "topic"-0 (PartitionChangeRecord v1)
    moves = [(off, m.isr, m.leader) for off, m in metadata_of("A", "PartitionChangeRecord",
                                                             prerelease=True)
             if m.topic_id == topics["topic"]]
    assert moves[:3] == [(47, (0, 1), -2), (52, (1,), 1), (64, (1, 2), -2)]


# ------------------------------------------------------------------ A's pre-release records


def test_a_prerelease_partition_record_fails_cleanly_without_prerelease():
    with pytest.raises(DecodeError) as info:
        decoded("A")
    e = info.value
    assert isinstance(e, KraftError)
    assert e.log_offset == 24  # the first PartitionRecord v1
    assert "offset 24" in str(e)
    assert e.path == "PartitionRecord(v1).Directories"
    assert "Directories" in str(e)
    value = payloads("A", prerelease=True)[24][2].record.value
    # the offset is absolute in the segment: it points at the value's bytes in the file
    data = segment_bytes("A")
    assert e.offset is not None and 0 <= e.offset <= len(data)
    assert value in data[e.offset - len(value):e.offset + len(value)]


def test_a_every_prerelease_partition_record_fails_alone_and_decodes_with_prerelease():
    recs = [r for _, _, r in payloads("A", prerelease=True)
            if isinstance(r.payload, MetadataRecord) and r.payload.api_key == 3]
    assert [r.offset for r in recs] == [24, 25, 26, 27, 28, 42]
    for r in recs:
        with pytest.raises(DecodeError) as info:
            frames.decode_metadata(r.record.value)
        assert info.value.path.startswith("PartitionRecord(v1).")
        msg = frames.decode_metadata(r.record.value, prerelease=True).message
        assert msg._spec.extra.get("dialect") == "prerelease-2023-11"
        assert msg.eligible_leader_replicas == () and msg.last_known_elr == ()
        assert msg.to_json(1)["eligibleLeaderReplicas"] == []
        assert msg.to_json(1)["lastKnownELR"] == []


def test_a_payload_error_offset_points_into_the_file():
    data = segment_bytes("A")
    batch = next(b for b in log.iter_log(data, decode=False) if b.base_offset == 20)
    with pytest.raises(DecodeError) as info:
        decoded("A")
    e = info.value
    assert batch.position + records.HEADER_SIZE <= e.offset < batch.position + batch.size
    # the bytes there are the 0x02 that reads as a one-element Directories array
    assert data[e.offset - 1] == 0x02
