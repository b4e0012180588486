"""What materializing a computed stretch does to the simulator, shared by both paths.

Both the compact path (``compact.py``) and the replay path (``warp.py``) take the messages the
model has in flight out of the heap, apply node effects as the process would, put each node's
one timer back where stepping would hold it, move the links' draw counters and hand the
messages still in flight at the horizon back to the heap. These primitives live apart from
the warp so that the paths and the held events depend on them, not on each other.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kraft_testkit.broker.channel import CONTROLLER_CHANNEL
from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.fastforward.prediction import QuorumPrediction
from kraft_testkit.sim.disk import write_all
from kraft_testkit.sim.network import Packet
from kraft_testkit.sim.node import NEVER, Effects
from kraft_testkit.sim.scheduler import Scheduler
from kraft_testkit.sim.streams import tie_at


class InexactWarp(InexactFastForward):
    """The materialization disagreed with the model (a bug: the run cannot go on exactly)."""


def take_flights(pred: QuorumPrediction, keep: Any = None) -> dict[tuple, deque]:
    """The messages in flight when the stretch began, out of the heap (the model has them
    arrive), as queues per (src, dst, channel) in FIFO order; with ``keep``, only the links
    it accepts are queued (the others' messages the caller rebuilds)."""
    queues: dict[tuple, deque] = {}
    for key, (msg, entry) in pred.flights.items():
        Scheduler.cancel(entry)
        if keep is None or keep(key):
            queues[key] = deque([msg])
    for key, msg, entry in pred.more_flights:  # replica messages behind the first, in order
        Scheduler.cancel(entry)
        queues[key].append(msg)
    return queues


def armed_timers(procs: dict) -> dict[int, tuple[int, int] | None]:
    """Each node's timer as its process holds it: (instant, node ms), or None."""
    return {n: (p._timer[0], p._timer_node_ms) if p._timer is not None and  # noqa: SLF001
            p._timer[3] is not None else None for n, p in procs.items()}  # noqa: SLF001


def rearm_after_run(machine: Any, node: int, last: int, armed: dict, changed: set) -> None:
    """A node's timer after a run of answers applied up to ``last``: its wake-up is the
    earlier of Raft's and its logic's (the process keeps an entry already at that instant)."""
    wake = min(machine._raft_wake, machine._logic_wake)  # noqa: SLF001
    if wake != machine._wake:  # noqa: SLF001
        machine._wake = wake  # noqa: SLF001
        now_armed = armed[node]
        if now_armed is None or now_armed[0] != max(last, wake):
            armed[node] = (max(last, wake), wake)
            changed.add(node)
        else:
            armed[node] = (now_armed[0], wake)


def apply_effects(proc: Any, effects: Effects, at: int, armed: dict, changed: set) -> None:
    """A node event's writes (in order, then the sync) and its timer, as the process would
    apply them (its sends are the caller's)."""
    if effects.writes or effects.sync:
        write_all(proc.disk, effects.writes, effects.sync)
    if effects.timer_ms is not None:
        node, node_ms = proc.node_id, effects.timer_ms
        now_armed = armed[node]
        if node_ms >= NEVER:
            if now_armed is not None:
                armed[node] = None
                changed.add(node)
        elif now_armed is not None and now_armed[0] == max(at, node_ms):
            armed[node] = (now_armed[0], node_ms)  # the process keeps its entry
        else:
            armed[node] = (max(at, node_ms), node_ms)
            changed.add(node)


def hand_back(sim: Any, procs: dict, src: int, dst: int, channel: str | None, msg: Any,
              at: int, tie: int) -> None:
    """A message the model has still in flight at the horizon, back in the heap at its
    ``(at, tie)`` (encoded, in wire mode)."""
    net = sim.network
    link = net._link(src, dst, channel)  # noqa: SLF001
    data = None if net.codec is None else net.codec.encode(msg)
    packet = Packet(src, dst, msg, data, procs[dst].incarnation, link)
    sim.scheduler.call_at(at, net._arrive_cb, packet, tie)  # noqa: SLF001


def set_links(net: Any, pred: QuorumPrediction) -> None:
    """Every follower's links with the leader, and the brokers' replica-fetch links, where
    the model's draws left them."""
    leader = pred.leader
    for n, loop in pred.loops.items():
        for src, dst, channel, clock in (
                (n, leader, None, loop.to_leader), (leader, n, None, loop.to_node),
                (n, leader, CONTROLLER_CHANNEL, loop.beat_to_leader),
                (leader, n, CONTROLLER_CHANNEL, loop.beat_to_node)):
            if clock is None:
                continue
            link = net._link(src, dst, channel)  # noqa: SLF001
            link.sent, link.last_at, link.last_tie = clock.sent, clock._last_at, \
                clock._last_tie  # noqa: SLF001
    for (src, dst, channel), clock in pred.links.items():  # the brokers' replica fetches
        if not clock.sent:
            continue  # never used: the network makes a link at its first message
        link = net._link(src, dst, channel)  # noqa: SLF001
        link.sent, link.last_at, link.last_tie = clock.sent, clock._last_at, \
            clock._last_tie  # noqa: SLF001


def set_timers(sim: Any, procs: dict, armed: dict, changed: set, horizon_ms: int) -> None:
    """Each node's one timer where the process would hold it (``armed``: node -> (instant,
    node ms) or None; ``changed``: the nodes whose entry moved), then the invariants over
    every node."""
    sched = sim.scheduler
    for n in sorted(changed | {n for n, a in armed.items() if a is not None and
                               (procs[n]._timer is None or procs[n]._timer[3] is None)}):
        proc = procs[n]
        if proc._timer is not None:
            Scheduler.cancel(proc._timer)
        if armed[n] is None:
            proc._timer = proc._timer_node_ms = None
            continue
        at, node_ms = armed[n]
        if at < horizon_ms:
            raise InexactWarp(f"node {n}'s timer at {at} ms falls inside the stretch, "
                              "where the model has no event for it")
        proc._timer = sched.call_at(at, proc._timer_cb, None, tie_at(proc._timer_ties, at))
        proc._timer_node_ms = node_ms
    sim._touched.update(procs)  # noqa: SLF001
    if sim.check_invariants and sim._invariants:  # noqa: SLF001
        sim.check_now()
