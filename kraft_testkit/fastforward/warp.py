"""The idle warp: whole idle stretches of the controllers' quorum computed, then materialized.

``Cluster(fast_forward=True).run_for`` calls :class:`QuorumWarp`. At an
instant where the quorum is idle, :func:`~kraft_testkit.fastforward.quorum_model.
predict_quorum` computes the stretch up to a horizon (the run's end, or the first thing it
does not model: the log cleaner, a snapshot by interval or bytes, the controller's other
periodic tasks, a voter's own timer, any other event in the heap). No scheduler event runs
for it. Then every node is *materialized* as stepping would have left it, by one of two
paths. The default is the compact path (``compact.py``): the model's compact prediction,
the leader and the followers' fetch loops set from it, the brokers' logic alone replayed.
With ``network.on_deliver`` hooks (they must see every message) or ``bulk=False`` it is the
replay path here (:meth:`QuorumWarp.materialize`):

- each computed event is handed to the node's state machine at its instant, in the model's
  order (``on_timer`` for the leader's timers, ``on_message`` with the fetch or answer the
  peer produced): the Raft appends, the listeners' commits, the controller's NoOps and every
  cache run the real per-event code, exact by construction. What is skipped is everything
  around the node code: the scheduler, the network's draws and queues, the wire codec, the
  trace and the per-event invariants (checked once over every node after the stretch);
- the node's effects are applied as the process would (disk writes and syncs in order; the
  messages it sends are matched one for one with the model's, and an unmatched or surplus
  send is a bug: :class:`InexactWarp`); its one timer ends where the process would have
  armed it (an entry at an unchanged instant keeps its tie);
- the links' counters, FIFO instants and ties end where the model's draws left them, the
  network's sent/delivered counts move by what was computed, and the messages still in
  flight at the horizon go back in the heap at their ``(at, tie)``.

Then the events at the horizon are stepped, and the warp tries again. Trace digests differ
from stepping by design (a computed event records nothing; each stretch records one ``warp``
line); within the mode, same seed, same digest. What the model does not cover is stepped
(``cluster.fast_forward_stats['fallback: ...']`` counts why).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kraft_testkit.broker.channel import channel_of
from kraft_testkit.fastforward.broker_runs import AnswerRun, SharedRun
from kraft_testkit.fastforward.bulk import InexactFastForward  # noqa: F401 - public here
from kraft_testkit.fastforward.materialize import (  # noqa: F401 - InexactWarp: public here
    InexactWarp,
    apply_effects,
    armed_timers,
    hand_back,
    rearm_after_run,
    set_links,
    set_timers,
    take_flights,
)
from kraft_testkit.fastforward.follower_model import _channel
from kraft_testkit.fastforward.observer_loop import NotModelled
from kraft_testkit.fastforward.prediction import CLEANER
from kraft_testkit.fastforward.quorum_model import QuorumPrediction, predict_quorum
from kraft_testkit.fastforward.replica_loops import route
from kraft_testkit.sim.node import Effects


class QuorumWarp:
    """Runs a cluster, computing the quorum's idle stretches (see the module docstring)."""

    MIN_STRETCH_MS = 50  # a shorter stretch is stepped: materializing costs a little too
    RETRY_EVENTS = 64  # events stepped after a fallback before the next look

    def __init__(self, cluster: Any, bulk: bool = True) -> None:
        self.c = cluster
        self.bulk = bulk  # apply a broker's plain answers as runs (fastforward/broker_runs.py)
        self.sim = cluster.sim
        self.sched = cluster.sim.scheduler
        self.stats: dict[str, int] = {}
        self._retry_at: int | None = None

    def _count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n

    # ------------------------------------------------------------------ running

    def run_for(self, ms: int) -> None:
        """``cluster.run_for(ms)`` with idle stretches warped."""
        sched = self.sched
        end = sched.now_ms + ms
        while (at := sched.next_at()) is not None and at <= end:
            stepped_to = self.warp_once(end)
            if stepped_to is not None:
                self._step_some(min(end, stepped_to), events=1 << 30)
            elif self._retry_at is not None:
                self._step_some(end)
        sched.advance_to(end)

    def warp_once(self, until_ms: int) -> int | None:
        """Warp one stretch up to ``until_ms`` if the cluster is idle. Returns the instant to
        step through before the next look (the horizon, when only something periodic stopped
        the model: the log cleaners, after a stretch too), else None: it warped, or
        ``_retry_at`` is set (not idle)."""
        self._retry_at = None
        try:
            compact = self.bulk and not self.sim.network._hooks  # noqa: SLF001
            pred = predict_quorum(self.c, until_ms, steps=False, compact=compact)
        except NotModelled as e:
            self._count(f"fallback: {_reason(e)}")
            self._retry_at = self.sched.now_ms
            return None
        if not (pred.events or pred.omitted) or \
                pred.horizon_ms - self.sched.now_ms < self.MIN_STRETCH_MS:
            self._count(f"fallback: horizon ({_reason(pred.why_stopped)})")
            if pred.horizon_ms <= self.sched.now_ms:  # overdue: a snapshot by interval waits
                self._retry_at = self.sched.now_ms  # for the node's next commit; step a while
                return None
            # step through what is due at the horizon (the cleaner, a snapshot, a task)
            return max(pred.horizon_ms, self.sched.next_at() or 0)
        if compact:
            from kraft_testkit.fastforward.compact import materialize_compact
            materialize_compact(self, pred)
        else:
            self.materialize(pred)
        self._count("stretches")
        self._count("events computed", len(pred.events) + pred.omitted)
        self._count("virtual ms warped", pred.horizon_ms - 1 - self._started)
        if pred.why_stopped.startswith(CLEANER) and pred.horizon_ms <= until_ms:
            # the cleaners run at the horizon (once a minute): step through them at once, as
            # the next look would have after a model run that stops there again
            return pred.horizon_ms
        return None

    def _step_some(self, end: int, events: int = RETRY_EVENTS) -> None:
        """Step up to ``events`` events due by ``end``."""
        sim, sched = self.sim, self.sched
        for _ in range(events):
            at = sched.next_at()
            if at is None or at > end:
                return
            sim.step()
            self._count("events stepped")

    # ------------------------------------------------------------------ materializing

    def materialize(self, pred: QuorumPrediction) -> None:
        """Leave every controller, link and timer as stepping the stretch would have."""
        c, sim, sched = self.c, self.sim, self.sched
        net = sim.network
        self._started = sched.now_ms
        leader = pred.leader
        sim.trace.record(sched.now_ms, "warp", leader, None,
                         f"{len(pred.events)} events to {pred.horizon_ms - 1} ms "
                         f"({pred.why_stopped})")
        procs = {n: sim.process(n) for n in c.roles}
        # what each node will be handed, in order: messages the peer sent, FIFO per link
        queues = take_flights(pred)
        armed = armed_timers(procs)
        changed = set()
        sent = delivered = voters_alone = 0
        voter_ids = set(procs[leader].machine.raft.voters)
        runs: dict[int, AnswerRun] = {}  # brokers' answers held back, applied as runs
        leader_raft = procs[leader].machine.raft
        shared = SharedRun(leader_raft.log)

        def flush(node: int) -> None:
            last, _ = runs.pop(node).apply(shared)
            rearm_after_run(procs[node].machine, node, last, armed, changed)

        hooks = net._hooks  # noqa: SLF001 - on_deliver hooks see every computed delivery too
        for ev in pred.events:
            node = ev.node
            proc = procs[node]
            machine = proc.machine
            at = ev.at_ms
            if ev.defer is not None and self.bulk:
                queue = queues.get((leader, node, None))
                if not queue:
                    raise InexactWarp(f"at {at} ms: the model delivers an answer to {node}, "
                                      "but nothing was sent")
                answer = queue.popleft()
                delivered += 1
                if hooks:
                    sched.now_ms = ev.at_ms
                    for hook in hooks:
                        hook(leader, node, answer)
                run = runs.get(node)
                if run is None:
                    run = runs[node] = AnswerRun(proc, leader)
                request = run.add(at, ev.defer[0], ev.defer[1], leader_raft.epoch)
                queues.setdefault((node, leader, None), deque()).append(request)
                sent += 1
                continue
            if node in runs:
                flush(node)
            sched.now_ms = at
            if ev.kind == "timer":
                armed[node] = None
                changed.add(node)
                effects = machine.on_timer(at)
            else:
                src = ev.peer
                queue = queues.get((src, node, _channel(ev.kind)))
                if not queue:
                    raise InexactWarp(f"at {at} ms: the model delivers a {ev.kind} to {node} "
                                      f"from {src}, but nothing was sent")
                delivered += 1
                msg = queue.popleft()
                for hook in hooks:
                    hook(src, node, msg)
                if ev.narrow is not None:  # a fetch or heartbeat at the leader, alone
                    effects = self._leader_alone(machine, ev, msg)
                    voters_alone += src in voter_ids
                else:
                    effects = machine.on_message(src, msg, at)
            if effects is None:
                continue
            if type(effects) is not Effects:
                raise InexactWarp(f"node {node} returned {type(effects).__name__}")
            apply_effects(proc, effects, at, armed, changed)
            for dst, msg in effects.sends:
                if dst not in procs:
                    raise InexactWarp(f"at {at} ms node {node} sent {type(msg).__name__} to "
                                      f"{dst}, outside the cluster")
                queues.setdefault((node, dst, channel_of(msg)), deque()).append(msg)
                sent += 1
        for node in sorted(runs):
            flush(node)
        self._count("voter fetches at the leader alone", voters_alone)
        self._count("answers applied in runs", sum(ev.defer is not None for ev in pred.events)
                    if self.bulk else 0)
        # the messages still in flight: the model knows when they arrive
        for at, tie, _, kind, arg in pred.in_flight:
            src, dst, channel = route(kind, arg, leader)
            queue = queues.get((src, dst, channel))
            if not queue:
                raise InexactWarp(f"the model has a {kind} in flight {src} -> {dst} that was "
                                  "not sent")
            hand_back(sim, procs, src, dst, channel, queue.popleft(), at, tie)
        left = {k: len(q) for k, q in queues.items() if q}
        if left:
            raise InexactWarp(f"sent in the stretch but not in the model: {left}")
        set_links(net, pred)
        net.stats["sent"] += sent
        net.stats["delivered"] += delivered
        set_timers(sim, procs, armed, changed, pred.horizon_ms)


    @staticmethod
    def _leader_alone(machine: Any, ev: Any, msg: Any) -> Effects | None:
        """A fetch or heartbeat at the leader when the model says nothing else is due in that
        event: the replica's fetch handler (the leader's record of the broker or voter -- a
        voter's end offset, fetch and caught-up times and the check-quorum deadline --, the
        answer or the parked fetch) or the controller's heartbeat handler (the lease, the
        answer now or once what was written before it commits), without the polls and the
        controller's periodic tasks that would find nothing to do; the wake-ups they would
        compute (``ev.narrow``: Raft's, the node's) come from the model."""
        machine._clock(ev.at_ms)  # noqa: SLF001 - as every event of the node starts
        raft = machine.raft
        if ev.kind == "fetch":
            raft.fetch_handler(ev.peer, msg, ev.at_ms)
            sends = raft.take_sends()
        else:
            machine.controller.handle_request(ev.peer, msg, ev.at_ms)
            sends = machine.controller.take_sends()
        raft_wake, node_wake = ev.narrow
        timer = None
        if raft_wake != raft.timer_at:
            raft.timer_at = machine._raft_wake = raft_wake  # noqa: SLF001
        if node_wake != machine._wake:  # noqa: SLF001
            timer = machine._wake = node_wake  # noqa: SLF001
        if not sends and timer is None:
            return None
        return Effects([], False, sends, timer)


def _reason(e: Exception | str) -> str:
    """A short, stable key for the stats: the reason without node ids and instants."""
    words = [w for w in str(e).split() if not any(ch.isdigit() for ch in w)]
    return " ".join(words)[:60]
