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

:func:`predict_quorum` runs those rules (the leader's here, the followers' in
``follower_model``) on a small heap of its own, in the scheduler's order
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
from typing import Any

from kraft_testkit.controller import noop
from kraft_testkit.controller.cluster import SOFT_STATE_KEY
from kraft_testkit.controller.heartbeats import lease_end
from kraft_testkit.fastforward.dead_nodes import DeadVoter, dead_nodes
from kraft_testkit.fastforward.fast_beats import FastBeats
from kraft_testkit.fastforward.fast_brokers import PRE, FastBrokers
from kraft_testkit.fastforward.follower_model import FollowerLoops
from kraft_testkit.fastforward.leader_model import LeaderEvents
from kraft_testkit.fastforward.observer_loop import LinkClock, NotModelled
from kraft_testkit.fastforward.prediction import (
    NOOP_BATCH_BYTES,
    Parked,
    QuorumPrediction,
    _scan_heap,
    horizon_of,
)
from kraft_testkit.fastforward.replica_loops import ReplicaLoops
from kraft_testkit.metadata.replay import NOOP_VALUE
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.replica_state import LEADER
from kraft_testkit.sim.node import NEVER
from kraft_testkit.sim.streams import tie_at

def predict_quorum(cluster: Any, until_ms: int, *, steps: bool = True,
                   compact: bool = False, fast: bool = True) -> QuorumPrediction:
    """The idle cluster's metadata traffic from now up to ``until_ms`` (see the module);
    ``steps=False`` leaves the leader's timeline out (the warp does not read it).

    ``compact=True`` (what the warp asks for, ``compact.py``) leaves out the events the warp
    sets from the prediction instead of replaying: the leader's (but a heartbeat's arrival,
    whose request the warp takes from the link) and every follower's answer its node does not
    act on (kept in order in ``Loop.held``; the follower's other events say how many came
    before them); ``omitted`` counts them, ``follower_fetches`` and ``follower_answers`` count
    the fetch loops' messages; there the brokers' fetch loops are computed out of the heap
    (``fast_brokers.py``) unless ``fast=False`` (the reference the tests compare it with)."""
    model = _Model(cluster, until_ms)
    if model.dead and not compact:
        raise NotModelled("a dead node (the compact warp's alone)")
    model.record_steps = steps
    if compact:
        model.compact = True
        for loop in model.pred.loops.values():
            loop.held = []
            if loop.quiet or loop.replicating:  # its logic's events are held too
                loop.logic = []  # (held_events.py sets what they did)
        if fast:
            model._fast_start()  # noqa: SLF001
    return model.run()


class _Model(LeaderEvents, FollowerLoops, ReplicaLoops, DeadVoter, FastBrokers, FastBeats):
    def __init__(self, cluster: Any, until_ms: int) -> None:
        self.c = cluster
        active = cluster.active_controller
        if active is None:
            raise NotModelled("no active controller")
        self.leader = leader = active.id
        lnode = cluster.controller_node(leader)
        self.raft, self.ctrl = raft, ctrl = lnode.raft, lnode.controller
        lead = raft._lead  # noqa: SLF001
        dead = dead_nodes(cluster)
        if raft.role != LEADER or lead is None or lead.change is not None or \
                not lead.acked.issuperset(set(raft.voters) - dead) or raft.majority != 2 or \
                len(raft.voters) != 3 or leader not in raft.voters or \
                len(dead & set(raft.voters)) > 1:
            raise NotModelled("the leader is not in a steady three-voter epoch")
        if cluster.combined or lnode.logic is not None or raft.dynamic:
            raise NotModelled("combined nodes or a dynamic quorum")
        for v in sorted(set(raft.voters) - dead - {leader}):
            # a voter restarted on a replaced disk fetches with another directory id: the
            # leader does not count it toward the high watermark, the model would
            if raft.voters[v] != Uuid.ZERO and cluster.replica(v).dir != raft.voters[v]:
                raise NotModelled(f"voter {v} runs on a replaced disk (another directory id)")
        self.lead = lead
        self.cfg = raft.config
        self.fetch_wait = min(raft.config.fetch_timeout_ms, raft.config.request_timeout_ms)
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
        for n in sorted(set(cluster.roles) - dead):
            proc = cluster.sim.process(n)
            if proc.state.value != "running" or proc.skew_ms:
                raise NotModelled(f"node {n} is {proc.state.value} (skew {proc.skew_ms} ms)")
            if proc._crash_in_writes is not None:  # noqa: SLF001 - it dies in its next writes
                raise NotModelled(f"node {n} has a crash armed in its writes")
        self.voter_ids = set(raft.voters) - {leader}
        self.no_lean = self.voter_ids  # fetches _park_alone leaves to the full event
        followers = set(cluster.roles) - {leader} - dead
        self.flights, self.more_flights, other, to_dead = _scan_heap(cluster, followers, leader,
                                                                     dead)
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
        self.check_deadline = lead.check_deadline
        self.check_ms = raft.config.fetch_timeout_ms * 3 // 2  # a voter's fetch renews it
        self.parked = []
        self.fast, self.fast_of, self.fast_parked = [], {}, []  # fast_brokers: none yet
        self.fast_voters: list = []
        self.fast_next, self.fast_last = NEVER << 32, -1
        self.records = {b: [p.last_fetch_ms, p.end_offset, p.caught_up_ms]
                          for b, p in (*lead.observers.items(), *lead.voters.items())
                          if b != leader}
        for p in lead.parked:
            if p.replica_id not in followers or p.src != p.replica_id:
                raise NotModelled(f"a fetch from {p.src} is parked at the leader")
            if any(q.node == p.replica_id for q in self.parked):  # one it sent unattached
                raise NotModelled(f"two fetches from {p.src} are parked at the leader")
            self.parked.append(Parked(p.replica_id, p.partition.fetch_offset, p.deadline,
                                      PRE + len(self.parked)))
        # the earliest parked deadline: the poll looks at each parked fetch only when one is
        # due or the parked fetches are woken
        self.parked_min = min((p.deadline for p in self.parked), default=NEVER)
        self.written = ctrl.written_offset
        # (broker, offset, arrival): heartbeats to answer once ``offset`` commits
        self.waiting: list[tuple[int, int, int]] = []
        for w in ctrl._waiting:  # noqa: SLF001
            if w.dest not in followers or w.on_commit is not None:
                raise NotModelled("the controller waits to answer something else")
            self.waiting.append((w.dest, w.offset, w.appended_ms))
        manager = ctrl.soft.get(SOFT_STATE_KEY)
        # the first instant each contact entry has expired: a broker's own (its heartbeats
        # renew it) by id, any other (an old epoch, a dead broker's) by (id, epoch)
        self.leases: dict[Any, int] = {}
        self.lease_check = manager.next_check_ms if manager is not None else None
        if manager is not None:
            self.session_ms = manager.session_timeout_ms
            brokers = ctrl.image.cluster.brokers
            for (b, epoch), t in manager.tracker.items():
                reg = brokers.get(b)
                own = reg is not None and reg.epoch == epoch and b in followers
                self.leases[b if own else (b, epoch)] = lease_end(t, self.session_ms)
        self.lease_raw = min(self.leases.values()) if self.leases else NEVER
        # the leader's lease wake-up: the first fence check that finds an expired entry
        self.lease_min = self._lease_check_at(self.lease_raw)
        self.record_steps = True
        self.leader_wakes: tuple[int, int, int] | None = None
        self.compact = False
        self.follower_fetches = self.follower_answers = self.omitted = 0
        self.budget_end = self._noop_budget_end()
        # the controller's other tasks (all at or past the horizon): part of its wake-up
        self.other_dues = min([ctrl.soft[k] for k in ("tokens.next_check_ms", "balance.next_ms",
                                                     "unclean.next_ms") if k in ctrl.soft],
                              default=NEVER)
        self.clean_at = raft._clean_at  # noqa: SLF001
        self.heap: list[list] = []
        self.seq = iter(range(1, 1 << 62)).__next__
        lproc = cluster.sim.process(leader)
        self.timer_key = lproc._timer_ties  # noqa: SLF001
        self.node = leader  # the timer's owner, as a follower's Loop has it (_rearm)
        self.timer: list | None = None
        t = lproc._timer  # noqa: SLF001
        if t is not None and t[3] is not None:
            self.timer = [t[0], t[1], self.seq(), "timer", leader]
            self.heap.append(self.timer)
        self.pred = QuorumPrediction(leader, flights=self.flights, records=self.records,
                                     more_flights=self.more_flights, dead_flights=to_dead)
        for n in sorted(followers):
            self.pred.loops[n] = self._loop(n)
        self._replicas_start()
        self.dead = dead
        self._dead_start(dead)
        self.pred.begin_to = self.begin_to
        heapq.heapify(self.heap)

    def _noop_budget_end(self) -> int:
        """The log end up to which every node can commit NoOps before a snapshot by bytes
        falls due on it (each from its own high watermark: a node that lags commits more)."""
        end = NEVER
        for n in self.c.roles:
            node = self.c.controller_node(n)
            if node is not None:
                gen = node.snapshots
                room = (gen.max_bytes - gen.bytes_since - 1) // NOOP_BATCH_BYTES
                end = min(end, node.raft.hw + room)
        return end

    # ------------------------------------------------------------------ running

    def run(self) -> QuorumPrediction:
        heap, pred = self.heap, self.pred
        self.last_step = (self.end, self.hw)
        pop, push = heapq.heappop, heapq.heappush
        horizon, leader = self.horizon, self.leader  # _stop changes the horizon, then we stop
        follower_timer, at_follower, at_leader = \
            self._follower_timer, self._at_follower, self._at_leader
        fast_until = self._fast_until
        while heap:
            entry = pop(heap)
            kind = entry[3]
            if kind == "dead":
                continue
            key = entry[0] << 32 | entry[1]
            if self.fast_next < key:
                if not fast_until(key):
                    push(heap, entry)  # the model stopped at a fast loop's event before it
                    break
                kind = entry[3]
                if kind == "dead":  # a lean fetch parked with an earlier max wait: the
                    continue  # leader's timer moved there
                if heap and heap[0][:2] < entry[:2]:  # something that comes first: that
                    push(heap, entry)  # timer, or a heartbeat a fast loop's full event sent
                    continue
            if entry[0] >= horizon:
                push(heap, entry)
                break
            if kind == "timer":
                done = at_leader(entry) if entry[4] == leader else follower_timer(entry)
            elif kind == "answer" or kind == "beat_answer":
                done = at_follower(entry)
            elif kind == "rfetch" or kind == "ranswer":
                done = self._at_replica(entry)
            else:
                done = at_leader(entry)
            if not done:
                push(heap, entry)
                pred.stop_tie = entry[1]
                break
        else:
            raise NotModelled("the heap ran dry")
        pred.horizon_ms, pred.why_stopped = self.horizon, self.why
        pred.end_offset, pred.high_watermark = self.end, self.hw
        pred.in_flight = sorted((e[0], e[1], e[2], e[3], e[4]) for e in heap
                                if e[3] not in ("timer", "dead"))
        pred.parked = [(p.node, p.deadline) for p in self.parked]
        pred.leader_wakes = self.leader_wakes
        if self.fast:
            self._fast_finish(pred)
        pred.follower_fetches, pred.follower_answers = self.follower_fetches, self.follower_answers
        pred.omitted = self.omitted
        pred.waiting, pred.check_deadline = self.waiting, self.check_deadline
        return pred

    def _lease_check_at(self, raw: int) -> int:
        """The fence check that first sees a lease that ends at ``raw`` (NEVER: none)."""
        return NEVER if raw >= NEVER or self.lease_check is None else self.lease_check(raw)

    def _lease_renewed(self, n: int, at: int) -> None:
        """Broker ``n``'s heartbeat reached the leader at ``at``: its entry's new end."""
        leases = self.leases
        old = leases.get(n, NEVER)
        leases[n] = new = lease_end(at, self.session_ms)
        if old == self.lease_raw or new < self.lease_raw:  # else the least did not move
            self.lease_raw = min(leases.values())
            self.lease_min = self._lease_check_at(self.lease_raw)

    def _stop(self, at: int, why: str) -> bool:
        self.horizon, self.why = at, why
        return False

    def _send(self, clock: LinkClock, at: int, kind: str, arg: tuple) -> None:
        a_at, a_tie = clock.arrival(at)
        heapq.heappush(self.heap, [a_at, a_tie, self.seq(), kind, arg])

    def _rearm(self, holder: Any, wake: int) -> None:
        """The node re-arms its one timer at ``wake`` (kept when already there): ``holder``
        is the model (the leader) or a follower's :class:`Loop`."""
        entry = holder.timer
        if entry is not None:
            if entry[0] == wake:
                return
            entry[3] = "dead"
        if wake >= NEVER:
            holder.timer = None
            return
        entry = [wake, tie_at(holder.timer_key, wake), self.seq(), "timer", holder.node]
        holder.timer = entry
        heapq.heappush(self.heap, entry)
