"""The followers' metadata fetches at the leader in a compact stretch, set, not replayed.

A follower's fetch loop with the leader is most of an idle cluster's events: the fetch
arrives and is parked, the leader's next drain or high-watermark move answers it, the
answer brings the follower a NoOp and it fetches again. What those events leave at the
leader is small and the model computes it (``quorum_model``): its record of each follower
(last fetch, end offset, caught-up time), the fetches parked at the end in the leader's
order, and the leader's wake-ups. :class:`FollowerFetches` (``compact.py``) holds the
leader's side of them for one stretch:

- the parked fetches leave the leader's list at the start (no leader code runs in a compact
  stretch: ``leader_bulk.py``), and a follower's answers come from the model as runs
  (``broker_runs.py``);
- it keeps each follower's last fetch (the one the leader holds or will get), to rebuild the
  parked fetches at the end and the messages still in flight (an answer as the leader sent
  it: :meth:`RaftReplica.fetch_answer_as_sent`);
- at the end it sets the leader's records of the followers and its parked fetches.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.raft import rpc
from kraft_testkit.raft.replica_state import _Parked


class FollowerFetches:
    """The leader's side of the followers' fetch loops in one stretch (see the module)."""

    def __init__(self, leader_raft: Any, followers: set[int], flights: dict) -> None:
        self.raft = leader_raft
        self.lead = lead = leader_raft._lead  # noqa: SLF001
        self.leader = leader_raft.id
        self.followers = followers
        #: the fetches parked before the stretch (the model answers them now)
        self.held = {p.src: p for p in lead.parked}
        if any(src not in followers for src in self.held):
            raise InexactFastForward("a fetch of a node the model has no loop for is parked")
        lead.parked = []
        #: the last fetch each follower sent in the stretch (a request envelope)
        self.last: dict[int, Any] = {}
        #: the fetch loops' messages in flight at the start, with their (instant, tie)
        self.start: dict[tuple[int, int], tuple[Any, tuple[int, int]]] = {}
        for key, (msg, entry) in flights.items():
            if self.owns(key):
                self.start[key[:2]] = (msg, (entry[0], entry[1]))

    def owns(self, key: tuple) -> bool:
        """Whether a (src, dst, channel) link carries a follower's metadata fetch loop (to or
        from the leader; the brokers' replica fetches between them are not ours)."""
        src, dst, channel = key
        return channel is None and (src in self.followers and dst == self.leader or
                                    dst in self.followers and src == self.leader)

    def sent_before(self, src: int, dst: int, at: int, tie: int) -> Any:
        """The message arriving at (``at``, ``tie``) if it left before the stretch, else
        None."""
        start = self.start.get((src, dst))
        return start[0] if start is not None and start[1] == (at, tie) else None

    def answers_sent(self, pred: Any) -> int:
        """The leader's answers sent in the stretch: those that arrived, and those still in
        flight, less those that had left before it."""
        at_end = sum(kind == "answer" and arg[0] in self.followers
                     for _, _, _, kind, arg in pred.in_flight)
        before = sum(src == self.leader for src, _ in self.start)
        return pred.follower_answers + at_end - before

    def answer(self, node: int, end: int, hw: int) -> Any:
        """The answer the leader sent to the follower's fetch with its log ending at ``end``
        and the high watermark at ``hw``."""
        msg = self._last_fetch(node)
        if msg is not None:
            cid, partition = msg.correlation_id, rpc.fetch_partition(msg.body)
        elif node in self.held:
            cid, partition = self.held[node].cid, self.held[node].partition
        else:
            raise InexactFastForward(f"node {node} has no fetch out")
        return rpc.response(cid, self.raft.fetch_answer_as_sent(partition, end, hw))

    def _last_fetch(self, node: int) -> Any:
        """The last fetch the follower sent: in the stretch, else the one in flight before."""
        msg = self.last.get(node)
        if msg is None:
            start = self.start.get((node, self.leader))
            msg = None if start is None else start[0]
        return msg

    def in_flight(self, kind: str, arg: tuple, at: int, tie: int) -> tuple[int, int, Any]:
        """(src, dst, message) of a follower's fetch or its answer the model has in flight,
        to arrive at (``at``, ``tie``)."""
        node = arg[0]
        if kind == "fetch":
            msg = self._last_fetch(node)
            if msg is None:
                raise InexactFastForward(f"node {node}'s fetch in flight was never sent")
            return node, self.leader, msg
        msg = self.sent_before(self.leader, node, at, tie) or self.answer(node, arg[1], arg[2])
        return self.leader, node, msg

    def finish(self, pred: Any) -> None:
        """The leader's records of the followers and its parked fetches, as the model ended
        (its own code parked nothing in the stretch)."""
        lead = self.lead
        for n, (last_fetch, end_offset, caught_up) in pred.records.items():
            prog = lead.voters.get(n) or lead.observers[n]
            prog.last_fetch_ms, prog.end_offset, prog.caught_up_ms = \
                last_fetch, end_offset, caught_up
        if lead.parked:
            raise InexactFastForward("the leader parked fetches in a compact stretch")
        parked = []
        for node, deadline in pred.parked:
            msg = self._last_fetch(node)
            if msg is not None:
                p = _Parked(node, msg.correlation_id, node, rpc.fetch_partition(msg.body),
                            deadline)
            else:  # parked since before the stretch
                p = self.held.get(node)
                if p is None or p.deadline != deadline:
                    raise InexactFastForward(f"the model parks a fetch of {node} at the "
                                             "leader that was never sent")
            parked.append(p)
        lead.parked = parked
