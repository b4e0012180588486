"""What a computed fetch answer holds, read from the leader's log (``fastforward.bulk``)."""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import encode_metadata
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.raft import rpc

#: A NoOpRecord's value in the metadata log (frame v1, type 20, version 0, no tagged fields):
#: the one record a computed answer may carry (anything else makes the broker react).
NOOP_VALUE = encode_metadata(M.NoOpRecord(), 0)


def only_noops(log: Any, start: int, end: int) -> bool:
    """Whether the log's batches in [start, end) hold NoOpRecords only (and are still
    decoded: a settled batch below a snapshot says nothing of its records)."""
    if start >= end:
        return True
    if start < log.start_offset:
        return False
    for batch in log.batches_between(start, end):
        records = getattr(batch, "records", None)
        if records is None or batch.is_control or \
                any(r.value != NOOP_VALUE for r in records):
            return False
    return True


def fetch_part(request: Any) -> Any:
    return rpc.fetch_partition(request.body)


def directory(request: Any) -> Any:
    return fetch_part(request).replica_directory_id


def read_until(log: Any, offset: int, end: int, max_bytes: int) -> bytes:
    """``log.read(offset, max_bytes)`` as it was when the log ended at ``end``."""
    if offset >= end:
        return b""
    data = log.read(offset, max_bytes)
    out = []
    for start, batch in iter_batches(data):
        if batch.base_offset >= end:
            break
        size = 12 + int.from_bytes(data[start + 8:start + 12], "big", signed=True)
        out.append(data[start:start + size])
    return b"".join(out)
