"""The brokers' replica-fetch loops in the idle model (``quorum_model``), as a mixin of it
beside ``follower_model``.

A broker that follows partitions sends one FetchRequest per leader broker every
``replica.fetch.backoff.ms`` from its logic's tick (``broker/replicas.py``
``ReplicaManager.tick``, ``_send_fetches``: the leaders in id order); the leader broker
answers it in the same event (``handle_fetch``: it records the follower's last fetch, its
caught-up time and broker epoch; it would propose an ISR expand for a follower outside the
ISR, which the steady state excludes) and the follower's ``on_fetch_response`` records when
it last fetched. Every ``replica.lag.time.max.ms / 2`` a broker's logic runs the ISR check;
in the steady state it finds every follower caught up. Both messages are events where the
broker's logic runs (``BrokerLogic.on_request`` / ``on_response`` end in ``_done``): a due
heartbeat leaves there, and so does a due replica fetch and a due ISR check, as in every other
event where the logic runs (the broker's timer, a heartbeat's answer, a metadata answer that
commits something).

The steady state, checked at the start of a stretch: every broker's replicas are active and
its leaders serving, every partition has a leader, an ISR short of dead brokers alone (a dead
replica neither fetches nor is checked: the ISR check looks at ISR members) and nothing
pending; every
follower's view of a partition (leader, leader epoch) is its leader's, so every answer is
error free. During the stretch only NoOps commit, so no partition changes. An ISR check that
would shrink an ISR (a follower that did not fetch for ``replica.lag.time.max.ms``) ends the
stretch before the event that would run it. The replica messages in flight at the start are
taken over from the heap, several on one link too (a broker's fetch and its answer to the
peer's fetch share the link), in their order.

The fetch instant is tracked for every running broker, even one that follows nothing: its
logic moves ``_next_fetch_ms`` whenever it runs at or after it, at a commit too; where the
broker fetches from nobody, a metadata answer that commits then can still be held back in a
run, whose commits move the instant as each would (``noop_run.tick_commits``); where it
fetches, the instant is a wake-up of its logic and such an answer is not held back.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.fastforward.follower_model import (
    FETCHES,
    ISR,
    RANSWER,
    RFETCH,
    Computed,
    _channel,
)
from kraft_testkit.broker.replicas import caught_up_min
from kraft_testkit.fastforward.observer_loop import LinkClock, NotModelled
from kraft_testkit.sim.node import NEVER

#: the replica loops' message kinds in the model's heap: arg = (receiver, sender)
REPLICA_KINDS = {"FetchRequest": "rfetch", "FetchResponse": "ranswer"}


@dataclass(slots=True)
class ReplicaLoop:
    """One running broker's replica fetching and ISR check, as the model carries them."""

    node: int
    next_fetch: int | None  # ``ReplicaManager._next_fetch_ms``
    fetch_interval: int
    leaders: tuple[int, ...]  # the leader brokers it fetches from, in sending order
    lag_ms: int  # replica.lag.time.max.ms
    #: follower broker -> the earliest last-caught-up time over the partitions it follows here
    caught_up: dict[int, int] = field(default_factory=dict)


def _steady_replicas(n: int, replicas: Any, procs: Any) -> tuple:
    """(why not steady or None, whether it leads anything, the leader brokers it follows) of
    one broker's replicas: every partition with a leader, an ISR within its replicas and
    short of dead brokers alone, nothing pending."""
    leaders = set()
    leads = False
    for r in replicas.replicas.values():
        if r.pending is not None or r.leader == -1 or r.applied is None or \
                not set(r.isr) <= set(r.replicas) or \
                any(procs(b).up for b in set(r.replicas) - set(r.isr)):
            return (f"broker {n} hosts a partition without a leader, with a short ISR or a "
                    "pending ISR change"), False, ()
        if r.leader == n:
            leads = True
        else:
            leaders.add(r.leader)
    return None, leads, tuple(sorted(leaders))


def _views_agree(n: int, mine: Any, c: Any, loops: dict) -> str | None:
    """Why not every follower's view of a partition (leader, leader epoch) is its leader's, or
    a leader does not know every follower; None when they agree (every answer error free)."""
    for r in mine.replicas.values():
        if r.leader == n:
            if set(r.followers) != set(r.replicas) - {n}:
                return f"broker {n} does not know every follower of {r.name}"
            continue
        lloop = loops.get(r.leader)
        if lloop is None or lloop.rep is None:
            return f"broker {n} follows {r.name} on {r.leader}, which is not a running broker"
        theirs = c.broker(r.leader).logic.replicas.replicas.get(r.key)
        if theirs is None or theirs.leader != r.leader or \
                theirs.leader_epoch != r.leader_epoch or n not in theirs.followers:
            return f"broker {n}'s view of {r.name} is not its leader's"
    return None


def in_order(replica: dict[tuple, list], found: dict[tuple, tuple]) -> list[tuple]:
    """The replica messages in flight, by link: the first of each into ``found`` (as the
    other loops' messages), the ones behind it returned as (key, message, entry) in order."""
    more = []
    for key, flights in replica.items():
        flights.sort(key=lambda f: f[1][:3])  # a FIFO link: arrival order is send order
        found[key] = flights[0]
        more += [(key, msg, entry) for msg, entry in flights[1:]]
    more.sort(key=lambda f: f[2][:3])
    return more


def route(kind: str, arg: tuple, leader: int) -> tuple[int, int, str | None]:
    """(src, dst, channel) of a message in the model's heap (``leader``: the active
    controller)."""
    if kind in REPLICA_KINDS.values():
        return arg[1], arg[0], None
    if kind in ("fetch", "beat"):
        return arg[0], leader, _channel(kind)
    return leader, arg[0], _channel(kind)


class ReplicaLoops:
    """Methods of the model (``quorum_model._Model``) for the brokers' replica loops."""

    def _replica_loop(self, loop: Any, logic: Any) -> None:
        """A running broker's replica state (called from ``_beats``): the fetch instant, the
        ISR check, what it follows and leads; what needs the other brokers is checked in
        :meth:`_replicas_start` once every loop exists."""
        n, replicas = loop.node, logic.replicas
        if not replicas.active:
            return
        if not replicas.leader_serving:
            raise NotModelled(f"broker {n}'s leaders are not serving")
        procs = self.c.sim.process
        key = (replicas.version, self._up_brokers())
        cached = replicas.model_cache.get("loop")
        if cached is None or cached[0] != key:  # a walk only when a replica changed
            cached = replicas.model_cache["loop"] = (key, *_steady_replicas(n, replicas, procs))
        _, why, leads, leaders = cached
        if why is not None:
            raise NotModelled(why)
        if leads:
            loop.isr_wakes = True  # it leads something: the ISR check is a wake-up
        loop.rep = ReplicaLoop(n, replicas._next_fetch_ms,  # noqa: SLF001
                               max(1, replicas.config.replica_fetch_backoff_ms),
                               leaders, replicas.config.replica_lag_time_max_ms)

    def _up_brokers(self) -> tuple[int, ...]:
        procs = self.c.sim.process
        return tuple(b for b in self.c.broker_ids if procs(b).up)

    def _replicas_start(self) -> None:
        """After every loop exists: each follower's view of its partitions is its leader's
        (so every answer is error free), the caught-up times, the link clocks and the replica
        messages in flight."""
        loops, c, net = self.pred.loops, self.c, self.c.sim.network
        self.rlinks: dict[tuple, LinkClock] = {}
        running = tuple((n, c.broker(n).logic.replicas.version) for n, lp in loops.items()
                        if lp.rep is not None)
        for n, loop in loops.items():
            rep = loop.rep
            if rep is None:
                continue
            mine = c.broker(n).logic.replicas
            cached = mine.model_cache.get("start")
            if cached is None or cached[0] != running:  # a walk only when a replica changed
                cached = mine.model_cache["start"] = (running, _views_agree(n, mine, c, loops))
            if cached[1] is not None:
                raise NotModelled(cached[1])
            summary = mine.isr_summary()
            if summary is None:
                raise NotModelled(f"broker {n} has no record of an ISR member")
            for f, entry in summary.items():  # the ISR check looks at ISR members alone
                rep.caught_up[f] = caught_up_min(entry)
            for lead in rep.leaders:
                self.rlinks[(n, lead, None)] = LinkClock.of(net, n, lead)
                self.rlinks[(lead, n, None)] = LinkClock.of(net, lead, n)
        flights = [(key, msg, entry) for key, (msg, entry) in self.flights.items()]
        for (src, dst, channel), msg, entry in flights + self.more_flights:
            kind = REPLICA_KINDS.get(type(msg.body).__name__)
            if src == self.leader or dst == self.leader or kind is None:
                continue
            lp = loops.get(src if kind == "rfetch" else dst)
            if lp is None or lp.rep is None or (dst if kind == "rfetch" else src) \
                    not in lp.rep.leaders:
                raise NotModelled(f"a replica {kind} from {src} to {dst} is in flight")
            self.heap.append([entry[0], entry[1], self.seq(), kind, (dst, src)])
        self.pred.links = self.rlinks

    # ------------------------------------------------------------------ events

    def _isr_blocked(self, loop: Any, at: int, fetched: int | None = None) -> str | None:
        """Why the broker's logic must not run at ``at`` in the model: an ISR check due that
        would find a follower out of sync (``fetched``: a follower whose fetch this event
        records first)."""
        rep = loop.rep
        if rep is None or not rep.caught_up or loop.isr_check is None or at < loop.isr_check:
            return None
        oldest = at - rep.lag_ms
        for f, t in rep.caught_up.items():
            if f != fetched and t < oldest:
                return f"an ISR shrink falls due on broker {loop.node}"
        return None

    def _replica_tick(self, loop: Any, at: int, run: list | None = None) -> None:
        """The broker's logic ran at ``at`` (after its heartbeat's turn): a due replica fetch
        leaves (one per leader), a due ISR check runs (it finds nothing to shrink: the event's
        handler stopped the model before otherwise); ``run``: a held logic run's list."""
        rep = loop.rep
        if rep is not None and rep.next_fetch is not None and at >= rep.next_fetch:
            if run is not None and rep.leaders:
                run.append((FETCHES, at, 0))
            rep.next_fetch = at + rep.fetch_interval
            n, heap, seq, links = loop.node, self.heap, self.seq, self.rlinks
            for lead in rep.leaders:
                a_at, a_tie = links[(n, lead, None)].arrival(at)
                heapq.heappush(heap, [a_at, a_tie, seq(), "rfetch", (lead, n)])
        if loop.isr_check is not None and at >= loop.isr_check:
            if run is not None:
                run.append((ISR, at, 0))
            loop.isr_check = at + loop.isr_interval

    def _at_replica(self, entry: list) -> bool:
        """A replica fetch at its leader broker, or its answer at the follower."""
        at, tie, _, kind, (n, peer) = entry
        loop = self.pred.loops[n]
        if at >= loop.raft_wake or at >= loop.beat_deadline:
            return self._stop(at, f"node {n}'s own timer")
        why = self._isr_blocked(loop, at, peer if kind == "rfetch" else None)
        if why is not None:
            return self._stop(at, why)
        run = loop.logic if loop.replicating else None
        if run is not None:  # no event: held with what its logic does there (compact)
            run.append((RFETCH if kind == "rfetch" else RANSWER, at, peer))
            self.omitted += 1
        else:
            event = Computed(at, tie, n, kind, peer)
            self.pred.events.append(event)
            if loop.held is not None:  # a compact prediction: the answers held before it
                event.held = len(loop.held)
        if kind == "rfetch":  # handle_fetch: caught up now; the answer leaves at once
            loop.rep.caught_up[peer] = at
            a_at, a_tie = self.rlinks[(n, peer, None)].arrival(at)
            heapq.heappush(self.heap, [a_at, a_tie, self.seq(), "ranswer", (peer, n)])
        self._beat_if_due(loop, at, run)  # the logic's _done
        raft_wake, logic_wake = loop.raft_wake, loop.logic_wake
        if loop.fast is not None:  # its timer holds its logic's wake-up alone (fast_brokers)
            self._fast_rearm(loop)
        else:
            self._rearm(loop, raft_wake if raft_wake < logic_wake else logic_wake)
        return True
