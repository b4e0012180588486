"""JBOD in KRaft (KIP-858): a broker reports failed log directories in its heartbeats, and
where each replica lives (AssignReplicasToDirs).

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
from ..protocol.error_codes import ErrorCode
from .eligibility import default_dir_provider, leader_acceptor, metadata_version
from .result import ControllerContext, ControllerResult, record


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


def assign_replicas_to_dirs(ctx: ControllerContext, request: M.AssignReplicasToDirsRequest
                            ) -> ControllerResult[M.AssignReplicasToDirsResponse]:
    """AssignReplicasToDirs, as Kafka 4.x's ``handleAssignReplicasToDirs``: from 3.7-IV2, for
    the broker's current epoch, each named replica of the broker gets its directory (a
    PartitionChangeRecord with Directories); a replica placed in a directory the broker does not
    list as online also leaves the ISR and leadership, as on a failed directory. Per partition:
    UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (not a replica)."""
    from .replication import _leader_and_isr_updates  # noqa: PLC0415 (import cycle)

    R = M.AssignReplicasToDirsResponse
    if not V.is_directory_assignment_supported(metadata_version(ctx.image)):
        return ControllerResult((), R(error_code=ErrorCode.UNSUPPORTED_VERSION))
    broker = ctx.image.cluster.broker(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        return ControllerResult((), R(error_code=ErrorCode.STALE_BROKER_EPOCH))
    records: list[MetadataRecord] = []
    offline: list[tuple[TopicImage, int, PartitionRegistration]] = []
    directories = []
    for req_dir in request.directories:
        online = req_dir.id in broker.log_dirs
        topics = []
        for req_topic in req_dir.topics:
            topic = ctx.image.topics.topics_by_id.get(req_topic.topic_id)
            parts = []
            for req_part in req_topic.partitions:
                code = _assign_one(ctx, broker.id, req_dir.id, topic, req_part.partition_index,
                                   records)
                if code == ErrorCode.NONE and not online:
                    offline.append((topic, req_part.partition_index,
                                    topic.partitions[req_part.partition_index]))
                parts.append(R.PartitionData(
                    partition_index=req_part.partition_index, error_code=code))
            topics.append(R.TopicData(topic_id=req_topic.topic_id,
                                                    partitions=tuple(parts)))
        directories.append(R.DirectoryData(id=req_dir.id, topics=tuple(topics)))
    if offline:
        records += _leader_and_isr_updates(ctx, iter(offline), removing=broker.id)
    return ControllerResult(tuple(records), R(error_code=ErrorCode.NONE,
                                              directories=tuple(directories)), atomic=False)


def _assign_one(ctx: ControllerContext, broker_id: int, directory: Uuid, topic: TopicImage | None,
                partition_id: int, records: list[MetadataRecord]) -> ErrorCode:
    from .elr import elr_for  # noqa: PLC0415 (import cycle)
    from .partition_change import build_partition_change  # noqa: PLC0415

    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if broker_id not in partition.replicas:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    change = build_partition_change(
        partition, topic.id, partition_id, acceptable_leader=leader_acceptor(ctx.image, partition),
        metadata_version=metadata_version(ctx.image), directories={broker_id: directory},
        default_dir=default_dir_provider(ctx.image), elr=elr_for(ctx, topic.name))
    if change is not None:
        records.append(change)
    return ErrorCode.NONE
