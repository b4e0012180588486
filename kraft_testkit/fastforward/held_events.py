"""A steady broker's logic events in a compact stretch, set instead of replayed.

In an idle stretch what a running broker's logic does is a few fixed cycles. Its heartbeat:
its timer sends ``BrokerHeartbeatRequest`` (its lifecycle's ``tick``: the next request id on
its controller channel, its metadata offset, a deadline a request timeout later), the active
controller renews its lease and answers once what it wrote before commits, and the answer
(``on_response``: no error, not fenced) plans the next one an interval later. Where it hosts
partitions, its replica fetching between brokers: every ``replica.fetch.backoff.ms`` its logic
sends one fetch per leader broker, the leader records it and answers at once, the answer
records the last fetch; and the ISR check, which in the steady state shrinks nothing. So the
model holds these events (``Loop.logic``: SEND, ARRIVE, ANSWER of the heartbeat; TIMER,
RFETCH, RANSWER of the logic's runs and FETCHES, ISR of what it did in them, with their
instants, the peer, the metadata offset a heartbeat reports) instead of listing them, and
:class:`HeldEvents` applies them in order through the broker's steady transitions
(``Lifecycle.sent_steady_heartbeat`` and ``steady_answer``; ``broker/steady_replicas.py``):
request ids counted on the broker's outbox, the messages counted sent and delivered (taken
from their links where they were sent before the stretch or by a node event), the metadata
offset of the last heartbeat each broker brought to the leader recorded. No heartbeat is built
but one still in flight at the horizon; a replica fetch and its answer run the brokers' own
paths on their bodies (KIP-227: a steady session's name no partition), so their session ids
and epochs are stepping's, and one still in flight at the horizon is handed back as built. ``settle`` then sets what the replica manager's ticks
moved from the model, and the broker's clock, wake-ups and timer.

tests/cluster/test_fastforward_warp.py and test_fastforward_differential.py compare the
result with stepping, field by field (the brokers' lifecycles, the leases, the links and their
counters, every node's timer).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kraft_testkit.broker import steady_replicas as steady
from kraft_testkit.broker.channel import CONTROLLER_CHANNEL
from kraft_testkit.fastforward.follower_model import (
    ANSWER,
    ARRIVE,
    FETCHES,
    ISR,
    RANSWER,
    RFETCH,
    SEND,
)
from kraft_testkit.fastforward.materialize import InexactWarp
from kraft_testkit.raft import rpc
from kraft_testkit.sim.node import NEVER


class HeldEvents:
    """One compact stretch's held broker events, applied broker by broker in order."""

    def __init__(self, procs: dict, queues: dict, leader: int, loops: dict) -> None:
        self.procs, self.queues, self.leader, self.loops = procs, queues, leader, loops
        self.taken: dict[int, int] = {}
        self.sent = self.delivered = 0
        #: broker -> the metadata offset its last heartbeat at the leader reported
        self.offsets: dict[int, int] = {}
        self.last: dict[int, int] = {}  # broker -> its last held event's instant
        #: (follower, leader broker) -> the follower's fetches to that leader not served yet,
        #: in the order sent, as (request id, body) where a held logic run built it and
        #: (request id, None) where it is on its link (sent before the stretch or by node code)
        self.requests: dict[tuple[int, int], deque] = {}
        #: (follower, leader broker) -> the leader's answers not yet at the follower, likewise
        #: (on slow links a fetch can leave before the last one's answer came: that answer
        #: is then ignored)
        self.answers: dict[tuple[int, int], deque] = {}
        for (src, dst, channel), queue in queues.items():
            if channel is None and src in loops and dst in loops:
                for msg in queue:
                    kind = type(msg.body).__name__
                    if kind == "FetchRequest":
                        self.requests.setdefault((src, dst), deque()).append(
                            (msg.correlation_id, None))
                    elif kind == "FetchResponse":
                        self.answers.setdefault((dst, src), deque()).append(
                            (msg.correlation_id, None))

    def catch_up(self, node: int, upto: int) -> None:
        """The broker's held events before its event at index ``upto``."""
        if self.taken.get(node, 0) < upto:
            self._steady(node)
        while self.taken.get(node, 0) < upto:
            self._one(node)

    def _steady(self, node: int) -> None:
        if not self.procs[node].machine.logic.lifecycle.steady():
            raise InexactWarp(f"broker {node}'s logic events are held but it is not steady")

    def _one(self, node: int) -> None:
        """The broker's next held event (one at a time: a replica event can first need
        another broker's earlier held events, :meth:`_pull`)."""
        i = self.taken.get(node, 0)
        self.taken[node] = i + 1
        logic = self.procs[node].machine.logic
        lc, replicas = logic.lifecycle, logic.replicas
        leader, queues = self.leader, self.queues
        kind, at, offset = self.loops[node].logic[i]
        if kind > ANSWER:  # the replica fetching between brokers (offset: the peer)
            self._replica_event(node, replicas, kind, at, offset)
            self.last[node] = at
        elif kind == SEND:
            lc.sent_steady_heartbeat(at, offset)
            self.sent += 1
            self.last[node] = at
        elif kind == ARRIVE:  # sent by a node event or before the stretch: on its link
            queue = queues.get((node, leader, CONTROLLER_CHANNEL))
            if queue:
                offset = queue.popleft().body.current_metadata_offset
            else:
                f = lc._inflight  # noqa: SLF001
                if f is None or f.cid is None:
                    raise InexactWarp(f"broker {node}'s heartbeat reaches the leader at "
                                      f"{at} ms with none sent")
                offset = f.body.current_metadata_offset
            self.offsets[node] = offset
            self.delivered += 1
        else:  # ANSWER
            queue = queues.get((leader, node, CONTROLLER_CHANNEL))
            if queue:
                queue.popleft()  # sent before the stretch
            else:
                self.sent += 1
            self.delivered += 1
            if lc._inflight is None:  # noqa: SLF001
                raise InexactWarp(f"broker {node} gets a heartbeat answer at {at} ms with "
                                  "none in flight")
            lc.steady_answer(at)
            self.last[node] = at

    def _pull(self, node: int, fifo: dict, pair: tuple[int, int], at: int) -> None:
        """``node``'s held events up to ``at`` until ``pair`` has something in ``fifo``: the
        fetch (or answer) arriving at ``at`` was sent by one of them (brokers' held events
        are applied broker by broker, so the sender's may not have run yet)."""
        events = self.loops[node].logic
        while not fifo.get(pair):
            i = self.taken.get(node, 0)
            if i >= len(events) or events[i][1] > at:
                return
            self._steady(node)
            self._one(node)

    def _replica_event(self, node: int, replicas: Any, kind: int, at: int, peer: int) -> None:
        """One of the broker's held logic events of its replica fetching (``steady_replicas``),
        run through the broker's own paths with the messages' bodies but no queueing: a fetch
        served (the request a held run built, or the one on the link), an answer taken, the
        fetches sent, the ISR check. The bodies carry the KIP-227 session ids and epochs as
        stepping does; a steady session's fetch and answer list no partition."""
        if kind == RFETCH:
            cid, body = self._next(self.requests, (peer, node), "FetchRequest", at)
            answer = steady.fetch_served(replicas, body, at)
            if replicas._out.sends:  # noqa: SLF001
                raise InexactWarp(f"broker {node} sent something serving a fetch at {at} ms")
            self.answers.setdefault((peer, node), deque()).append((cid, answer))
            self.sent += 1  # the answer
            self.delivered += 1
        elif kind == RANSWER:
            cid, body = self._next(self.answers, (node, peer), "FetchResponse", at)
            steady.fetch_answered(replicas, peer, cid, body, at)  # or ignored
            self.delivered += 1
        elif kind == FETCHES:
            leaders = steady.fetches_sent(replicas, at)
            built = replicas._unqueued  # noqa: SLF001
            for lead in leaders:
                self.requests.setdefault((node, lead), deque()).append(built.pop(lead))
            self.sent += len(leaders)
        elif kind == ISR:
            steady.isr_checked(replicas, at)
            if replicas._out.sends:  # noqa: SLF001
                raise InexactWarp(f"broker {node}'s ISR check at {at} ms sent something")

    def _next(self, fifo: dict, pair: tuple[int, int], kind: str, at: int) -> tuple[int, Any]:
        """The oldest (request id, body) of a follower-leader pair's fetches or answers; one
        on its link is taken from there."""
        if not fifo.get(pair):  # sent by a held event of the sender's not applied yet
            self._pull(pair[0] if kind == "FetchRequest" else pair[1], fifo, pair, at)
        pending = fifo.get(pair)
        if not pending:
            raise InexactWarp(f"a {kind} between {pair[0]} and {pair[1]} arrives at {at} ms "
                              "with none sent")
        cid, body = pending.popleft()
        if body is None:
            link = pair + (None,) if kind == "FetchRequest" else (pair[1], pair[0], None)
            body = self._take(link, kind, cid).body
        return cid, body

    def _take(self, link: tuple, kind: str, cid: int) -> Any:
        """The message of ``kind`` with request id ``cid`` on ``link`` (a link carries both
        kinds where each broker leads for the other)."""
        queue = self.queues.get(link)
        for i, msg in enumerate(queue or ()):
            if msg.correlation_id == cid and type(msg.body).__name__ == kind:
                del queue[i]
                return msg
        raise InexactWarp(f"the {kind} {cid} on {link} is not on its link")

    def sent_by_node(self, node: int, dst: int, msg: Any) -> None:
        """A node event's send: a replica fetch or an answer to one, on its link."""
        if dst not in self.loops:
            return
        kind = type(getattr(msg, "body", None)).__name__
        if kind == "FetchRequest":
            self.requests.setdefault((node, dst), deque()).append((msg.correlation_id, None))
        elif kind == "FetchResponse":
            self.answers.setdefault((dst, node), deque()).append((msg.correlation_id, None))

    def taken_by_node(self, kind: str, src: int, dst: int, msg: Any) -> None:
        """Node code took a replica fetch (``rfetch``) or answer from its link: not pending."""
        fifo, pair = (self.requests, (src, dst)) if kind == "rfetch" else \
            (self.answers, (dst, src))
        pending = self.fifo_head(fifo, pair)
        if pending is None or pending != (msg.correlation_id, None):
            raise InexactWarp(f"node code took a {kind} from {src} to {dst} out of order")
        fifo[pair].popleft()

    @staticmethod
    def fifo_head(fifo: dict, pair: tuple) -> Any:
        q = fifo.get(pair)
        return q[0] if q else None

    def replica_message(self, kind: str, follower: int, leader: int) -> Any:
        """A replica fetch (``rfetch``) or its answer (``ranswer``) still on its way at the
        horizon (in arrival order): the one on its link, or the one a held event built."""
        fifo = self.requests if kind == "rfetch" else self.answers
        pending = fifo.get((follower, leader))
        if not pending:
            raise InexactWarp(f"a {kind} between {follower} and {leader} is in flight, none "
                              "sent")
        cid, body = pending.popleft()
        if kind == "rfetch":
            return self._take((follower, leader, None), "FetchRequest", cid) if body is None \
                else rpc.request(cid, body)
        return self._take((leader, follower, None), "FetchResponse", cid) if body is None \
            else rpc.response(cid, body)

    def request(self, node: int) -> Any:
        """A held heartbeat still on its way to the leader at the horizon, as sent."""
        f = self.procs[node].machine.logic.lifecycle._inflight  # noqa: SLF001
        if f is None or f.cid is None:
            raise InexactWarp(f"broker {node}'s heartbeat is in flight but none was sent")
        return rpc.request(f.cid, f.body)

    def settle(self, node: int, armed: dict, changed: set) -> None:
        """After the stretch's last event of a broker with held events: its replica
        manager's instants where the model's ticks left them, its clock at its last event, its
        logic's wake-up and its timer."""
        machine = self.procs[node].machine
        loop = self.loops[node]
        replicas = machine.logic.replicas
        if loop.rep is not None:
            replicas._next_fetch_ms = loop.rep.next_fetch  # noqa: SLF001
        if loop.isr_check is not None:
            replicas._next_isr_check_ms = loop.isr_check  # noqa: SLF001
        last = self.last.get(node, -1)
        if last > machine._fan_out.now_ms:  # noqa: SLF001
            machine._clock(last)  # noqa: SLF001
        logic_wake = machine.logic.next_wakeup_ms()
        machine._logic_wake = logic_wake  # noqa: SLF001
        wake = min(machine._raft_wake, logic_wake)  # noqa: SLF001
        machine._wake = wake  # noqa: SLF001
        now = machine._fan_out.now_ms  # noqa: SLF001
        armed[node] = None if wake >= NEVER else (max(now, wake), wake)
        changed.add(node)
