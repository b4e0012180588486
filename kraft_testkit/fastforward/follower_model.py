"""The followers' side of the idle model (``quorum_model``): each voter's and broker's fetch
loop, a broker's heartbeats and its logic's other wake-ups (the ISR check), as a mixin of the
model, kept apart so each module stays readable.

A follower's event in an idle stretch is an answer from the leader (it appends what the
answer carries, learns the high watermark and fetches again in the same event), a broker's
heartbeat answer (the next heartbeat is due an interval later), or a broker's timer (a due
heartbeat leaves). A broker's logic runs only in its timer, in a heartbeat's answer and in an
answer that commits something (the node hands a changed image to the logic): a due heartbeat
leaves in the first of those at or after its instant, and so does the ISR check, which every
running broker's logic runs (a wake-up only where it leads partitions).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from kraft_testkit.broker.channel import CONTROLLER_CHANNEL
from kraft_testkit.fastforward.answers import only_noops
from kraft_testkit.fastforward.observer_loop import LinkClock, NotModelled
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.raft import rpc
from kraft_testkit.raft.replica_state import FOLLOWER
from kraft_testkit.sim.node import NEVER

CATCH_UP_LIMIT = 8  # batches a follower may lag: one answer carries them all
#: a broker's held events (``Loop.logic``, applied by ``held_events.py``): its heartbeat left,
#: reached the leader, was answered; and, for a broker that replicates partitions, its logic
#: ran at its timer, at a replica fetch from a follower (its peer) or at the answer from a
#: leader (its peer), and its replica fetches left, its ISR check ran
SEND, ARRIVE, ANSWER, TIMER, RFETCH, RANSWER, FETCHES, ISR = range(8)

@dataclass(slots=True)
class Computed:
    """One event the model ran: when (``at_ms``, ``tie``), at which node, what (``timer``,
    ``fetch``, ``answer``, ``beat`` or ``beat_answer``), and the other node of a message."""

    at_ms: int
    tie: int
    node: int
    kind: str
    peer: int | None = None
    #: a fetch (a broker's or a voter's) or heartbeat at the leader that moved nothing but the
    #: leader's record of its sender (no drain, NoOp, high watermark, other answer): the
    #: leader's Raft wake-up and node wake-up after it
    narrow: tuple[int, int] | None = None
    #: a broker's answer its logic does not act on: (log end, high watermark) it carries,
    #: to be applied with the broker's other such answers as one run
    defer: tuple[int, int] | None = None
    #: a broker's answer its logic acts on: (log end, high watermark) it carries (the warp
    #: builds the answer the leader sent from them)
    carried: tuple[int, int] | None = None
    #: in a compact prediction, a broker's event: how many of its answers the model held
    #: before it (``Loop.held``): they come first
    held: int = 0
    #: likewise, how many of its logic's events the model held before it (``Loop.logic``)
    logic: int = 0


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
    clean_at: int = NEVER  # its Raft log cleaner's next run
    beat_timeout: int = 0  # a heartbeat in flight times out this long after it left
    beat_interval: int = 0
    #: a compact prediction's broker answers its logic does not act on, in order, as no
    #: events but (instant, log end, high watermark) with the high watermark it leaves
    held: list | None = None
    #: a compact prediction's events of a steady broker's logic, in order, as no events but
    #: (kind, instant, value): its heartbeat's SEND (the metadata offset it reports), ARRIVE
    #: at the leader and ANSWER; where it hosts partitions its logic's runs (TIMER, RFETCH and
    #: RANSWER with (peer, built)) and what it did there (FETCHES, ISR): the warp applies them
    #: (``held_events.py``) instead of running the broker's logic for each
    logic: list | None = None
    #: a broker that hosts no partition (its logic's only work in a stretch is heartbeats)
    quiet: bool = False
    #: a broker that hosts partitions (its logic's work: heartbeats, replica fetches between
    #: brokers, ISR checks)
    replicating: bool = False
    rep: Any = None  # its replica fetching and ISR check (replica_loops.ReplicaLoop)
    #: its fetch loop kept out of the heap (``fast_loop.FastLoop``; its timer then holds
    #: its logic's wake-up alone)
    fast: Any = None


_KINDS = {  # message body -> (model kind, sent by the follower?)
    "FetchRequest": ("fetch", True), "FetchResponse": ("answer", False),
    "BrokerHeartbeatRequest": ("beat", True), "BrokerHeartbeatResponse": ("beat_answer", False),
}

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


class FollowerLoops:
    """Methods of the model (``quorum_model._Model``) for the followers' events."""

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
        loop.clean_at = r._clean_at  # noqa: SLF001
        if node.logic is not None:
            self._beats(loop, node)
        kinds = {}
        for (src, dst, channel), (msg, entry) in self.flights.items():
            if n in (src, dst) and leader in (src, dst):  # a replica fetch: replica_loops
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
        loop.quiet = not replicas.replicas and replicas.leader_serving
        loop.replicating = bool(replicas.replicas) and replicas.active
        if replicas.replicas and not replicas.active:
            raise NotModelled(f"broker {n} hosts partitions it does not serve")
        self._replica_loop(loop, logic)  # its replica fetches and ISR check (replica_loops)
        if replicas.active:
            loop.isr_check = replicas._next_isr_check_ms  # noqa: SLF001
            loop.isr_interval = replicas._isr_check_interval()  # noqa: SLF001
        loop.beat_timeout = lc.request_timeout_ms
        loop.beat_interval = self.c.config.broker_heartbeat_interval_ms
        loop.beat_to_leader = LinkClock.of(net, n, self.leader, CONTROLLER_CHANNEL)
        loop.beat_to_node = LinkClock.of(net, self.leader, n, CONTROLLER_CHANNEL)
        loop.next_beat = lc._next_comm_ms  # noqa: SLF001
        f = lc._inflight  # noqa: SLF001
        loop.beat_deadline = f.deadline_ms if f is not None else NEVER
        if (f is None) == (loop.next_beat is None) or \
                (f is not None and f.dst != self.leader):
            raise NotModelled(f"broker {n}'s heartbeat is neither due nor in flight")
        loop.logic_wake = node._logic_wake  # noqa: SLF001
    # ------------------------------------------------------------------ followers

    def _follower_timer(self, entry: list) -> bool:
        at, tie, _, _, n = entry
        loop = self.pred.loops[n]
        if entry is not loop.timer:
            return True  # re-armed elsewhere since
        if at >= loop.raft_wake or at < loop.logic_wake or loop.logic_wake == loop.beat_deadline:
            return self._stop(at, f"node {n}'s own timer")
        if (why := self._isr_blocked(loop, at)) is not None:
            return self._stop(at, why)
        logic, run = loop.logic, None
        if logic is not None and loop.quiet and loop.next_beat is not None and \
                at >= loop.next_beat:
            logic.append((SEND, at, loop.high_watermark - 1))  # no event: held (compact)
            self.omitted += 1
        elif logic is not None and loop.replicating:
            logic.append((TIMER, at, 0))  # no event: held with what its logic does there
            self.omitted += 1
            run = logic
        else:
            event = Computed(at, tie, n, "timer")
            self.pred.events.append(event)
            if loop.held is not None:
                event.held = len(loop.held)
                if logic is not None:
                    event.logic = len(logic)
        loop.timer = None
        self._beat_if_due(loop, at, run)
        if loop.fast is not None:
            self._fast_rearm(loop)
        else:
            self._rearm(loop, min(loop.raft_wake, loop.logic_wake))
        return True

    def _beat_if_due(self, loop: Loop, at: int, run: list | None = None) -> None:
        """The broker logic ran at ``at``: a due heartbeat leaves, a due ISR check runs
        (``run``: a held logic run's list, where what it did is recorded)."""
        if loop.next_beat is not None and at >= loop.next_beat:
            if run is not None:
                run.append((SEND, at, loop.high_watermark - 1))
            loop.next_beat = None
            loop.beat_deadline = at + loop.beat_timeout
            if loop.fast is not None and loop.fast.beats:
                self._beat_sent(loop.fast, at)  # into its fast loop (fast_beats.py)
            else:
                self._send(loop.beat_to_leader, at, "beat", (loop.node,))
        self._replica_tick(loop, at, run)  # a due replica fetch, a due ISR check
        self._logic_wake(loop)

    @staticmethod
    def _logic_wake(loop: Loop) -> None:
        wake = loop.beat_deadline if loop.next_beat is None else loop.next_beat
        if loop.isr_wakes and loop.isr_check is not None:
            wake = min(wake, loop.isr_check)
        rep = loop.rep
        if rep is not None and rep.leaders and rep.next_fetch is not None and \
                rep.next_fetch < wake:
            wake = rep.next_fetch
        loop.logic_wake = wake

    def _at_follower(self, entry: list) -> bool:
        at, tie, _, kind, arg = entry
        n = arg[0]
        loop = self.pred.loops[n]
        raft_wake = loop.raft_wake
        if at >= raft_wake or at >= loop.beat_deadline:
            return self._stop(at, f"node {n}'s own timer")
        if loop.rep is not None and (why := self._isr_blocked(loop, at)) is not None:
            return self._stop(at, why)  # its logic may run: an ISR shrink would be due
        held = loop.held
        if kind == "answer":
            _, new_end, new_hw = arg
            end = loop.end_offset
            if new_end > end:
                loop.end_offset = end = new_end
            old_hw = loop.high_watermark
            hw = new_hw if new_hw < end else end
            if hw < old_hw:
                hw = old_hw
            committed = hw > old_hw
            # its logic would do nothing that depends on the instant: the answer can wait
            # to be applied with the others as one run (warp.py, broker_runs.py). An ISR
            # check due at a commit is such a thing where the broker leads nothing (the run
            # ticks its replica manager at each commit, noop_run.tick_commits); where it
            # leads, the check is a wake-up of its logic and the answer comes after it.
            if loop.voter or at < loop.logic_wake:
                if held is not None:  # compact: no event, the answer joins the held ones
                    held.append((at, end, hw))
                    self.follower_answers += 1
                    self.omitted += 1
                else:
                    event = Computed(at, tie, n, kind, self.leader)
                    event.defer = (new_end, new_hw)
                    self.pred.events.append(event)
            else:
                event = Computed(at, tie, n, kind, self.leader)
                event.carried = (new_end, new_hw)
                self.pred.events.append(event)
                if held is not None:
                    event.held = len(held)
                    self.follower_answers += 1
                    if loop.logic is not None:
                        event.logic = len(loop.logic)
            loop.high_watermark = hw
            wake = at + self.fetch_wait  # the fetch and request timeouts, the cleaner
            clean_at = loop.clean_at
            loop.raft_wake = raft_wake = wake if wake < clean_at else clean_at
            if loop.fast is not None:  # the fast loop's next fetch (fast_brokers.py)
                self._fast_fetched(loop.fast, at, end)
            else:
                a_at, a_tie = loop.to_leader.arrival(at)
                heapq.heappush(self.heap, [a_at, a_tie, self.seq(), "fetch", (n, end)])
            if committed and loop.beat_to_leader is not None:
                self._beat_if_due(loop, at)
        else:  # a heartbeat's answer: the next one is due an interval later
            if loop.logic is not None:
                loop.logic.append((ANSWER, at, 0))  # no event: held (compact)
                self.omitted += 1
            else:
                event = Computed(at, tie, n, kind, self.leader)
                self.pred.events.append(event)
                if held is not None:
                    event.held = len(held)
            loop.next_beat = at + loop.beat_interval
            loop.beat_deadline = NEVER
            self._replica_tick(loop, at, loop.logic if loop.replicating else None)
            self._logic_wake(loop)
        logic_wake = loop.logic_wake
        if loop.fast is not None:
            self._fast_rearm(loop)
        else:
            self._rearm(loop, raft_wake if raft_wake < logic_wake else logic_wake)
        return True
