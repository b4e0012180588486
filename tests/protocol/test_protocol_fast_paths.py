"""The codec's fast paths give what the checked paths give, and the batch-layer value classes
behave like the frozen dataclasses they replaced.

Fast paths: each message class has a fast decoder per version (nested structs inline, no
field-path bookkeeping) that hands over to the checked decoder on any error, and record batch
bodies of the plain shape KRaft writes are read without varint calls. Whatever a fast path
returns must be exactly what the checked path returns for the same bytes.
"""

from __future__ import annotations

import copy
import pickle
import struct

import pytest
from _protocol_support import (
    ALL_CLASS_VERSION_IDS,
    ALL_CLASS_VERSIONS,
    requires_golden,
    rich_sample,
    segment_bytes,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft_testkit.protocol import frames, log, records
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.log import LogBatch, LogRecord
from kraft_testkit.protocol.records import Header, Record, RecordBatch

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(fn, *args):
    """What a decoder gives: ``("ok", result)`` or ``("error", type, message, offset, path)``."""
    try:
        return ("ok", fn(*args))
    except DecodeError as e:
        return ("error", type(e), str(e), e.offset, e.path)


def same(a, b) -> bool:
    """Equal, counting NaN float64 values (never equal to themselves) as equal."""
    return a == b or (repr(a) == repr(b) and "nan" in repr(a))


def damaged(raw: bytes):
    """Every truncation, and at each byte a flipped bit, 0xFF and an inserted huge length."""
    for n in range(len(raw)):
        yield raw[:n]
    for i in range(len(raw)):
        b = raw[i]
        for new in (b ^ (1 << (i % 8)), 0xFF):
            if new != b:
                yield raw[:i] + bytes([new]) + raw[i + 1:]
        yield raw[:i] + b"\xff\xff\xff\xff\x0f" + raw[i:]


# ------------------------------------------------------------------ fast message decoders


def fast_and_checked(cls, version):
    cls.decode(rich_sample(cls, version).encode(version), version)  # generates both
    return cls._decoders[version], cls._checked[version]


@pytest.mark.parametrize(("cls", "version"), ALL_CLASS_VERSIONS, ids=ALL_CLASS_VERSION_IDS)
def test_fast_decoder_agrees_with_checked_decoder_on_damaged_bytes(cls, version):
    fast, checked = fast_and_checked(cls, version)
    raw = rich_sample(cls, version).encode(version)
    assert fast is not checked
    assert fast(raw, 0) == checked(raw, 0) == (cls.decode(raw, version), len(raw))
    for bad in damaged(raw):
        assert same(outcome(fast, bad, 0), outcome(checked, bad, 0)), bad.hex()


@FUZZ
@given(st.sampled_from(ALL_CLASS_VERSIONS), st.binary(max_size=80), st.integers(0, 3))
def test_fast_decoder_agrees_with_checked_decoder_on_random_bytes(cls_version, data, start):
    cls, version = cls_version
    fast, checked = fast_and_checked(cls, version)
    assert same(outcome(fast, data, start), outcome(checked, data, start))


def test_decoding_a_struct_class_directly():
    voter = M.VotersRecord.Voter(voter_id=3, endpoints=[M.VotersRecord.Endpoint(host="h")])
    raw = voter.encode(0)
    assert M.VotersRecord.Voter.decode(raw, 0) == voter
    with pytest.raises(DecodeError) as info:
        M.VotersRecord.Voter.decode(raw[:-10], 0)  # inside the host
    assert info.value.path == "Endpoints[0].Host"


def test_nested_error_paths_survive_the_fast_path():
    """The fast decoder inlines nested structs; the error still names the nested field."""
    msg = M.VotersRecord(voters=[M.VotersRecord.Voter(voter_id=i, endpoints=[
        M.VotersRecord.Endpoint(name="CONTROLLER", host=f"c-{i}", port=9093)]) for i in range(3)])
    raw = bytearray(msg.encode(0))
    at = raw.index(b"c-2") - 1  # the compact length of the last host
    raw[at] = 0x7F
    with pytest.raises(DecodeError) as info:
        M.VotersRecord.decode(bytes(raw), 0)
    assert info.value.path == "Voters[2].Endpoints[0].Host"
    assert info.value.offset == at + 1


def test_a_tagged_field_must_fill_its_declared_size():
    """A tagged string shorter than its tag's size is an error where it is, not trailing bytes
    (the string's own end used to stand in for the tag's end)."""
    cls = M.BY_NAME["BeginTransactionRecord"]
    fast_and_checked(cls, 0)
    raw = cls(name="ab").encode(0)
    assert raw.endswith(b"\x01\x00\x03\x03ab")  # 1 tag: tag 0, size 3, compact string "ab"
    bad = raw[:-4] + b"\x04\x03abX"  # the tag says 4 bytes; the string takes 3
    for dec in (cls._decoders[0], cls._checked[0]):
        with pytest.raises(DecodeError) as info:
            dec(bad, 0)
        assert "tagged field Name is 4 bytes but its value took 3" in str(info.value)
        assert info.value.path == "Name"


def test_fieldless_messages_decode_to_one_shared_object():
    """NoOpRecord (half of a KRaft log) has no fields: decoding gives one shared instance,
    unless unknown tags make it a different value."""
    value = frames.encode_metadata(M.NoOpRecord(), 0)
    a, b = frames.decode_metadata(value), frames.decode_metadata(value)
    assert a == b and a.message is b.message and a.message == M.NoOpRecord()
    tagged = M.NoOpRecord(_unknown_tags=((7, b"x"),))
    got = M.NoOpRecord.decode(tagged.encode(0), 0)
    assert got == tagged and got is not a.message


# ------------------------------------------------------------------ plain record bodies


def record_bytes(r: Record) -> bytes:
    return records._encode_record(r)


def read_both(body: bytes, count: int):
    plain = records._read_plain_records(body, count)
    checked = outcome(records._read_records, body, count, 0)
    return plain, checked


_plain_records = st.lists(
    st.builds(Record, offset_delta=st.integers(0, 300), timestamp_delta=st.integers(-70, 70),
              key=st.none() | st.binary(max_size=70), value=st.none() | st.binary(max_size=300),
              attributes=st.integers(0, 255)),
    min_size=1, max_size=4)


@FUZZ
@given(_plain_records, st.data())
def test_plain_record_reader_agrees_with_checked_reader(recs, data):
    body = b"".join(record_bytes(r) for r in recs)
    plain, checked = read_both(body, len(recs))
    assert checked == ("ok", tuple(recs))
    if plain is not None:
        assert plain == tuple(recs)
    # the same on damaged bodies: the plain reader returns what the checked one does, or None
    i = data.draw(st.integers(0, len(body) - 1))
    for bad in (body[:i], body[:i] + bytes([body[i] ^ data.draw(st.integers(1, 255))]) +
                body[i + 1:], body + b"\x00"):
        for count in (len(recs), len(recs) - 1, len(recs) + 1):
            plain, checked = read_both(bad, count)
            if plain is not None:
                assert checked == ("ok", plain), bad.hex()


@FUZZ
@given(st.binary(max_size=60), st.integers(0, 4))
def test_plain_record_reader_on_random_bytes(body, count):
    plain, checked = read_both(body, count)
    if plain is not None:
        assert checked == ("ok", plain)


def test_records_with_headers_or_long_varints_take_the_checked_reader():
    for r in (Record(0, 0, None, b"v", (Header("h", b"x"),)),  # headers
              Record(0, 1 << 20, None, b"v"),  # a 3-byte timestamp delta
              Record(70, 0, None, b"v")):  # a 2-byte offset delta
        body = record_bytes(r)
        assert records._read_plain_records(body, 1) is None
        assert records._read_records(body, 1, 0) == (r,)
        assert records.decode_batch(RecordBatch(0, (r,), last_offset_delta=0).encode())[0] \
            .records == (r,)


@requires_golden
@pytest.mark.parametrize("folder", "ABC")
def test_kafka_written_batches_take_the_plain_path(folder):
    data = segment_bytes(folder)
    for pos, batch in records.iter_batches(data):
        _, end = records.decode_batch(data, pos)
        body = data[pos + records.HEADER_SIZE:end]
        assert records._read_plain_records(body, len(batch.records)) == batch.records
        assert records._read_records(body, len(batch.records), 0) == batch.records


# ------------------------------------------------------------------ the value classes


def sample_batch(**changes) -> RecordBatch:
    recs = (Record(0, 0, None, b"a"), Record(1, 2, b"k", None, (Header("h", None),), 3))
    fields = {"base_offset": 5, "records": recs, "partition_leader_epoch": 2, "attributes": 0,
              "last_offset_delta": 1, "base_timestamp": 10, "max_timestamp": 12,
              "producer_id": -1, "producer_epoch": -1, "base_sequence": -1}
    return RecordBatch(**{**fields, **changes})


def test_record_batch_fields_defaults_and_properties():
    b = RecordBatch(7, (Record(0, 0, None, b"x"),))
    assert (b.base_offset, b.partition_leader_epoch, b.attributes, b.last_offset_delta,
            b.base_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch, b.base_sequence,
            b.magic, b.crc, b.crc_valid) == (7, -1, 0, -1, -1, -1, -1, -1, -1, 2, 0, True)
    r = b.records[0]
    assert (r.offset_delta, r.timestamp_delta, r.key, r.value, r.headers, r.attributes) == (
        0, 0, None, b"x", (), 0)
    b = sample_batch(attributes=records.CONTROL_FLAG | records.TRANSACTIONAL_FLAG | 0x08 | 1)
    assert (b.is_control, b.is_transactional, b.timestamp_type, b.compression) == (
        True, True, "LogAppendTime", "gzip")
    assert (b.last_offset, b.next_offset) == (6, 7)
    assert sample_batch(attributes=6).compression == "unknown(6)"
    assert b.size_in_bytes == len(b.encode()) == len(records.encode_batch(b))


def test_value_classes_compare_like_the_dataclasses_they_replace():
    a, b = sample_batch(), sample_batch()
    assert a == b and (a != b) is False and hash(a) == hash(b)
    # the stored CRC and its check take no part in equality
    c = sample_batch(crc=123, crc_valid=False)
    assert a == c and hash(a) == hash(c)
    assert a != sample_batch(base_sequence=0)
    # never equal to a plain tuple or another class with the same values
    assert a != tuple(a) and tuple(a) != a
    assert Header("k", None) != ("k", None)
    assert Record(0, 0, None, None) != LogRecord(0, 0, None, None)
    assert len({a, c, sample_batch(base_offset=6)}) == 2


def test_value_classes_are_immutable_and_print_their_fields():
    b = sample_batch()
    with pytest.raises(AttributeError):
        b.base_offset = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        b.extra = 1  # type: ignore[attr-defined]
    assert repr(Header("k", b"v")) == "Header(key='k', value=b'v')"
    assert repr(Record(1, 2, None, b"v")) == (
        "Record(offset_delta=1, timestamp_delta=2, key=None, value=b'v', headers=(), "
        "attributes=0)")
    assert repr(b).startswith("RecordBatch(base_offset=5, records=(Record(")
    assert repr(b).endswith("magic=2, crc=0, crc_valid=True)")
    match b:
        case RecordBatch(base_offset=5, records=(first, _)):
            assert first.value == b"a"
        case _:
            pytest.fail("keyword patterns match the fields")


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy,
                                    lambda x: pickle.loads(pickle.dumps(x)),
                                    lambda x: pickle.loads(pickle.dumps(x, protocol=0))])
def test_value_classes_copy_and_pickle(copier):
    b = sample_batch(crc=99, crc_valid=False)
    lb = next(log.iter_log(RecordBatch.build(3, [frames.encode_metadata(M.NoOpRecord(), 0)],
                                             timestamp_ms=1, leader_epoch=1).encode()))
    for x in (b, b.records[1], b.records[1].headers[0], lb, lb.records[0]):
        y = copier(x)
        assert type(y) is type(x) and y == x and tuple(y) == tuple(x)
    assert copier(lb).size == lb.size


def test_with_base_offset_keeps_everything_else():
    b = sample_batch(crc=99, crc_valid=False)
    moved = b.with_base_offset(40)
    assert type(moved) is RecordBatch
    assert (moved.base_offset, moved.last_offset) == (40, 41)
    assert tuple(moved)[1:] == tuple(b)[1:]


def test_log_batch_size_comes_from_the_file():
    values = [frames.encode_metadata(M.NoOpRecord(), 0)] * 3
    plain = RecordBatch.build(0, values, timestamp_ms=5, leader_epoch=1)
    zipped = RecordBatch(0, plain.records, 1, attributes=1, last_offset_delta=2)
    data = plain.encode() + zipped.encode()
    got = list(log.iter_log(data))
    assert [(b.position, b.size, b.batch_length) for b in got] == [
        (0, len(plain.encode()), len(plain.encode()) - 12),
        (len(plain.encode()), len(data) - len(plain.encode()),
         len(data) - len(plain.encode()) - 12)]
    for b in got:  # the header's batchLength, as written
        assert b.batch_length == struct.unpack_from(">i", data, b.position + 8)[0]
    # built by hand, a LogBatch computes its size by encoding the batch; equality ignores it
    by_hand = LogBatch(got[0].position, got[0].batch, got[0].records)
    assert by_hand.size == got[0].size and by_hand == got[0]
    assert repr(by_hand) == repr(got[0]) and "size" not in repr(by_hand)
    assert (by_hand.base_offset, by_hand.last_offset) == (0, 2)
    assert LogBatch(0, plain, (), size=7).size == 7


def test_log_record_fields():
    lb = next(log.iter_log(RecordBatch.build(3, [frames.encode_metadata(M.NoOpRecord(), 0)],
                                             timestamp_ms=1_000, leader_epoch=1).encode()))
    [r] = lb.records
    assert (r.offset, r.timestamp, r.record, r.payload.message, r.is_control) == (
        3, 1_000, lb.batch.records[0], M.NoOpRecord(), False)
    assert r == LogRecord(offset=3, timestamp=1_000, record=lb.batch.records[0], payload=r.payload)


def test_the_batch_memo_answers_only_for_the_same_bytes_whose_crc_holds(monkeypatch):
    """``decode_batch`` remembers cleanly decoded batches by their exact bytes: a memo hit is
    what decoding gives, inside a larger buffer too; other bytes (a flipped bit, a bad CRC)
    are decoded (and refused) as without the memo, and a bad-CRC batch read with
    ``verify_crc=False`` is never remembered."""
    records._BATCHES.clear()
    good = RecordBatch.build(7, [b"a", b"bc"], timestamp_ms=5, leader_epoch=3).encode()
    first, end = records.decode_batch(good)
    assert end == len(good) and records._BATCHES[good] is first
    again, _ = records.decode_batch(bytes(good))  # equal bytes, another object
    assert again is first
    framed = b"junk" + good + good  # the same batch inside a larger buffer
    assert records.decode_batch(framed, 4) == (first, 4 + len(good))
    assert records.decode_batch(framed, 4 + len(good))[0] is first
    bad = bytearray(good)
    bad[17] ^= 1  # the stored CRC no longer holds
    bad = bytes(bad)
    with pytest.raises(DecodeError, match="CRC"):
        records.decode_batch(bad)
    unchecked, _ = records.decode_batch(bad, verify_crc=False)
    assert not unchecked.crc_valid and bad not in records._BATCHES
    with pytest.raises(DecodeError, match="CRC"):
        records.decode_batch(bad)
    monkeypatch.setattr(records, "_BATCH_MEMO_ENTRIES", 0)  # no memo at all: the same answers
    records._BATCHES.clear()
    assert records.decode_batch(framed, 4) == (first, 4 + len(good))
