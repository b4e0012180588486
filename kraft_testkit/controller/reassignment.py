"""Partition reassignment (KIP-455, run by the quorum controller as KIP-631 describes).

AlterPartitionReassignments with a target writes one PartitionChangeRecord: replicas become the
target followed by the replicas being removed, with ``adding``/``removing`` set. Leaders then
grow the ISR with AlterPartition; the change that brings every target replica into the ISR also
completes the reassignment (replicas = target, the removed ones out of the ISR, a new leader if
the old one was removed). A target that needs no new in-sync replica completes at once. A null
target cancels: the added replicas go and the original ones stay (Kafka's revert; if only added
replicas were in sync this needs an unclean election and is refused unless the topic allows it).
Deleting a topic ends its reassignments with it.

A new target for a partition already reassigning is computed from the current replica list (the
union); as in Kafka, an empty ``adding`` or ``removing`` of the new move leaves the old list in
place, so a replica can stay listed as adding while the new target removes it.
"""

from __future__ import annotations

from ..metadata import MetadataImage, PartitionRegistration, TopicImage
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from .eligibility import default_dir_provider, leader_acceptor, metadata_version
from .elr import elr_for
from .partition_change import Election, build_partition_change
from .reassignment_replicas import ReassignmentReplicas, Revert, is_reassigning
from .result import ControllerContext, ControllerResult
from .topic_configs import unclean_leader_election_enabled
from .topics import RequestFailed, validate_manual_assignment

AlterResponse = M.AlterPartitionReassignmentsResponse
ListResponse = M.ListPartitionReassignmentsResponse


def alter_partition_reassignments(
    ctx: ControllerContext, request: M.AlterPartitionReassignmentsRequest
) -> ControllerResult[M.AlterPartitionReassignmentsResponse]:
    """Start, change or cancel reassignments; one result per requested partition, one atomic
    batch of PartitionChangeRecords (a partition whose target changes nothing writes none)."""
    records: list[MetadataRecord] = []
    topics = []
    for topic in request.topics:
        partitions = []
        for target in topic.partitions:
            code, message = ErrorCode.NONE, None
            try:
                change = _alter_one(ctx, topic.name, target)
            except RequestFailed as e:
                code, message = e.code, e.message
            else:
                if change is not None:
                    records.append(change)
            partitions.append(AlterResponse.ReassignablePartitionResponse(
                partition_index=target.partition_index, error_code=code, error_message=message))
        topics.append(AlterResponse.ReassignableTopicResponse(name=topic.name,
                                                              partitions=partitions))
    body = AlterResponse(error_code=ErrorCode.NONE, error_message=None, responses=topics)
    return ControllerResult(tuple(records), body, True)


def _alter_one(ctx: ControllerContext, topic_name: str,
               target: M.AlterPartitionReassignmentsRequest.ReassignablePartition
               ) -> MetadataRecord | None:
    topic = ctx.image.topic(topic_name)
    if topic is None:
        raise RequestFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            f"Unable to find a topic named {topic_name}.")
    partition = topic.partitions.get(target.partition_index)
    if partition is None:
        raise RequestFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            f"Unable to find partition {topic_name}:{target.partition_index}.")
    if target.replicas is None:
        return _cancel(ctx, topic, target.partition_index, partition)
    return _change(ctx, topic, target.partition_index, partition, tuple(target.replicas))


def _cancel(ctx: ControllerContext, topic: TopicImage, partition_id: int,
            partition: PartitionRegistration) -> MetadataRecord | None:
    if not is_reassigning(partition):
        raise RequestFailed(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
    revert = Revert.of(partition)
    if not revert.replicas:
        raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            "Invalid replica assignment: addingReplicas contains all replicas.")
    unclean = unclean_leader_election_enabled(ctx.image, ctx.config, ctx.node_id, topic.name)
    if revert.unclean and not unclean:
        raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"Unable to revert partition assignment for {topic.name}:"
                            f"{partition_id} because it would require an unclean leader "
                            "election.")
    return build_partition_change(
        partition, topic.id, partition_id,
        acceptable_leader=leader_acceptor(ctx.image, partition),
        metadata_version=metadata_version(ctx.image),
        isr=revert.isr, replicas=revert.replicas, removing=(), adding=(),
        election=Election.UNCLEAN if unclean else Election.ONLINE,
        default_dir=default_dir_provider(ctx.image), elr=elr_for(ctx, topic.name))


def _change(ctx: ControllerContext, topic: TopicImage, partition_id: int,
            partition: PartitionRegistration, target: tuple[int, ...]) -> MetadataRecord | None:
    validate_manual_assignment(ctx.image, target, None)
    moving = ReassignmentReplicas.between(partition.replicas, target)
    return build_partition_change(
        partition, topic.id, partition_id,
        acceptable_leader=leader_acceptor(ctx.image, partition),
        metadata_version=metadata_version(ctx.image),
        replicas=moving.replicas if moving.replicas != partition.replicas else None,
        removing=moving.removing or None,
        adding=moving.adding or None,
        default_dir=default_dir_provider(ctx.image), elr=elr_for(ctx, topic.name))


def list_partition_reassignments(image: MetadataImage,
                                 request: M.ListPartitionReassignmentsRequest
                                 ) -> M.ListPartitionReassignmentsResponse:
    """Ongoing reassignments: of every topic (null list, by name) or of the partitions asked
    for; unknown topics and partitions, and those not reassigning, are left out. A read: give it
    the committed image."""
    wanted: list[tuple[TopicImage, list[int]]] = []
    if request.topics is None:
        for topic in image.topics:
            wanted.append((topic, sorted(topic.partitions)))
    else:
        for asked in request.topics:
            named = image.topic(asked.name)
            if named is not None:
                wanted.append((named, list(asked.partition_indexes)))
    topics = []
    for topic, partition_ids in wanted:
        ongoing = []
        for partition_id in partition_ids:
            partition = topic.partitions.get(partition_id)
            if partition is not None and is_reassigning(partition):
                ongoing.append(ListResponse.OngoingPartitionReassignment(
                    partition_index=partition_id, replicas=partition.replicas,
                    adding_replicas=partition.adding_replicas,
                    removing_replicas=partition.removing_replicas))
        if ongoing:
            topics.append(ListResponse.OngoingTopicReassignment(name=topic.name,
                                                                 partitions=ongoing))
    return ListResponse(error_code=ErrorCode.NONE, error_message=None, topics=topics)
