"""Read and write Kafka log segments and snapshot (``.checkpoint``) files of ``__cluster_metadata``.

>>> segment = read_log("00000000000000000000.log")            # doctest: +SKIP
>>> for batch in segment: print(batch.base_offset, [r.payload for r in batch.records])
>>> assert write_log(segment) == open(path, "rb").read()       # byte for byte
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator, Self

from .errors import DecodeError
from .frames import ControlRecord, MetadataRecord, decode_control, decode_metadata
from .records import (
    CONTROL_FLAG,
    LOG_OVERHEAD,
    Record,
    RecordBatch,
    _Frozen,
    decode_batch,
    encode_batch,
    is_truncated_tail,
    value_position,
)

_tuple_new = tuple.__new__


class LogRecord(_Frozen):
    """A record with its absolute offset and timestamp, and its decoded payload."""

    offset: int
    timestamp: int
    record: Record
    payload: MetadataRecord | ControlRecord | None
    __slots__ = ()

    def __new__(cls, offset: int, timestamp: int, record: Record,
                payload: MetadataRecord | ControlRecord | None) -> Self:
        return _tuple_new(cls, (offset, timestamp, record, payload))

    @property
    def is_control(self) -> bool:
        return isinstance(self.payload, ControlRecord)


class LogBatch(_Frozen):
    """A batch as found in a file: where it starts, the batch, and its decoded records.

    ``size`` (bytes in the file) is what the reader found; a LogBatch built without it
    computes it by encoding the batch. It takes no part in equality.
    """

    position: int
    batch: RecordBatch
    records: tuple[LogRecord, ...]
    __slots__ = ()

    def __new__(cls, position: int, batch: RecordBatch, records: tuple[LogRecord, ...],
                size: int | None = None) -> Self:
        return _tuple_new(cls, (position, batch, records, size))

    @property
    def base_offset(self) -> int:
        return self.batch.base_offset

    @property
    def last_offset(self) -> int:
        return self.batch.last_offset

    @property
    def size(self) -> int:
        size = self[3]
        return len(encode_batch(self.batch)) if size is None else size

    @property
    def batch_length(self) -> int:
        return self.size - LOG_OVERHEAD


def decode_batch_records(batch: RecordBatch, *, prerelease: bool = False,
                         position: int | None = None) -> tuple[LogRecord, ...]:
    """Decode every record value of ``batch`` as metadata or control records.

    Errors name the record's log offset (and the batch's file position when known).
    """
    out = []
    control = batch.attributes & CONTROL_FLAG
    base_offset = batch.base_offset
    base_timestamp = batch.base_timestamp
    for index, r in enumerate(batch.records):
        offset_delta, timestamp_delta, key, value, _, _ = r
        try:
            if control:
                payload: MetadataRecord | ControlRecord | None = decode_control(key, value)
            elif value is None:
                payload = None
            else:
                payload = decode_metadata(value, prerelease=prerelease)
        except DecodeError as e:
            raise _located(e, batch, index, control, position) from None
        out.append(_tuple_new(LogRecord, (base_offset + offset_delta,
                                          base_timestamp + timestamp_delta, r, payload)))
    return tuple(out)


def _located(e: DecodeError, batch: RecordBatch, index: int, control: bool,
             position: int | None) -> DecodeError:
    """``e`` (from record ``index``'s payload decoder) naming the record's log offset and, when
    the batch's file position is known, with the offset turned into a file position."""
    offset = batch.base_offset + batch.records[index].offset_delta
    where = f"record at offset {offset}"
    if position is not None:
        where += f" (batch at file position {position})"
    at = e.offset
    if position is not None and at is not None and not control:
        start = value_position(batch, index)  # the payload decoder counts from the value
        at = None if start is None else position + start + at
    err = type(e).__new__(type(e))
    DecodeError.__init__(err, f"{where}: {e.reason}", offset=at, path=e.path)
    err.log_offset = offset  # type: ignore[attr-defined]
    return err


def iter_log(data: bytes, *, decode: bool = True, prerelease: bool = False,
             verify_crc: bool = True, allow_truncated_tail: bool = False) -> Iterator[LogBatch]:
    """Each batch of a segment's bytes, with records decoded when ``decode``.

    Reads like :func:`.records.iter_batches` (same errors, same crash-cut tail rule).
    """
    if type(data) is not bytes:
        data = bytes(data)
    pos = 0
    n = len(data)
    while pos < n:
        if allow_truncated_tail and is_truncated_tail(data, pos):
            return
        batch, end = decode_batch(data, pos, verify_crc=verify_crc)
        records = (decode_batch_records(batch, prerelease=prerelease, position=pos)
                   if decode else ())
        yield _tuple_new(LogBatch, (pos, batch, records, end - pos))
        pos = end


def read_log(path: str | os.PathLike, **kwargs) -> list[LogBatch]:
    """Every batch of a log segment or ``.checkpoint`` snapshot file (see :func:`iter_log`).

    A damaged file raises the :class:`DecodeError` of :func:`iter_log` with ``file`` set and the
    path in front of its message (the byte offset is already in it)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return list(iter_log(data, **kwargs))
    except DecodeError as e:
        e.file = os.fspath(path)
        e.args = (f"{e.file}: {e.args[0]}",)
        raise


def write_log(batches: Iterable[LogBatch | RecordBatch]) -> bytes:
    """The bytes of a segment holding ``batches`` (Kafka's layout: batches back to back)."""
    return b"".join(encode_batch(b.batch if isinstance(b, LogBatch) else b) for b in batches)
