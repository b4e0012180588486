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
offset of the last heartbeat each broker brought to the leader recorded. No message is built
but one still in flight at the horizon. ``settle`` then sets what the replica manager's ticks
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
        #: (leader broker, follower broker) -> when the leader last served the follower's
        #: held fetch (an answer still on its way at the horizon is built as of then)
        self.served: dict[tuple[int, int], int] = {}
        #: (follower, leader broker) -> the request ids of the follower's fetches to that
        #: leader whose answers have not reached it, in the order sent (on slow links a fetch
        #: can leave before the last one's answer came: that answer is then ignored)
        self.outstanding: dict[tuple[int, int], deque] = {}
        # what was on its way at the start: the answers answer older fetches than those
        # still on their way to the leader
        for kind, follower_is_src in (("FetchResponse", False), ("FetchRequest", True)):
            for (src, dst, channel), queue in queues.items():
                if channel is None and src in loops and dst in loops:
                    pair = (src, dst) if follower_is_src else (dst, src)
                    for msg in queue:
                        if type(msg.body).__name__ == kind:
                            self.outstanding.setdefault(pair, deque()).append(
                                msg.correlation_id)
        self._cursor: dict[tuple, int] = {}  # the in-flight messages at the horizon

    def catch_up(self, node: int, upto: int) -> None:
        """The broker's held events before its event at index ``upto``."""
        start = self.taken.get(node, 0)
        if upto <= start:
            return
        self.taken[node] = upto
        logic = self.procs[node].machine.logic
        lc, replicas = logic.lifecycle, logic.replicas
        leader, queues = self.leader, self.queues
        if not lc.steady():
            raise InexactWarp(f"broker {node}'s logic events are held but it is not steady")
        last = self.last.get(node, -1)
        for kind, at, offset in self.loops[node].logic[start:upto]:
            if kind > ANSWER:  # the replica fetching between brokers (offset: the peer)
                self._replica_event(node, replicas, kind, at, offset)
                last = at
            elif kind == SEND:
                lc.sent_steady_heartbeat(at, offset)
                self.sent += 1
                last = at
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
                last = at
        if last >= 0:
            self.last[node] = last

    def _replica_event(self, node: int, replicas: Any, kind: int, at: int, peer: int) -> None:
        """One of the broker's held logic events of its replica fetching (``steady_replicas``):
        a fetch served (its request taken from the link where it was sent before the stretch
        or by a node event), an answer taken, the fetches sent, the ISR check."""
        if kind == RFETCH:
            # a link delivers in the order sent (a message behind another takes its instant
            # and tie, and the model keeps their order): its head is this request where node
            # code built it; where a held logic run sent it, the head can only be a request
            # node code sent later (one fetch in flight per leader makes that rare), taken
            # early with the same epoch
            msg = self._take_head(peer, node, "FetchRequest")
            if msg is not None:
                epoch = msg.body.replica_state.replica_epoch
            else:
                epoch = self.procs[peer].machine.logic.lifecycle.broker_epoch
            steady.fetch_served(replicas, peer, epoch, at)
            self.served[(node, peer)] = at
            self.sent += 1  # the answer
            self.delivered += 1
        elif kind == RANSWER:
            self._take_head(peer, node, "FetchResponse")  # sent before the stretch
            pending = self.outstanding.get((node, peer))
            if not pending:
                raise InexactWarp(f"broker {node} gets a fetch answer from {peer} at {at} ms "
                                  "with no fetch out")
            steady.fetch_answered(replicas, peer, pending.popleft(), at)  # or ignored
            self.delivered += 1
        elif kind == FETCHES:
            leaders = steady.fetches_sent(replicas, at)
            cids = replicas._fetch_cids  # noqa: SLF001
            for lead in leaders:
                self.outstanding.setdefault((node, lead), deque()).append(cids[lead])
            self.sent += len(leaders)
        elif kind == ISR:
            steady.isr_checked(replicas, at)
            if replicas._out.sends:  # noqa: SLF001
                raise InexactWarp(f"broker {node}'s ISR check at {at} ms sent something")

    def _take_head(self, src: int, dst: int, kind: str) -> Any:
        """The replica link's first message where it is of ``kind`` (a FetchRequest or
        FetchResponse: a link carries both where each broker leads for the other), else
        None."""
        queue = self.queues.get((src, dst, None))
        if queue and type(queue[0].body).__name__ == kind:
            return queue.popleft()
        return None

    def sent_by_node(self, node: int, dst: int, msg: Any) -> None:
        """A node event's send: a replica fetch to another broker is outstanding."""
        if dst in self.loops and type(getattr(msg, "body", None)).__name__ == "FetchRequest":
            self.outstanding.setdefault((node, dst), deque()).append(msg.correlation_id)

    def in_flight(self, pred_in_flight: list) -> None:
        """Before the messages on their way at the horizon are handed back: the answers on
        each follower's way answer its oldest outstanding fetches, the fetches on their way
        are the newer ones."""
        cursor: dict[tuple, int] = {}
        for _at, _tie, _, kind, arg in pred_in_flight:
            if kind == "ranswer":  # (follower, leader): the fetches start past its answers
                key = ("rfetch", arg[0], arg[1])
                cursor[key] = cursor.get(key, 0) + 1
        self._cursor = cursor

    def replica_message(self, kind: str, follower: int, leader: int) -> Any:
        """A replica fetch (``rfetch``) or its answer (``ranswer``) still on its way at the
        horizon (in arrival order): the one node code sent, from its link, or one a held
        logic run sent, as the follower built the request and the leader answered it."""
        key = (kind, follower, leader)
        i = self._cursor.get(key, 0)
        self._cursor[key] = i + 1
        pending = self.outstanding.get((follower, leader), ())
        if i >= len(pending):
            raise InexactWarp(f"a fetch from {follower} to {leader} is in flight, none sent")
        cid = pending[i]
        link = (follower, leader, None) if kind == "rfetch" else (leader, follower, None)
        queue = self.queues.get(link)
        if queue and queue[0].correlation_id == cid:
            return queue.popleft()
        f_replicas = self.procs[follower].machine.logic.replicas
        reps = [r for r in f_replicas.followed() if r.leader == leader]
        body = f_replicas._fetch_request(reps)  # noqa: SLF001
        if kind == "rfetch":
            return rpc.request(cid, body)
        at = self.served.get((leader, follower))
        if at is None:
            raise InexactWarp(f"an answer from {leader} to {follower} is in flight, none served")
        # served again at its last serving instant: the follower's record does not move
        answer = self.procs[leader].machine.logic.replicas.handle_fetch(body, at)
        return rpc.response(cid, answer)

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
