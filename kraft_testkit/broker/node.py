"""The broker's metadata state: what its Raft observer hands over, replayed into an image.

:class:`~kraft_testkit.node.KraftNode` passes each new image (and each change of quorum leader,
which is the active controller) on to the :class:`~.logic.BrokerLogic`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..metadata import MetadataImage, replay_batches
from ..protocol.frames import decode_metadata
from ..protocol.records import RecordBatch
from ..raft.snapshot import Snapshot


class MetadataListener:
    """The broker's metadata state: replays what the quorum committed (Kafka's MetadataLoader)."""

    def __init__(self) -> None:
        self.image = MetadataImage.EMPTY
        self.leader: tuple[int | None, int] = (None, -1)
        self.image_changed = False
        self.leader_changed = False

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None:
        self.image = replay_batches(self.image, batches)
        self.image_changed = True
        return None

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        records = (decode_metadata(v) for v in snapshot.records())  # streamed: less GC
        self.image = MetadataImage.from_snapshot(records, (snapshot.end_offset - 1, snapshot.epoch))
        self.image_changed = True

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader = (leader_id, epoch)
        self.leader_changed = True
