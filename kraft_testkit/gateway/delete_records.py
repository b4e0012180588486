"""DeleteRecords (21), as a Kafka 4.2 broker serves it: the partition leader moves its log start
offset and answers once every live replica's log start reached it (the low watermark).

Kafka's path, ported (``KafkaApis#handleDeleteRecordsRequest``,
``ReplicaManager#deleteRecords`` / ``deleteRecordsOnLocalLog``,
``Partition#deleteRecordsOnLeader``, ``UnifiedLog#maybeIncrementLogStartOffset``,
``DelayedDeleteRecords``):

* a topic or partition the broker's metadata does not have: UNKNOWN_TOPIC_OR_PARTITION;
  an internal topic (``__consumer_offsets``, ...): INVALID_TOPIC_EXCEPTION;
* a broker that does not lead the partition (or does not serve: self-fenced, shut down):
  NOT_LEADER_OR_FOLLOWER (no leader epoch is checked: the request carries none);
* ``cleanup.policy=compact`` without ``delete``: POLICY_VIOLATION;
* offset -1 means the high watermark; below 0 otherwise, or above the high watermark:
  OFFSET_OUT_OF_RANGE;
* the leader's log start moves (never back), then the answer waits, up to ``timeout_ms``, for
  the low watermark (the smallest log start over the replicas on unfenced brokers; followers
  take the leader's log start with their next replica fetch) to reach the offset: answered with
  the low watermark, REQUEST_TIMED_OUT (with the low watermark as it was) at the deadline, or
  NOT_LEADER_OR_FOLLOWER (-1) if leadership moved meanwhile.

Consumers see it at once: ListOffsets EARLIEST answers the new start, a Fetch below it is
OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from .context import Pending, RequestContext
from .data_apis import PartitionView

E = ErrorCode
_DR = M.DeleteRecordsResponse
#: DeleteRecordsRequest.HIGH_WATERMARK
HIGH_WATERMARK = -1
#: ``Topic.isInternal``: the topics a client's DeleteRecords may not touch
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def _compact_only(image: Any, topic: str) -> bool:
    """``!config.delete && config.compact``: the topic's cleanup.policy (else the broker's
    log.cleanup.policy, default delete) names compact and not delete."""
    policy = image.configs.topic(topic).get("cleanup.policy")
    if policy is None:
        policy = image.configs.broker("").get("log.cleanup.policy", "delete")
    names = {p.strip() for p in policy.split(",")}
    return "compact" in names and "delete" not in names


def delete_records(ctx: RequestContext, req: Any) -> Any:
    image = ctx.cluster.broker(ctx.node).image
    # (topic, partition) -> [low watermark, error, required offset or None when settled]
    status: dict[tuple[str, int], list] = {}
    views: dict[tuple[str, int], PartitionView] = {}
    for t in req.topics:
        topic = image.topics.by_name(t.name)
        for p in t.partitions:
            key = (t.name, p.partition_index)
            view = PartitionView(ctx, topic, p.partition_index)
            views[key] = view
            status[key] = _delete_on_leader(ctx, image, view, t.name, p.offset)

    def build() -> Any:
        by_topic: dict[str, list] = {}
        for (name, index), (low, code, _) in status.items():
            by_topic.setdefault(name, []).append(_DR.DeleteRecordsPartitionResult(
                partition_index=index, low_watermark=low, error_code=code))
        return _DR(throttle_time_ms=0, topics=tuple(
            _DR.DeleteRecordsTopicResult(name=n, partitions=tuple(ps))
            for n, ps in by_topic.items()))

    def poll() -> Any:
        for key, entry in status.items():
            required = entry[2]
            if required is None:
                continue
            view = PartitionView(ctx, views[key].topic, key[1])
            if view.error() != E.NONE:
                entry[:] = [-1, E.NOT_LEADER_OR_FOLLOWER, None]
                continue
            low = ctx.gateway.data_plane.low_watermark(ctx.node, view.topic.id, key[1])
            if low >= required:
                entry[:] = [low, E.NONE, None]
        return build() if all(e[2] is None for e in status.values()) else None

    def expire() -> Any:
        for entry in status.values():
            if entry[2] is not None:
                entry[1:] = [E.REQUEST_TIMED_OUT, None]
        return build()

    if all(e[2] is None for e in status.values()):
        return build()
    return Pending(poll, expire, virtual_deadline_ms=ctx.now_ms + max(req.timeout_ms, 0))


def _delete_on_leader(ctx: RequestContext, image: Any, view: PartitionView, name: str,
                      offset: int) -> list:
    """[low watermark, error, offset still to wait for (None: answered)] for one partition."""
    if view.topic is None or view.partition not in view.topic.partitions:
        return [-1, E.UNKNOWN_TOPIC_OR_PARTITION, None]
    if name in INTERNAL_TOPICS:
        return [-1, E.INVALID_TOPIC_EXCEPTION, None]
    code = view.error()
    if code != E.NONE:
        return [-1, code, None]
    if _compact_only(image, name):
        return [-1, E.POLICY_VIOLATION, None]
    hw = view.high_watermark()
    target = hw if offset == HIGH_WATERMARK else offset
    if target < 0 or target > hw:
        return [-1, E.OFFSET_OUT_OF_RANGE, None]
    if view.log.increment_log_start(target):
        # a new log start goes in the followers' next incremental fetch answers (KIP-227)
        ctx.gateway.data_plane.appended(ctx.node, view.topic.id, view.partition)
    low = ctx.gateway.data_plane.low_watermark(ctx.node, view.topic.id, view.partition)
    return [low, E.NONE, target if low < target else None]
