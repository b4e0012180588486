"""The classic group RPCs at a broker listener: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups and
OffsetDelete, with Kafka 4.2's checks and errors (GroupMetadataManager's classic group paths).

A request that waits (a JoinGroup until the rebalance completes, a SyncGroup until the leader's
assignment is written, a commit until the high watermark covers it) is a Pending: stepping mode
runs virtual time for the waits the simulation can end (a write, the initial rebalance delay)
and leaves the waits for other clients (members rejoining) to wall time.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from ..context import Pending, RequestContext
from ..coordinator_lookup import locate
from .coordinator import (
    GROUP_MAX_SESSION_TIMEOUT_MS,
    GROUP_MIN_SESSION_TIMEOUT_MS,
    OFFSETS_TOPIC,
    GroupCoordinator,
    Shard,
    Write,
    joined_response,
)
from .group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, Member, Waiter

E = ErrorCode
WRITE_TIMEOUT_MS = 30_000


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    gateway = ctx.gateway
    if gateway.groups is None:
        gateway.groups = GroupCoordinator(gateway)
    gateway.groups.tick()
    return gateway.groups


def _after_write(ctx: RequestContext, write: Write, answer: Any) -> Pending:
    """Answer with ``answer(error)`` once ``write`` is committed (or failed)."""
    def poll() -> Any:
        code = write.poll()
        return None if code is None else answer(code)
    return Pending(poll, lambda: answer(E.REQUEST_TIMED_OUT),
                   virtual_deadline_ms=ctx.now_ms + WRITE_TIMEOUT_MS,
                   wants_time=lambda: write.result is None)


# ------------------------------------------------------------------ FindCoordinator


def find_coordinator(ctx: RequestContext, req: Any) -> Any:
    keys = [req.key] if ctx.version < 4 else list(req.coordinator_keys)
    if req.key_type == 1:  # a transactional id: the transaction coordinator (gateway/txn)
        from ..txn.apis import find_coordinator as find_txn
        return find_txn(ctx, req, keys, lambda found: _find_answer(ctx, found))
    coord = coordinator(ctx)
    if req.key_type != 0:  # share groups (2) are not served
        return _find_answer(ctx, [(k, -1, E.COORDINATOR_NOT_AVAILABLE) for k in keys])
    return locate(ctx, coord, OFFSETS_TOPIC, keys, lambda found: _find_answer(ctx, found))


def _find_answer(ctx: RequestContext, found: list[tuple[str, int, int]]) -> Any:
    R = M.FindCoordinatorResponse

    def where(node: int) -> tuple[str, int]:
        return ctx.gateway.address(node) if node >= 0 else ("", -1)
    if ctx.version < 4:
        key, node, code = found[0]
        host, port = where(node)
        return R(throttle_time_ms=0, error_code=code, node_id=node, host=host, port=port,
                 error_message=None if code == E.NONE else "coordinator not available")
    return R(throttle_time_ms=0, coordinators=tuple(
        R.Coordinator(key=k, node_id=n, host=where(n)[0], port=where(n)[1], error_code=code)
        for k, n, code in found))


# ------------------------------------------------------------------ JoinGroup / SyncGroup


def _join_error(req: Any, code: int, member_id: str | None = None) -> Any:
    # ProtocolName is nullable from v7 on (Kafka sends null with an error); before, empty
    return M.JoinGroupResponse(throttle_time_ms=0, error_code=code, generation_id=-1,
                               protocol_name="", leader="",
                               member_id=req.member_id if member_id is None else member_id,
                               members=())


def join_group(ctx: RequestContext, req: Any) -> Any:
    coord = coordinator(ctx)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    if shard is None:
        return _join_error(req, code)
    if not req.group_id:
        return _join_error(req, E.INVALID_GROUP_ID)
    if not GROUP_MIN_SESSION_TIMEOUT_MS <= req.session_timeout_ms <= GROUP_MAX_SESSION_TIMEOUT_MS:
        return _join_error(req, E.INVALID_SESSION_TIMEOUT)
    protocols = [(p.name, bytes(p.metadata)) for p in req.protocols]
    if req.group_id in shard.consumer_groups:  # a KIP-848 group: no classic members here
        return _join_error(req, E.INCONSISTENT_GROUP_PROTOCOL)
    group = shard.groups.get(req.group_id)
    if group is None:
        group = shard.groups[req.group_id] = ClassicGroup(req.group_id)
    if not group.supports(req.protocol_type, protocols):
        return _join_error(req, E.INCONSISTENT_GROUP_PROTOCOL)
    rebalance_timeout = req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 \
        else req.session_timeout_ms
    member_id, iid = req.member_id, req.group_instance_id
    member = group.members.get(member_id)
    new = False
    if member is None:
        if iid is not None and member_id:
            old = group.by_instance(iid)
            if old is not None:
                return _join_error(req, E.FENCED_INSTANCE_ID)
        if not member_id and iid is None and ctx.version >= 4:
            member_id = coord.new_member_id(ctx.client_id)
            group.pending_ids.add(member_id)
            return _join_error(req, E.MEMBER_ID_REQUIRED, member_id)
        if member_id and member_id not in group.pending_ids:
            return _join_error(req, E.UNKNOWN_MEMBER_ID)
        group.pending_ids.discard(member_id)
        if not member_id:
            member_id = coord.new_member_id(ctx.client_id)
        if iid is not None and (old := group.by_instance(iid)) is not None:
            coord.remove_member(shard, group, old.member_id)  # a static member's new id
        host = "/" + (ctx.connection.peer.rsplit(":", 1)[0] if ctx.connection else "")
        member = Member(member_id, iid, ctx.client_id or "", host, req.session_timeout_ms,
                        rebalance_timeout, req.protocol_type, protocols)
        group.add(member)
        new = True
    changed = new or not member.same_protocols(protocols)
    member.protocols = protocols
    member.session_timeout_ms, member.rebalance_timeout_ms = req.session_timeout_ms, \
        rebalance_timeout
    member.last_seen = coord.session_now()
    if group.state in (STABLE, COMPLETING) and not changed and \
            (group.state == COMPLETING or member_id != group.leader):
        return joined_response(group, member_id)  # nothing to rebalance: the current state
    if group.state != PREPARING:
        coord.prepare(group)
    member.join = waiter = Waiter()
    if group.ready_to_complete(coord.session_now(), ctx.now_ms):
        coord.complete_join(shard, group)
    return _wait_join(ctx, coord, group, waiter)


def _wait_join(ctx: RequestContext, coord: GroupCoordinator, group: ClassicGroup,
               waiter: Waiter) -> Any:
    def poll() -> Any:
        coord.tick()
        if not waiter.done:
            return None
        answer = waiter.answer
        if answer[0] == "error":
            return M.JoinGroupResponse(throttle_time_ms=0, error_code=answer[1],
                                       generation_id=-1, protocol_name="", leader="",
                                       member_id="", members=())
        return answer[1]

    initial = group.initial_deadline
    return Pending(poll, lambda: poll() or _join_error_timeout(),
                   virtual_deadline_ms=initial,
                   wants_time=lambda: group.state == PREPARING and
                   group.initial_deadline is not None)


def _join_error_timeout() -> Any:
    return M.JoinGroupResponse(throttle_time_ms=0, error_code=E.REBALANCE_IN_PROGRESS,
                               generation_id=-1, protocol_name="", leader="", member_id="",
                               members=())


def sync_group(ctx: RequestContext, req: Any) -> Any:
    R = M.SyncGroupResponse

    def error(code: int) -> Any:
        return R(throttle_time_ms=0, error_code=code, assignment=b"")
    coord = coordinator(ctx)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    if shard is None:
        return error(code)
    group, member, code = _member(shard, req.group_id, req.member_id, req.group_instance_id)
    if code:
        return error(code)
    if req.generation_id != group.generation:
        return error(E.ILLEGAL_GENERATION)
    if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or \
            (req.protocol_name is not None and req.protocol_name != group.protocol):
        return error(E.INCONSISTENT_GROUP_PROTOCOL)
    member.last_seen = coord.session_now()
    if group.state == PREPARING:
        return error(E.REBALANCE_IN_PROGRESS)
    if group.state == STABLE:
        return R(throttle_time_ms=0, error_code=0, protocol_type=group.protocol_type,
                 protocol_name=group.protocol, assignment=member.assignment)
    member.sync = waiter = Waiter()
    write = None
    if member.member_id == group.leader:
        write = coord.sync_done(shard, group, {a.member_id: bytes(a.assignment)
                                               for a in req.assignments})

    def poll() -> Any:
        if write is not None and write.poll() not in (None, E.NONE):
            return error(write.result)
        coord.tick()
        if not waiter.done:
            return None
        kind, value = waiter.answer
        if kind == "error":
            return error(value)
        return R(throttle_time_ms=0, error_code=0, protocol_type=group.protocol_type,
                 protocol_name=group.protocol, assignment=value)

    return Pending(poll, lambda: poll() or error(E.REBALANCE_IN_PROGRESS),
                   virtual_deadline_ms=None if write is None else ctx.now_ms + WRITE_TIMEOUT_MS,
                   wants_time=lambda: write is not None and write.result is None)


def _member(shard: Shard, group_id: str, member_id: str,
            instance_id: str | None) -> tuple[Any, Any, int]:
    group = shard.groups.get(group_id)
    if group is None or group.state in (EMPTY, DEAD):
        return group, None, E.UNKNOWN_MEMBER_ID
    member = group.members.get(member_id)
    if member is None:
        if instance_id is not None and group.by_instance(instance_id) is not None:
            return group, None, E.FENCED_INSTANCE_ID
        return group, None, E.UNKNOWN_MEMBER_ID
    if instance_id is not None and member.instance_id != instance_id:
        return group, None, E.FENCED_INSTANCE_ID
    return group, member, E.NONE


# ------------------------------------------------------------------ Heartbeat / LeaveGroup


def heartbeat(ctx: RequestContext, req: Any) -> Any:
    coord = coordinator(ctx)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    if shard is not None:
        group, member, code = _member(shard, req.group_id, req.member_id,
                                      req.group_instance_id)
        if code == E.NONE:
            member.last_seen = coord.session_now()
            if req.generation_id != group.generation:
                code = E.ILLEGAL_GENERATION
            elif group.state == PREPARING:
                code = E.REBALANCE_IN_PROGRESS
    return M.HeartbeatResponse(throttle_time_ms=0, error_code=code)


def leave_group(ctx: RequestContext, req: Any) -> Any:
    R = M.LeaveGroupResponse
    coord = coordinator(ctx)
    shard, code = coord.shard_for(ctx.node, req.group_id)
    leaving = [(req.member_id, None)] if ctx.version < 3 else \
        [(m.member_id, m.group_instance_id) for m in req.members]
    if shard is None:
        return R(throttle_time_ms=0, error_code=code, members=())
    group = shard.groups.get(req.group_id)
    results = []
    for member_id, iid in leaving:
        member = None if group is None else group.members.get(member_id)
        if member is None and iid is not None and group is not None:
            member = group.by_instance(iid)
            if member is not None and member_id and member.member_id != member_id:
                results.append((member_id, iid, E.FENCED_INSTANCE_ID))
                continue
        if member is None:
            results.append((member_id, iid, E.UNKNOWN_MEMBER_ID))
            continue
        coord.remove_member(shard, group, member.member_id)
        results.append((member_id, iid, E.NONE))
    if ctx.version < 3:
        return R(throttle_time_ms=0, error_code=results[0][2], members=())
    return R(throttle_time_ms=0, error_code=0, members=tuple(
        R.MemberResponse(member_id=m, group_instance_id=i, error_code=c) for m, i, c in results))
