"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) at a broker listener, and the
member-epoch checks OffsetCommit and OffsetFetch make for consumer groups (Kafka 4.2.1's
``ConsumerGroup#validateOffsetCommit`` / ``#validateOffsetFetch``).

A heartbeat that changed the group is answered once its records are committed to
``__consumer_offsets`` (Kafka's coordinator runtime answers after the write); one that changed
nothing is answered at once.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from ...context import RequestContext
from ..apis import _after_write, coordinator
from .manager import HeartbeatError, topic_ids
from .java_order import uuid_order

E = ErrorCode


def consumer_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    R = M.ConsumerGroupHeartbeatResponse
    coord = coordinator(ctx)
    interval = ctx.cluster.config.group_consumer_heartbeat_interval_ms

    def error(code: int, message: str | None = None) -> Any:
        return R(throttle_time_ms=0, error_code=code, error_message=message, member_epoch=0,
                 heartbeat_interval_ms=0)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    if shard is None:
        return error(code)
    host = "/" + (ctx.connection.peer.rsplit(":", 1)[0] if ctx.connection else "")
    try:
        out = coord.consumer.heartbeat(shard, req, ctx.version, ctx.client_id or "", host)
    except HeartbeatError as e:
        return error(e.code, e.message)
    assignment = None
    if out.assignment is not None:
        assignment = R.Assignment(topic_partitions=tuple(
            R.TopicPartitions(topic_id=t, partitions=tuple(sorted(out.assignment[t])))
            for t in uuid_order(out.assignment)))

    def answer(code: int) -> Any:
        if code != E.NONE:
            return error(code)
        return R(throttle_time_ms=0, error_code=0, member_id=out.member_id,
                 member_epoch=out.member_epoch,
                 heartbeat_interval_ms=interval if out.member_epoch >= 0 else 0,
                 assignment=assignment)
    if not out.records:
        return answer(E.NONE)
    return _after_write(ctx, coord.write(shard, out.records), answer)


def consumer_group_describe(ctx: RequestContext, req: Any) -> Any:
    R = M.ConsumerGroupDescribeResponse
    coord = coordinator(ctx)
    groups = []
    for group_id in req.group_ids:
        def missing(code: int, message: str | None) -> Any:
            return R.DescribedGroup(error_code=code, error_message=message, group_id=group_id,
                                    group_state="", group_epoch=0, assignment_epoch=0,
                                    assignor_name="", members=())
        if not group_id:
            groups.append(missing(E.INVALID_GROUP_ID, None))
            continue
        shard, code = coord.shard_for(ctx.node, group_id)
        if shard is None:
            groups.append(missing(code, None))
            continue
        group = shard.consumer_groups.get(group_id)
        if group is None:
            text = f"Group {group_id} is not a consumer group." if group_id in shard.groups \
                else f"Group {group_id} not found."
            groups.append(missing(E.GROUP_ID_NOT_FOUND, text))
            continue
        groups.append(_described(ctx, coord, shard, group))
    return R(throttle_time_ms=0, groups=tuple(groups))


def _described(ctx: RequestContext, coord: Any, shard: Any, group: Any) -> Any:
    """``ConsumerGroup#asDescribedGroup``."""
    R = M.ConsumerGroupDescribeResponse
    image = coord.consumer.image(shard)

    def tps(cls: Any, assignment: dict) -> Any:
        out = []
        for t in uuid_order(assignment):
            topic = image.topic(t)
            if topic is not None:
                out.append(R.TopicPartitions(topic_id=t, topic_name=topic.name,
                                             partitions=tuple(sorted(assignment[t]))))
        return cls(topic_partitions=tuple(out))
    counts = group.assignor_counts()
    assignor = coord.consumer.assignors[0]
    if counts:
        assignor = max(counts, key=lambda n: counts[n])
    members = tuple(R.Member(
        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
        member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex,
        assignment=tps(R.Assignment, m.assigned),
        target_assignment=tps(R.TargetAssignment, group.target.get(m.member_id, {})),
        member_type=1) for m in group.members.values())
    return R.DescribedGroup(error_code=0, group_id=group.group_id, group_state=group.state,
                            group_epoch=group.group_epoch,
                            assignment_epoch=group.assignment_epoch, assignor_name=assignor,
                            members=members)


def commit_error(group: Any, member_id: str, epoch: int, version: int, *,
                 transactional: bool = False, instance_id: str | None = None) -> int:
    """``ConsumerGroup#validateOffsetCommit``: 0, or the error for every partition. A
    TxnOffsetCommit that names no member, generation or instance is not checked (those fields
    are optional there), and it may use any version."""
    if epoch < 0 and not group.members:
        return E.NONE
    if transactional and epoch == -1 and not member_id and instance_id is None:
        return E.NONE
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if not transactional and version < 9:
        return E.UNSUPPORTED_VERSION
    return E.NONE if epoch == member.member_epoch else E.STALE_MEMBER_EPOCH


def fetch_error(group: Any, member_id: str | None, epoch: int) -> int:
    """``ConsumerGroup#validateOffsetFetch``."""
    if member_id is None and epoch < 0:
        return E.NONE
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    return E.NONE if epoch == member.member_epoch else E.STALE_MEMBER_EPOCH


__all__ = ["consumer_group_describe", "consumer_group_heartbeat", "commit_error",
           "fetch_error", "topic_ids"]
