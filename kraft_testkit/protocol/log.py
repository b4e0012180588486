"""Read and write Kafka log segments and snapshot (``.checkpoint``) files of ``__cluster_metadata``.

>>> segment = read_log("00000000000000000000.log")            # doctest: +SKIP
>>> for batch in segment: print(batch.base_offset, [r.payload for r in batch.records])
>>> assert write_log(segment) == open(path, "rb").read()       # byte for byte
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Iterator

from .errors import DecodeError
from .frames import ControlRecord, MetadataRecord, decode_control, decode_metadata
from .records import (HEADER_SIZE, LOG_OVERHEAD, Record, RecordBatch, encode_batch, iter_batches,
                      value_position)


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A record with its absolute offset and timestamp, and its decoded payload."""

    offset: int
    timestamp: int
    record: Record
    payload: MetadataRecord | ControlRecord | None

    @property
    def is_control(self) -> bool:
        return isinstance(self.payload, ControlRecord)


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A batch as found in a file: where it starts, the batch, and its decoded records."""

    position: int
    batch: RecordBatch
    records: tuple[LogRecord, ...]

    @property
    def base_offset(self) -> int:
        return self.batch.base_offset

    @property
    def last_offset(self) -> int:
        return self.batch.last_offset

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def batch_length(self) -> int:
        body = len(encode_batch(self.batch)) - HEADER_SIZE
        return body + HEADER_SIZE - LOG_OVERHEAD


def decode_batch_records(batch: RecordBatch, *, prerelease: bool = False,
                         position: int | None = None) -> tuple[LogRecord, ...]:
    """Decode every record value of ``batch`` as metadata or control records.

    Errors name the record's log offset (and the batch's file position when known).
    """
    out = []
    control = batch.is_control
    for index, r in enumerate(batch.records):
        offset = batch.base_offset + r.offset_delta
        try:
            if control:
                payload: MetadataRecord | ControlRecord | None = decode_control(r.key, r.value)
            elif r.value is None:
                payload = None
            else:
                payload = decode_metadata(r.value, prerelease=prerelease)
        except DecodeError as e:
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
            raise err from None
        out.append(LogRecord(offset, batch.base_timestamp + r.timestamp_delta, r, payload))
    return tuple(out)


def iter_log(data: bytes, *, decode: bool = True, prerelease: bool = False,
             verify_crc: bool = True, allow_truncated_tail: bool = False) -> Iterator[LogBatch]:
    """Each batch of a segment's bytes, with records decoded when ``decode``."""
    for position, batch in iter_batches(data, verify_crc=verify_crc,
                                        allow_truncated_tail=allow_truncated_tail):
        records = (decode_batch_records(batch, prerelease=prerelease, position=position)
                   if decode else ())
        yield LogBatch(position, batch, records)


def read_log(path: str | os.PathLike, **kwargs) -> list[LogBatch]:
    """Every batch of a log segment or ``.checkpoint`` snapshot file (see :func:`iter_log`)."""
    with open(path, "rb") as f:
        data = f.read()
    return list(iter_log(data, **kwargs))


def write_log(batches: Iterable[LogBatch | RecordBatch]) -> bytes:
    """The bytes of a segment holding ``batches`` (Kafka's layout: batches back to back)."""
    return b"".join(encode_batch(b.batch if isinstance(b, LogBatch) else b) for b in batches)
