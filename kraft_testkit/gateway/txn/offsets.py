"""TxnOffsetCommit (28), served by the group's coordinator (``GroupCoordinatorService#
commitTransactionalOffsets``): KIP-890 first (the group's ``__consumer_offsets`` partition is
verified to be in the transaction, v4 and older, or added to it, v5: :mod:`.leader`); the offsets are written to ``__consumer_offsets`` as a
transactional batch of the producer and count for the group only once the transaction's commit
marker reaches that partition (an abort marker drops them); a coordinator that loads the
partition replays both (``groups/records.replay``).
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from ..context import Pending, RequestContext
from ..groups import records as group_records
from ..groups.apis import WRITE_TIMEOUT_MS
from ..groups.apis import coordinator as group_coordinator
from ..groups.consumer.apis import commit_error
from ..groups.coordinator import OFFSET_METADATA_MAX_BYTES, OFFSETS_TOPIC, Write
from ..groups.group import COMPLETING
from .. import autojump
from . import leader, records

E = ErrorCode


def txn_offset_commit(ctx: RequestContext, req: Any) -> Any:
    R = M.TxnOffsetCommitResponse

    def answer(codes: dict[tuple[str, int], int]) -> Any:
        def code(name: str, p: int) -> int:
            c = codes[(name, p)]
            return E.INVALID_PRODUCER_EPOCH if c == E.PRODUCER_FENCED and ctx.version < 2 else c
        return R(throttle_time_ms=0, topics=tuple(R.TxnOffsetCommitResponseTopic(
            name=t.name, partitions=tuple(R.TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=code(t.name, p.partition_index))
                for p in t.partitions)) for t in req.topics))

    def all_failed(code: int) -> Any:
        return answer({(t.name, p.partition_index): code for t in req.topics
                       for p in t.partitions})
    coord = group_coordinator(ctx)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    if shard is None:
        return all_failed(code)
    gate = _transaction_gate(ctx, req, coord, shard)
    if gate is None:
        return _commit(ctx, req, coord, shard, answer, all_failed)
    if isinstance(gate, int):
        return all_failed(gate)
    state: dict[str, Any] = {}

    def poll() -> Any:
        if "inner" not in state:
            code = gate.poll()
            if code is None:
                return None
            if code:
                return all_failed(code)
            state["inner"] = _commit(ctx, req, coord, shard, answer, all_failed)
        inner = state["inner"]
        return inner.poll() if isinstance(inner, Pending) else inner

    def expire() -> Any:
        inner = state.get("inner")
        if isinstance(inner, Pending):
            return inner.expire()
        return inner if inner is not None else all_failed(gate.timeout_code())

    def wants_time() -> bool:
        inner = state.get("inner")
        return not isinstance(inner, Pending) or inner.wants_time is None or inner.wants_time()
    first = poll()
    if first is not None:
        return first
    return Pending(poll, expire, wants_time=wants_time, virtual_deadline_ms=ctx.now_ms +
                   autojump.wait_bound_ms(ctx.cluster) + WRITE_TIMEOUT_MS)


def _transaction_gate(ctx: RequestContext, req: Any, coord: Any, shard: Any) -> Any:
    """KIP-890 for the group's ``__consumer_offsets`` partition, as ``CoordinatorRuntime#
    scheduleTransactionalWriteOperation`` asks its partition writer
    (``CoordinatorPartitionWriter#maybeStartTransactionVerification``): None when the
    transaction is open there already; else v4 and older verify (an error code, or None when
    verified), v5 adds the partition (the add, to poll)."""
    log = coord.plane.log(shard.broker, shard.topic_id, shard.partition)
    if not req.transactional_id or \
            leader.has_ongoing_transaction(log, req.producer_id, req.producer_epoch):
        return None
    tp = (OFFSETS_TOPIC, shard.partition)
    op = leader.offsets_operation(ctx.version)
    if op == leader.ADD_PARTITION:
        return leader.add(ctx, req.transactional_id, req.producer_id, req.producer_epoch, {tp},
                          leader.map_offsets_error)
    code = leader.verify(ctx, req.transactional_id, req.producer_id, req.producer_epoch, {tp},
                         op, leader.map_offsets_error)[tp]
    return code or None


def _commit(ctx: RequestContext, req: Any, coord: Any, shard: Any, answer: Any,
            all_failed: Any) -> Any:
    """``GroupCoordinatorShard#commitTransactionalOffset``: the member checks, then the
    transactional batch of offsets."""
    group = shard.groups.get(req.group_id)
    consumer_group = shard.consumer_groups.get(req.group_id)
    if consumer_group is not None:  # KIP-848 members: OffsetMetadataManager#validateTransactionalOffsetCommit
        code = commit_error(consumer_group, req.member_id, req.generation_id, ctx.version,
                            transactional=True, instance_id=req.group_instance_id)
        if code:  # a stale member epoch is answered as a classic client knows it
            return all_failed(E.ILLEGAL_GENERATION if code == E.STALE_MEMBER_EPOCH else code)
    elif ctx.version >= 3 and req.member_id and group is not None and group.members:
        member = group.members.get(req.member_id)
        if member is None:
            return all_failed(E.UNKNOWN_MEMBER_ID)
        if req.generation_id != group.generation:
            return all_failed(E.ILLEGAL_GENERATION)
        if group.state == COMPLETING:
            return all_failed(E.REBALANCE_IN_PROGRESS)
    image = ctx.cluster.broker(ctx.node).image
    codes: dict[tuple[str, int], int] = {}
    recs, values = [], []
    now = ctx.now_ms
    for t in req.topics:
        topic = image.topic(t.name)
        for p in t.partitions:
            key = (t.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if topic is None or p.partition_index not in topic.partitions:
                codes[key] = E.UNKNOWN_TOPIC_OR_PARTITION
            elif len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                codes[key] = E.OFFSET_METADATA_TOO_LARGE
            else:
                codes[key] = E.NONE
                recs.append(group_records.offset_commit(
                    req.group_id, t.name, p.partition_index, p.committed_offset,
                    p.committed_leader_epoch, metadata, now))
                values.append((key, (p.committed_offset, p.committed_leader_epoch, metadata,
                                     now)))
    if not recs:
        return answer(codes)
    log = coord.plane.log(shard.broker, shard.topic_id, shard.partition)
    log.append([records.offsets_batch(recs, req.producer_id, req.producer_epoch, now)],
               shard.leader_epoch, now)
    coord.plane.appended(shard.broker, shard.topic_id, shard.partition)  # KIP-227 answers

    def pend() -> None:
        mine = shard.pending_txn.setdefault(req.producer_id, {}).setdefault(req.group_id, {})
        mine.update(values)
    write = Write(coord, shard, log.log_end_offset, pend)

    def poll() -> Any:
        result = write.poll()
        if result is None:
            return None
        return answer({k: (result if v == E.NONE else v) for k, v in codes.items()})
    return Pending(poll, lambda: answer({k: E.REQUEST_TIMED_OUT for k in codes}),
                   virtual_deadline_ms=now + WRITE_TIMEOUT_MS,
                   wants_time=lambda: write.result is None)
