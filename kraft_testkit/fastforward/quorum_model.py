"""The idle cluster's metadata traffic, computed: the leader's events, every follower's fetch
loop (voters and brokers) and the brokers' heartbeats.

An idle KRaft cluster does one thing: every ``metadata.max.idle.interval.ms`` the active
controller writes a NoOp, Raft drains it ``controller.quorum.append.linger.ms`` later, the
followers' long-polling fetches carry it over, the voters' next fetches move the high
watermark, and every follower learns it from its next answer; meanwhile each broker
heartbeats every ``broker.heartbeat.interval.ms`` after its last answer. With draws by
position (:mod:`kraft_testkit.sim.streams`) all of it is a function of state readable at the
start of a stretch: the links' n-th latencies and tie keys, the nodes' timer ties by
instant, and the nodes' rules (``raft/replication.py`` ``_answer_fetch``,
``_update_replica``; ``raft/replica.py`` ``_poll_leader``; ``controller/handlers.py``
``noop_task``; ``QuorumController.submit``: a heartbeat is answered once everything written
before it is committed; ``broker/lifecycle.py``: a due heartbeat leaves in the first broker
event whose logic runs at or after its instant, that is the broker's timer or an answer that
commits something).

:func:`predict_quorum` runs those rules on a small heap of its own, in the scheduler's order
``(at_ms, tie, seq)``, up to a horizon before anything it does not model falls due (the log
cleaner, a snapshot by interval or bytes, the controller's other periodic tasks, a lease
expiry, a follower's own Raft timer, check-quorum, any other event in the heap). It returns
every event it computed, the leader's timeline (:class:`LeaderStep`) and where each loop
ended; tests/cluster/test_fastforward_quorum_model.py checks it against stepping's order of
events, and tests/cluster/test_fastforward_warp.py the materialized result byte for byte.

What node code does in an event, in order (it decides what a same-instant message sees): a
fetch's handler (the leader's record of the follower, maybe a new high watermark, an answer
or a parked fetch), the replica's poll (drain a due NoOp, answer the parked fetches when the
log end or high watermark moved or their max wait ran out), the controller's due tasks (a
due NoOp is queued; the drain is ``linger`` later), the replica's poll again, then the node
re-arms its one timer at its earliest wake-up (an entry already at that instant is kept).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.broker.channel import CONTROLLER_CHANNEL
from kraft_testkit.controller import noop
from kraft_testkit.controller.cluster import SOFT_STATE_KEY
from kraft_testkit.fastforward.answers import NOOP_VALUE, only_noops
from kraft_testkit.fastforward.observer_loop import LeaderStep, LinkClock, NotModelled
from kraft_testkit.metadata.snapshot_generator import BATCH_OVERHEAD, RECORD_OVERHEAD
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.raft import rpc
from kraft_testkit.raft.replica_state import FOLLOWER, LEADER
from kraft_testkit.sim.node import NEVER
from kraft_testkit.sim.streams import tie_at

CATCH_UP_LIMIT = 8  # batches a follower may lag: one answer carries them all
# a NoOpRecord's value: frame version, type 20, version 0, empty tagged fields (4 bytes)
NOOP_BATCH_BYTES = BATCH_OVERHEAD + RECORD_OVERHEAD + 4


@dataclass(slots=True)
class Computed:
    """One event the model ran: when (``at_ms``, ``tie``), at which node, what (``timer``,
    ``fetch``, ``answer``, ``beat`` or ``beat_answer``), and the other node of a message."""

    at_ms: int
    tie: int
    node: int
    kind: str
    peer: int | None = None
    #: a broker's fetch at the leader that did nothing else (no drain, NoOp, high watermark,
    #: other answer): the leader's Raft wake-up and node wake-up after it
    narrow: tuple[int, int] | None = None
    #: a broker's answer its logic does not act on: (log end, high watermark) it carries,
    #: to be applied with the broker's other such answers as one run
    defer: tuple[int, int] | None = None


@dataclass(slots=True)
class Loop:
    """One follower's fetch loop (a voter, or a broker with its heartbeats)."""

    node: int
    voter: bool
    end_offset: int
    high_watermark: int
    to_leader: LinkClock
    to_node: LinkClock
    raft_wake: int  # its Raft wake-up: it must not be reached in the stretch
    timer: list | None  # its node timer as the model carries it (a heap entry)
    timer_key: int
    # the broker's heartbeats (None on voters)
    beat_to_leader: LinkClock | None = None
    beat_to_node: LinkClock | None = None
    next_beat: int | None = None  # due instant, None while one is in flight
    beat_deadline: int = NEVER  # the one in flight times out then
    logic_wake: int = NEVER
    isr_check: int | None = None  # the next ISR check (its logic runs it even with no partition)
    isr_interval: int = 0
    isr_wakes: bool = False  # it leads partitions (single-replica): the check is a wake-up


@dataclass(slots=True)
class Parked:
    node: int
    offset: int
    deadline: int


@dataclass(slots=True)
class QuorumPrediction:
    """What :func:`predict_quorum` computed: every event in run order, the leader's steps,
    and the state where it stopped (``horizon_ms``: the first instant it did not compute)."""

    leader: int
    steps: list[LeaderStep] = field(default_factory=list)
    events: list[Computed] = field(default_factory=list)
    horizon_ms: int = 0
    why_stopped: str = ""
    end_offset: int = 0
    high_watermark: int = 0
    loops: dict[int, Loop] = field(default_factory=dict)
    noops: list[int] = field(default_factory=list)  # instants the NoOps were queued
    drains: list[int] = field(default_factory=list)  # instants they were appended
    #: messages sent in the stretch still in flight at its end: (at, tie, seq, kind, arg)
    in_flight: list[tuple] = field(default_factory=list)
    #: what was in flight at the start: (src, dst, channel) -> (message, heap entry)
    flights: dict[tuple, tuple[Any, list]] = field(default_factory=dict)

    @property
    def voters(self) -> dict[int, Loop]:
        return {n: lp for n, lp in self.loops.items() if lp.voter}


_KINDS = {  # message body -> (model kind, sent by the follower?)
    "FetchRequest": ("fetch", True), "FetchResponse": ("answer", False),
    "BrokerHeartbeatRequest": ("beat", True), "BrokerHeartbeatResponse": ("beat_answer", False),
}


def _scan_heap(cluster: Any, followers: set[int], leader: int) -> tuple[dict, int]:
    """The follower loops' messages in the heap, by (src, dst, channel); and the first
    instant of anything else (other than the nodes' own timers): the model stops before it."""
    net = cluster.sim.network
    arrive = net._arrive_cb  # noqa: SLF001 - the network's one delivery callback
    nodes = followers | {leader}
    timers = {id(cluster.sim.process(n)._timer) for n in nodes}  # noqa: SLF001
    found: dict[tuple, tuple[Any, list]] = {}
    other = NEVER
    for entry in cluster.sim.scheduler._heap:  # noqa: SLF001
        fn = entry[3]
        if fn is None or id(entry) in timers:
            continue
        packet = entry[4] if fn == arrive else None
        if packet is None or (packet.src not in nodes and packet.dst not in nodes):
            other = min(other, entry[0])
            continue
        name = type(getattr(packet.msg, "body", None)).__name__
        kind = _KINDS.get(name)
        follower = packet.src if kind and kind[1] else packet.dst
        if kind is None or follower not in followers or \
                leader not in (packet.src, packet.dst) or packet.src == packet.dst:
            raise NotModelled(f"a {name} from {packet.src} to {packet.dst} is in flight")
        key = (packet.src, packet.dst, _channel(kind[0]))
        if key in found:
            raise NotModelled(f"two messages in flight from {packet.src} to {packet.dst}")
        found[key] = (packet.msg, entry)
    return found, other


def _channel(kind: str) -> str | None:
    return CONTROLLER_CHANNEL if kind in ("beat", "beat_answer") else None


def _answer_end(msg: Any, start: int) -> tuple[int, int]:
    """(log end after the answer's records, its high watermark) for a follower at ``start``."""
    p = rpc.fetch_response_partition(msg.body)
    if p.error_code or p.diverging_epoch.epoch >= 0 or p.snapshot_id.epoch >= 0:
        raise NotModelled("a fetch answer with an error, a divergence or a snapshot id")
    end = start
    if p.records:
        for _, batch in iter_batches(bytes(p.records)):
            end = max(end, batch.last_offset + 1)
    return end, p.high_watermark


def horizon_of(cluster: Any, leader: int, until_ms: int) -> tuple[int, str]:
    """The first instant the model must not compute: ``until_ms`` + 1, or earlier where a
    periodic task it does not model falls due (the reason is returned with it)."""
    best, why = until_ms + 1, "run end"
    for n in sorted(cluster.roles):
        node = cluster.controller_node(n)
        if node is None:
            continue
        if node.raft._clean_at < best:  # noqa: SLF001
            best, why = node.raft._clean_at, f"log cleaner on {n}"  # noqa: SLF001
        gen = node.snapshots
        if gen.max_interval_ms and gen.last_ms is not None and \
                gen.last_ms + gen.max_interval_ms < best:
            best, why = gen.last_ms + gen.max_interval_ms, f"snapshot interval on {n}"
    ctrl = cluster.controller_node(leader).controller
    for key, name in (("tokens.next_check_ms", "token expiry check"),
                      ("balance.next_ms", "leader rebalance"), ("unclean.next_ms", "unclean")):
        due = ctrl.soft.get(key)
        if due is not None and due < best:
            best, why = due, name
    return best, why


def predict_quorum(cluster: Any, until_ms: int) -> QuorumPrediction:
    """The idle cluster's metadata traffic from now up to ``until_ms`` (see the module)."""
    return _Model(cluster, until_ms).run()


class _Model:
    def __init__(self, cluster: Any, until_ms: int) -> None:
        self.c = cluster
        active = cluster.active_controller
        if active is None:
            raise NotModelled("no active controller")
        self.leader = leader = active.id
        lnode = cluster.controller_node(leader)
        self.raft, self.ctrl = raft, ctrl = lnode.raft, lnode.controller
        lead = raft._lead  # noqa: SLF001
        if raft.role != LEADER or lead is None or lead.change is not None or \
                not lead.acked.issuperset(raft.voters) or raft.majority != 2 or \
                len(raft.voters) != 3 or leader not in raft.voters:
            raise NotModelled("the leader is not in a steady three-voter epoch")
        if cluster.combined or lnode.logic is not None or raft.dynamic:
            raise NotModelled("combined nodes or a dynamic quorum")
        self.lead = lead
        self.cfg = raft.config
        self.horizon, self.why = horizon_of(cluster, leader, until_ms)
        self.interval = noop.noop_interval_ms(ctrl.config, ctrl.image)
        if self.interval is None:
            raise NotModelled("NoOps are off")
        self.noop_last = ctrl.soft.get("noop.last_ms")
        if self.noop_last is None:
            raise NotModelled("the NoOp task has not run yet")
        net = cluster.sim.network
        if net.filters or net.held or net.partitions:
            raise NotModelled("network filters, partitions or held messages")
        for n in sorted(cluster.roles):
            proc = cluster.sim.process(n)
            if proc.state.value != "running" or proc.skew_ms:
                raise NotModelled(f"node {n} is {proc.state.value} (skew {proc.skew_ms} ms)")
        self.voter_ids = set(raft.voters) - {leader}
        followers = set(cluster.roles) - {leader}
        self.flights, other = _scan_heap(cluster, followers, leader)
        if other < self.horizon:
            self.horizon, self.why = other, "another event in the heap"
        # ---- the leader's state
        self.end, self.hw = raft.log_end_offset, raft.hw
        if ctrl.metrics.last_committed_offset != self.hw - 1 or raft._next != self.hw:  # noqa: SLF001
            raise NotModelled("the leader has commits to deliver")
        self.progress = {v: lead.voters[v].end_offset for v in self.voter_ids}
        self.pending = bool(lead.pending)
        if any(v != NOOP_VALUE for v in lead.pending):
            raise NotModelled("records other than a NoOp are waiting to be appended")
        self.drain_at = lead.drain_at if self.pending else NEVER
        self.check_deadline, self.fetched = lead.check_deadline, set(lead.fetched)
        self.parked = []
        for p in lead.parked:
            if p.replica_id not in followers or p.src != p.replica_id:
                raise NotModelled(f"a fetch from {p.src} is parked at the leader")
            self.parked.append(Parked(p.replica_id, p.partition.fetch_offset, p.deadline))
        self.written = ctrl.written_offset
        self.waiting: list[tuple[int, int]] = []  # (broker, offset): heartbeats to answer
        for w in ctrl._waiting:  # noqa: SLF001
            if w.dest not in followers or w.on_commit is not None:
                raise NotModelled("the controller waits to answer something else")
            self.waiting.append((w.dest, w.offset))
        manager = ctrl.soft.get(SOFT_STATE_KEY)
        self.leases: dict[int, int] = {}  # broker -> first instant its lease has run out
        if manager is not None:
            self.session_ms = manager.session_timeout_ms
            for b, reg in ctrl.image.cluster.brokers.items():
                if reg.fenced:
                    continue
                s = manager.peek(b)
                if s is None or s.epoch != reg.epoch:
                    raise NotModelled(f"broker {b} has no session of its epoch")
                self.leases[b] = manager.lease_end_ms(s)
        self.budget_end = raft.hw + self._noop_budget()
        # the controller's other tasks (all at or past the horizon): part of its wake-up
        self.other_dues = min([ctrl.soft[k] for k in ("tokens.next_check_ms", "balance.next_ms",
                                                     "unclean.next_ms") if k in ctrl.soft],
                              default=NEVER)
        self.clean_at = raft._clean_at  # noqa: SLF001
        self.heap: list[list] = []
        self.seq = iter(range(1, 1 << 62)).__next__
        lproc = cluster.sim.process(leader)
        self.timer_key = lproc._timer_ties  # noqa: SLF001
        self.timer: list | None = None
        t = lproc._timer  # noqa: SLF001
        if t is not None and t[3] is not None:
            self.timer = [t[0], t[1], self.seq(), "timer", leader]
            self.heap.append(self.timer)
        self.pred = QuorumPrediction(leader, flights=self.flights)
        for n in sorted(followers):
            self.pred.loops[n] = self._loop(n)
        heapq.heapify(self.heap)

    def _noop_budget(self) -> int:
        """NoOps every node can commit before a snapshot by bytes falls due."""
        budget = NEVER
        for n in self.c.roles:
            node = self.c.controller_node(n)
            if node is not None:
                gen = node.snapshots
                budget = min(budget, (gen.max_bytes - gen.bytes_since - 1) // NOOP_BATCH_BYTES)
        return budget

    def _loop(self, n: int) -> Loop:
        c, leader, net = self.c, self.leader, self.c.sim.network
        node, proc = c.controller_node(n), c.sim.process(n)
        r = node.raft
        if r.role != FOLLOWER or r.leader_id != leader or r.epoch != self.raft.epoch or \
                r._download is not None or r._next != r.hw:  # noqa: SLF001
            raise NotModelled(f"node {n} is not a plain follower of {leader}")
        conn = r._conns.get(leader)  # noqa: SLF001
        if conn is None or conn.cid is None:
            raise NotModelled(f"node {n} has no fetch out")
        if node.controller is not None:
            reg = node.controller.committed.cluster.controller(n)
            if reg is None or reg.incarnation_id != node.registrar.incarnation_id:
                raise NotModelled(f"controller {n} is not registered yet")
        if not only_noops(self.raft.log, r._next, self.end):  # noqa: SLF001
            raise NotModelled(f"node {n} has records other than NoOps to commit")
        if r.log_end_offset < self.lead.epoch_start:
            raise NotModelled(f"node {n} has not fetched the leader's epoch start yet")
        if self.end - r.log_end_offset > CATCH_UP_LIMIT:
            raise NotModelled(f"node {n} is far behind the leader")
        t = proc._timer  # noqa: SLF001
        timer = None
        if t is not None and t[3] is not None:
            timer = [t[0], t[1], self.seq(), "timer", n]
            self.heap.append(timer)
        loop = Loop(n, n in self.voter_ids, r.log_end_offset, r.hw,
                    LinkClock.of(net, n, leader), LinkClock.of(net, leader, n),
                    node._raft_wake, timer, proc._timer_ties)  # noqa: SLF001
        if node.logic is not None:
            self._beats(loop, node)
        kinds = {}
        for (src, dst, channel), (msg, entry) in self.flights.items():
            if n in (src, dst):
                kind = _KINDS[type(msg.body).__name__][0]
                kinds[kind] = (msg, entry)
        in_park = any(p.node == n for p in self.parked)
        if ("fetch" in kinds) + ("answer" in kinds) + in_park != 1:
            raise NotModelled(f"node {n}'s fetch is not in flight or parked once")
        for kind, (msg, entry) in kinds.items():
            if kind == "fetch":
                arg = (n, rpc.fetch_partition(msg.body).fetch_offset)
            elif kind == "answer":
                arg = (n, *_answer_end(msg, r.log_end_offset))
            else:
                arg = (n,)
            self.heap.append([entry[0], entry[1], self.seq(), kind, arg])
        return loop

    def _beats(self, loop: Loop, node: Any) -> None:
        """A broker's heartbeat state: RUNNING, unfenced, nothing else pending."""
        n, logic, net = loop.node, node.logic, self.c.sim.network
        lc = logic.lifecycle
        reg = self.ctrl.image.cluster.broker(n)
        if logic.state.name != "RUNNING" or lc.self_fenced or lc.fenced or reg is None or \
                reg.fenced or reg.in_controlled_shutdown or not lc.registered or \
                logic.alter.next_deadline() is not None or logic.alter.unsent or \
                lc._self_fence_deadline() is not None:  # noqa: SLF001
            raise NotModelled(f"broker {n} is not a plain running broker")
        replicas = logic.replicas
        if replicas.replicas:  # partitions it leads alone: an ISR check that changes nothing
            if not replicas.active or any(
                    r.leader != n or r.replicas != (n,) or r.isr != (n,) or r.pending
                    for r in replicas.replicas.values()):
                raise NotModelled(f"broker {n} hosts replicated or pending partitions")
            loop.isr_wakes = True
        if replicas.active:
            loop.isr_check = replicas._next_isr_check_ms  # noqa: SLF001
            loop.isr_interval = replicas._isr_check_interval()  # noqa: SLF001
        loop.beat_to_leader = LinkClock.of(net, n, self.leader, CONTROLLER_CHANNEL)
        loop.beat_to_node = LinkClock.of(net, self.leader, n, CONTROLLER_CHANNEL)
        loop.next_beat = lc._next_comm_ms  # noqa: SLF001
        f = lc._inflight  # noqa: SLF001
        loop.beat_deadline = f.deadline_ms if f is not None else NEVER
        if (f is None) == (loop.next_beat is None) or \
                (f is not None and f.dst != self.leader):
            raise NotModelled(f"broker {n}'s heartbeat is neither due nor in flight")
        loop.logic_wake = node._logic_wake  # noqa: SLF001

    # ------------------------------------------------------------------ running

    def run(self) -> QuorumPrediction:
        heap, pred = self.heap, self.pred
        self.last_step = (self.end, self.hw)
        while heap:
            entry = heapq.heappop(heap)
            at, tie, _, kind, arg = entry
            if kind == "dead":
                continue
            if at >= self.horizon:
                heapq.heappush(heap, entry)
                break
            if kind == "timer" and arg != self.leader:
                if not self._follower_timer(entry):
                    heapq.heappush(heap, entry)
                    break
            elif kind in ("answer", "beat_answer"):
                if not self._at_follower(entry):
                    heapq.heappush(heap, entry)
                    break
            elif not self._at_leader(entry):
                heapq.heappush(heap, entry)
                break
        else:
            raise NotModelled("the heap ran dry")
        pred.horizon_ms, pred.why_stopped = self.horizon, self.why
        pred.end_offset, pred.high_watermark = self.end, self.hw
        pred.in_flight = sorted((e[0], e[1], e[2], e[3], e[4]) for e in heap
                                if e[3] not in ("timer", "dead"))
        return pred

    def _stop(self, at: int, why: str) -> bool:
        self.horizon, self.why = at, why
        return False

    def _send(self, clock: LinkClock, at: int, kind: str, arg: tuple) -> None:
        a_at, a_tie = clock.arrival(at)
        heapq.heappush(self.heap, [a_at, a_tie, self.seq(), kind, arg])

    def _rearm(self, holder: Any, attr: str, node: int, key: int, wake: int) -> None:
        """The node re-arms its one timer at ``wake`` (kept when already there)."""
        entry = getattr(holder, attr)
        if entry is not None and entry[0] == wake:
            return
        if entry is not None:
            entry[3] = "dead"
        if wake >= NEVER:
            setattr(holder, attr, None)
            return
        entry = [wake, tie_at(key, wake), self.seq(), "timer", node]
        setattr(holder, attr, entry)
        heapq.heappush(self.heap, entry)

    # ------------------------------------------------------------------ followers

    def _follower_timer(self, entry: list) -> bool:
        at, tie, _, _, n = entry
        loop = self.pred.loops[n]
        if entry is not loop.timer:
            return True  # re-armed elsewhere since
        if at >= loop.raft_wake or at < loop.logic_wake or loop.logic_wake == loop.beat_deadline:
            return self._stop(at, f"node {n}'s own timer")
        self.pred.events.append(Computed(at, tie, n, "timer"))
        loop.timer = None
        self._beat_if_due(loop, at)
        self._rearm(loop, "timer", n, loop.timer_key, min(loop.raft_wake, loop.logic_wake))
        return True

    def _beat_if_due(self, loop: Loop, at: int) -> None:
        """The broker logic ran at ``at``: a due heartbeat leaves, a due ISR check runs."""
        if loop.next_beat is not None and at >= loop.next_beat:
            loop.next_beat = None
            loop.beat_deadline = at + self.c.broker(loop.node).logic.lifecycle.request_timeout_ms
            self._send(loop.beat_to_leader, at, "beat", (loop.node,))
        if loop.isr_check is not None and at >= loop.isr_check:
            loop.isr_check = at + loop.isr_interval
        self._logic_wake(loop)

    @staticmethod
    def _logic_wake(loop: Loop) -> None:
        wake = loop.beat_deadline if loop.next_beat is None else loop.next_beat
        if loop.isr_wakes and loop.isr_check is not None:
            wake = min(wake, loop.isr_check)
        loop.logic_wake = wake

    def _at_follower(self, entry: list) -> bool:
        at, tie, _, kind, arg = entry
        n = arg[0]
        loop = self.pred.loops[n]
        if at >= min(loop.raft_wake, loop.beat_deadline):
            return self._stop(at, f"node {n}'s own timer")
        event = Computed(at, tie, n, kind, self.leader)
        self.pred.events.append(event)
        if kind == "answer":
            _, new_end, new_hw = arg
            loop.end_offset = max(loop.end_offset, new_end)
            hw = max(loop.high_watermark, min(new_hw, loop.end_offset))
            committed = hw > loop.high_watermark
            # its logic would do nothing that depends on the instant: the answer can wait
            # to be applied with the others as one run (warp.py, broker_runs.py)
            if loop.voter or (at < loop.logic_wake and not (
                    committed and loop.isr_check is not None and at >= loop.isr_check)):
                event.defer = (new_end, new_hw)
            loop.high_watermark = hw
            cfg = self.cfg
            loop.raft_wake = min(at + cfg.fetch_timeout_ms, at + cfg.request_timeout_ms,
                                 self.c.controller_node(n).raft._clean_at)  # noqa: SLF001
            self._send(loop.to_leader, at, "fetch", (n, loop.end_offset))
            if committed and loop.beat_to_leader is not None:
                self._beat_if_due(loop, at)
        else:  # a heartbeat's answer: the next one is due an interval later
            loop.next_beat = at + self.c.config.broker_heartbeat_interval_ms
            loop.beat_deadline = NEVER
            if loop.isr_check is not None and at >= loop.isr_check:
                loop.isr_check = at + loop.isr_interval
            self._logic_wake(loop)
        self._rearm(loop, "timer", n, loop.timer_key, min(loop.raft_wake, loop.logic_wake))
        return True

    # ------------------------------------------------------------------ the leader

    def _update_replica(self, n: int, offset: int, at: int) -> None:
        if n not in self.voter_ids:
            return  # an observer's progress is recorded, it moves nothing here
        moved = self.progress[n] != offset
        self.progress[n] = offset
        self.fetched.add(n)
        if len(self.fetched) + 1 >= 2:
            self.fetched.clear()
            self.check_deadline = at + self.cfg.fetch_timeout_ms * 3 // 2
        if moved:
            self._move_hw()

    def _move_hw(self) -> None:
        new_hw = sorted([self.end, *self.progress.values()], reverse=True)[1]
        if new_hw > self.lead.epoch_start and new_hw > self.hw:
            self.hw = new_hw
            self.wake_parked = True

    def _poll(self, at: int) -> int:
        if self.pending and at >= self.drain_at:
            self.pending, self.drain_at = False, NEVER
            self.end += 1
            self.pred.drains.append(at)
            self.wake_parked = True
            self._move_hw()
        if self.parked:
            wake_all, self.wake_parked = self.wake_parked, False
            still = []
            for p in self.parked:
                if wake_all or p.deadline <= at:
                    self._update_replica(p.node, p.offset, at)
                    self.sends.append(("answer", p.node, self.end, self.hw))
                else:
                    still.append(p)
            self.parked = still
        else:
            self.wake_parked = False
        if at >= self.check_deadline:
            raise NotModelled("check-quorum would resign the leader")
        return min(self.drain_at, self.check_deadline, *(p.deadline for p in self.parked))

    def _at_leader(self, entry: list) -> bool:
        at, tie, _, kind, arg = entry
        if kind == "timer":
            if entry is not self.timer:
                return True  # re-armed elsewhere since
            self.timer = None
        if self.leases and at >= min(self.leases.values()):
            return self._stop(at, "a broker's lease")
        self.wake_parked = False
        self.sends: list[tuple] = []
        event = Computed(at, tie, self.leader, kind, None if kind == "timer" else arg[0])
        self.pred.events.append(event)
        before = (self.end, self.hw, self.written, len(self.waiting), self.pending)
        if kind == "fetch":
            n, offset = arg
            if offset > self.end:
                raise NotModelled(f"node {n} fetches past the leader's log end")
            self._update_replica(n, offset, at)
            if offset >= self.end:
                self.parked.append(Parked(n, offset, at + self.cfg.fetch_max_wait_ms))
            else:
                self.sends.append(("answer", n, self.end, self.hw))
        elif kind == "beat":
            n = arg[0]
            self.leases[n] = at + self.session_ms + 1
            if self.written <= self.hw - 1:
                self.sends.append(("beat_answer", n))
            else:
                self.waiting.append((n, self.written))
        if kind != "beat":
            wake = self._poll(at)
            while wake <= at:  # the replica looks again at once while something is due
                wake = self._poll(at)
        if at >= self.noop_last + self.interval:  # the controller's NoOp task
            self.written += 1
            self.noop_last = at
            self.pred.noops.append(at)
            if not self.pending:
                self.pending, self.drain_at = True, at + self.cfg.append_linger_ms
        wake = self._poll(at)
        while wake <= at:
            wake = self._poll(at)
        if self.waiting:  # heartbeats answered once what was written before them commits
            still = []
            for n, offset in self.waiting:
                if offset <= self.hw - 1:
                    self.sends.append(("beat_answer", n))
                else:
                    still.append((n, offset))
            self.waiting = still
        if self.end > self.budget_end:
            raise NotModelled("a snapshot by bytes would fall due")
        for send in self.sends:
            loop = self.pred.loops[send[1]]
            if send[0] == "answer":
                self._send(loop.to_node, at, "answer", send[1:])
            else:
                self._send(loop.beat_to_node, at, "beat_answer", (send[1],))
        woke = (self.end, self.hw) != self.last_step
        self.last_step = (self.end, self.hw)
        self.pred.steps.append(LeaderStep(at, tie, self.end, self.hw, woke, self.written,
                                          self.hw - 1))
        raft_wake = min(wake, self.clean_at)
        node_wake = min(raft_wake, self.noop_last + self.interval, self.other_dues,
                        min(self.leases.values()) if self.leases else NEVER)
        if kind == "fetch" and arg[0] not in self.voter_ids and \
                before == (self.end, self.hw, self.written, len(self.waiting), self.pending) \
                and all(send[1] == arg[0] for send in self.sends):
            event.narrow = (raft_wake, node_wake)
        self._rearm(self, "timer", self.leader, self.timer_key, node_wake)
        return True
