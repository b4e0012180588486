"""Round trips of every declared message class at every version, driven by the field specs.

For each (class, version): ``decode(encode(x)) == x``, ``encode(decode(b)) == b``,
``from_json(to_json(x)) == x`` (minus unknown tags, which JSON drops), the metadata frame and the
control record wrappers, and unknown tagged fields appended to the bytes surviving byte for byte.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _protocol_support import (
    ALL_CLASS_VERSION_IDS,
    ALL_CLASS_VERSIONS,
    ALL_CLASSES,
    class_id,
    is_flexible,
    message_strategy,
    rich_sample,
    strip_unknown_tags,
    unknown_tags,
)
from kraft_testkit.protocol import frames, log, records
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.records import Header, Record, RecordBatch

SETTINGS = settings(max_examples=8, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def uvarint(v: int) -> bytes:
    """Our own LEB128 writer, independent of the codec's."""
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _dialect(cls):
    return cls._spec.extra.get("dialect")


def _check_wrappers(cls, version, msg):
    """The metadata frame / control record that carries ``msg`` round-trips too."""
    spec = cls._spec
    if spec.kind == "metadata":
        value = frames.encode_metadata(msg, version)
        dialect = _dialect(cls)
        expected_frame = frames.DRAFT_FRAME if dialect == "draft" else frames.RELEASED_FRAME
        assert value[0] == expected_frame
        rec = frames.decode_metadata(value, prerelease=dialect is not None and dialect != "draft")
        assert rec.message == msg
        assert type(rec.message) is cls
        assert (rec.version, rec.frame_version, rec.api_key) == (version, expected_frame,
                                                                 spec.api_key)
        assert frames.encode_record(rec) == value
    if "control_type" in spec.extra:
        msg = msg.replace(version=version)
        key, value = frames.encode_control(msg, version)
        assert key == spec.extra["control_type"].to_bytes(4, "big")
        rec = frames.decode_control(key, value)
        assert (rec.control_type, rec.version, rec.message) == (
            spec.extra["control_type"], version, msg)


@pytest.mark.parametrize(("cls", "version"), ALL_CLASS_VERSIONS, ids=ALL_CLASS_VERSION_IDS)
@SETTINGS
@given(data=st.data())
def test_round_trip(cls, version, data):
    msg = data.draw(message_strategy(cls, version, with_unknown_tags=True), label="msg")
    raw = msg.encode(version)
    back = cls.decode(raw, version)
    assert back == msg
    assert back.encode(version) == raw
    # JSON through real text: every value must be JSON-serialisable
    text = json.dumps(msg.to_json(version))
    assert cls.from_json(json.loads(text), version) == strip_unknown_tags(msg)
    _check_wrappers(cls, version, strip_unknown_tags(msg))


@pytest.mark.parametrize(("cls", "version"), ALL_CLASS_VERSIONS, ids=ALL_CLASS_VERSION_IDS)
def test_round_trip_rich_sample(cls, version):
    """A deterministic sample with every field of the version set (two-element arrays)."""
    msg = rich_sample(cls, version)
    raw = msg.encode(version)
    assert cls.decode(raw, version) == msg
    assert cls.decode(raw, version).encode(version) == raw
    assert cls.from_json(json.loads(json.dumps(msg.to_json(version))), version) == msg
    _check_wrappers(cls, version, msg)


def _clear_top_tags(cls, version, msg):
    changes = {f.py_name: d for f, d in zip(cls._field_specs, cls._defaults)
               if f.tag is not None and version in f.tagged and version in f.versions}
    return msg.replace(_unknown_tags=(), **changes)


FLEXIBLE = [(c, v) for c, v in ALL_CLASS_VERSIONS if is_flexible(c, v)]


@pytest.mark.parametrize(("cls", "version"), FLEXIBLE,
                         ids=[f"{class_id(c)}-v{v}" for c, v in FLEXIBLE])
@SETTINGS
@given(data=st.data())
def test_unknown_tags_appended_to_bytes_survive(cls, version, data):
    msg = _clear_top_tags(cls, version, data.draw(message_strategy(cls, version), label="msg"))
    raw = msg.encode(version)
    assert raw[-1] == 0, "a flexible message without tagged fields ends with an empty tag section"
    tags = data.draw(unknown_tags(cls, max_size=3).filter(bool), label="tags")
    section = uvarint(len(tags)) + b"".join(uvarint(t) + uvarint(len(d)) + d for t, d in tags)
    wire = raw[:-1] + section
    back = cls.decode(wire, version)
    assert back._unknown_tags == tags
    assert back == msg.replace(_unknown_tags=tags)
    assert back.encode(version) == wire
    # JSON has no place for unknown tags: it drops them
    assert cls.from_json(back.to_json(version), version) == msg


def test_every_declared_class_is_exercised():
    """The registries hold what Kafka releases (guards the parametrisation above)."""
    assert sorted(M.METADATA) == [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15, 17, 18, 19, 20,
                                  21, 22, 23, 24, 25, 26, 27, 28]
    assert sorted(M.DRAFT_METADATA) == list(range(17))
    assert sorted(M.CONTROL) == [2, 3, 4, 5, 6]
    assert set(M.REQUESTS) == set(M.RESPONSES)
    assert {52, 53, 54, 55, 1, 59, 62, 63, 64} <= set(M.REQUESTS)
    assert set(M.PRERELEASE_METADATA) == {(3, 0), (3, 1), (5, 0), (5, 1)}
    for name in ("RequestHeader", "ResponseHeader", "LeaderChangeMessage", "QuorumStateData"):
        assert M.BY_NAME[name] in ALL_CLASSES
    assert len(ALL_CLASS_VERSIONS) > 250


def test_released_and_draft_frames_pick_their_dialect():
    """Same type id, two dialects: frame 0 picks the draft class, frame 1 the released one."""
    draft = M.DRAFT_METADATA[2]
    released = M.METADATA[2]
    assert draft is not released
    for cls in (draft, released):
        msg = rich_sample(cls, 0)
        rec = frames.decode_metadata(frames.encode_metadata(msg, 0))
        assert type(rec.message) is cls and rec.message == msg


# ------------------------------------------------------------------ record batches

_headers = st.lists(st.builds(Header, st.text(max_size=6), st.none() | st.binary(max_size=6)),
                    max_size=2).map(tuple)
_records = st.lists(
    st.builds(Record, offset_delta=st.integers(-(1 << 31), (1 << 31) - 1),
              timestamp_delta=st.integers(-(1 << 63), (1 << 63) - 1),
              key=st.none() | st.binary(max_size=10), value=st.none() | st.binary(max_size=40),
              headers=_headers, attributes=st.integers(0, 255)),
    min_size=1, max_size=4).map(tuple)
_i32 = st.integers(-(1 << 31), (1 << 31) - 1)
_i64 = st.integers(-(1 << 63), (1 << 63) - 1)
batches = st.builds(
    RecordBatch, base_offset=_i64, records=_records, partition_leader_epoch=_i32,
    attributes=st.sampled_from([0, 1, 0x08, 0x10, 0x20, 0x30, 0x21]),
    last_offset_delta=st.integers(0, (1 << 31) - 1), base_timestamp=_i64, max_timestamp=_i64,
    producer_id=_i64, producer_epoch=st.integers(-(1 << 15), (1 << 15) - 1), base_sequence=_i32)


@settings(max_examples=60, deadline=None)
@given(st.lists(batches, min_size=1, max_size=3))
def test_record_batches_round_trip(batch_list):
    data = records.encode_batches(batch_list)
    got = [b for _, b in records.iter_batches(data)]
    assert got == batch_list
    assert all(b.crc_valid for b in got)
    assert records.encode_batches(got) == data
    positions = [p for p, _ in records.iter_batches(data)]
    assert positions == [sum(len(b.encode()) for b in batch_list[:k])
                         for k in range(len(batch_list))]
    # the segment writer gives the same bytes, from RecordBatch and from LogBatch
    assert log.write_log(batch_list) == data
    assert log.write_log(list(log.iter_log(data, decode=False))) == data


def test_built_batch_round_trips_metadata_records():
    msgs = [M.FeatureLevelRecord(name="metadata.version", feature_level=18),
            M.NoOpRecord(), M.TopicRecord(name="t", topic_id=b"\x01" * 16)]
    values = [frames.encode_metadata(m, 0) for m in msgs]
    batch = RecordBatch.build(40, values, timestamp_ms=1_700_000_000_000, leader_epoch=3)
    [lb] = list(log.iter_log(batch.encode()))
    assert [r.offset for r in lb.records] == [40, 41, 42]
    assert [r.timestamp for r in lb.records] == [1_700_000_000_000] * 3
    assert [r.payload.message for r in lb.records] == msgs
    assert lb.batch.last_offset == 42 and lb.batch.partition_leader_epoch == 3
    assert lb.size == len(batch.encode())


def test_gzip_batches_encode_to_the_same_bytes_whatever_the_wall_clock(monkeypatch):
    """gzip's header has a timestamp; Kafka (Java's GZIPOutputStream) writes 0 there, and so must
    we, or the same batch gives other bytes a second later (a Hypothesis round trip caught it)."""
    import time as time_module

    plain = RecordBatch.build(0, [b"abc" * 20, b"def"], timestamp_ms=5, leader_epoch=1)
    batch = RecordBatch(plain.base_offset, plain.records, plain.partition_leader_epoch,
                        1, plain.last_offset_delta, plain.base_timestamp, plain.max_timestamp)
    first = records.encode_batch(batch)
    monkeypatch.setattr(time_module, "time", lambda: 4_000_000_000.0)
    assert records.encode_batch(batch) == first
    body = first[records.HEADER_SIZE:]
    assert body[:2] == b"\x1f\x8b" and body[4:8] == b"\x00\x00\x00\x00"  # gzip MTIME = 0
    [(_, back)] = list(records.iter_batches(first))
    assert [r.value for r in back.records] == [b"abc" * 20, b"def"]
