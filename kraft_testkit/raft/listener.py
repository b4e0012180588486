"""What the replica tells the state machine above it (the quorum controller, in a later layer).

A replica hands its listener, in log order: the latest snapshot when the listener is behind the
log start (:meth:`RaftListener.handle_load_snapshot`), then committed batches, whole and in order
(:meth:`RaftListener.handle_commit`, control batches included: skip ``batch.is_control``). Returning
record values from ``handle_commit`` asks for a snapshot of the state as of the end of those
batches; the replica writes it and moves its log start there. Leadership changes come through
:meth:`RaftListener.handle_leader_change`; for this replica's own leadership only once every
record before the new epoch was handed over, so a controller never acts on a stale state.

Like the replica, a listener is pure: it must not read clocks or draw global randomness.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Protocol

from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.raft.snapshot import Snapshot

#: Kafka's metadata.log.max.record.bytes.between.snapshots default
DEFAULT_SNAPSHOT_BYTES = 20 * 1024 * 1024


class RaftListener(Protocol):
    def handle_commit(self, batches: Sequence[RecordBatch]) -> Sequence[bytes] | None:
        """Committed batches, in order; return snapshot records to snapshot at their end."""

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        """Replace the whole state by the snapshot's (offsets before its end are committed)."""

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        """The leader (None: unknown) of ``epoch``."""


class DigestListener:
    """A tiny state machine for bare quorums: how many records it applied and their checksum.

    Two replicas that applied the same committed prefix have the same ``(offset, count,
    checksum)``, whether they got there by replay or through a snapshot. It snapshots every
    ``snapshot_bytes`` bytes of committed record values (Kafka's
    ``metadata.log.max.record.bytes.between.snapshots``).
    """

    __slots__ = ("_since_snapshot", "checksum", "count", "leader", "offset", "snapshot_bytes",
                 "snapshots_loaded")

    def __init__(self, snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES) -> None:
        self.offset = 0  # the next offset to apply
        self.count = 0  # data records applied
        self.checksum = 0
        self.leader: tuple[int | None, int] = (None, 0)
        self.snapshot_bytes = snapshot_bytes
        self._since_snapshot = 0
        self.snapshots_loaded = 0

    def handle_commit(self, batches: Sequence[RecordBatch]) -> list[bytes] | None:
        crc = self.checksum
        count = self.count
        size = 0
        for batch in batches:
            if not batch.is_control:
                for r in batch.records:
                    value = r.value or b""
                    crc = zlib.crc32(value, zlib.crc32(len(value).to_bytes(4, "big"), crc))
                    size += len(value)
                    count += 1
        self.checksum, self.count = crc, count
        self.offset = batches[-1].last_offset + 1
        self._since_snapshot += size
        if self._since_snapshot >= self.snapshot_bytes:
            self._since_snapshot = 0
            return [self._encode()]
        return None

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        state = json.loads(next(snapshot.records()))
        self.offset = snapshot.end_offset
        self.count, self.checksum = state["count"], state["checksum"]
        self._since_snapshot = 0
        self.snapshots_loaded += 1

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader = (leader_id, epoch)

    def state(self) -> tuple[int, int, int]:
        """``(next offset, records applied, checksum)``: equal on replicas at the same offset."""
        return (self.offset, self.count, self.checksum)

    def _encode(self) -> bytes:
        state = {"count": self.count, "checksum": self.checksum}
        return json.dumps(state, separators=(",", ":")).encode()
