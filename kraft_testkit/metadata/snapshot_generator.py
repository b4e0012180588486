"""When a node writes a metadata snapshot: Kafka's ``SnapshotGenerator``, on every node.

Kafka runs a SnapshotGenerator on controllers and brokers alike. After each batch of committed
records it adds the batches' size to a counter and snapshots the image once the counter reaches
``metadata.log.max.record.bytes.between.snapshots`` (20 MiB), or else once
``metadata.log.max.snapshot.interval.ms`` (1 hour; 0 turns it off) has passed since the last
snapshot (or since the node started); loading a snapshot resets both. Like Kafka, no snapshot
is taken in the middle of a metadata transaction (the image must be batch aligned). Time is the
simulator's virtual clock. The file is named as Kafka names it,
``<end offset:020d>-<epoch:010d>.checkpoint`` (``raft/snapshot.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol.records import RecordBatch

#: v2 record batch header (Kafka's RECORD_BATCH_OVERHEAD)
BATCH_OVERHEAD = 61
#: per record framing with one-byte varints (length, attributes, deltas, key and value lengths,
#: header count): what a small metadata record costs besides its value
RECORD_OVERHEAD = 7


def batch_bytes(batch: RecordBatch) -> int:
    """The batch's size as Kafka's ``LogDeltaManifest.numBytes`` counts it (exact for the
    one-byte varints metadata records use)."""
    size = BATCH_OVERHEAD  # (every node, every commit: a loop, not generators)
    for r in batch.records:
        size += RECORD_OVERHEAD + len(r.value or b"") + len(r.key or b"")
    return size


class SnapshotGenerator:
    """Bytes and time since the last snapshot, and the decision to take one."""

    def __init__(self, max_bytes: int, max_interval_ms: int) -> None:
        self.max_bytes = max_bytes
        self.max_interval_ms = max_interval_ms
        self.bytes_since = 0
        self.last_ms: int | None = None
        self.snapshots = 0

    def reset(self, now_ms: int) -> None:
        self.bytes_since = 0
        self.last_ms = now_ms

    def on_commit(self, batches: Sequence[RecordBatch], now_ms: int,
                  in_transaction: bool) -> str | None:
        """Why a snapshot is due after these committed batches, or None."""
        if self.last_ms is None:
            self.last_ms = now_ms
        for b in batches:
            self.bytes_since += batch_bytes(b)
        if self.bytes_since >= self.max_bytes:
            reason = f"we have replayed at least {self.max_bytes} bytes"
        elif self.max_interval_ms and now_ms - self.last_ms >= self.max_interval_ms:
            reason = f"we have waited at least {self.max_interval_ms // 60000} minute(s)"
        else:
            return None
        if in_transaction:
            return None
        self.reset(now_ms)
        self.snapshots += 1
        return reason
