"""The leader's timeline: its state after each of its events, in run order.

The idle model (``quorum_model.predict_quorum``) computes the leader's state after each of its
events, ordered by the scheduler's ``(at_ms, tie)`` key; :class:`LeaderTimeline` records the
same from stepping, which is what tests/cluster/test_fastforward_quorum_model.py compares it
with: added as an incremental invariant
(``sim.add_invariant(timeline, "leader timeline")``), it looks only after events that touched
the leader, and keeps one :class:`LeaderStep` per such event.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.fastforward.observer_loop import LeaderStep


class LeaderTimeline:
    """Records :class:`LeaderStep` after every event of node ``leader`` of ``cluster``."""

    incremental = True  # the simulation hands over the nodes an event touched

    def __init__(self, cluster: Any, leader: int) -> None:
        self.cluster = cluster
        self.leader = leader
        self.steps: list[LeaderStep] = []

    def __call__(self, sim: Any) -> None:
        touched = sim.touched
        if touched is not None and self.leader not in touched:
            return
        node = self.cluster.controller_node(self.leader)
        if node is None:
            return
        raft, ctrl = node.raft, node.controller
        at, tie, _ = sim.scheduler.current_key()
        end, hw = raft.log_end_offset, raft.hw
        last = self.steps[-1] if self.steps else None
        woke = last is None or (end, hw) != (last.end_offset, last.high_watermark)
        self.steps.append(LeaderStep(at, tie, end, hw, woke, ctrl.written_offset,
                                     ctrl.metrics.last_committed_offset))
