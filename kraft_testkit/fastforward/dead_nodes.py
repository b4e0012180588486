"""Dead nodes in the idle model (``quorum_model``): a three-voter quorum that lost one, and
brokers that are down.

After a failover (the old leader killed, a new one elected by the other two) the cluster is
idle again but for one thing: the new leader never heard from the dead voter, so it keeps
asking it to acknowledge the epoch (``raft/replica.py`` ``_poll_leader``: a
BeginQuorumEpoch request to every voter not in ``acked``, one in flight per connection,
again a ``controller.quorum.request.timeout.ms`` after the last); the network drops each at
the dead node's door ("vanished"). With two voters of three alive the leader and the live
follower are the majority, so the high watermark and check-quorum follow the live one alone,
as the model already computes them (the dead voter's end offset never moves). A dead broker
sends nothing and nothing is sent to it in an idle stretch; while the controller still holds
a contact time of it the model stops at the lease check that finds it expired, as for any
broker (``quorum_model``'s ``lease_min``). Messages on their way
to a dead node when a stretch starts vanish in it (``QuorumPrediction.dead_flights``).

:class:`DeadVoter` finds the dead voter and where its connection stands; the model asks
:meth:`DeadVoter._begin_due` in the leader's poll. The prediction carries the requests the
leader sent (``QuorumPrediction.begins``: instant, arrival, tie, request id); ``compact.py``
sets the leader's connection and request id from them, and hands back the ones still in
flight at the horizon (``dead_nodes.finish``).
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.fastforward.observer_loop import LinkClock, NotModelled
from kraft_testkit.raft import rpc
from kraft_testkit.sim.node import NEVER
from kraft_testkit.sim.scheduler import Scheduler


def dead_nodes(cluster: Any) -> set[int]:
    """The nodes whose process is down (killed, stopped or failed): what is sent to them
    vanishes at their door, they send nothing."""
    return {n for n in cluster.roles if not cluster.sim.process(n).up}


class DeadVoter:
    """Methods of the model (``quorum_model._Model``) for a dead voter."""

    def _dead_start(self, dead: set[int]) -> None:
        """The leader's connection to a dead voter it has not heard from (none: no dead
        voter, or one that acknowledged the epoch before it died: nothing is sent to it)."""
        self.begin_at = NEVER
        self.begin_to: int | None = None
        unacked = sorted(set(self.raft.voters) - self.lead.acked - {self.leader})
        if not unacked:
            return
        if len(unacked) > 1 or unacked[0] not in dead:
            raise NotModelled("a live voter has not acknowledged the leader's epoch")
        v = self.begin_to = unacked[0]
        conn = self.raft._conns.get(v)  # noqa: SLF001
        if conn is None:
            raise NotModelled(f"the leader has never asked voter {v} to acknowledge it")
        self.begin_at = conn.ready_at(self.cfg.request_timeout_ms)
        self.begin_cid = self.raft._cid  # noqa: SLF001
        self.begin_clock = LinkClock.of(self.c.sim.network, self.leader, v)
        self.pred.links[(self.leader, v, None)] = self.begin_clock

    def _begin_due(self, at: int) -> None:
        """The leader's poll at ``at`` asks the dead voter again (its request timed out)."""
        self.begin_cid = cid = (self.begin_cid + 1) & 0x7FFFFFFF
        a_at, a_tie = self.begin_clock.arrival(at)
        self.pred.begins.append((at, a_at, a_tie, cid))
        self.begin_at = at + self.cfg.request_timeout_ms


def finish(sim: Any, procs: dict, pred: Any, hand_back: Any) -> tuple[int, int]:
    """Take the messages to dead nodes from before the stretch that vanished in it out of the
    heap, set the leader's connection to the dead voter where the requests of the prediction
    leave it and hand back (``warp.hand_back``) those still in flight; returns (sent,
    vanished) for the network's counters."""
    stop = (pred.horizon_ms, pred.stop_tie)
    vanished = 0
    for entry in pred.dead_flights:
        if (entry[0], entry[1]) < stop:
            Scheduler.cancel(entry)
            vanished += 1
    if not pred.begins:
        return 0, vanished
    leader = pred.leader
    raft = procs[leader].machine.raft
    v = pred.begin_to
    last_at, _, _, last_cid = pred.begins[-1]
    raft._cid = last_cid  # noqa: SLF001
    conn = raft._conns[v]  # noqa: SLF001
    conn.cid, conn.sent_at = last_cid, last_at
    for _, at, tie, cid in pred.begins:
        if (at, tie) < stop:
            vanished += 1
        else:
            hand_back(sim, procs, leader, v, None,
                      rpc.request(cid, raft._begin_epoch_request(v)), at, tie)  # noqa: SLF001
    return len(pred.begins), vanished
