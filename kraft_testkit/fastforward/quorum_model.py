"""The controllers' idle quorum, computed: the leader's events and the voters' fetch loops.

An idle KRaft quorum does one thing: every ``metadata.max.idle.interval.ms`` the active
controller writes a NoOp, Raft drains it ``controller.quorum.append.linger.ms`` later, the
voters' long-polling fetches carry it over, their next fetches move the high watermark, and
the voters learn the new high watermark from the next answer. With draws by position
(:mod:`kraft_testkit.sim.streams`) all of it is a function of state readable at the start of
a stretch: the links' n-th latencies and tie keys, the leader node's timer ties by instant,
and the leader's rules (``raft/replication.py`` ``_answer_fetch``, ``_update_replica``,
``raft/replica.py`` ``_poll_leader``, ``controller/handlers.py`` ``noop_task``).

:func:`predict_quorum` runs those rules on a small heap of its own, in the scheduler's order
``(at_ms, tie, seq)``, up to a horizon before anything it does not model falls due (the log
cleaner, the controller's other periodic tasks, a snapshot by interval or bytes, a voter's own
timer, check-quorum). It returns the leader's timeline (the :class:`LeaderStep` list the
brokers' loops in ``observer_loop`` read) and every event it computed, which
tests/cluster/test_fastforward_quorum_model.py checks against stepping's trace.

What node code does in an event, in order (the order decides what a same-instant message
sees): the message's handler (a fetch updates the leader's record of the voter, may move the
high watermark, is answered or parked), then the replica's poll (drain a due NoOp, answer
the parked fetches when the log end or high watermark moved, or when their max wait ran
out), then the controller's due tasks (a NoOp due at or before this instant is queued:
the drain is ``linger`` later), then the node re-arms its one timer at the earliest wake-up
(an entry already at that instant is kept, with its tie). A voter's answer is applied and
its next fetch leaves in the same event.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.controller import noop
from kraft_testkit.fastforward.answers import NOOP_VALUE, only_noops
from kraft_testkit.fastforward.observer_loop import LeaderStep, LinkClock, NotModelled
from kraft_testkit.metadata.snapshot_generator import BATCH_OVERHEAD, RECORD_OVERHEAD
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.raft import rpc
from kraft_testkit.raft.replica_state import FOLLOWER, LEADER
from kraft_testkit.sim.node import NEVER
from kraft_testkit.sim.streams import tie_at

CATCH_UP_LIMIT = 8  # batches a voter may lag: one answer carries them all

# a NoOpRecord's value: frame version, type 20, version 0, empty tagged fields (4 bytes)
NOOP_BATCH_BYTES = BATCH_OVERHEAD + RECORD_OVERHEAD + 4


@dataclass(slots=True)
class Computed:
    """One event the model ran: when (``at_ms``, ``tie``), at which node, what: ``timer``,
    ``fetch`` (a voter's fetch reaching the leader) or ``answer`` (its answer reaching the
    voter); ``peer`` is the other node of a message."""

    at_ms: int
    tie: int
    node: int
    kind: str
    peer: int | None = None


@dataclass(slots=True)
class VoterLoop:
    """One voter's fetch loop as the model carries it."""

    node: int
    end_offset: int
    high_watermark: int
    to_leader: LinkClock
    to_voter: LinkClock
    wake_ms: int  # its node timer: nothing it does in the stretch may reach it
    fetch_timeout_ms: int
    request_timeout_ms: int
    clean_at: int
    sent_at: int = -1  # its last fetch
    answers: int = 0  # answers handled (each sends the next fetch: request ids move on by it)


@dataclass(slots=True)
class Parked:
    voter: int
    offset: int
    deadline: int


@dataclass(slots=True)
class QuorumPrediction:
    """What :func:`predict_quorum` computed: the leader's steps, every event in run order,
    and the state where it stopped (``horizon_ms``: the first instant it did not compute)."""

    leader: int
    steps: list[LeaderStep] = field(default_factory=list)
    events: list[Computed] = field(default_factory=list)
    horizon_ms: int = 0
    why_stopped: str = ""
    end_offset: int = 0
    high_watermark: int = 0
    voters: dict[int, VoterLoop] = field(default_factory=dict)
    noops: list[int] = field(default_factory=list)  # instants the NoOps were queued
    drains: list[int] = field(default_factory=list)  # instants they were appended
    #: messages sent in the stretch still in flight at its end: (at, tie, seq, kind, arg)
    in_flight: list[tuple] = field(default_factory=list)
    #: what was in flight at the start: voter -> (kind, message, heap entry)
    flights: dict[int, tuple[str, Any, list]] = field(default_factory=dict)


def _leader_of(cluster: Any) -> int:
    active = cluster.active_controller
    if active is None:
        raise NotModelled("no active controller")
    return active.id


def _in_flight(cluster: Any, voters: set[int],
               leader: int) -> tuple[dict[int, tuple[str, Any, list]], int]:
    """The one message of each voter's loop in the heap: ('fetch', msg, entry) on its way to
    the leader, or ('answer', msg, entry) on its way back; and the first instant of anything
    else in the heap (other than the controllers' own timers): the model stops before it.
    Any other message that involves a controller is not modelled."""
    net = cluster.sim.network
    arrive = net._arrive_cb  # noqa: SLF001 - the network's one delivery callback
    found: dict[int, tuple[str, Any, list]] = {}
    controllers = voters | {leader}
    timers = {id(cluster.sim.process(n)._timer) for n in controllers}  # noqa: SLF001
    other = NEVER
    for entry in cluster.sim.scheduler._heap:  # noqa: SLF001
        fn = entry[3]
        if fn is None or id(entry) in timers:
            continue
        if fn != arrive:
            other = min(other, entry[0])
            continue
        packet = entry[4]
        if packet.src not in controllers and packet.dst not in controllers:
            other = min(other, entry[0])
            continue
        body = getattr(packet.msg, "body", None)
        name = type(body).__name__
        if packet.src in voters and packet.dst == leader and name == "FetchRequest":
            kind, voter = "fetch", packet.src
        elif packet.src == leader and packet.dst in voters and name == "FetchResponse":
            kind, voter = "answer", packet.dst
        else:
            raise NotModelled(f"a {name} from {packet.src} to {packet.dst} is in flight")
        if voter in found:
            raise NotModelled(f"voter {voter} has two messages in flight")
        found[voter] = (kind, packet.msg, entry)
    return found, other


def _answer_end(msg: Any, start: int) -> tuple[int, int]:
    """(log end after the answer's records, its high watermark) for a voter at ``start``."""
    p = rpc.fetch_response_partition(msg.body)
    if p.error_code or p.diverging_epoch.epoch >= 0 or p.snapshot_id.epoch >= 0:
        raise NotModelled("a fetch answer with an error, a divergence or a snapshot id")
    end = start
    if p.records:
        for _, batch in iter_batches(bytes(p.records)):
            end = max(end, batch.last_offset + 1)
    return end, p.high_watermark


def horizon_of(cluster: Any, leader: int, until_ms: int) -> tuple[int, str]:
    """The first instant the model must not compute: ``until_ms`` + 1, or earlier where
    something it does not model falls due (the reason is returned with it)."""
    best, why = until_ms + 1, "run end"
    for h in cluster.controllers:
        node = cluster.controller_node(h)
        if node is None:
            continue
        raft = node.raft
        if raft._clean_at < best:  # noqa: SLF001
            best, why = raft._clean_at, f"log cleaner on {h.id}"  # noqa: SLF001
        gen = node.snapshots
        if gen.max_interval_ms and gen.last_ms is not None and \
                gen.last_ms + gen.max_interval_ms < best:
            best, why = gen.last_ms + gen.max_interval_ms, f"snapshot interval on {h.id}"
    ctrl = cluster.controller_node(leader).controller
    for key, name in (("tokens.next_check_ms", "token expiry check"),
                      ("balance.next_ms", "leader rebalance")):
        due = ctrl.soft.get(key)
        if due is not None and due < best:
            best, why = due, name
    return best, why


def predict_quorum(cluster: Any, until_ms: int) -> QuorumPrediction:
    """The idle quorum of ``cluster`` from now up to ``until_ms`` (see the module)."""
    if cluster.broker_ids and any(cluster.broker(b) is not None for b in cluster.broker_ids):
        raise NotModelled("brokers' fetches are leader events too (model the quorum alone)")
    leader = _leader_of(cluster)
    lnode = cluster.controller_node(leader)
    raft, ctrl = lnode.raft, lnode.controller
    lead = raft._lead  # noqa: SLF001
    if raft.role != LEADER or lead is None or lead.change is not None or \
            not lead.acked.issuperset(raft.voters) or raft.majority != 2:
        raise NotModelled("the leader is not in a steady three-voter epoch")
    sched = cluster.sim.scheduler
    now = sched.now_ms
    horizon, why = horizon_of(cluster, leader, until_ms)
    cfg = raft.config
    interval = noop.noop_interval_ms(ctrl.config, ctrl.image)
    if interval is None:
        raise NotModelled("NoOps are off")
    noop_last = ctrl.soft.get("noop.last_ms")
    if noop_last is None:
        raise NotModelled("the NoOp task has not run yet")
    voter_ids = set(raft.voters) - {leader}
    flights, other = _in_flight(cluster, voter_ids, leader)
    if other < horizon:
        horizon, why = other, "another event in the heap"
    net = cluster.sim.network
    if net.filters or net.held or net.partitions:
        raise NotModelled("network filters, partitions or held messages")
    for n in cluster.controller_ids:
        proc = cluster.sim.process(n)
        if proc.state.value != "running" or proc.skew_ms:
            raise NotModelled(f"controller {n} is {proc.state.value} (skew {proc.skew_ms} ms)")
    # ---- the leader's state
    end, hw = raft.log_end_offset, raft.hw
    progress = {v: lead.voters[v].end_offset for v in voter_ids}
    pending = bool(lead.pending)
    drain_at = lead.drain_at if pending else NEVER
    check_deadline, fetched = lead.check_deadline, set(lead.fetched)
    parked = []
    for p in lead.parked:
        if p.replica_id not in voter_ids or p.src != p.replica_id:
            raise NotModelled(f"a fetch from {p.src} is parked at the leader")
        parked.append(Parked(p.replica_id, p.partition.fetch_offset, p.deadline))
    written = ctrl.written_offset
    if any(v != NOOP_VALUE for v in lead.pending):
        raise NotModelled("records other than a NoOp are waiting to be appended")
    for n in cluster.controller_ids:
        node = cluster.controller_node(n)
        if node is None:
            continue
        reg = node.controller.committed.cluster.controller(n)
        if reg is None or reg.incarnation_id != node.registrar.incarnation_id:
            raise NotModelled(f"controller {n} is not registered yet")
        if not only_noops(raft.log, node.raft._next, raft.log_end_offset):  # noqa: SLF001
            raise NotModelled(f"controller {n} has records other than NoOps to commit")
        if raft.log_end_offset - node.raft.log_end_offset > CATCH_UP_LIMIT:
            raise NotModelled(f"controller {n} is far behind the leader")
    # the snapshot generators' byte budgets: the model stops before one would be spent
    noop_budget = NEVER
    for h in cluster.controllers:
        node = cluster.controller_node(h)
        if node is not None:
            gen = node.snapshots
            left = (gen.max_bytes - gen.bytes_since - 1) // NOOP_BATCH_BYTES
            noop_budget = min(noop_budget, left)
    max_end = raft.hw + noop_budget  # a voter commits no more than this without a look
    # ---- the heap: [at, tie, seq, kind, arg]
    heap: list[list] = []
    seq = iter(range(1, 1 << 62)).__next__
    lproc = cluster.sim.process(leader)
    timer_key = lproc._timer_ties  # noqa: SLF001
    timer_entry: list | None = None
    if lproc._timer is not None and lproc._timer[3] is not None:  # noqa: SLF001
        t = lproc._timer  # noqa: SLF001
        timer_entry = [t[0], t[1], seq(), "timer", leader]
        heap.append(timer_entry)
    pred = QuorumPrediction(leader)
    loops: dict[int, VoterLoop] = {}
    for v in sorted(voter_ids):
        vnode = cluster.controller_node(v)
        vproc = cluster.sim.process(v)
        if vnode is None or vproc.state.value != "running":
            raise NotModelled(f"voter {v} is not running")
        vr = vnode.raft
        if vr.role != FOLLOWER or vr.leader_id != leader or vr.epoch != raft.epoch or \
                vr._download is not None:  # noqa: SLF001
            raise NotModelled(f"voter {v} is not a plain follower of {leader}")
        conn = vr._conns.get(leader)  # noqa: SLF001
        if conn is None or conn.cid is None:
            raise NotModelled(f"voter {v} has no fetch out")
        vt = vproc._timer  # noqa: SLF001
        loop = VoterLoop(v, vr.log_end_offset, vr.hw, LinkClock.of(net, v, leader),
                         LinkClock.of(net, leader, v), vt[0] if vt is not None else NEVER,
                         vr.config.fetch_timeout_ms, vr.config.request_timeout_ms,
                         vr._clean_at, conn.sent_at)  # noqa: SLF001
        loops[v] = loop
        flight = flights.get(v)
        in_park = [p for p in parked if p.voter == v]
        if flight is None and not in_park:
            raise NotModelled(f"voter {v}'s fetch is neither in flight nor parked")
        if flight is not None:
            kind, msg, entry = flight
            if kind == "fetch":
                p = rpc.fetch_partition(msg.body)
                heap.append([entry[0], entry[1], seq(), "fetch", (v, p.fetch_offset)])
            else:
                heap.append([entry[0], entry[1], seq(), "answer", (v,) + _answer_end(
                    msg, vr.log_end_offset)])
    heapq.heapify(heap)
    pred.voters = loops
    steps, events = pred.steps, pred.events
    last_step = (end, hw)
    while heap:
        entry = heapq.heappop(heap)
        at, tie, _, kind, arg = entry
        if kind == "dead":
            continue
        if at >= horizon:
            heapq.heappush(heap, entry)
            break
        if kind == "answer":  # a voter handles an answer and fetches again, same instant
            v, new_end, new_hw = arg
            loop = loops[v]
            if at >= loop.wake_ms:
                horizon, why = at, f"voter {v}'s timer"
                heapq.heappush(heap, entry)
                break
            events.append(Computed(at, tie, v, "answer", leader))
            loop.end_offset = max(loop.end_offset, new_end)
            loop.high_watermark = max(loop.high_watermark, min(new_hw, loop.end_offset))
            loop.answers += 1
            loop.sent_at = at
            loop.wake_ms = min(at + loop.fetch_timeout_ms, at + loop.request_timeout_ms,
                               loop.clean_at)
            f_at, f_tie = loop.to_leader.arrival(at)
            heapq.heappush(heap, [f_at, f_tie, seq(), "fetch", (v, loop.end_offset)])
            continue
        # ---- a leader event: a voter's fetch, or its timer
        wake_parked = False
        sends: list[tuple[int, int, int]] = []  # (voter, end, hw) answered in this event

        def update_replica(v: int, offset: int) -> None:
            nonlocal check_deadline, hw, wake_parked
            moved = progress[v] != offset
            progress[v] = offset
            fetched.add(v)
            if len(fetched) + 1 >= 2:
                fetched.clear()
                check_deadline = at + cfg.fetch_timeout_ms * 3 // 2
            if moved:
                new_hw = sorted([end, *progress.values()], reverse=True)[1]
                if new_hw > lead.epoch_start and new_hw > hw:
                    hw = new_hw
                    wake_parked = True

        if kind == "timer":
            if entry is not timer_entry:
                continue  # re-armed elsewhere since
            timer_entry = None
            events.append(Computed(at, tie, leader, "timer"))
        else:
            v, offset = arg
            events.append(Computed(at, tie, leader, "fetch", v))
            if offset > end:
                raise NotModelled(f"voter {v} fetches past the leader's log end")
            update_replica(v, offset)
            if offset >= end:
                parked.append(Parked(v, offset, at + cfg.fetch_max_wait_ms))
            else:
                sends.append((v, end, hw))

        def poll() -> int:
            nonlocal end, pending, drain_at, wake_parked, parked, hw
            if pending and at >= drain_at:
                pending, drain_at = False, NEVER
                end += 1
                pred.drains.append(at)
                wake_parked = True
                new_hw = sorted([end, *progress.values()], reverse=True)[1]
                if new_hw > lead.epoch_start and new_hw > hw:
                    hw = new_hw
            if parked:
                wake_all, wake_parked = wake_parked, False
                still = []
                for p in parked:
                    if wake_all or p.deadline <= at:
                        update_replica(p.voter, p.offset)
                        sends.append((p.voter, end, hw))
                    else:
                        still.append(p)
                parked = still
            else:
                wake_parked = False
            if at >= check_deadline:
                raise NotModelled("check-quorum would resign the leader")
            wake = min(drain_at, check_deadline, *(p.deadline for p in parked))
            return wake

        wake = poll()
        while wake <= at:  # the replica looks again at once while something is due
            wake = poll()
        nonlocal_written = written
        if at >= noop_last + interval:  # the controller's NoOp task, after the replica's poll
            nonlocal_written += 1
            noop_last = at
            pred.noops.append(at)
            if not pending:
                pending, drain_at = True, at + cfg.append_linger_ms
        written = nonlocal_written
        wake = poll()
        if end > max_end:
            raise NotModelled("a snapshot by bytes would fall due")
        for v, a_end, a_hw in sends:
            r_at, r_tie = loops[v].to_voter.arrival(at)
            heapq.heappush(heap, [r_at, r_tie, seq(), "answer", (v, a_end, a_hw)])
        woke = (end, hw) != last_step
        last_step = (end, hw)
        steps.append(LeaderStep(at, tie, end, hw, woke, written, hw - 1))
        # the node's one timer: the earliest wake-up of the replica and the controller
        node_wake = min(wake, noop_last + interval)
        if timer_entry is not None and timer_entry[0] == node_wake:
            continue  # the same instant: the entry (and its tie) stay
        if timer_entry is not None:
            timer_entry[3] = "dead"
        timer_entry = [node_wake, tie_at(timer_key, node_wake), seq(), "timer", leader]
        heapq.heappush(heap, timer_entry)
    else:
        raise NotModelled("the quorum's heap ran dry")
    pred.horizon_ms, pred.why_stopped = horizon, why
    pred.in_flight = sorted((e[0], e[1], e[2], e[3], e[4]) for e in heap
                            if e[3] in ("fetch", "answer"))
    pred.flights = flights
    pred.end_offset, pred.high_watermark = end, hw
    del now, sched
    return pred
