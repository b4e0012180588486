"""Replication control: ISR changes (AlterPartition), leader elections, and what happens to
partitions when a broker is fenced, unfenced, shut down or unregistered. Kafka's
ReplicationControlManager; topic administration is in :mod:`.topics`, reassignment in
:mod:`.reassignment`, and all leadership decisions in :mod:`.partition_change`. This module also
re-exports the whole replication API, so callers import from one place.

Where released Kafka differs from the seeds or from intuition, Kafka wins:

* AlterPartition from a broker that is not the partition's leader is INVALID_REQUEST (not
  NOT_LEADER_OR_FOLLOWER); a leader or partition epoch *newer* than the controller's is
  NOT_CONTROLLER (the broker saw a newer controller); an ISR naming a fenced, shutting-down,
  unregistered or re-registered broker is INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2);
  a change that completes a reassignment and moves leadership answers NEW_LEADER_ELECTED
  (FENCED_LEADER_EPOCH before v2) while still writing the record.
* Fencing the last ISR member leaves the ISR as it is and the partition leaderless; unfencing
  elects leaders only for leaderless partitions (moving preferred leaders back is the periodic
  leader balancing, :func:`balance_partition_leaders`).
* Controlled shutdown takes the broker out of every ISR as well as every leadership.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..metadata import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from .elr import elr_for
from .features import elr_enabled
from .eligibility import default_dir_provider, is_active, leader_acceptor, metadata_version
from .partition_change import Election, PartitionChangeError, build_partition_change
from .placement import UsableBroker, place_replicas, usable_brokers
from .reassignment import alter_partition_reassignments, list_partition_reassignments
from .reassignment_replicas import is_reassigning
from .result import ControllerContext, ControllerResult
from .topic_configs import unclean_leader_election_enabled
from .topics import create_partitions, create_topics, delete_topics, topic_name_error

ALTER_PARTITION_LATEST_VERSION = 3
ELECTION_PREFERRED = 0   # Kafka's ElectionType ids
ELECTION_UNCLEAN = 1
MAX_ELECTIONS_PER_IMBALANCE = 1000

__all__ = [
    "ALTER_PARTITION_LATEST_VERSION", "ELECTION_PREFERRED", "ELECTION_UNCLEAN", "Election",
    "PartitionChangeError", "UsableBroker", "alter_partition", "alter_partition_reassignments",
    "balance_partition_leaders", "build_partition_change", "create_partitions", "create_topics",
    "delete_topics", "elect_leaders", "handle_broker_fenced", "handle_broker_in_controlled_shutdown",
    "handle_broker_shutdown", "handle_broker_unfenced", "handle_broker_unregistered",
    "is_active", "is_reassigning",
    "leaderless_partitions", "list_partition_reassignments", "maybe_elect_unclean_leaders",
    "partitions_led_by", "place_replicas", "topic_name_error", "usable_brokers",
]

APResponse = M.AlterPartitionResponse


def _election_for(ctx: ControllerContext, topic: str) -> Election:
    if unclean_leader_election_enabled(ctx.image, ctx.config, ctx.node_id, topic):
        return Election.UNCLEAN
    return Election.ONLINE


# ---------------------------------------------------------------- AlterPartition


def alter_partition(ctx: ControllerContext, request: M.AlterPartitionRequest, *,
                    version: int = ALTER_PARTITION_LATEST_VERSION
                    ) -> ControllerResult[M.AlterPartitionResponse]:
    """A partition leader's ISR (and leader recovery state) change, checked as Kafka does.

    ``version`` is the request's API version: v0-1 name topics, v2+ use ids; v3 carries each ISR
    member's broker epoch. A wrong broker epoch for the requester fails the whole request
    (STALE_BROKER_EPOCH); each partition is then judged on its own, and an accepted one answers
    with the partition as it is after the record (which may complete a reassignment).
    """
    image = ctx.image
    requester = image.cluster.brokers.get(request.broker_id)
    if requester is None or requester.epoch != request.broker_epoch:
        return ControllerResult((), APResponse(error_code=ErrorCode.STALE_BROKER_EPOCH), False)
    records: list[MetadataRecord] = []
    topics = []
    for topic_data in request.topics:
        topic = image.topic(topic_data.topic_id) if version > 1 else \
            image.topic(topic_data.topic_name)
        out = []
        if topic is None or (version > 1 and topic_data.topic_id == Uuid.ZERO):
            code = ErrorCode.UNKNOWN_TOPIC_ID if version > 1 else \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out = [APResponse.PartitionData(partition_index=p.partition_index, error_code=code)
                   for p in topic_data.partitions]
        else:
            for data in topic_data.partitions:
                out.append(_alter_one(ctx, request.broker_id, topic, data, version, records))
        topics.append(APResponse.TopicData(topic_name=topic_data.topic_name,
                                           topic_id=topic_data.topic_id, partitions=out))
    return ControllerResult(tuple(records), APResponse(error_code=ErrorCode.NONE, topics=topics),
                            False)


def _isr_with_epochs(data: M.AlterPartitionRequest.PartitionData,
                     version: int) -> list[tuple[int, int]]:
    if version >= 3:
        return [(s.broker_id, s.broker_epoch) for s in data.new_isr_with_epochs]
    return [(b, -1) for b in data.new_isr]


def _valid_isr(replicas: tuple[int, ...], isr: list[int]) -> bool:
    """Kafka's ``Replicas.validateIsr``: no negative ids, no duplicates, all replicas."""
    return len(set(isr)) == len(isr) and all(r >= 0 and r in replicas for r in isr)


def _ineligible(image: MetadataImage, isr: list[tuple[int, int]]) -> list[str]:
    out = []
    for broker_id, epoch in isr:
        broker = image.cluster.brokers.get(broker_id)
        if broker is None:
            out.append(f"{broker_id} (not registered)")
        elif broker.in_controlled_shutdown:
            out.append(f"{broker_id} (shutting down)")
        elif broker.fenced:
            out.append(f"{broker_id} (fenced)")
        elif epoch != -1 and epoch != broker.epoch:
            out.append(f"{broker_id} (broker epoch mismatch: requested={epoch} VS "
                       f"expected={broker.epoch})")
    return out


def _check_alter(image: MetadataImage, broker_id: int, partition: PartitionRegistration | None,
                 data: M.AlterPartitionRequest.PartitionData, isr: list[tuple[int, int]],
                 version: int) -> ErrorCode:
    """Kafka's ``validateAlterPartitionData``, check for check."""
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if data.leader_epoch > partition.leader_epoch or \
            data.partition_epoch > partition.partition_epoch:
        return ErrorCode.NOT_CONTROLLER
    if data.leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return ErrorCode.INVALID_REQUEST
    if data.partition_epoch < partition.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    ids = [b for b, _ in isr]
    if not _valid_isr(partition.replicas, ids) or partition.leader not in ids:
        return ErrorCode.INVALID_REQUEST
    lrs = data.leader_recovery_state
    if lrs not in (LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING):
        return ErrorCode.INVALID_REQUEST
    if lrs == LeaderRecoveryState.RECOVERING and len(ids) > 1:
        return ErrorCode.INVALID_REQUEST
    if partition.leader_recovery_state == LeaderRecoveryState.RECOVERED and \
            lrs == LeaderRecoveryState.RECOVERING:
        return ErrorCode.INVALID_REQUEST
    if _ineligible(image, isr):
        return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
    return ErrorCode.NONE


def _alter_one(ctx: ControllerContext, broker_id: int, topic: TopicImage,
               data: M.AlterPartitionRequest.PartitionData, version: int,
               records: list[MetadataRecord]) -> M.AlterPartitionResponse.PartitionData:
    partition = topic.partitions.get(data.partition_index)
    isr = _isr_with_epochs(data, version)
    error = _check_alter(ctx.image, broker_id, partition, data, isr, version)
    if error != ErrorCode.NONE:
        return APResponse.PartitionData(partition_index=data.partition_index, error_code=error)
    assert partition is not None
    change = build_partition_change(
        partition, topic.id, data.partition_index,
        acceptable_leader=leader_acceptor(ctx.image, partition),
        metadata_version=metadata_version(ctx.image),
        isr=[b for b, _ in isr], leader_recovery_state=data.leader_recovery_state,
        election=_election_for(ctx, topic.name),
        default_dir=default_dir_provider(ctx.image), elr=elr_for(ctx, topic.name))
    if change is not None:
        records.append(change)
        partition = partition.merge(change.message)
        new_leader = change.message.leader
        if new_leader != broker_id and new_leader != NO_LEADER_CHANGE:
            # Completing a reassignment moved leadership: the old leader must catch up on the
            # log before it tries again (the record is written all the same).
            code = ErrorCode.NEW_LEADER_ELECTED if version > 1 else ErrorCode.FENCED_LEADER_EPOCH
            return APResponse.PartitionData(partition_index=data.partition_index, error_code=code)
    return APResponse.PartitionData(
        partition_index=data.partition_index, error_code=ErrorCode.NONE,
        leader_id=partition.leader, leader_epoch=partition.leader_epoch, isr=partition.isr,
        leader_recovery_state=partition.leader_recovery_state,
        partition_epoch=partition.partition_epoch)


# ---------------------------------------------------------------- ElectLeaders


def elect_leaders(ctx: ControllerContext,
                  request: M.ElectLeadersRequest) -> ControllerResult[M.ElectLeadersResponse]:
    """PREFERRED (0) or UNCLEAN (1) elections for the listed partitions, or for all of them when
    the list is null (then partitions that need no election are left out of the answer)."""
    ELResponse = M.ElectLeadersResponse
    if request.election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
        unknown = f"Unknown election type {request.election_type}"
        failed = [ELResponse.ReplicaElectionResult(topic=t.topic, partition_result=[
            ELResponse.PartitionResult(partition_id=p, error_code=ErrorCode.INVALID_REQUEST,
                                       error_message=unknown) for p in t.partitions])
            for t in request.topic_partitions or ()]
        return ControllerResult((), ELResponse(error_code=ErrorCode.INVALID_REQUEST,
                                               replica_election_results=failed), False)
    election = Election.UNCLEAN if request.election_type == ELECTION_UNCLEAN \
        else Election.PREFERRED
    records: list[MetadataRecord] = []
    results = []
    if request.topic_partitions is None:
        for topic in ctx.image.topics:
            partition_results = []
            for partition_id in sorted(topic.partitions):
                code, message = _elect_one(ctx, topic.name, partition_id, election, records)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    partition_results.append(ELResponse.PartitionResult(
                        partition_id=partition_id, error_code=code, error_message=message))
            results.append(ELResponse.ReplicaElectionResult(topic=topic.name,
                                                            partition_result=partition_results))
    else:
        for asked in request.topic_partitions:
            partition_results = []
            for partition_id in asked.partitions:
                code, message = _elect_one(ctx, asked.topic, partition_id, election, records)
                partition_results.append(ELResponse.PartitionResult(
                    partition_id=partition_id, error_code=code, error_message=message))
            results.append(ELResponse.ReplicaElectionResult(topic=asked.topic,
                                                            partition_result=partition_results))
    return ControllerResult(tuple(records), ELResponse(error_code=ErrorCode.NONE,
                                                       replica_election_results=results), False)


def _elect_one(ctx: ControllerContext, topic_name: str, partition_id: int, election: Election,
               records: list[MetadataRecord]) -> tuple[ErrorCode, str | None]:
    topic = ctx.image.topic(topic_name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic_name}"
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"No such partition as {topic_name}-{partition_id}")
    if (election is Election.PREFERRED and partition.leader == partition.preferred_replica) or \
            (election is Election.UNCLEAN and partition.has_leader):
        # Kafka's ApiError(Errors) carries the error's default message
        return ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
    change = build_partition_change(
        partition, topic.id, partition_id,
        acceptable_leader=leader_acceptor(ctx.image, partition),
        metadata_version=metadata_version(ctx.image), election=election,
        default_dir=default_dir_provider(ctx.image), elr=elr_for(ctx, topic.name))
    if change is None:
        if election is Election.PREFERRED:
            return (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                    "The preferred leader was not available.")
        return (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                "Eligible topic partition leaders are not available.")
    records.append(change)
    return ErrorCode.NONE, None


def balance_partition_leaders(ctx: ControllerContext, *,
                              limit: int = MAX_ELECTIONS_PER_IMBALANCE
                              ) -> tuple[list[MetadataRecord], bool]:
    """Kafka's periodic leader balancing: a PREFERRED election for every partition not led by
    its first replica (up to ``limit`` records). Returns (records, more may remain)."""
    records: list[MetadataRecord] = []
    for topic, partition_id, partition in _partitions(ctx.image):
        if partition.leader == partition.preferred_replica:
            continue
        if len(records) >= limit:
            return records, True
        change = build_partition_change(
            partition, topic.id, partition_id,
            acceptable_leader=leader_acceptor(ctx.image, partition),
            metadata_version=metadata_version(ctx.image), election=Election.PREFERRED,
            default_dir=default_dir_provider(ctx.image), elr=elr_for(ctx, topic.name))
        if change is not None:
            records.append(change)
    return records, False


def leaderless_partitions(image: MetadataImage) -> bool:
    """Kafka's ``areSomePartitionsLeaderless``."""
    return any(reg.leader == NO_LEADER for _, _, reg in _partitions(image))


def maybe_elect_unclean_leaders(ctx: ControllerContext, *,
                                limit: int = MAX_ELECTIONS_PER_IMBALANCE
                                ) -> tuple[list[MetadataRecord], bool]:
    """Kafka 4.x's periodic ``maybeElectUncleanLeaders``: an UNCLEAN election for every
    leaderless partition whose topic has unclean.leader.election.enable (up to ``limit``
    records; an ELR member still wins over an out-of-sync replica). Returns (records, more)."""
    records: list[MetadataRecord] = []
    for topic, partition_id, partition in _partitions(ctx.image):
        if len(records) >= limit:
            break
        if partition.leader != NO_LEADER or \
                not unclean_leader_election_enabled(ctx.image, ctx.config, ctx.node_id, topic.name):
            continue
        _elect_one(ctx, topic.name, partition_id, Election.UNCLEAN, records)
    return records, len(records) >= limit


# ---------------------------------------------------------------- broker state hooks


def _partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    """Every partition, by topic name then partition id (a stable, seed-free order)."""
    for topic in image.topics:
        for partition_id in sorted(topic.partitions):
            yield topic, partition_id, topic.partitions[partition_id]


def _leader_and_isr_updates(ctx: ControllerContext,
                            partitions: Iterator[tuple[TopicImage, int, PartitionRegistration]],
                            *, removing: int = NO_LEADER, adding: int = NO_LEADER,
                            unclean_shutdown: int = NO_LEADER) -> list[MetadataRecord]:
    """Kafka's ``generateLeaderAndIsrUpdates``: take ``removing`` out of each ISR and out of
    leadership, treat ``adding`` as able to lead, and elect where the leader no longer
    qualifies (unclean where the topic allows it)."""
    mv = metadata_version(ctx.image)
    dirs = default_dir_provider(ctx.image)
    records = []
    for topic, partition_id, partition in partitions:
        change = build_partition_change(
            partition, topic.id, partition_id,
            acceptable_leader=leader_acceptor(ctx.image, partition, removing=removing,
                                              adding=adding, unclean_shutdown=unclean_shutdown),
            metadata_version=mv,
            isr=[r for r in partition.isr if r not in (removing, unclean_shutdown)],
            election=_election_for(ctx, topic.name),
            default_dir=dirs,
            elr=elr_for(ctx, topic.name,
                        () if unclean_shutdown == NO_LEADER else (unclean_shutdown,)))
        if change is not None:
            records.append(change)
    return records


def _with_isr_member(image: MetadataImage, broker_id: int
                     ) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    return ((t, p, reg) for t, p, reg in _partitions(image) if broker_id in reg.isr)


def _with_elr_member(image: MetadataImage, broker_id: int
                     ) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    return ((t, p, reg) for t, p, reg in _partitions(image) if broker_id in reg.elr)


def handle_broker_shutdown(ctx: ControllerContext, broker_id: int, *,
                           clean: bool) -> list[MetadataRecord]:
    """Kafka 4.x's ``handleBrokerShutdown``, run when a new incarnation of ``broker_id``
    registers. With ELR on and no proof of a clean shutdown (its PreviousBrokerEpoch is not its
    registered epoch) the broker may have lost acknowledged records: it leaves every ISR and
    ELR and cannot lead (``handleBrokerUncleanShutdown``). Otherwise it just leaves the ISRs,
    as a fenced broker does."""
    if elr_enabled(ctx.image) and not clean:
        return _out_of_isr_and_elr(ctx, broker_id, unclean_shutdown=broker_id)
    return _leader_and_isr_updates(ctx, _with_isr_member(ctx.image, broker_id),
                                   removing=broker_id)


def handle_broker_fenced(ctx: ControllerContext, broker_id: int) -> list[MetadataRecord]:
    """PartitionChangeRecords for fencing ``broker_id``: it leaves every ISR (except as the last
    member) and every leadership. The caller adds the fencing record itself."""
    return _leader_and_isr_updates(ctx, _with_isr_member(ctx.image, broker_id),
                                   removing=broker_id)


def handle_broker_in_controlled_shutdown(ctx: ControllerContext,
                                         broker_id: int) -> list[MetadataRecord]:
    """PartitionChangeRecords for a broker entering controlled shutdown: as fencing, it leaves
    ISRs and leaderships, so that it can be told to shut down once it leads nothing."""
    return _leader_and_isr_updates(ctx, _with_isr_member(ctx.image, broker_id),
                                   removing=broker_id)


def handle_broker_unregistered(ctx: ControllerContext, broker_id: int) -> list[MetadataRecord]:
    """PartitionChangeRecords for unregistering ``broker_id`` (before its UnregisterBrokerRecord):
    out of every ISR, ELR and leadership. It stays in replica lists, as in Kafka."""
    return _out_of_isr_and_elr(ctx, broker_id, removing=broker_id)


def _out_of_isr_and_elr(ctx: ControllerContext, broker_id: int,
                        **how: int) -> list[MetadataRecord]:
    """Changes for the partitions whose ISR holds ``broker_id``, then for those that hold it
    only in their ELR (one change per partition)."""
    records = _leader_and_isr_updates(ctx, _with_isr_member(ctx.image, broker_id), **how)
    changed = {(r.message.topic_id, r.message.partition_id) for r in records}
    later = ((t, p, reg) for t, p, reg in _with_elr_member(ctx.image, broker_id)
             if (t.id, p) not in changed)
    return records + _leader_and_isr_updates(ctx, later, **how)


def handle_broker_unfenced(ctx: ControllerContext, broker_id: int) -> list[MetadataRecord]:
    """PartitionChangeRecords for unfencing ``broker_id``: leaderless partitions get a leader
    (the broker counts as active already). Nothing else moves: preferred leaders come back
    through :func:`balance_partition_leaders`."""
    leaderless = ((t, p, reg) for t, p, reg in _partitions(ctx.image) if reg.leader == NO_LEADER)
    return _leader_and_isr_updates(ctx, leaderless, adding=broker_id)


def partitions_led_by(image: MetadataImage, broker_id: int) -> int:
    """How many partitions ``broker_id`` leads (a broker in controlled shutdown may stop once
    this is 0)."""
    return sum(1 for _, _, reg in _partitions(image) if reg.leader == broker_id)
