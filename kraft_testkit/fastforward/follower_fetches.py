"""The brokers' metadata fetches at the leader in a warped stretch, set instead of replayed.

A broker's fetch loop with the leader is two thirds of an idle cluster's events: the fetch
arrives and is parked, the leader's next drain or high-watermark move answers it, the
answer brings the broker a NoOp and it fetches again. Handing each of them to the leader's
node code (the fetch handler, the answers built at each drain) was most of a warp's
materialization; what those events leave at the leader is small and the model computes it
(``quorum_model``): its record of each broker (last fetch, end offset, caught-up time), the
fetches parked at the end in the leader's order, and the leader's wake-ups. So while
:class:`FollowerFetches` is in use (``warp.py``, bulk mode without delivery hooks):

- the brokers' parked fetches leave the leader's list at the start: its drains and commits
  answer only the voters, and a broker's fetch reaches no leader code (an event in which the
  leader also does something else runs the leader's poll without the fetch handler);
- a broker's answers come from the model: the deferred ones as runs (``broker_runs.py``),
  the ones its logic acts on as the message the leader sent (rebuilt from the log end and
  high watermark it carried, :meth:`RaftReplica.fetch_answer_as_sent`);
- at the end the leader's records, parked fetches (with each broker's last request) and
  wake-ups are set from the model, and the messages still in flight are rebuilt.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.raft import rpc
from kraft_testkit.raft.replica_state import _Parked


class FollowerFetches:
    """The leader's side of the brokers' fetch loops in one stretch (see the module)."""

    def __init__(self, leader_raft: Any, brokers: set[int], flights: dict) -> None:
        self.raft = leader_raft
        self.lead = lead = leader_raft._lead  # noqa: SLF001
        self.leader = leader_raft.id
        self.brokers = brokers
        #: the brokers' fetches parked before the stretch (the model answers them now)
        self.held = {p.src: p for p in lead.parked if p.src in brokers}
        lead.parked = [p for p in lead.parked if p.src not in brokers]
        #: the last fetch each broker sent in the stretch (a request envelope)
        self.last: dict[int, Any] = {}
        #: the brokers' messages in flight at the start, with their (instant, tie) of arrival
        self.start: dict[tuple[int, int], tuple[Any, tuple[int, int]]] = {}
        for key, (msg, entry) in flights.items():
            if self.owns(key):
                self.start[key[:2]] = (msg, (entry[0], entry[1]))

    def owns(self, key: tuple) -> bool:
        """Whether a (src, dst, channel) link carries a broker's metadata fetch loop (to or
        from the leader; the brokers' replica fetches between them are not ours)."""
        src, dst, channel = key
        return channel is None and (src in self.brokers and dst == self.leader or
                                    dst in self.brokers and src == self.leader)

    def sent_before(self, src: int, dst: int, at: int, tie: int) -> Any:
        """The message arriving at (``at``, ``tie``) if it left before the stretch, else
        None."""
        start = self.start.get((src, dst))
        return start[0] if start is not None and start[1] == (at, tie) else None

    def answers_sent(self, pred: Any) -> int:
        """The leader's answers to brokers sent in the stretch: those that arrived, and those
        still in flight, less those that had left before it."""
        at_end = sum(kind == "answer" and arg[0] in self.brokers
                     for _, _, _, kind, arg in pred.in_flight)
        before = sum(src == self.leader for src, _ in self.start)
        return pred.follower_answers + at_end - before

    def outstanding(self, broker: int) -> tuple[int, Any]:
        """(request id, partition) of the fetch the broker has out."""
        msg = self._last_fetch(broker)
        if msg is not None:
            return msg.correlation_id, rpc.fetch_partition(msg.body)
        parked = self.held.get(broker)
        if parked is None:
            raise InexactFastForward(f"broker {broker} has no fetch out")
        return parked.cid, parked.partition

    def answer(self, broker: int, end: int, hw: int) -> Any:
        """The answer the leader sent to the broker's fetch with its log ending at ``end``
        and the high watermark at ``hw``."""
        cid, partition = self.outstanding(broker)
        return rpc.response(cid, self.raft.fetch_answer_as_sent(partition, end, hw))

    def _last_fetch(self, broker: int) -> Any:
        """The last fetch the broker sent: in the stretch, else the one in flight before."""
        msg = self.last.get(broker)
        if msg is None:
            start = self.start.get((broker, self.leader))
            msg = None if start is None else start[0]
        return msg

    def in_flight(self, kind: str, arg: tuple, at: int, tie: int) -> tuple[int, int, Any]:
        """(src, dst, message) of a broker's fetch or answer the model has in flight, to
        arrive at (``at``, ``tie``)."""
        broker = arg[0]
        if kind == "fetch":
            msg = self._last_fetch(broker)
            if msg is None:
                raise InexactFastForward(f"broker {broker}'s fetch in flight was never sent")
            return broker, self.leader, msg
        msg = self.sent_before(self.leader, broker, at, tie) or \
            self.answer(broker, arg[1], arg[2])
        return self.leader, broker, msg

    def finish(self, pred: Any) -> None:
        """The leader's records of the brokers and its parked fetches, as the model ended."""
        lead = self.lead
        for n, (last_fetch, end_offset, caught_up) in pred.observers.items():
            if n not in self.brokers:
                continue  # not set from the model in this stretch (a voter, replayed)
            prog = lead.voters.get(n) or lead.observers[n]
            prog.last_fetch_ms, prog.end_offset, prog.caught_up_ms = \
                last_fetch, end_offset, caught_up
        voters = {p.src: p for p in lead.parked}
        parked = []
        for node, deadline in pred.parked:
            p = voters.pop(node, None)
            if p is None:
                msg = self._last_fetch(node)
                if msg is not None:
                    p = _Parked(node, msg.correlation_id, node, rpc.fetch_partition(msg.body),
                                deadline)
                else:
                    p = self.held.get(node)
                    if p is None or p.deadline != deadline:
                        raise InexactFastForward(f"the model parks a fetch of {node} at the "
                                                 "leader that was never sent")
            elif p.deadline != deadline:
                raise InexactFastForward(f"voter {node}'s parked fetch ends at {p.deadline}, "
                                         f"the model's at {deadline}")
            parked.append(p)
        if voters:
            raise InexactFastForward(f"the leader parked fetches the model did not: "
                                     f"{sorted(voters)}")
        lead.parked = parked
