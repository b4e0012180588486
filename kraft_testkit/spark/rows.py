"""Log bytes to rows: one row per record, as Arrow record batches (2.5x faster than tuples in
Spark's Python data source at a million rows, measured in shared/notes/pyspark.md).

Decoding is the kit's own codec (:func:`kraft_testkit.protocol.log.iter_log`) and the JSON is
what ``kraft-testkit dump-log`` prints (Kafka's field names); nothing is decoded twice.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from ..errors import KraftError
from ..protocol.errors import DecodeError
from ..protocol.frames import ControlRecord
from ..protocol.log import decode_batch_records, iter_log
from ..protocol.records import LOG_OVERHEAD
from ..tools.dump_log import payload_json
from .errors import MetadataSourceError

#: The source's columns, in Spark DDL (the Arrow schema below must match it exactly).
SCHEMA_DDL = ("offset long, batch_base_offset long, leader_epoch int, timestamp timestamp, "
              "is_control boolean, record_type string, api_key short, record_version short, "
              "value_json string, key binary, value binary")
COLUMNS = [part.split()[0] for part in SCHEMA_DDL.split(", ")]
#: rows per Arrow batch handed to Spark
ARROW_ROWS = 65_536
_BASE_AND_LENGTH = struct.Struct(">qi")


def arrow_schema():
    import pyarrow as pa

    return pa.schema([
        ("offset", pa.int64()), ("batch_base_offset", pa.int64()), ("leader_epoch", pa.int32()),
        ("timestamp", pa.timestamp("us", tz="UTC")), ("is_control", pa.bool_()),
        ("record_type", pa.string()), ("api_key", pa.int16()), ("record_version", pa.int16()),
        ("value_json", pa.string()), ("key", pa.binary()), ("value", pa.binary()),
    ])


def batch_spans(data: bytes) -> list[tuple[int, int, int]]:
    """``(position, end, base offset)`` of each batch, from the 12-byte log headers only (no
    decoding): cheap enough to plan partitions of a large segment. A cut or bogus length ends
    the scan there; reading that span then reports the damage with its position."""
    spans = []
    pos, n = 0, len(data)
    while pos + LOG_OVERHEAD <= n:
        base, length = _BASE_AND_LENGTH.unpack_from(data, pos)
        end = pos + LOG_OVERHEAD + length
        if length <= 0 or end > n:
            spans.append((pos, n, base))
            return spans
        spans.append((pos, end, base))
        pos = end
    if pos < n:
        spans.append((pos, n, spans[-1][2] if spans else 0))
    return spans


def iter_arrow(data: bytes, *, where: str, start: int = 0, end: int | None = None,
               prerelease: bool = False, position: int = 0) -> Iterator[object]:
    """Arrow record batches of the records with ``start <= offset < end`` in ``data`` (whole
    log batches back to back). ``where`` names the file or endpoint in errors; ``position`` is
    where ``data`` starts in that file, so errors give file positions."""
    import pyarrow as pa

    schema = arrow_schema()
    cols: list[list] = [[] for _ in COLUMNS]
    (c_off, c_base, c_epoch, c_ts, c_ctl, c_type, c_key_id, c_ver, c_json, c_key,
     c_val) = cols
    try:
        for b in _batches(data, position):
            batch = b.batch
            if batch.last_offset < start or (end is not None and batch.base_offset >= end):
                continue
            records = decode_batch_records(batch, prerelease=prerelease,
                                           position=position + b.position)
            base, epoch = batch.base_offset, batch.partition_leader_epoch
            control = batch.is_control
            for r in records:
                off = r.offset
                if off < start or (end is not None and off >= end):
                    continue
                p = r.payload
                c_off.append(off)
                c_base.append(base)
                c_epoch.append(epoch)
                c_ts.append(r.timestamp * 1000)
                c_ctl.append(control)
                if p is None:
                    c_type.append(None)
                    c_key_id.append(None)
                    c_ver.append(None)
                else:
                    c_type.append(p.type_name)
                    c_key_id.append(p.control_type if isinstance(p, ControlRecord)
                                    else p.api_key)
                    c_ver.append(p.version)
                c_json.append(payload_json(p))
                c_key.append(r.record.key)
                c_val.append(r.record.value)
                if len(c_off) >= ARROW_ROWS:
                    yield pa.RecordBatch.from_arrays(
                        [pa.array(c, type=f.type) for c, f in zip(cols, schema)], schema=schema)
                    for c in cols:
                        c.clear()
    except KraftError as e:
        raise MetadataSourceError(f"kraft-metadata: {where}: {e}") from None
    if c_off:
        yield pa.RecordBatch.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(cols, schema)], schema=schema)


def _batches(data: bytes, position: int) -> Iterator[object]:
    """iter_log's batches, with byte offsets in errors counted from the file's start."""
    try:
        yield from iter_log(data, decode=False)
    except DecodeError as e:
        raise e.within("", position) from None


def read_file_bytes(path: str, position: int = 0, end: int | None = None) -> bytes:
    with open(path, "rb") as f:
        f.seek(position)
        return f.read() if end is None else f.read(end - position)


def file_size(path: str) -> int:
    return os.path.getsize(path)
