"""Cross-checks of our codec against kio, an independent implementation of Kafka's protocol.

For every RPC (request and response), header and control record that both we and kio declare, at
every version both declare:

* the declarations agree on every wire fact (field order, types, arrays, nullability, tags,
  defaults of tagged fields);
* values we encode decode in kio to the same field values and kio writes them back byte for byte;
* values kio encodes decode in ours to the same field values and we write them back byte for byte.

Plus record batches (ours -> kio, kio -> ours) and the golden metadata logs written by Kafka.
Values come from Hypothesis strategies built from our declarations (see ``kio_bridge``);
``derandomize=True`` keeps every run the same.
"""

from __future__ import annotations

import datetime
import io
import struct
from pathlib import Path

import pytest

pytest.importorskip("kio", reason="kio (an independent Kafka protocol implementation) is not installed")
hypothesis = pytest.importorskip("hypothesis")

import kio_bridge as kb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KioRecord
from kio.records.schema import RecordHeader as KioHeader
from kio.records.writers import write_new_batch, write_prepared_batch

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import decode_control, encode_control
from kraft_testkit.protocol.records import (
    CONTROL_FLAG,
    Header,
    Record,
    RecordBatch,
    decode_batch,
    encode_batch,
    iter_batches,
)
from kraft_testkit.protocol.uuid import Uuid

GOLDEN_ROOT = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_LOGS = sorted(GOLDEN_ROOT.glob("**/__cluster_metadata-0/00000000000000000000.log"))

EXAMPLES = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)

PAIRS = kb.common_pairs()
PAIR_IDS = [f"{cls.__name__}-v{v}" for cls, v, _ in PAIRS]
GAPS = kb.gaps()


# ---------------------------------------------------------------- messages


def test_pairs_found():
    """Guard against the pairing silently finding nothing (a kio layout change)."""
    assert len(PAIRS) >= 200
    kinds = {cls._spec.kind for cls, _, _ in PAIRS}
    assert {"request", "response", "header", "data"} <= kinds
    assert {cls for cls, _, _ in PAIRS} >= set(M.CONTROL.values())


@pytest.mark.parametrize(("cls", "missing"), GAPS, ids=[c.__name__ for c, _ in GAPS])
def test_versions_kio_lacks(cls, missing):
    pytest.skip(f"kio {kb.kio_module(cls)[0]} lacks {cls.__name__} version(s) "
                f"{', '.join(map(str, missing))} (nothing to cross-check)")


@pytest.mark.parametrize(("cls", "version", "kio_cls"), PAIRS, ids=PAIR_IDS)
def test_declarations_agree(cls, version, kio_cls):
    assert kb.declaration_diffs(cls, version, kio_cls) == []


@pytest.mark.parametrize(("cls", "version", "kio_cls"), PAIRS, ids=PAIR_IDS)
def test_ours_to_kio(cls, version, kio_cls):
    """We encode -> kio decodes the same values -> kio re-encodes identical bytes."""

    @EXAMPLES
    @given(kb.message_strategy(cls, version, kio_cls))
    def check(msg):
        ours = msg.encode(version)
        entity = kb.kio_decode(kio_cls, ours)
        assert entity == kb.to_kio(msg, cls, version, kio_cls)
        assert kb.kio_encode(kio_cls, entity) == ours

    check()


@pytest.mark.parametrize(("cls", "version", "kio_cls"), PAIRS, ids=PAIR_IDS)
def test_kio_to_ours(cls, version, kio_cls):
    """kio encodes -> we decode the same values -> we re-encode identical bytes."""

    @EXAMPLES
    @given(kb.message_strategy(cls, version, kio_cls))
    def check(msg):
        theirs = kb.kio_encode(kio_cls, kb.to_kio(msg, cls, version, kio_cls))
        decoded = cls.decode(theirs, version)
        assert decoded == msg
        assert decoded.encode(version) == theirs

    check()


# ---------------------------------------------------------------- record batches


def kio_timestamp(ms: int) -> datetime.datetime:
    """What kio's batch reader makes of a record timestamp (it truncates to whole seconds)."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).replace(microsecond=0)


def assert_same_batch(ours: RecordBatch, size: int, theirs) -> None:
    """Our decoded/built batch and kio's decoded one hold the same header and records."""
    assert (theirs.base_offset, theirs.batch_length, theirs.partition_leader_epoch, theirs.crc,
            theirs.attributes, theirs.last_offset_delta, theirs.base_timestamp,
            theirs.max_timestamp, theirs.producer_id, theirs.producer_epoch,
            theirs.base_sequence) == (
        ours.base_offset, size - 12, ours.partition_leader_epoch, ours.crc,
        ours.attributes, ours.last_offset_delta, ours.base_timestamp,
        ours.max_timestamp, ours.producer_id, ours.producer_epoch, ours.base_sequence)
    assert len(theirs.records) == len(ours.records)
    for r, k in zip(ours.records, theirs.records):
        assert k.offset == ours.base_offset + r.offset_delta
        assert k.attributes & 0xFF == r.attributes & 0xFF
        assert k.key == r.key
        assert k.value == r.value
        assert k.timestamp == kio_timestamp(ours.base_timestamp + r.timestamp_delta)
        assert [(h.key, h.value) for h in k.headers] == [
            (h.key.encode("utf-8"), h.value) for h in r.headers]


def kio_read_all(data: bytes) -> list:
    out, pos = [], 0
    while pos < len(data):
        batch, size = read_batch(data, pos)
        out.append((batch, size))
        pos += size
    return out


maybe_bytes = st.one_of(st.none(), st.binary(max_size=20))
headers = st.lists(st.builds(Header, st.text(max_size=5), maybe_bytes), max_size=3).map(tuple)
#: absolute timestamps: whole seconds (kio represents these exactly) or any millisecond
seconds_ts = st.integers(0, 1 << 31).map(lambda s: s * 1000)
any_ms_ts = st.integers(0, 1 << 41)


@st.composite
def our_batches(draw) -> RecordBatch:
    """Batches as our writers make them: with keys, nulls, headers, control or not."""
    whole = draw(st.booleans())
    base_ts = draw(seconds_ts if whole else any_ms_ts)
    n = draw(st.integers(1, 5))
    deltas = sorted(draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n)))
    if whole:
        deltas = [d * 1000 for d in deltas]
    records = tuple(
        Record(i, deltas[i], draw(maybe_bytes), draw(maybe_bytes), draw(headers),
               draw(st.integers(0, 255)))
        for i in range(n))
    attributes = draw(st.sampled_from([0, CONTROL_FLAG, 0x10, 0x10 | CONTROL_FLAG, 0x08]))
    return RecordBatch(
        base_offset=draw(st.integers(0, 1 << 62)),
        records=records,
        partition_leader_epoch=draw(st.integers(-1, (1 << 31) - 1)),
        attributes=attributes,
        last_offset_delta=n - 1,
        base_timestamp=base_ts,
        max_timestamp=base_ts + deltas[-1],
        producer_id=draw(st.integers(-1, (1 << 63) - 1)),
        producer_epoch=draw(st.integers(-1, (1 << 15) - 1)),
        base_sequence=draw(st.integers(-1, (1 << 31) - 1)),
    )


def check_ours_in_kio(batch: RecordBatch) -> None:
    data = encode_batch(batch)
    ours, end = decode_batch(data)  # fills in the CRC
    assert end == len(data)
    (theirs, size), = kio_read_all(data)
    assert size == len(data)
    assert_same_batch(ours, len(data), theirs)
    stamps = [batch.base_timestamp + r.timestamp_delta for r in batch.records]
    if all(t % 1000 == 0 for t in stamps):  # kio keeps whole seconds only
        out = io.BytesIO()
        write_prepared_batch(out, theirs)
        assert out.getvalue() == data


@EXAMPLES
@given(our_batches())
def test_our_batches_decode_in_kio(batch):
    check_ours_in_kio(batch)


@EXAMPLES
@given(
    base_offset=st.integers(0, 1 << 40),
    ts=st.one_of(seconds_ts, any_ms_ts),
    epoch=st.integers(0, 1000),
    records=st.lists(st.tuples(maybe_bytes, maybe_bytes), min_size=1, max_size=6),
)
def test_built_batches_decode_in_kio(base_offset, ts, epoch, records):
    """``RecordBatch.build`` output, as the Raft leader appends it."""
    batch = RecordBatch.build(base_offset, [v for _, v in records], timestamp_ms=ts,
                              leader_epoch=epoch, keys=[k for k, _ in records])
    check_ours_in_kio(batch)


CONTROL_SAMPLES = [
    M.LeaderChangeMessage(version=0, leader_id=3, voters=[M.LeaderChangeMessage.Voter(voter_id=1)],
                          granting_voters=[M.LeaderChangeMessage.Voter(voter_id=3)]),
    M.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=1_700_000_000_123),
    M.SnapshotFooterRecord(version=0),
    M.KRaftVersionRecord(version=0, k_raft_version=1),
    M.VotersRecord(version=0, voters=[M.VotersRecord.Voter(
        voter_id=1, voter_directory_id=Uuid(bytes(range(16))),
        endpoints=[M.VotersRecord.Endpoint(name="CONTROLLER", host="localhost", port=9093)])]),
]


@pytest.mark.parametrize("ts", [1_700_000_000_000, 1_700_000_000_123])
def test_built_control_batch_decodes_in_kio(ts):
    """A control batch (as the Raft leader writes on election / snapshot) and its records."""
    from kio.schema.control_record_type_schema.v0.data import ControlRecordTypeSchema

    pairs = [encode_control(m, 0) for m in CONTROL_SAMPLES]
    batch = RecordBatch.build(40, [v for _, v in pairs], keys=[k for k, _ in pairs],
                              timestamp_ms=ts, leader_epoch=7, control=True)
    check_ours_in_kio(batch)
    (theirs, _), = kio_read_all(encode_batch(batch))
    for msg, rec in zip(CONTROL_SAMPLES, theirs.records):
        # key: int16 key version 0, then ControlRecordTypeSchema v0
        assert struct.unpack_from(">h", rec.key)[0] == 0
        key = kb.kio_decode(ControlRecordTypeSchema, rec.key[2:])
        assert key.type_ == type(msg)._spec.extra["control_type"]
        k = kb.kio_class(type(msg), 0)
        entity = kb.kio_decode(k, rec.value)
        assert entity == kb.to_kio(msg, type(msg), 0, k)
        assert kb.kio_encode(k, entity) == rec.value


@st.composite
def kio_new_batches(draw) -> NewRecordBatch:
    n = draw(st.integers(1, 5))
    base_offset = draw(st.integers(0, 1 << 40))
    offsets = [base_offset]
    for _ in range(n - 1):
        offsets.append(offsets[-1] + draw(st.integers(1, 3)))
    base_ms = draw(st.one_of(seconds_ts, any_ms_ts))
    records = []
    for off in offsets:
        ms = base_ms + draw(st.integers(0, 5000))
        records.append(KioRecord(
            attributes=draw(st.integers(-128, 127)),
            timestamp=datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC),
            offset=off,
            key=draw(maybe_bytes),
            value=draw(maybe_bytes),
            headers=tuple(KioHeader(key=draw(st.text(max_size=5)).encode(), value=draw(maybe_bytes))
                          for _ in range(draw(st.integers(0, 2)))),
        ))
    return NewRecordBatch(
        producer_id=draw(st.integers(-1, (1 << 63) - 1)),
        producer_epoch=draw(st.integers(-1, (1 << 15) - 1)),
        partition_leader_epoch=draw(st.integers(0, (1 << 31) - 1)),
        base_sequence=draw(st.integers(-1, (1 << 31) - 1)),
        records=tuple(records),
        attributes=draw(st.sampled_from([0, CONTROL_FLAG, 0x10])),
    )


@EXAMPLES
@given(kio_new_batches())
def test_kio_batches_decode_in_ours(new):
    out = io.BytesIO()
    write_new_batch(out, new)
    data = out.getvalue()
    ours, end = decode_batch(data)
    assert end == len(data) and ours.crc_valid
    assert encode_batch(ours) == data
    base_ts = ours.base_timestamp
    assert ours.base_offset == new.records[0].offset
    for r, k in zip(ours.records, new.records, strict=True):
        assert ours.base_offset + r.offset_delta == k.offset
        assert base_ts + r.timestamp_delta == int(k.timestamp.timestamp() * 1000)
        assert (r.key, r.value, r.attributes) == (k.key, k.value, k.attributes & 0xFF)
        assert [(h.key.encode(), h.value) for h in r.headers] == [(h.key, h.value)
                                                                  for h in k.headers]
    assert (ours.producer_id, ours.producer_epoch, ours.partition_leader_epoch,
            ours.base_sequence, ours.attributes) == (
        new.producer_id, new.producer_epoch, new.partition_leader_epoch, new.base_sequence,
        new.attributes)


# ---------------------------------------------------------------- golden logs


@pytest.mark.skipif(not GOLDEN_LOGS, reason=f"no golden logs under {GOLDEN_ROOT}")
@pytest.mark.parametrize("path", GOLDEN_LOGS, ids=[p.parents[1].name for p in GOLDEN_LOGS])
def test_golden_log_in_kio(path):
    """Kafka-written segments: kio and we see the same batches, records and control records."""
    data = path.read_bytes()
    ours = list(iter_batches(data))
    theirs = kio_read_all(data)
    assert len(ours) == len(theirs) > 0
    control_seen = 0
    for (pos, batch), (kbatch, size) in zip(ours, theirs):
        assert_same_batch(batch, size, kbatch)
        assert data[pos:pos + size] == encode_batch(batch)
        if not batch.is_control:
            continue
        for rec in batch.records:
            payload = decode_control(rec.key, rec.value)
            if payload.message is None:
                continue
            cls = type(payload.message)
            k = kb.kio_class(cls, payload.version)
            entity = kb.kio_decode(k, rec.value)
            assert entity == kb.to_kio(payload.message, cls, payload.version, k)
            assert kb.kio_encode(k, entity) == rec.value
            control_seen += 1
    assert control_seen > 0
