"""Fuzzing every decoder: random bytes, every truncation and many mutations of valid encodings.

Only :class:`KraftError` subclasses may escape (never IndexError, struct.error,
UnicodeDecodeError, zlib.error, MemoryError, RecursionError, ...), every call returns promptly
(huge lengths fail fast instead of allocating or looping), and a ``DecodeError.offset``, when
set, lies within the input.
"""

from __future__ import annotations

import gzip
import struct
import time

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _protocol_support import (
    ALL_CLASS_VERSION_IDS,
    ALL_CLASS_VERSIONS,
    requires_golden,
    rich_sample,
    segment_bytes,
)
from kraft_testkit.errors import KraftError
from kraft_testkit.protocol import frames, log, records
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.errors import CorruptRecordError, DecodeError
from kraft_testkit.protocol.records import Record, RecordBatch

PROMPT = 1.0  # CPU seconds any single decode call may take (they take microseconds); CPU time,
# not wall time, so a loaded machine that parks the process does not fail a hang check
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def attempt(fn, data: bytes, *args, **kwargs):
    """Run one decode; return its result or the KraftError it raised. Anything else escapes
    (and fails the test); so does a slow call or an error offset outside the input."""
    start = time.process_time()
    try:
        result = fn(data, *args, **kwargs)
        if hasattr(result, "__next__"):
            result = list(result)
    except KraftError as e:
        result = e
        if isinstance(e, DecodeError) and e.offset is not None:
            assert 0 <= e.offset <= len(data), f"offset {e.offset} outside {len(data)} bytes: {e}"
    elapsed = time.process_time() - start
    assert elapsed < PROMPT, f"{getattr(fn, '__name__', fn)} took {elapsed:.2f}s"
    return result


def mutations(raw: bytes):
    """Deterministic damage at every byte: a flipped bit (a different one at each position),
    0xFF (a null / -1 length), and inserted huge lengths (int32 max as a classic length, 2**32-1
    as a 5-byte uvarint compact length)."""
    for i in range(len(raw)):
        b = raw[i]
        for new in (b ^ (1 << (i % 8)), 0xFF):
            if new != b:
                yield raw[:i] + bytes([new]) + raw[i + 1:]
        for big in (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f"):
            yield raw[:i] + big + raw[i:]


# ------------------------------------------------------------------ generated message decoders


@pytest.mark.parametrize(("cls", "version"), ALL_CLASS_VERSIONS, ids=ALL_CLASS_VERSION_IDS)
def test_message_decoder_survives_truncation_and_mutation(cls, version):
    raw = rich_sample(cls, version).encode(version)
    for n in range(len(raw)):
        err = attempt(cls.decode, raw[:n], version)
        # a strict prefix of a valid encoding can never be a whole message
        assert isinstance(err, DecodeError), f"{n}-byte prefix decoded: {err!r}"
    for bad in mutations(raw):
        got = attempt(cls.decode, bad, version)
        if not isinstance(got, KraftError):
            # whatever we decode, we can write again
            type(got).decode(got.encode(version), version)


@FUZZ
@given(st.sampled_from(ALL_CLASS_VERSIONS), st.binary(max_size=80))
def test_message_decoders_on_random_bytes(cls_version, data):
    cls, version = cls_version
    attempt(cls.decode, data, version)


# ------------------------------------------------------------------ metadata frames, control records

METADATA_CLASS_VERSIONS = [(c, v) for c, v in ALL_CLASS_VERSIONS if c._spec.kind == "metadata"]
CONTROL_CLASS_VERSIONS = [(c, v) for c, v in ALL_CLASS_VERSIONS if "control_type" in c._spec.extra]


@pytest.mark.parametrize(("cls", "version"), METADATA_CLASS_VERSIONS,
                         ids=[f"{c._spec.extra.get('dialect', 'released')}:{c.__name__}-v{v}"
                              for c, v in METADATA_CLASS_VERSIONS])
def test_decode_metadata_survives_truncation_and_mutation(cls, version):
    value = frames.encode_metadata(rich_sample(cls, version), version)
    for n in range(len(value)):
        for prerelease in (False, True):
            assert isinstance(attempt(frames.decode_metadata, value[:n], prerelease=prerelease),
                              DecodeError)
    for bad in mutations(value):
        attempt(frames.decode_metadata, bad)
        attempt(frames.decode_metadata, bad, prerelease=True)


@FUZZ
@given(st.sampled_from([0, 1, 2, 0x80]), st.integers(0, 30), st.integers(0, 4),
       st.binary(max_size=60))
def test_decode_metadata_on_random_bodies(frame, api_key, version, body):
    value = bytes([frame, api_key, version]) + body
    attempt(frames.decode_metadata, value)
    attempt(frames.decode_metadata, value, prerelease=True)


@FUZZ
@given(st.binary(max_size=40))
def test_decode_metadata_on_random_bytes(value):
    attempt(frames.decode_metadata, value)


def _control(key, value):
    """decode_control's error offsets point into the key or the value, as their path says."""
    try:
        return frames.decode_control(key, value)
    except DecodeError as e:
        part = key if e.path.startswith("key") else value
        assert e.offset is None or 0 <= e.offset <= len(part or b""), e
        e.offset = None  # checked here; attempt() only sees the value
        raise


@FUZZ
@given(st.none() | st.binary(max_size=6) | st.sampled_from(
           [frames.control_key(t) for t in range(8)]),
       st.none() | st.binary(max_size=40))
def test_decode_control_on_random_keys_and_values(key, value):
    attempt(lambda _d: _control(key, value), value or b"")


@pytest.mark.parametrize(("cls", "version"), CONTROL_CLASS_VERSIONS,
                         ids=[f"{c.__name__}-v{v}" for c, v in CONTROL_CLASS_VERSIONS])
def test_decode_control_survives_truncation_and_mutation(cls, version):
    key, value = frames.encode_control(rich_sample(cls, version), version)
    for n in range(len(value)):
        assert isinstance(attempt(lambda v: _control(key, v), value[:n]), DecodeError)
    for bad in mutations(value):
        attempt(lambda v: _control(key, v), bad)
    for bad_key in mutations(key):
        attempt(lambda v: _control(bad_key, v), value)


@pytest.mark.parametrize("ctype", [0, 1])
@pytest.mark.parametrize("value", [None, b"", b"\x00", b"\x00\x00", b"\x00\x00\x00\x00\x00\x07"],
                         ids=["none", "empty", "1-byte", "2-bytes", "6-bytes"])
def test_transaction_markers_with_short_values(ctype, value):
    """ABORT/COMMIT markers (int16 version + int32 coordinator epoch) never crash on short values."""
    attempt(lambda _d: _control(frames.control_key(ctype), value), value or b"")


# ------------------------------------------------------------------ record batches and logs


def fix_crcs(data: bytes) -> bytes:
    """Recompute the CRC of every batch whose length field still makes sense, so mutations reach
    the record and payload decoders instead of stopping at the CRC check."""
    out = bytearray(data)
    pos = 0
    while pos + records.HEADER_SIZE <= len(out):
        (length,) = struct.unpack_from(">i", out, pos + 8)
        end = pos + records.LOG_OVERHEAD + length
        if length < records.HEADER_SIZE - records.LOG_OVERHEAD or end > len(out):
            break
        struct.pack_into(">I", out, pos + 17, crc32c(bytes(out[pos + 21:end])))
        pos = end
    return bytes(out)


def _decoders(data: bytes):
    """Every public entry point that reads batches, run on ``data``."""
    attempt(records.decode_batch, data)
    attempt(records.decode_batch, data, verify_crc=False)
    attempt(records.iter_batches, data)
    attempt(records.iter_batches, data, allow_truncated_tail=True)
    attempt(log.iter_log, data)
    attempt(log.iter_log, data, prerelease=True, verify_crc=False)
    attempt(log.iter_log, data, allow_truncated_tail=True)


@FUZZ
@given(st.binary(max_size=200))
def test_batch_and_log_readers_on_random_bytes(data):
    _decoders(data)
    _decoders(fix_crcs(data))


@FUZZ
@given(st.binary(min_size=61, max_size=61), st.binary(max_size=120))
def test_batch_readers_on_random_headers_with_magic_2(head, body):
    head = bytearray(head)
    head[16] = 2  # magic
    struct.pack_into(">i", head, 8, 49 + len(body))  # a consistent batch length
    _decoders(fix_crcs(bytes(head) + body))


def test_huge_counts_and_lengths_fail_fast():
    batch = RecordBatch.build(0, [b"\x01\x14\x00\x00"], timestamp_ms=1, leader_epoch=1)
    raw = batch.encode()
    # (byte position in the header, int32 written there) -> a CorruptRecordError, at once
    for at, value in [(57, 0x7FFFFFFF), (57, -5), (8, 0x7FFFFFFF), (8, -(1 << 31)), (8, 10)]:
        bad = bytearray(raw)
        struct.pack_into(">i", bad, at, value)
        assert isinstance(attempt(records.decode_batch, fix_crcs(bytes(bad))),
                          CorruptRecordError), (at, value)
    # a record whose length varint says 2**31-1 bytes
    body = bytearray(raw)
    body[61:62] = b"\xfe\xff\xff\xff\x0f"
    struct.pack_into(">i", body, 8, len(body) - 12)
    assert isinstance(attempt(records.decode_batch, fix_crcs(bytes(body))), CorruptRecordError)
    # message arrays and strings claiming 2**31-1 / 2**32-2 elements
    for raw_msg, cls, v in [(b"\xff\xff\xff\xff\x0f", M.DescribeQuorumRequest, 1),
                            (b"\x02\x02t\xff\xff\xff\xff\x0f", M.DescribeQuorumRequest, 0),
                            (b"\x7f\xff\xff\xff", M.MetadataRequest, 1)]:
        err = attempt(cls.decode, raw_msg, v)
        assert isinstance(err, DecodeError) and "cannot fit" in str(err), err


@requires_golden
def test_every_truncation_of_a_golden_log():
    data = segment_bytes("C")
    spans = [(b.position, b.position + b.size) for b in log.iter_log(data)]
    for n in range(len(data)):
        got = attempt(log.iter_log, data[:n])
        complete = [start for start, end in spans if end <= n]
        if isinstance(got, KraftError):
            assert isinstance(got, CorruptRecordError)
        else:  # cut on a batch boundary
            assert [b.position for b in got] == complete
        # a crash-cut tail is tolerated on request: the complete batches come back
        tail = attempt(log.iter_log, data[:n], allow_truncated_tail=True)
        assert [b.position for b in tail] == complete


@requires_golden
def test_every_bit_flip_in_crc_covered_bytes_is_detected():
    data = segment_bytes("B")
    for lb in log.iter_log(data):
        start = lb.position
        for i in range(start + 16, start + lb.size):  # magic, crc and all bytes the CRC covers
            for bit in range(8):
                bad = bytearray(data)
                bad[i] ^= 1 << bit
                got = attempt(records.decode_batch, bytes(bad), start)
                assert isinstance(got, CorruptRecordError), (i, bit)


@requires_golden
@pytest.mark.parametrize("folder", "ABC")
def test_crc_repaired_mutations_of_golden_logs(folder):
    """Damage past the CRC: the record layer and the payload decoders see it."""
    data = segment_bytes(folder)
    for lb in log.iter_log(data, decode=False):
        chunk = data[lb.position:lb.position + lb.size]
        for i in range(records.CRC_START, len(chunk)):
            bad = bytearray(chunk)
            bad[i] ^= 1 << (i % 8)
            bad = fix_crcs(bytes(bad))
            attempt(log.iter_log, bad)
            attempt(log.iter_log, bad, prerelease=True)


def test_gzip_batches_with_damaged_compressed_bodies():
    values = [frames.encode_metadata(M.NoOpRecord(), 0)] * 5
    plain = RecordBatch.build(0, values, timestamp_ms=5, leader_epoch=1)
    zipped = RecordBatch(0, plain.records, 1, attributes=1, last_offset_delta=4)
    raw = zipped.encode()
    assert [r.payload.message for b in log.iter_log(raw) for r in b.records] == [M.NoOpRecord()] * 5
    for n in range(records.HEADER_SIZE, len(raw)):  # truncated deflate streams
        bad = bytearray(raw[:n])
        struct.pack_into(">i", bad, 8, n - 12)
        attempt(log.iter_log, fix_crcs(bytes(bad)))
    for bad in mutations(raw[records.HEADER_SIZE:]):
        attempt(log.iter_log, fix_crcs(_with_body(raw, bad)))
    # a valid gzip stream that is not valid records
    attempt(log.iter_log, fix_crcs(_with_body(raw, gzip.compress(b"\xff" * 40))))


def _with_body(raw: bytes, body: bytes) -> bytes:
    head = bytearray(raw[:records.HEADER_SIZE])
    struct.pack_into(">i", head, 8, len(body) + records.HEADER_SIZE - records.LOG_OVERHEAD)
    return bytes(head) + body


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 255), st.binary(max_size=30) | st.none(),
                          st.binary(max_size=30) | st.none()), min_size=1, max_size=3),
       st.booleans())
def test_log_reader_on_random_record_payloads(recs, control):
    """Well-formed batches whose record keys and values are garbage."""
    batch = RecordBatch(7, tuple(Record(i, 0, k, v, (), a) for i, (a, k, v) in enumerate(recs)),
                        attributes=records.CONTROL_FLAG if control else 0,
                        last_offset_delta=len(recs) - 1)
    data = batch.encode()
    got = attempt(log.iter_log, data)
    if not isinstance(got, KraftError):
        assert [r.offset for r in got[0].records] == list(range(7, 7 + len(recs)))
