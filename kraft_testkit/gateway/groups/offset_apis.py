"""OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups and OffsetDelete at the
group's coordinator, with Kafka 4.2's checks: a commit from a member must name its generation
(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS while the group completes a
rebalance); a commit with generation -1 and no member is a simple commit (a consumer that
``assign()``s). Offsets are read back only once committed to ``__consumer_offsets``.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from ..context import RequestContext
from . import records
from .apis import _after_write, coordinator
from .consumer import records as consumer_records
from .consumer.apis import commit_error, fetch_error
from .consumer.manager import subscribed_names
from .coordinator import OFFSET_METADATA_MAX_BYTES
from .group import COMPLETING, DEAD, EMPTY, STABLE, ClassicGroup

E = ErrorCode


def _topic_known(ctx: RequestContext, name: str, partition: int) -> bool:
    machine = ctx.cluster.broker(ctx.node)
    topic = None if machine is None else machine.image.topic(name)
    return topic is not None and partition in topic.partitions


def offset_commit(ctx: RequestContext, req: Any) -> Any:
    R = M.OffsetCommitResponse

    def answer(codes: dict[tuple[str, int], int]) -> Any:
        return R(throttle_time_ms=0, topics=tuple(R.OffsetCommitResponseTopic(
            name=t.name, partitions=tuple(R.OffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
                for p in t.partitions)) for t in req.topics))

    def all_failed(code: int) -> Any:
        return answer({(t.name, p.partition_index): code for t in req.topics
                       for p in t.partitions})
    coord = coordinator(ctx)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    if shard is None:
        return all_failed(code)
    group = shard.groups.get(req.group_id)
    generation, member_id = req.generation_id_or_member_epoch, req.member_id
    simple = generation < 0 and not member_id
    consumer_group = shard.consumer_groups.get(req.group_id)
    if consumer_group is not None:  # KIP-848: member epochs (groups/consumer/apis.py)
        code = commit_error(consumer_group, member_id, generation, ctx.version)
        if code:
            return all_failed(code)
    elif simple:
        if group is not None and group.members:
            return all_failed(E.UNKNOWN_MEMBER_ID)
    elif group is None:
        return all_failed(E.ILLEGAL_GENERATION)
    else:
        member = group.members.get(member_id)
        if member is None:
            return all_failed(E.UNKNOWN_MEMBER_ID)
        if generation != group.generation:
            return all_failed(E.ILLEGAL_GENERATION)
        if group.state == COMPLETING:
            return all_failed(E.REBALANCE_IN_PROGRESS)
        member.last_seen = coord.session_now()
    codes: dict[tuple[str, int], int] = {}
    recs: list[records.Record] = []
    committed: list[tuple[str, int, tuple[int, int, str, int]]] = []
    now = ctx.now_ms
    for t in req.topics:
        for p in t.partitions:
            key = (t.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if not _topic_known(ctx, t.name, p.partition_index):
                codes[key] = E.UNKNOWN_TOPIC_OR_PARTITION
            elif len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                codes[key] = E.OFFSET_METADATA_TOO_LARGE
            else:
                codes[key] = E.NONE
                recs.append(records.offset_commit(req.group_id, t.name, p.partition_index,
                                                  p.committed_offset, p.committed_leader_epoch,
                                                  metadata, now))
                committed.append((t.name, p.partition_index, (
                    p.committed_offset, p.committed_leader_epoch, metadata, now)))
    if not recs:
        return answer(codes)
    if group is None and consumer_group is None:
        group = shard.groups[req.group_id] = ClassicGroup(req.group_id)

    def apply() -> None:
        mine = shard.offsets.setdefault(req.group_id, {})
        for topic, partition, value in committed:
            mine[(topic, partition)] = value
    write = coord.write(shard, recs, apply)

    def done(code: int) -> Any:
        return answer({k: (code if v == E.NONE else v) for k, v in codes.items()})
    return _after_write(ctx, write, done)


def offset_fetch(ctx: RequestContext, req: Any) -> Any:
    R = M.OffsetFetchResponse
    coord = coordinator(ctx)
    if ctx.version < 8:
        wanted = None if req.topics is None else [(t.name, list(t.partition_indexes))
                                                  for t in req.topics]
        code, topics = _fetch_group(ctx, coord, req.group_id, wanted,
                                    ctx.version >= 7 and req.require_stable)
        if code and ctx.version < 2:  # v1 has no top-level error: every partition carries it
            topics = [(n, [(i, -1, -1, "", code) for i in parts]) for n, parts in (wanted or [])]
        return R(throttle_time_ms=0, error_code=code, topics=tuple(
            R.OffsetFetchResponseTopic(name=n, partitions=tuple(
                R.OffsetFetchResponsePartition(partition_index=i, committed_offset=o,
                                               committed_leader_epoch=e, metadata=m,
                                               error_code=c) for i, o, e, m, c in parts))
            for n, parts in topics))
    groups = []
    for g in req.groups:
        wanted = None if g.topics is None else [(t.name, list(t.partition_indexes))
                                                for t in g.topics]
        member = (g.member_id, g.member_epoch) if ctx.version >= 9 else None
        code, topics = _fetch_group(ctx, coord, g.group_id, wanted, req.require_stable,
                                    member)
        groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=tuple(
            R.OffsetFetchResponseTopics(name=n, partitions=tuple(
                R.OffsetFetchResponsePartitions(partition_index=i, committed_offset=o,
                                                committed_leader_epoch=e, metadata=m,
                                                error_code=c) for i, o, e, m, c in parts))
            for n, parts in topics)))
    return R(throttle_time_ms=0, groups=tuple(groups))


def _fetch_group(ctx: RequestContext, coord: Any, group_id: str,
                 wanted: list[tuple[str, list[int]]] | None,
                 require_stable: bool = False,
                 member: tuple[str | None, int] | None = None) -> tuple[int, list]:
    """One group's committed offsets; with ``require_stable`` (v7+) a partition a transaction
    holds offsets for is UNSTABLE_OFFSET_COMMIT until its marker (``OffsetMetadataManager#
    fetchOffsets`` / ``#fetchAllOffsets``); ``member`` (v9: id, epoch) is checked against a
    consumer group (``ConsumerGroup#validateOffsetFetch``)."""
    shard, code = coord.shard_for(ctx.node, group_id)
    if shard is None:
        return code, []
    consumer_group = shard.consumer_groups.get(group_id)
    if consumer_group is not None and member is not None:
        code = fetch_error(consumer_group, *member)
        if code:
            return code, []
    offsets = shard.offsets.get(group_id, {})
    unstable: set[tuple[str, int]] = set()
    if require_stable:
        for by_group in shard.pending_txn.values():
            unstable.update(by_group.get(group_id, ()))
    if wanted is None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(offsets):
            by_topic.setdefault(topic, []).append(partition)
        wanted = sorted(by_topic.items())
    out = []
    for name, parts in wanted:
        rows = []
        for i in parts:
            if (name, i) in unstable:
                rows.append((i, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT))
                continue
            o, e, m, _ = offsets.get((name, i), (-1, -1, "", -1))
            rows.append((i, o, e, m, E.NONE))
        out.append((name, rows))
    return E.NONE, out


def list_groups(ctx: RequestContext, req: Any) -> Any:
    R = M.ListGroupsResponse
    coord = coordinator(ctx)
    states = {s.lower() for s in (req.states_filter or ())}
    types = {t.lower() for t in (req.types_filter or ())}
    return R(throttle_time_ms=0, error_code=0, groups=tuple(
        R.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "",
                      group_state=g.state, group_type=getattr(g, "type", "classic"))
        for g in coord.groups_here(ctx.node) if (not states or g.state.lower() in states)
        and (not types or getattr(g, "type", "classic") in types)))


def describe_groups(ctx: RequestContext, req: Any) -> Any:
    R = M.DescribeGroupsResponse
    coord = coordinator(ctx)
    out = []
    for group_id in req.groups:
        shard, code = coord.shard_for(ctx.node, group_id)
        group = None if shard is None else shard.groups.get(group_id)
        if shard is None:
            out.append(R.DescribedGroup(error_code=code, group_id=group_id, group_state="",
                                        protocol_type="", protocol_data="", members=()))
        elif group is None or group_id in shard.consumer_groups:
            # no group, or Kafka's classicGroup(): not a classic group; v6+ says which
            why = "is not a classic group" if group_id in shard.consumer_groups else "not found"
            v6 = ctx.version >= 6
            out.append(R.DescribedGroup(
                error_code=E.GROUP_ID_NOT_FOUND if v6 else E.NONE,
                error_message=f"Group {group_id} {why}." if v6 else None,
                group_id=group_id, group_state=DEAD, protocol_type="", protocol_data="",
                members=()))
        else:
            stable = group.state == STABLE
            members = tuple(R.DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata_for(group.protocol) if stable else b"",
                member_assignment=m.assignment if stable else b"")
                for m in group.members.values())
            out.append(R.DescribedGroup(
                error_code=0, group_id=group_id, group_state=group.state,
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol or "") if stable else "", members=members))
    return R(throttle_time_ms=0, groups=tuple(out))


def delete_groups(ctx: RequestContext, req: Any) -> Any:
    R = M.DeleteGroupsResponse
    coord = coordinator(ctx)
    results: dict[str, int] = {}
    writes = []
    for group_id in req.groups_names:
        shard, code = coord.shard_for(ctx.node, group_id)
        group = None if shard is None else \
            shard.consumer_groups.get(group_id) or shard.groups.get(group_id)
        if shard is None:
            results[group_id] = code
        elif group is None:
            results[group_id] = E.GROUP_ID_NOT_FOUND
        elif group.members:
            results[group_id] = E.NON_EMPTY_GROUP
        else:
            recs = [records.offset_tombstone(group_id, t, p)
                    for t, p in sorted(shard.offsets.get(group_id, {}))]
            if group_id in shard.consumer_groups:  # ConsumerGroup#createGroupTombstoneRecords
                recs += consumer_records.group_tombstones(group)
            else:
                recs.append(records.group_tombstone(group_id))

            def forget(shard: Any = shard, group_id: str = group_id) -> None:
                shard.groups.pop(group_id, None)
                shard.consumer_groups.pop(group_id, None)
                shard.offsets.pop(group_id, None)
            writes.append((group_id, coord.write(shard, recs, forget)))
            results[group_id] = E.NONE

    def answer(_: int) -> Any:
        for group_id, w in writes:
            if w.result not in (None, E.NONE):
                results[group_id] = w.result
        return R(throttle_time_ms=0, results=tuple(
            R.DeletableGroupResult(group_id=g, error_code=c) for g, c in results.items()))
    if not writes:
        return answer(0)
    return _after_write(ctx, _AllWrites([w for _, w in writes]), answer)


class _AllWrites:
    """Several writes seen as one: done when every one is."""

    def __init__(self, writes: list) -> None:
        self.writes = writes
        self.result: int | None = None

    def poll(self) -> int | None:
        codes = [w.poll() for w in self.writes]
        if all(c is not None for c in codes):
            self.result = next((c for c in codes if c), E.NONE)
        return self.result


def offset_delete(ctx: RequestContext, req: Any) -> Any:
    R = M.OffsetDeleteResponse
    coord = coordinator(ctx)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    group = None if shard is None else \
        shard.consumer_groups.get(req.group_id) or shard.groups.get(req.group_id)
    if shard is None or group is None:
        return R(error_code=code if shard is None else E.GROUP_ID_NOT_FOUND, throttle_time_ms=0,
                 topics=())
    if req.group_id in shard.consumer_groups:  # the topics its members subscribe to
        image = coord.consumer.image(shard)
        subscribed = set().union(*(subscribed_names(m, image) for m in group.members.values()))
    else:
        subscribed = group.subscribed_topics() if group.state not in (EMPTY, DEAD) else set()
    codes: dict[tuple[str, int], int] = {}
    recs = []
    for t in req.topics:
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if subscribed is None or t.name in subscribed:
                codes[key] = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                codes[key] = E.NONE
                if key in shard.offsets.get(req.group_id, {}):
                    recs.append(records.offset_tombstone(req.group_id, *key))

    def answer(code: int) -> Any:
        return R(error_code=0, throttle_time_ms=0, topics=tuple(R.OffsetDeleteResponseTopic(
            name=t.name, partitions=tuple(R.OffsetDeleteResponsePartition(
                partition_index=p.partition_index,
                error_code=code if codes[(t.name, p.partition_index)] == E.NONE
                else codes[(t.name, p.partition_index)]) for p in t.partitions))
            for t in req.topics))
    if not recs:
        return answer(E.NONE)

    def forget() -> None:
        mine = shard.offsets.get(req.group_id, {})
        for k, v in codes.items():
            if v == E.NONE:
                mine.pop(k, None)
    return _after_write(ctx, coord.write(shard, recs, forget), answer)
