"""JBOD in KRaft (KIP-858): a broker reports failed log directories in its heartbeats.

After Kafka 4.x's ``ReplicationControlManager.handleDirectoriesOffline``: from metadata.version
3.7-IV2, a heartbeat's OfflineLogDirs that are still among the broker's registered directories
take the broker out of the ISR and leadership of every partition it holds in them (as fencing
would, for those partitions only), then a BrokerRegistrationChangeRecord v2 lists the
directories that remain online. Directories come back only with a new registration.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..metadata import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from .eligibility import metadata_version
from .result import ControllerContext, record


def _partitions_in(image: MetadataImage, broker_id: int, dirs: set[Uuid]
                   ) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    for topic in image.topics:
        for partition_id in sorted(topic.partitions):
            reg = topic.partitions[partition_id]
            for replica, directory in zip(reg.replicas, reg.directories):
                if replica == broker_id and directory in dirs:
                    yield topic, partition_id, reg
                    break


def handle_directories_offline(ctx: ControllerContext, broker: BrokerRegistration,
                               offline: Sequence[Uuid]) -> list[MetadataRecord]:
    """The records for a heartbeat reporting ``offline`` directories (none if nothing new)."""
    if not V.is_directory_assignment_supported(metadata_version(ctx.image)) or not offline:
        return []
    new_offline = [d for d in broker.log_dirs if d in set(offline)]
    if not new_offline:
        return []
    from .replication import _leader_and_isr_updates  # noqa: PLC0415 (import cycle)

    records = _leader_and_isr_updates(
        ctx, _partitions_in(ctx.image, broker.id, set(new_offline)), removing=broker.id)
    remaining = tuple(d for d in broker.log_dirs if d not in set(offline))
    records.append(record(M.BrokerRegistrationChangeRecord(
        broker_id=broker.id, broker_epoch=broker.epoch, log_dirs=remaining), 2))
    return records
