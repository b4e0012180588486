"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions.

Kafka splits each of these between ``ControllerApis`` (duplicate names, name/id resolution) and
``ReplicationControlManager`` (validation, placement, records); the kit has no such seam, so both
halves live here, in Kafka's order of checks and with its error codes and messages. Commands read
``ctx.image`` only and return records plus the response (Kafka's ControllerResult; topic
creation, deletion and partition creation are atomic batches). Validate-only requests answer
exactly as a real run would, with no records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from ..metadata import LeaderRecoveryState, MetadataImage, PartitionRegistration
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode, KafkaApiError
from ..protocol.frames import MetadataRecord
from ..protocol.uuid import Uuid
from .collision_index import CollisionIndex, collision_index
from .config_schema import topic_name_problem
from .eligibility import default_dirs, is_active, metadata_version
from .partition_change import PartitionChangeError
from .configs import clear_elr_records
from .java_random import hash_map_order, string_hash
from .placement import PLACEMENT_RANDOM_KEY, UsableBroker, place_replicas, usable_brokers
from .result import MAX_RECORDS_PER_USER_OP, ControllerContext, ControllerResult, record
from .topic_configs import InvalidConfig, effective_topic_configs, validate_new_topic_configs

TOPIC_RESOURCE = 2                 # ConfigResource.Type.TOPIC
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``: the most partitions one CreateTopics
#: may ask for (checked before anything is placed)
MAX_PARTITIONS_PER_BATCH = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."
K = TypeVar("K")

CreateTopicResult = M.CreateTopicsResponse.CreatableTopicResult
DeleteTopicResult = M.DeleteTopicsResponse.DeletableTopicResult
CreatePartitionsResult = M.CreatePartitionsResponse.CreatePartitionsTopicResult


class RequestFailed(Exception):
    """One topic's or partition's request failed: Kafka's code and message for its result.
    Internal control flow only; it never leaves a command."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def of(cls, e: KafkaApiError) -> RequestFailed:
        return cls(ErrorCode(e.code), e.message)


# ---------------------------------------------------------------- names


def topic_name_error(name: str) -> str | None:
    """Kafka's ``Topic.validate`` message for an illegal topic name, or None if it is legal."""
    return topic_name_problem(name)


def _colliding_topic(image: MetadataImage, name: str,
                     index: CollisionIndex | None = None) -> str | None:
    """The existing topic ``name`` collides with (the first in name order); ``index``:
    ``collision_index(image)`` when the caller has it."""
    if "." not in name and "_" not in name:
        return None
    if index is None:
        index = collision_index(image)
    return index.first(name)


def _duplicates(items: Iterable[K]) -> tuple[list[K], list[K]]:
    """(items given once, items given more than once), each in first-seen order."""
    counts: dict[K, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return ([k for k, c in counts.items() if c == 1], [k for k, c in counts.items() if c > 1])


def _hash_set_order(names: Iterable[str], subset: Iterable[str]) -> list[str]:
    """``subset`` in the iteration order of a Java ``HashSet`` that had ``names`` added (first
    occurrences count) and the others removed: the order ``ControllerApis`` answers in."""
    keep = set(subset)
    if len(keep) <= 1:
        return list(keep)
    return [n for n in hash_map_order(dict.fromkeys(names), string_hash) if n in keep]


def total_partitions(topics: Iterable[M.CreateTopicsRequest.CreatableTopic],
                     default_partitions: int) -> int:
    """``validateTotalNumberOfPartitions``' count: the assignments' number when given, else the
    partitions asked for (the default for -1, nothing for an invalid count). An upper bound:
    topics that fail later count too. (Kafka sums in a Java int, which can wrap around for
    absurd counts; the kit sums exactly, so the bound always holds.)"""
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += default_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


def _whole_request_failed(request: M.CreateTopicsRequest, code: ErrorCode,
                          message: str) -> ControllerResult[M.CreateTopicsResponse]:
    """``CreateTopicsRequest#getErrorResponse``: the controller threw, so every topic of the
    request (duplicates each time they occur) gets the error, and nothing is written."""
    return ControllerResult((), M.CreateTopicsResponse(topics=[
        CreateTopicResult(name=t.name, error_code=code, error_message=message)
        for t in request.topics]), True)


# ---------------------------------------------------------------- partitions


def validate_manual_assignment(image: MetadataImage, broker_ids: Sequence[int],
                                replication_factor: int | None) -> None:
    """Kafka's ``validateManualPartitionAssignment`` (INVALID_REPLICA_ASSIGNMENT)."""
    if not broker_ids:
        raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id not in image.cluster.brokers:
            raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                          f"The manual partition assignment includes broker {broker_id}, but no "
                          "such broker is registered.")
        if broker_id == previous:
            raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                          f"The manual partition assignment includes the broker {broker_id} more "
                          "than once.")
        previous = broker_id
    if replication_factor is not None and len(broker_ids) != replication_factor:
        raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      f"The manual partition assignment includes a partition with "
                      f"{len(broker_ids)} replica(s), but this is not consistent with previous "
                      f"partitions, which have {replication_factor} replica(s).")


def new_partition(image: MetadataImage, replicas: Sequence[int],
                  isr: Sequence[int]) -> PartitionRegistration:
    """A new partition: led by its first in-sync replica, epochs 0, each replica's directory the
    broker's default."""
    replicas = tuple(replicas)
    return PartitionRegistration(
        replicas=replicas,
        directories=default_dirs(image, replicas),
        isr=tuple(isr),
        leader=isr[0],
        leader_recovery_state=LeaderRecoveryState.RECOVERED.value,
        leader_epoch=0,
        partition_epoch=0)


def _partition_record(image: MetadataImage, topic_id: Uuid, partition_id: int,
                      partition: PartitionRegistration) -> MetadataRecord:
    def lossy(what: str) -> None:  # default_dir follows the version, so nothing is ever lost
        raise PartitionChangeError(f"a new partition cannot lose {what}")
    return partition.to_record(topic_id, partition_id, metadata_version(image), lossy)


def _active_isr(image: MetadataImage, replicas: Sequence[int]) -> list[int]:
    return [r for r in replicas if is_active(image, r)]


# ---------------------------------------------------------------- CreateTopics


def create_topics(ctx: ControllerContext,
                  request: M.CreateTopicsRequest) -> ControllerResult[M.CreateTopicsResponse]:
    """Create topics: names, existence and configs are checked for all topics first, then each
    remaining topic is placed (or its manual assignment checked) and gets a TopicRecord, its
    ConfigRecords and PartitionRecords. One result per distinct name, request order; duplicate
    names are INVALID_REQUEST and ``__cluster_metadata`` is refused as Kafka's controller does."""
    image = ctx.image
    unique, duplicated = _duplicates(t.name for t in request.topics)
    allowed = {n for n in unique if n != CLUSTER_METADATA_TOPIC}
    topics = [t for t in request.topics if t.name in allowed]
    if total_partitions(topics, ctx.config.num_partitions) > MAX_PARTITIONS_PER_BATCH:
        return _whole_request_failed(request, ErrorCode.POLICY_VIOLATION, TOO_MANY_PARTITIONS)
    errors: dict[str, RequestFailed] = {}
    index: CollisionIndex | None = None
    for topic in topics:
        problem = topic_name_error(topic.name)
        if problem is not None:
            errors[topic.name] = RequestFailed(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if index is None and ("." in topic.name or "_" in topic.name):
            index = collision_index(image)
        colliding = _colliding_topic(image, topic.name, index)
        if colliding is not None:
            errors[topic.name] = RequestFailed(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{topic.name}' collides with existing topic: {colliding}")
    for topic in topics:
        if image.topic(topic.name) is not None:
            errors[topic.name] = RequestFailed(ErrorCode.TOPIC_ALREADY_EXISTS,
                                         f"Topic '{topic.name}' already exists.")
    configs: dict[str, dict[str, str]] = {}
    for topic in topics:
        if topic.name in errors:
            continue
        nulls = [c.name for c in topic.configs if c.value is None]
        if nulls:
            errors[topic.name] = RequestFailed(
                ErrorCode.INVALID_CONFIG,
                "Null value not supported for topic configs: " + ",".join(nulls))
        else:
            configs[topic.name] = {c.name: c.value for c in topic.configs}

    records: list[MetadataRecord] = []
    results: dict[str, CreateTopicResult] = {}
    usable: list[UsableBroker] = []  # ctx.image is the same for every topic: list brokers once
    for topic in topics:
        if topic.name in errors:
            continue
        try:
            validate_new_topic_configs(configs[topic.name])
            topic_records, result = _create_topic(ctx, topic, configs[topic.name], usable)
        except InvalidConfig as e:
            errors[topic.name] = RequestFailed.of(e)
            continue
        except RequestFailed as e:
            errors[topic.name] = e
            continue
        records.extend(topic_records)
        if len(records) > MAX_RECORDS_PER_USER_OP:  # Kafka's BoundedList throws, whole request
            return _whole_request_failed(request, ErrorCode.POLICY_VIOLATION, TOO_MANY_RECORDS)
        results[topic.name] = result

    response: list[CreateTopicResult] = []
    for topic in topics:
        failed = errors.get(topic.name)
        if failed is None:
            response.append(results[topic.name])
        else:
            response.append(CreateTopicResult(name=topic.name, error_code=failed.code,
                                              error_message=failed.message))
    names = [t.name for t in request.topics]
    for name in _hash_set_order(names, duplicated):
        response.append(CreateTopicResult(name=name, error_code=ErrorCode.INVALID_REQUEST,
                                          error_message="Duplicate topic name."))
    if CLUSTER_METADATA_TOPIC in unique:
        response.append(CreateTopicResult(
            name=CLUSTER_METADATA_TOPIC, error_code=ErrorCode.INVALID_REQUEST,
            error_message=f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."))
    body = M.CreateTopicsResponse(topics=response)
    if request.validate_only:
        return ControllerResult((), body, True)
    return ControllerResult(tuple(records), body, True)


def _assigned_partitions(image: MetadataImage,
                         topic: M.CreateTopicsRequest.CreatableTopic
                         ) -> dict[int, PartitionRegistration]:
    if topic.replication_factor != -1:
        raise RequestFailed(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, "
                      "but replication factor was not set to -1.")
    if topic.num_partitions != -1:
        raise RequestFailed(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, "
                      "but numPartitions was not set to -1.")
    parts: dict[int, PartitionRegistration] = {}
    replication_factor: int | None = None
    for assignment in topic.assignments:
        index = assignment.partition_index
        if index in parts:
            raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                          f"Found multiple manual partition assignments for partition {index}")
        validate_manual_assignment(image, assignment.broker_ids, replication_factor)
        replication_factor = len(assignment.broker_ids)
        isr = _active_isr(image, assignment.broker_ids)
        if not isr:
            raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                          "All brokers specified in the manual partition assignment for "
                          f"partition {index} are fenced or in controlled shutdown.")
        parts[index] = new_partition(image, assignment.broker_ids, isr)
    if set(parts) != set(range(len(parts))):
        raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      "partitions should be a consecutive 0-based integer sequence")
    return parts


def _placed_partitions(ctx: ControllerContext,
                       topic: M.CreateTopicsRequest.CreatableTopic,
                       usable: list[UsableBroker] | None = None
                       ) -> dict[int, PartitionRegistration]:
    """Placed replicas of a new topic. ``usable``: an empty list to fill with (or a list
    already holding) ``usable_brokers(ctx.image)``, shared by the topics of one request."""
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        raise RequestFailed(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger "
                      "than 0, or -1 to use the default value.")
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise RequestFailed(ErrorCode.INVALID_PARTITIONS,
                      "Number of partitions was set to an invalid non-positive value.")
    num_partitions = ctx.config.num_partitions if topic.num_partitions == -1 \
        else topic.num_partitions
    replication_factor = ctx.config.default_replication_factor \
        if topic.replication_factor == -1 else topic.replication_factor
    try:
        if usable is None:
            usable = usable_brokers(ctx.image)
        elif not usable:
            usable.extend(usable_brokers(ctx.image))
        placed = place_replicas(_placement_random(ctx), usable, num_partitions,
                                replication_factor)
    except KafkaApiError as e:
        raise RequestFailed(ErrorCode.INVALID_REPLICATION_FACTOR,
                      f"Unable to replicate the partition {replication_factor} time(s): "
                      f"{e.message}") from None
    parts: dict[int, PartitionRegistration] = {}
    for partition_id, replicas in enumerate(placed):
        isr = _active_isr(ctx.image, replicas)
        if not isr:
            raise RequestFailed(ErrorCode.INVALID_REPLICATION_FACTOR,
                          f"Unable to replicate the partition {replication_factor} time(s): All "
                          "brokers are currently fenced or in controlled shutdown.")
        parts[partition_id] = new_partition(ctx.image, replicas, isr)
    return parts


def _placement_random(ctx: ControllerContext):
    """The controller's seeded rng, unless a test put Kafka's MockRandom in its place."""
    return ctx.extra.get(PLACEMENT_RANDOM_KEY, ctx.rng)


def _new_topic_id(ctx: ControllerContext) -> Uuid:
    while True:
        topic_id = Uuid.random(ctx.rng)
        if ctx.image.topic(topic_id) is None:
            return topic_id


def _create_topic(ctx: ControllerContext, topic: M.CreateTopicsRequest.CreatableTopic,
                  configs: dict[str, str], usable: list[UsableBroker] | None = None
                  ) -> tuple[list[MetadataRecord], CreateTopicResult]:
    if topic.assignments:
        parts = _assigned_partitions(ctx.image, topic)
    else:
        parts = _placed_partitions(ctx, topic, usable)
    topic_id = _new_topic_id(ctx)
    effective = effective_topic_configs(ctx.image, ctx.config, ctx.node_id, configs)
    result = CreateTopicResult(
        name=topic.name, topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None,
        topic_config_error_code=ErrorCode.NONE, num_partitions=len(parts),
        replication_factor=len(parts[0].replicas),
        configs=[M.CreateTopicsResponse.CreatableTopicConfigs(
            name=c.name, value=None if c.sensitive else c.value, read_only=c.read_only,
            config_source=c.source, is_sensitive=c.sensitive) for c in effective])
    records = [record(M.TopicRecord(name=topic.name, topic_id=topic_id), 0)]
    # the configs go through incrementalAlterConfig: ConfigRecords in its HashMap's key order,
    # then a ClearElrRecord when min.insync.replicas is among them and ELR is on
    config_records = [record(M.ConfigRecord(resource_type=TOPIC_RESOURCE,
                                            resource_name=topic.name, name=name,
                                            value=configs[name]), 0)
                      for name in hash_map_order(configs, string_hash)]
    records.extend(config_records)
    records.extend(clear_elr_records(ctx, config_records))
    records.extend(_partition_record(ctx.image, topic_id, pid, parts[pid]) for pid in sorted(parts))
    return records, result


# ---------------------------------------------------------------- DeleteTopics


def delete_topics(ctx: ControllerContext,
                  request: M.DeleteTopicsRequest) -> ControllerResult[M.DeleteTopicsResponse]:
    """Delete topics named by name (v0-5 ``TopicNames``, or v6 entries without an id) or by id.

    Kafka's checks: an entry with neither or both is INVALID_REQUEST, as are names or ids given
    twice and a name whose topic was also given by id; unknown names are
    UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID. Each deleted topic gets one
    RemoveTopicRecord, which also drops its configs and ends any reassignment of its partitions.
    Results come in request order (Kafka shuffles them; the kit stays deterministic).
    """
    image = ctx.image
    out: list[DeleteTopicResult] = []

    def answer(name: str | None, topic_id: Uuid, code: ErrorCode, message: str | None = None):
        out.append(DeleteTopicResult(name=name, topic_id=topic_id, error_code=code,
                                     error_message=message))

    names: list[str] = list(request.topic_names)
    ids: list[Uuid] = []
    for entry in request.topics:
        if entry.name is None:
            if entry.topic_id == Uuid.ZERO:
                answer(None, Uuid.ZERO, ErrorCode.INVALID_REQUEST,
                       "Neither topic name nor id were specified.")
            else:
                ids.append(entry.topic_id)
        elif entry.topic_id == Uuid.ZERO:
            names.append(entry.name)
        else:
            answer(entry.name, entry.topic_id, ErrorCode.INVALID_REQUEST,
                   "You may not specify both topic name and topic id.")
    unique_names, duplicate_names = _duplicates(names)
    unique_ids, duplicate_ids = _duplicates(ids)
    for name in duplicate_names:
        answer(name, Uuid.ZERO, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    for topic_id in duplicate_ids:
        answer(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")

    to_delete: dict[Uuid, str] = {}
    for topic_id in unique_ids:
        topic = image.topic(topic_id)
        if topic is None:
            answer(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
        else:
            to_delete[topic_id] = topic.name
    for name in unique_names:
        topic = image.topic(name)
        if topic is None:
            answer(name, Uuid.ZERO, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif topic.id in to_delete or topic.id in duplicate_ids:
            to_delete.pop(topic.id, None)
            answer(name, topic.id, ErrorCode.INVALID_REQUEST,
                   "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[topic.id] = name
    records = []
    for topic_id, name in to_delete.items():
        records.append(record(M.RemoveTopicRecord(topic_id=topic_id), 0))
        answer(name, topic_id, ErrorCode.NONE)
    return ControllerResult(tuple(records), M.DeleteTopicsResponse(responses=out), True)


# ---------------------------------------------------------------- CreatePartitions


def create_partitions(ctx: ControllerContext, request: M.CreatePartitionsRequest
                      ) -> ControllerResult[M.CreatePartitionsResponse]:
    """Grow topics to ``count`` partitions, placed like new topics (or as assigned), each new
    partition starting with its active replicas as ISR. As ``ControllerApis`` answers: the
    duplicate names first (INVALID_REQUEST), then one result per topic in Java ``HashSet``
    order of the names. One request writes at most MAX_RECORDS_PER_USER_OP records: as in
    Kafka, the topic that would pass the bound keeps the partitions written before it and
    answers UNKNOWN_SERVER_ERROR, and so does every later topic that adds any."""
    unique, duplicated = _duplicates(t.name for t in request.topics)
    names = [t.name for t in request.topics]
    results = [CreatePartitionsResult(name=name, error_code=ErrorCode.INVALID_REQUEST,
                                      error_message="Duplicate topic name.")
               for name in _hash_set_order(names, duplicated)]
    by_name = {t.name: t for t in request.topics}
    records: list[MetadataRecord] = []
    for name in _hash_set_order(names, unique):
        try:
            _create_partitions(ctx, by_name[name], records)
        except RequestFailed as e:
            results.append(CreatePartitionsResult(name=name, error_code=e.code,
                                                  error_message=e.message))
            continue
        results.append(CreatePartitionsResult(name=name, error_code=ErrorCode.NONE,
                                              error_message=None))
    body = M.CreatePartitionsResponse(results=results)
    return ControllerResult(() if request.validate_only else tuple(records), body, True)


def _create_partitions(ctx: ControllerContext,
                       topic: M.CreatePartitionsRequest.CreatePartitionsTopic,
                       records: list[MetadataRecord]) -> None:
    """One topic's new partitions, appended to ``records`` (the request's, bounded)."""
    image = ctx.image
    existing = image.topic(topic.name)
    if existing is None:
        raise RequestFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = len(existing.partitions)
    if topic.count == current:
        raise RequestFailed(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if topic.count < current:
        raise RequestFailed(ErrorCode.INVALID_PARTITIONS,
                      f"The topic {topic.name} currently has {current} partition(s); "
                      f"{topic.count} would not be an increase.")
    additional = topic.count - current
    if topic.assignments is not None and len(topic.assignments) != additional:
        raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      f"Attempted to add {additional} additional partition(s), but only "
                      f"{len(topic.assignments)} assignment(s) were specified.")
    if not existing.partitions:
        raise RequestFailed(ErrorCode.UNKNOWN_SERVER_ERROR)  # Kafka hides the message
    replication_factor = len(next(iter(existing.partitions.values())).replicas)
    if topic.assignments is not None:
        placed = []
        for i, assignment in enumerate(topic.assignments):
            validate_manual_assignment(image, assignment.broker_ids, replication_factor)
            if not _active_isr(image, assignment.broker_ids):
                raise RequestFailed(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                              "All brokers specified in the manual partition assignment for "
                              f"partition {current + i} are fenced or in controlled shutdown.")
            placed.append(tuple(assignment.broker_ids))
    else:
        # Kafka places them all, then its bounded record list throws at the first one past the
        # bound: placing only those that fit gives the same first assignments and never sizes
        # anything by the count asked for
        room = MAX_RECORDS_PER_USER_OP - len(records)
        try:
            placed = place_replicas(_placement_random(ctx), usable_brokers(image),
                                    min(additional, room + 1), replication_factor)
        except KafkaApiError as e:
            raise RequestFailed.of(e) from None
    for partition_id, replicas in enumerate(placed, start=current):
        isr = _active_isr(image, replicas)
        if not isr:
            raise RequestFailed(ErrorCode.INVALID_REPLICATION_FACTOR,
                          f"Unable to replicate the partition {replication_factor} time(s): All "
                          "brokers are currently fenced or in controlled shutdown.")
        if len(records) >= MAX_RECORDS_PER_USER_OP:
            raise RequestFailed(ErrorCode.UNKNOWN_SERVER_ERROR)  # BoundedListTooLongException
        partition = new_partition(image, replicas, isr)
        records.append(_partition_record(image, existing.id, partition_id, partition))
