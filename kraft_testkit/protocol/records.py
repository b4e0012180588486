"""Kafka record batches (magic 2) and the records inside them, read and written byte for byte.

A batch keeps every header field as it was read (timestamps, producer fields, the stored CRC)
so writing it back gives the same bytes; :meth:`RecordBatch.build` makes new batches the way
Kafka's ``MemoryRecords.withRecords`` does. CRC32C (Castagnoli) comes from the ``crc32c`` package.
"""

from __future__ import annotations

import gzip
import inspect
import struct
import zlib
from operator import itemgetter
from typing import Any, ClassVar, Iterable, Iterator, Self

from crc32c import crc32c

from .errors import CorruptRecordError, DecodeError, EncodeError
from .primitives import read_varint, read_varlong, varint_bytes, varlong_bytes

#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
#: baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
_INT32 = struct.Struct(">i")
#: bytes before the part the CRC covers (baseOffset, batchLength, partitionLeaderEpoch, magic, crc)
CRC_START = 21
LOG_OVERHEAD = 12  # baseOffset + batchLength

COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
NO_TIMESTAMP = -1


_tuple_new = tuple.__new__


class _Frozen(tuple):
    """Base of the batch-layer value classes here and in :mod:`.log`: a tuple with named fields.

    Reading a log builds several of these per record (KRaft logs hold about one record per
    batch), so they are built the cheap way: one ``tuple.__new__``, where a frozen dataclass
    sets each field through ``object.__setattr__`` (several times slower). Otherwise they behave
    like frozen dataclasses: positional or keyword construction, read-only fields, equal only to
    the same type (on the first ``_compared`` fields), hashable, ``Name(field=value, ...)``
    reprs, picklable. Subclasses declare their fields as annotations, in order, and a
    ``__new__`` taking them in the same order; like the generated message classes they are
    tuples underneath. (Not ``_fields``: tools would take them for NamedTuples, whose fields
    all count as required.)
    """

    __slots__ = ()
    _field_names: ClassVar[tuple[str, ...]] = ()
    #: equality and hashing look at the first ``_compared`` fields
    _compared: ClassVar[int] = 0

    def __init_subclass__(cls, compared: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = tuple(n for n in inspect.get_annotations(cls) if not n.startswith("_"))
        cls._field_names = names
        cls._compared = len(names) if compared is None else compared
        cls.__match_args__ = names
        for i, name in enumerate(names):
            setattr(cls, name, property(itemgetter(i), doc=name))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):  # never equal to a plain tuple (tuple's == would be)
            return False if isinstance(other, tuple) else NotImplemented
        n = self._compared
        return self[:n] == other[:n]  # type: ignore[index]

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self[:self._compared])

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={v!r}" for n, v in zip(self._field_names, self))
        return f"{type(self).__name__}({fields})"

    def __getnewargs__(self) -> tuple:  # pickle and copy rebuild through __new__
        return tuple(self)


class Header(_Frozen):
    """A record header: a text key and an optional value."""

    key: str
    value: bytes | None
    __slots__ = ()

    def __new__(cls, key: str, value: bytes | None) -> Self:
        return _tuple_new(cls, (key, value))


class Record(_Frozen):
    """One record of a batch; offset and timestamp are relative to the batch's bases."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    attributes: int
    __slots__ = ()

    def __new__(cls, offset_delta: int, timestamp_delta: int, key: bytes | None,
                value: bytes | None, headers: tuple[Header, ...] = (),
                attributes: int = 0) -> Self:
        return _tuple_new(cls, (offset_delta, timestamp_delta, key, value, headers, attributes))


class RecordBatch(_Frozen, compared=11):
    """A magic-2 record batch. ``crc`` is the stored one on read; it is recomputed on write.

    ``crc`` and ``crc_valid`` (the last two fields) take no part in equality.
    """

    base_offset: int
    records: tuple[Record, ...]
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    magic: int
    crc: int
    crc_valid: bool
    __slots__ = ()

    def __new__(cls, base_offset: int, records: tuple[Record, ...],
                partition_leader_epoch: int = -1, attributes: int = 0,
                last_offset_delta: int = -1, base_timestamp: int = NO_TIMESTAMP,
                max_timestamp: int = NO_TIMESTAMP, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, magic: int = 2, crc: int = 0,
                crc_valid: bool = True) -> Self:
        return _tuple_new(cls, (base_offset, records, partition_leader_epoch, attributes,
                                last_offset_delta, base_timestamp, max_timestamp, producer_id,
                                producer_epoch, base_sequence, magic, crc, crc_valid))

    @classmethod
    def build(
        cls,
        base_offset: int,
        values: Iterable[bytes | None],
        *,
        timestamp_ms: int,
        leader_epoch: int,
        keys: Iterable[bytes | None] | None = None,
        control: bool = False,
    ) -> "RecordBatch":
        """A batch of records all stamped ``timestamp_ms`` (as a Raft leader appends them)."""
        values = list(values)
        keys = list(keys) if keys is not None else [None] * len(values)
        if not values:
            raise EncodeError("a record batch needs at least one record")
        records = tuple(Record(i, 0, k, v) for i, (k, v) in enumerate(zip(keys, values)))
        return cls(base_offset, records, leader_epoch, CONTROL_FLAG if control else 0,
                   len(records) - 1, timestamp_ms, timestamp_ms)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def compression(self) -> str:
        return COMPRESSION_NAMES.get(self.attributes & 7, f"unknown({self.attributes & 7})")

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"

    def with_base_offset(self, base_offset: int) -> "RecordBatch":
        return _tuple_new(type(self), (base_offset, *self[1:]))

    def encode(self) -> bytes:
        return encode_batch(self)

    @property
    def size_in_bytes(self) -> int:
        return len(encode_batch(self))


# ---------------------------------------------------------------- decoding


def decode_batch(data: bytes, pos: int = 0, *, verify_crc: bool = True) -> tuple[RecordBatch, int]:
    """Decode the batch at ``pos``; returns it and the position after it.

    Offsets in errors are absolute positions in ``data``.
    """
    if len(data) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"record batch header needs {HEADER_SIZE} bytes, {len(data) - pos} left", offset=pos)
    (base_offset, batch_length, leader_epoch, magic, crc, attributes, last_offset_delta,
     base_ts, max_ts, producer_id, producer_epoch, base_sequence, count) = HEADER.unpack_from(data, pos)
    if magic != 2:
        raise CorruptRecordError(f"record batch magic {magic} is not supported (only 2)",
                                 offset=pos + 16, path="magic")
    end = pos + LOG_OVERHEAD + batch_length
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"record batch length {batch_length} is too small",
                                 offset=pos + 8, path="batchLength")
    if end > len(data):
        raise CorruptRecordError(
            f"record batch of {batch_length + LOG_OVERHEAD} bytes is truncated "
            f"({len(data) - pos} bytes left)", offset=pos + 8, path="batchLength")
    key = None
    if type(data) is bytes and end - pos <= _BATCH_MEMO_MAX_BYTES:
        key = data if pos == 0 and end == len(data) else data[pos:end]
        known = _BATCHES.get(key)
        if known is not None:  # these very bytes decoded cleanly before
            return known, end
    actual_crc = crc32c(data[pos + CRC_START:end])
    if verify_crc and actual_crc != crc:
        raise CorruptRecordError(
            f"record batch CRC mismatch: stored {crc}, computed {actual_crc}",
            offset=pos + 17, path="crc")
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}", offset=pos + 57,
                                 path="recordsCount")
    body = data[pos + HEADER_SIZE:end]
    body_base = pos + HEADER_SIZE
    codec = attributes & 7
    if codec:
        body = _decompress(codec, body, body_base)
        body_base = -1  # positions inside decompressed bytes are not file positions
    if count > len(body):
        raise CorruptRecordError(f"{count} records cannot fit in {len(body)} bytes",
                                 offset=max(body_base, 0), path="recordsCount")
    records = _read_plain_records(body, count)
    if records is None:
        records = _read_records(body, count, body_base)
    batch = _tuple_new(RecordBatch, (base_offset, records, leader_epoch, attributes,
                                     last_offset_delta, base_ts, max_ts, producer_id,
                                     producer_epoch, base_sequence, magic, crc, actual_crc == crc))
    if key is not None and actual_crc == crc:  # (a bad CRC raises when verify_crc: not kept)
        if len(_BATCHES) >= _BATCH_MEMO_ENTRIES:
            _BATCHES.clear()
        _BATCHES[key] = batch
    return batch, end


# Every follower and observer decodes the batch bytes the leader sent (and a node reopening
# its files decodes what it wrote): a batch whose CRC holds is remembered by its exact bytes
# (a RecordBatch and its records are immutable tuples), so the same bytes decode once. Small
# batches only, a bounded number (a full memo starts again).
_BATCHES: dict[bytes, RecordBatch] = {}
_BATCH_MEMO_ENTRIES = 256
_BATCH_MEMO_MAX_BYTES = 4096


def _decompress(codec: int, body: bytes, at: int) -> bytes:
    if codec == 1:
        try:
            return gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as e:
            raise CorruptRecordError(f"gzip records do not decompress: {e}", offset=at) from None
    name = COMPRESSION_NAMES.get(codec, f"id {codec}")
    raise CorruptRecordError(f"compression {name} is not supported (none and gzip are)",
                             offset=at, path="attributes")


def _read_plain_records(body: bytes, count: int) -> tuple[Record, ...] | None:
    """The records of a batch body, when they have the plain shape KRaft writes: no headers and
    every varint one byte long, except the record and value lengths (up to two bytes).

    None for any other shape and for anything wrong: :func:`_read_records` then reads the body,
    and names what is wrong and where. What this returns is what that would return.
    """
    records = []
    pos = 0
    n = len(body)
    try:
        for _ in range(count):
            length = body[pos]
            if length < 0x80:
                pos += 1
            else:
                high = body[pos + 1]
                if high & 0x80:
                    return None
                length = (length & 0x7F) | high << 7
                pos += 2
            length = (length >> 1) ^ -(length & 1)  # zigzag
            rec_end = pos + length
            # attributes, then the timestamp delta, offset delta and key length varints
            attributes, ts_delta, off_delta, klen = body[pos:pos + 4]
            if length < 4 or rec_end > n or (ts_delta | off_delta | klen) & 0x80:
                return None
            pos += 4
            if klen & 1:  # negative: a null key (Kafka writes -1)
                key = None
            else:
                klen >>= 1
                key = body[pos:pos + klen]
                pos += klen
            vlen = body[pos]
            if vlen < 0x80:
                pos += 1
            else:
                high = body[pos + 1]
                if high & 0x80:
                    return None
                vlen = (vlen & 0x7F) | high << 7
                pos += 2
            if vlen & 1:
                value = None
            else:
                vlen >>= 1
                value = body[pos:pos + vlen]
                pos += vlen
            if pos >= rec_end or body[pos]:  # past the record, or headers: not plain
                return None
            pos += 1
            if pos != rec_end:
                return None
            records.append(_tuple_new(Record, ((off_delta >> 1) ^ -(off_delta & 1),
                                               (ts_delta >> 1) ^ -(ts_delta & 1),
                                               key, value, (), attributes)))
    except (IndexError, ValueError):  # ran past the body (unpacking a short slice)
        return None
    if pos != n:
        return None
    return tuple(records)


def _read_records(body: bytes, count: int, base: int) -> tuple[Record, ...]:
    """The records of a batch body, any shape, each check naming its error (offsets absolute
    when ``base`` is the body's position in the file, -1 for a decompressed body)."""
    records = []
    pos = 0
    n = len(body)
    rv = read_varint
    try:
        for i in range(count):
            start = pos
            length, pos = rv(body, pos)
            rec_end = pos + length
            if length < 0 or rec_end > n:
                raise CorruptRecordError(f"record {i} of {length} bytes runs past the batch",
                                         offset=start)
            attributes = body[pos]
            ts_delta, pos = read_varlong(body, pos + 1)
            off_delta, pos = rv(body, pos)
            klen, pos = rv(body, pos)
            if klen < 0:
                key = None
            else:
                if klen > rec_end - pos:
                    raise CorruptRecordError(f"record {i} key of {klen} bytes runs past the record",
                                             offset=pos)
                key = body[pos:pos + klen]
                pos += klen
            vlen, pos = rv(body, pos)
            if vlen < 0:
                value = None
            else:
                if vlen > rec_end - pos:
                    raise CorruptRecordError(
                        f"record {i} value of {vlen} bytes runs past the record", offset=pos)
                value = body[pos:pos + vlen]
                pos += vlen
            nh, pos = rv(body, pos)
            headers: tuple[Header, ...] = ()
            if nh:
                if nh < 0 or nh > rec_end - pos:
                    raise CorruptRecordError(f"bad header count {nh}", offset=pos)
                hs = []
                for _ in range(nh):
                    hk, pos = rv(body, pos)
                    if hk < 0:
                        raise CorruptRecordError("null header key", offset=pos)
                    if hk > rec_end - pos:
                        raise CorruptRecordError("header key runs past the record", offset=pos)
                    key_text = body[pos:pos + hk].decode("utf-8")
                    pos += hk
                    hv, pos = rv(body, pos)
                    if hv > rec_end - pos:
                        raise CorruptRecordError("header value runs past the record", offset=pos)
                    hval = None if hv < 0 else body[pos:pos + hv]
                    pos += max(hv, 0)
                    hs.append(Header(key_text, hval))
                headers = tuple(hs)
            if pos != rec_end:
                raise CorruptRecordError(
                    f"record {i} says {length} bytes but its fields take {pos - (rec_end - length)}",
                    offset=start)
            records.append(Record(off_delta, ts_delta, key, value, headers, attributes))
    except CorruptRecordError as e:
        raise _shift(e, base, f"records[{len(records)}]") from None
    except DecodeError as e:
        raise _shift(CorruptRecordError(e.reason, offset=e.offset), base,
                     f"records[{len(records)}]") from None
    except (IndexError, UnicodeDecodeError):
        raise _shift(CorruptRecordError("record runs past the end of its batch", offset=pos),
                     base, f"records[{len(records)}]") from None
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes after the last record of the batch",
                                 offset=(base + pos) if base >= 0 else None)
    return tuple(records)


def _shift(e: DecodeError, base: int, path: str) -> CorruptRecordError:
    err = CorruptRecordError(e.reason, offset=(e.offset + base) if base >= 0 and e.offset is not None
                             else None, path=f"{path}.{e.path}" if e.path else path)
    return err


def iter_batches(data: bytes, *, verify_crc: bool = True,
                 allow_truncated_tail: bool = False) -> Iterator[tuple[int, RecordBatch]]:
    """Each ``(file position, batch)`` of a log segment or snapshot file.

    A partial batch at the very end (what a crash leaves) ends the iteration when
    ``allow_truncated_tail``; otherwise it is a :class:`CorruptRecordError`.
    """
    if type(data) is not bytes:
        data = bytes(data)
    pos = 0
    n = len(data)
    while pos < n:
        if allow_truncated_tail and is_truncated_tail(data, pos):
            return
        batch, nxt = decode_batch(data, pos, verify_crc=verify_crc)
        yield pos, batch
        pos = nxt


def is_truncated_tail(data: bytes, pos: int) -> bool:
    """Whether the batch at ``pos`` is cut short by the end of ``data`` (a crash-cut tail)."""
    if len(data) - pos < HEADER_SIZE:
        return True
    (length,) = _INT32.unpack_from(data, pos + 8)
    return length > 0 and pos + LOG_OVERHEAD + length > len(data)


# ---------------------------------------------------------------- encoding


def _encode_record(r: Record) -> bytes:
    body = bytearray()
    body.append(r.attributes & 0xFF)
    body += varlong_bytes(r.timestamp_delta)
    body += varint_bytes(r.offset_delta)
    if r.key is None:
        body += b"\x01"  # varint(-1)
    else:
        body += varint_bytes(len(r.key))
        body += r.key
    if r.value is None:
        body += b"\x01"
    else:
        body += varint_bytes(len(r.value))
        body += r.value
    body += varint_bytes(len(r.headers))
    for h in r.headers:
        kb = h.key.encode("utf-8")
        body += varint_bytes(len(kb))
        body += kb
        if h.value is None:
            body += b"\x01"
        else:
            body += varint_bytes(len(h.value))
            body += h.value
    return varint_bytes(len(body)) + bytes(body)


def encode_batch(b: RecordBatch) -> bytes:
    """The batch's bytes with batchLength and CRC computed (Kafka's layout exactly)."""
    if b.magic != 2:
        raise EncodeError(f"only magic 2 batches can be written, not {b.magic}")
    body = b"".join([_encode_record(r) for r in b.records])
    codec = b.attributes & 7
    if codec == 1:
        body = gzip.compress(body, mtime=0)  # as Java's GZIPOutputStream: no timestamp, same bytes every time
    elif codec:
        raise EncodeError(f"compression {COMPRESSION_NAMES.get(codec, codec)} is not supported")
    last_delta = b.last_offset_delta if b.last_offset_delta >= 0 else len(b.records) - 1
    try:
        head = HEADER.pack(b.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body),
                           b.partition_leader_epoch, 2, 0, b.attributes, last_delta,
                           b.base_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch,
                           b.base_sequence, len(b.records))
    except struct.error as e:
        raise EncodeError(f"record batch header: {e}") from None
    crc = crc32c(head[CRC_START:] + body)
    return head[:17] + struct.pack(">I", crc) + head[CRC_START:] + body


def value_position(batch: RecordBatch, index: int) -> int | None:
    """Where record ``index``'s value starts, counted from the batch's first byte.

    None for compressed batches (their values are not in the file as such). Used on error paths
    to turn a payload decoder's offset into a file position, so it need not be fast.
    """
    if batch.attributes & 7:
        return None
    pos = HEADER_SIZE + sum(len(_encode_record(r)) for r in batch.records[:index])
    r = batch.records[index]
    body = len(_encode_record(r))
    prefix = next(n for n in range(1, 6) if len(varint_bytes(body - n)) == n)  # size varint
    head = prefix + 1 + len(varlong_bytes(r.timestamp_delta)) + len(varint_bytes(r.offset_delta))
    head += 1 if r.key is None else len(varint_bytes(len(r.key))) + len(r.key)
    head += 1 if r.value is None else len(varint_bytes(len(r.value)))
    return pos + head


def encode_batches(batches: Iterable[RecordBatch]) -> bytes:
    return b"".join(encode_batch(b) for b in batches)
