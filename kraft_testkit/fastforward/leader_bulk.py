"""The leader in a compact warped stretch, set instead of replayed.

What the active controller's node code does in an idle stretch is small and the model
computes all of it (``quorum_model``): it writes a NoOp every interval and drains it a linger
later, moves the high watermark when a voter's fetch says so (each move a commit: the
controller's replay, its metrics, the snapshot generator's count), renews each broker's lease
at its heartbeat and answers it once what the controller wrote before it commits, and keeps a
record of every follower's fetches (``follower_fetches.py``). So no leader code runs for a
compact stretch; :class:`LeaderBulk` applies it with the bulk primitives of ``noop_run.py``:

- the NoOps are appended by :func:`append_leader_noops` as far as the instant where a
  follower's held answers are applied (their batches come from the leader's log) and, at the
  end, up to the horizon; the high watermark's moves by :func:`apply_commit_run`;
- a heartbeat's arrival only records the request (the warp takes it from the broker's link):
  at the end each broker's session holds the last one's contact and metadata offset, the
  controller's commit latencies grow by the model's (in the controller's order), and the
  heartbeats still waiting for their commit are waiting again, as the controller holds them;
- the answer a broker gets is the controller's answer to its request (:func:`answer`): in a
  steady state it depends on the request alone.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kraft_testkit.controller.cluster import SOFT_STATE_KEY
from kraft_testkit.controller.quorum_controller import _Waiting
from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.fastforward.noop_run import append_leader_noops, apply_commit_run
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.raft import rpc

#: how many commit latencies the controller keeps (``QuorumController._deliver``)
LATENCIES_KEPT, LATENCIES_DROPPED = 1000, 500


def answer(qc: Any, broker: int, cid: int, body: Any) -> Any:
    """The controller's answer (an envelope) to a steady broker's heartbeat request ``cid``,
    ``body``: ``process_broker_heartbeat`` for a registered, unfenced broker that wants
    neither fencing nor shutting down."""
    session = qc.soft[SOFT_STATE_KEY].peek(broker)
    if session is None or body.want_fence or body.want_shut_down:
        raise InexactFastForward(f"broker {broker}'s heartbeat is not a steady one")
    return rpc.response(cid, M.BrokerHeartbeatResponse(
        error_code=ErrorCode.NONE,
        is_caught_up=body.current_metadata_offset >= session.registration_offset,
        is_fenced=False, should_shut_down=False))


class LeaderBulk:
    """The leader's side of one compact stretch (see the module)."""

    def __init__(self, process: Any, pred: Any, shared: Any = None) -> None:
        self.process = process
        #: the followers' ``broker_runs.SharedRun``: it takes each run appended here
        self.shared = shared
        self.qc = qc = process.machine.controller
        self.noops = pred.noops
        self.done = 0  # NoOps submitted to the log so far
        #: heartbeats waiting for their commit when the stretch began (the model answers them)
        self.waiting_before = list(qc._waiting)  # noqa: SLF001
        qc._waiting.clear()  # noqa: SLF001
        #: the metadata offset the last heartbeat of each broker that reached the leader
        #: reported
        self.offsets: dict[int, int] = {}

    def sync(self, at: int) -> None:
        """The leader's log as at ``at``: its NoOps submitted and drained by then."""
        k = self.done
        noops = self.noops
        while k < len(noops) and noops[k] <= at:
            k += 1
        lead = self.process.machine.raft._lead  # noqa: SLF001
        if k == self.done and not (lead.pending and lead.drain_at <= at):
            return
        run = append_leader_noops(self.process, noops[self.done:k], at)
        if self.shared is not None:
            self.shared.add(run)
        self.done = k

    def finish(self, pred: Any, brokers: dict[int, Any]) -> None:
        """The leader at the stretch's end (after :meth:`sync` to its last instant):
        commits, sessions, commit latencies, heartbeats waiting. ``brokers``: broker ->
        the heartbeat it has out (its lifecycle's in-flight record) or None."""
        qc = self.qc
        if pred.commits:
            done = apply_commit_run(self.process, pred.commits)
            if done.stopped is not None or done.applied != len(pred.commits):
                raise InexactFastForward(f"the leader's commits stopped: {done.stopped}")
        latencies = qc.metrics.commit_latency_ms
        for ms in pred.latencies:
            latencies.append(ms)
            if len(latencies) > LATENCIES_KEPT:
                del latencies[:LATENCIES_DROPPED]
        manager = qc.soft[SOFT_STATE_KEY]
        registered = qc.image.cluster.brokers
        for b, at in pred.beats.items():  # in the order of their first heartbeats
            session = manager.peek(b)
            epoch = registered[b].epoch
            contact = manager.contact_ms(b, epoch)
            manager.track(b, epoch, at if contact is None else max(contact, at))
            session.metadata_offset = self.offsets[b]
        before = {(w.dest, w.offset, w.appended_ms): w for w in self.waiting_before}
        waiting: deque = deque()
        for b, offset, arrival in pred.waiting:
            w = before.get((b, offset, arrival))
            if w is None:
                f = brokers.get(b)
                if f is None or f.cid is None:
                    raise InexactFastForward(f"broker {b}'s heartbeat waits at the leader but "
                                             "none is in flight")
                w = _Waiting(offset, b, f.cid, answer(qc, b, f.cid, f.body).body, arrival)
            waiting.append(w)
        qc._waiting = waiting  # noqa: SLF001
