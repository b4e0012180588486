"""Log bytes to rows: one row per record, as Arrow record batches (2.5x faster than tuples in
Spark's Python data source at a million rows, measured in shared/notes/pyspark.md).

Decoding is the kit's own codec (:func:`kraft_testkit.protocol.log.iter_log`) and the JSON is
what ``kraft-testkit dump-log`` prints (Kafka's field names); nothing is decoded twice.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..errors import KraftError
from ..protocol.errors import DecodeError
from ..protocol.frames import ControlRecord, MetadataRecord, _read_header, type_name
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


def _header_only(value: bytes, prerelease: bool) -> tuple[str, int, int]:
    """(type name, api key, version) from a metadata record's frame header alone: the codec's
    own header reader (cached by the first three bytes), without decoding the body."""
    key = (value[:3], prerelease)
    found = _HEADER_ROWS.get(key)
    if found is None:
        cls, version, _, pos, _ = _read_header(value, prerelease)
        found = (_type_name(cls), cls._spec.api_key, version)
        if pos == 3:  # three one-byte varints: the prefix decides
            _HEADER_ROWS[key] = found
    return found


_NO_VALUE = (None, None, None)


def _payload_head(p: MetadataRecord | ControlRecord | None) -> tuple:
    if p is None:
        return _NO_VALUE
    return (p.type_name, p.control_type if isinstance(p, ControlRecord) else p.api_key,
            p.version)


_HEADER_ROWS: dict[tuple[bytes, bool], tuple[str, int, int]] = {}
_TYPE_NAMES: dict[type, str] = {}


def _type_name(cls: type) -> str:
    name = _TYPE_NAMES.get(cls)
    if name is None:
        name = _TYPE_NAMES[cls] = type_name(cls.__name__)
    return name


def iter_arrow(data: bytes, *, where: str, start: int = 0, end: int | None = None,
               prerelease: bool = False, position: int = 0,
               value_json: bool = True) -> Iterator[object]:
    """Arrow record batches of the records with ``start <= offset < end`` in ``data`` (whole
    log batches back to back). ``where`` names the file or endpoint in errors; ``position`` is
    where ``data`` starts in that file, so errors give file positions. Without ``value_json``
    record bodies are not decoded (``value_json`` is null): a bulk count runs several times
    faster."""
    schema = arrow_schema()
    cols: list[list] = [[] for _ in COLUMNS]
    (c_off, c_base, c_epoch, c_ts, c_ctl, c_type, c_key_id, c_ver, c_json, c_key,
     c_val) = cols
    try:
        for b in _batches(data, position):
            batch = b.batch
            if batch.last_offset < start or (end is not None and batch.base_offset >= end):
                continue
            base, base_ts, control = batch.base_offset, batch.base_timestamp, batch.is_control
            records = batch.records
            decoded = decode_batch_records(batch, prerelease=prerelease,
                                           position=position + b.position) \
                if value_json or control else None
            if batch.base_offset < start or (end is not None and batch.last_offset >= end):
                keep = [i for i, r in enumerate(records)
                        if start <= base + r[0] and (end is None or base + r[0] < end)]
                records = [records[i] for i in keep]
                decoded = None if decoded is None else [decoded[i] for i in keep]
            n = len(records)
            c_off.extend([base + r[0] for r in records])  # Record: offset_delta, ts_delta,
            c_ts.extend([(base_ts + r[1]) * 1000 for r in records])  # key, value, ...
            c_base.extend([base] * n)
            c_epoch.extend([batch.partition_leader_epoch] * n)
            c_ctl.extend([control] * n)
            c_key.extend([r[2] for r in records])
            c_val.extend([r[3] for r in records])
            if decoded is None:
                heads = [_NO_VALUE if r[3] is None else _header_only(r[3], prerelease)
                         for r in records]
                c_json.extend([None] * n)
            else:
                heads = [_payload_head(d.payload) for d in decoded]
                c_json.extend([payload_json(d.payload) if value_json else None
                               for d in decoded])
            c_type.extend([h[0] for h in heads])
            c_key_id.extend([h[1] for h in heads])
            c_ver.extend([h[2] for h in heads])
            if len(c_off) >= ARROW_ROWS:
                yield _arrow(cols, schema)
                for c in cols:
                    c.clear()
    except KraftError as e:
        raise MetadataSourceError(f"kraft-metadata: {where}: {e}") from None
    if c_off:
        yield _arrow(cols, schema)


def _arrow(cols: list[list], schema) -> object:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema)],
                                      schema=schema)


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
