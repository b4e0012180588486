"""A compact stretch materialized: set from the model, the brokers' logic alone replayed.

``QuorumWarp`` (bulk mode, no delivery hooks) asks the model for a *compact* prediction
(``predict_quorum(compact=True)``) and hands it here. No leader code runs for it and no
follower's fetch loop is replayed message by message:

- the leader (``leader_bulk.py``): its NoOps appended and its high watermark's moves
  committed with the bulk primitives, its heartbeat sessions, commit latencies and waiting
  answers set from the model; its record of every follower, its parked fetches and its
  wake-ups likewise (``follower_fetches.py``);
- every follower's answers are held in order (``Loop.held``) and applied as one run
  (``broker_runs.py``) when the follower's next event needs its Raft state, or at the end;
- a steady broker's logic events (its heartbeats; where it hosts partitions its timer, the
  replica fetches it serves and the answers it gets, and what its logic did there) are held
  by the model too and applied through the broker's steady transitions (``held_events.py``);
  what still runs node code is an answer a broker's logic acts on (the run applied with the
  logic's reaction, ``apply_commit_run(acts=True)``) and any other follower event the model
  lists (its held answers applied first, then the node's own code);
- the messages still in flight at the horizon are rebuilt (a fetch answer from the leader's
  log as it was, a heartbeat's answer from the broker's request) or taken from the links.

tests/cluster/test_fastforward_warp.py, test_fastforward_differential.py,
test_fastforward_voter_alone.py and test_fastforward_broker_fetches.py compare the result
with stepping, byte for byte and field by field.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kraft_testkit.broker.channel import CONTROLLER_CHANNEL, channel_of
from kraft_testkit.fastforward import dead_nodes
from kraft_testkit.fastforward.broker_runs import AnswerRun, SharedRun
from kraft_testkit.fastforward.follower_fetches import FollowerFetches
from kraft_testkit.fastforward.held_events import HeldEvents
from kraft_testkit.fastforward.leader_bulk import LeaderBulk, answer
from kraft_testkit.fastforward.prediction import QuorumPrediction
from kraft_testkit.fastforward.replica_loops import route
from kraft_testkit.fastforward.materialize import (
    InexactWarp,
    apply_effects,
    armed_timers,
    hand_back,
    rearm_after_run,
    set_links,
    set_timers,
    take_flights,
)
from kraft_testkit.sim.node import NEVER, Effects


def materialize_compact(warp: Any, pred: QuorumPrediction) -> None:
    """Leave every node, link and timer as stepping the stretch would have (see the module)."""
    c, sim = warp.c, warp.sim
    sched, net = sim.scheduler, sim.network
    warp._started = sched.now_ms  # noqa: SLF001
    leader = pred.leader
    sim.trace.record(sched.now_ms, "warp", leader, None,
                     f"{len(pred.events) + pred.omitted} events to {pred.horizon_ms - 1} ms "
                     f"({pred.why_stopped})")
    procs = {n: sim.process(n) for n in c.roles}
    lproc = procs[leader]
    leader_raft = lproc.machine.raft
    qc = lproc.machine.controller
    followers = set(pred.loops)
    fetches = FollowerFetches(leader_raft, followers, pred.flights)
    shared = SharedRun(leader_raft.log)
    bulk = LeaderBulk(lproc, pred, shared)
    # the other messages, FIFO per link (the fetch loops' are rebuilt: follower_fetches.py)
    queues = take_flights(pred, keep=lambda key: not fetches.owns(key))
    armed = armed_timers(procs)  # each node's timer: (instant, node ms)
    changed: set[int] = set()
    sent = delivered = 0
    runs: dict[int, AnswerRun] = {}
    taken: dict[int, int] = {}
    epoch = leader_raft.epoch
    logic_held = HeldEvents(procs, queues, leader, pred.loops)
    holding = {n for n, lp in pred.loops.items() if lp.logic is not None}

    def catch_up(node: int, upto: int) -> None:
        """The follower's held answers before its event at index ``upto`` join its run."""
        start = taken.get(node, 0)
        if upto > start:
            taken[node] = upto
            run = runs.get(node)
            if run is None:
                run = runs[node] = AnswerRun(procs[node], leader, node in holding)
            run.extend(pred.loops[node].held[start:upto], epoch)

    def flush(node: int, at: int, acts: bool = False) -> tuple:
        """Apply the follower's run (the leader's log first brought to ``at``)."""
        bulk.sync(at)
        run = runs.pop(node)
        last, sends = run.apply(shared, acts)
        fetches.last[node] = run.request()
        rearm_after_run(procs[node].machine, node, last, armed, changed)
        return sends

    def take(src: int, dst: int, channel: str | None, what: str) -> Any:
        """The next message on a link the stretch handed over (one the peer's code sent)."""
        queue = queues.get((src, dst, channel))
        if not queue:
            raise InexactWarp(f"the model has a {what} from {src} to {dst} that was not sent")
        return queue.popleft()

    def heartbeat_answer(node: int) -> Any:
        """The leader's answer to the heartbeat the broker has out: one sent before the
        stretch from its link, else the controller's answer to it."""
        queue = queues.get((leader, node, CONTROLLER_CHANNEL))
        if queue:
            return queue.popleft(), 0
        f = procs[node].machine.logic.lifecycle._inflight  # noqa: SLF001
        if f is None or f.cid is None:
            raise InexactWarp(f"broker {node} gets a heartbeat answer with none in flight")
        return answer(qc, node, f.cid, f.body), 1

    for ev in pred.events:
        node, at, kind = ev.node, ev.at_ms, ev.kind
        if node == leader:
            if kind == "beat":  # the leader records the request (leader_bulk.py)
                msg = take(ev.peer, leader, CONTROLLER_CHANNEL, "heartbeat")
                bulk.offsets[ev.peer] = msg.body.current_metadata_offset
                delivered += 1
            continue
        proc = procs[node]
        machine = proc.machine
        sched.now_ms = at
        catch_up(node, ev.held)
        if ev.logic:
            logic_held.catch_up(node, ev.logic)
        if kind == "answer":  # a broker's answer its logic acts on: the run, with the logic
            run = runs.get(node)
            if run is None:
                run = runs[node] = AnswerRun(proc, leader, node in holding)
            run.add(at, ev.carried[0], ev.carried[1], epoch, build=False)
            sends = flush(node, at, acts=True)
            effects = Effects([], False, list(sends), None) if sends else None
        else:
            msg, src = None, leader
            if kind == "beat_answer":
                msg, built = heartbeat_answer(node)
                sent += built
                delivered += 1
            elif kind == "timer":
                armed[node] = None
                changed.add(node)
            elif kind in ("rfetch", "ranswer"):  # a replica fetch or its answer (broker to broker)
                src = ev.peer
                msg = take(src, node, None, kind)
                logic_held.taken_by_node(kind, src, node, msg)
                delivered += 1
            else:
                raise InexactWarp(f"at {at} ms: a {kind} at {node} in a compact stretch")
            if node in runs:  # the held answers before it first
                flush(node, at)
            effects = machine.on_timer(at) if msg is None else machine.on_message(src, msg, at)
        if effects is None:
            continue
        apply_effects(proc, effects, at, armed, changed)
        for dst, msg in effects.sends:
            key = (node, dst, channel_of(msg))
            if fetches.owns(key):  # the fetch loops' messages are the runs' (flush)
                raise InexactWarp(f"at {at} ms node {node} sent a {type(msg).__name__} to "
                                  f"{dst} the model does not")
            if dst not in procs:
                raise InexactWarp(f"at {at} ms node {node} sent {type(msg).__name__} to "
                                  f"{dst}, outside the cluster")
            sent += 1
            queues.setdefault(key, deque()).append(msg)
            logic_held.sent_by_node(node, dst, msg)
    end = pred.horizon_ms - 1
    # the model may stop at an event of the horizon's instant after leader events of that
    # instant it computed (a NoOp, a drain): those are the stretch's too
    bulk.sync(max([end, *pred.noops[-1:], *pred.drains[-1:]]))
    for node in followers:
        catch_up(node, len(pred.loops[node].held))
        if pred.loops[node].logic:
            logic_held.catch_up(node, len(pred.loops[node].logic))
    for node in sorted(runs):
        flush(node, end)
    for node in sorted(holding):
        logic_held.settle(node, armed, changed)
    bulk.offsets.update(logic_held.offsets)
    warp._count("answers applied in runs", sum(len(lp.held) for lp in pred.loops.values()))  # noqa: SLF001
    for at, tie, _, kind, arg in pred.in_flight:  # the messages still in flight
        n = arg[0]
        if kind in ("fetch", "answer"):
            src, dst, msg = fetches.in_flight(kind, arg, at, tie)
            channel = None
        elif kind in ("rfetch", "ranswer"):
            src, dst, channel = route(kind, arg, leader)
            follower, lead = (src, dst) if kind == "rfetch" else (dst, src)
            msg = logic_held.replica_message(kind, follower, lead)
        elif kind == "beat":
            src, dst, channel = n, leader, CONTROLLER_CHANNEL
            queue = queues.get((src, dst, channel))
            msg = queue.popleft() if queue else logic_held.request(n)
        else:
            src, dst, channel = leader, n, CONTROLLER_CHANNEL
            msg, built = heartbeat_answer(n)
            sent += built
        hand_back(sim, procs, src, dst, channel, msg, at, tie)
    begins_sent, vanished = dead_nodes.finish(sim, procs, pred, hand_back)
    sent += begins_sent
    net.stats["vanished"] += vanished
    left = {k: len(q) for k, q in queues.items() if q}
    if left:
        raise InexactWarp(f"sent in the stretch but not in the model: {left}")
    set_links(net, pred)
    net.stats["sent"] += sent + logic_held.sent + pred.follower_answers + \
        fetches.answers_sent(pred)
    net.stats["delivered"] += delivered + logic_held.delivered + pred.follower_fetches + \
        pred.follower_answers
    bulk.finish(pred, {b: procs[b].machine.logic.lifecycle._inflight  # noqa: SLF001
                       for b in pred.beats})
    fetches.finish(pred)
    lead = leader_raft._lead  # noqa: SLF001
    lead.fetched.clear()
    lead.check_deadline = pred.check_deadline
    lead.wake_parked = False
    if pred.leader_wakes is not None:  # the leader's wake-ups after its last event
        last_at, raft_wake, node_wake = pred.leader_wakes
        machine = lproc.machine
        machine._clock(last_at)  # noqa: SLF001
        machine.raft.timer_at = machine._raft_wake = raft_wake  # noqa: SLF001
        machine._wake = node_wake  # noqa: SLF001
        armed[leader] = None if node_wake >= NEVER else (node_wake, node_wake)
        changed.add(leader)
    set_timers(sim, procs, armed, changed, pred.horizon_ms)
