"""The brokers' fetch loops computed from the leader's timeline and the links' draws
(kraft_testkit/fastforward/observer_loop.py) against stepping: every round trip of every
broker at the same instants, with the same log end and high watermark."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.observer_loop import LeaderStep, LinkClock, predict_round_trips


class _Recorder:
    """After every event: the leader's state when the leader ran, and each watched broker's
    state after it handled a fetch response (delivered just before)."""

    incremental = True

    def __init__(self, c: Cluster, leader: int, brokers: list[int], start_ms: int) -> None:
        self.c, self.leader, self.brokers, self.start_ms = c, leader, brokers, start_ms
        self.steps: list[LeaderStep] = []
        self.starts: dict[int, dict] = {}  # broker -> where the model starts
        self.after: dict[int, list[tuple[int, int, int]]] = {b: [] for b in brokers}
        self._delivered: int | None = None
        c.sim.network.on_deliver(self._on_deliver)

    def _on_deliver(self, src: int, dst: int, msg: object) -> None:
        if src == self.leader and dst in self.after and type(msg).__name__ == "FetchResponse":
            self._delivered = dst
            if dst not in self.starts and self.c.sim.now_ms >= self.start_ms:
                net = self.c.sim.network
                self.starts[dst] = {"sent_at": self.c.sim.now_ms,
                                    "to_leader": LinkClock.of(net, dst, self.leader),
                                    "to_broker": LinkClock.of(net, self.leader, dst)}

    def __call__(self, sim) -> None:
        touched = sim.touched
        if touched is None or self.leader in touched:
            r = self.c.replica(self.leader)
            at, tie, _ = sim.scheduler.current_key()
            last = self.steps[-1] if self.steps else None
            woke = last is None or (r.log_end_offset, r.hw) != (last.end_offset,
                                                                 last.high_watermark)
            self.steps.append(LeaderStep(at, tie, r.log_end_offset, r.hw, woke))
        b, self._delivered = self._delivered, None
        if b is not None:
            r = self.c.replica(b)
            self.after[b].append((sim.now_ms, r.log_end_offset, r.hw))
            start = self.starts.get(b)
            if start is not None and "end_offset" not in start:
                start["end_offset"], start["high_watermark"] = r.log_end_offset, r.hw


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_every_round_trip_is_predicted(seed):
    c = Cluster(3, 4, seed=seed, trace_keep=None)
    c.run_for(5_000)
    leader = c.active_controller.id
    start_ms = c.sim.now_ms + 1_000
    rec = _Recorder(c, leader, list(c.broker_ids), start_ms)
    c.sim.add_invariant(rec, "recorder")
    c.run_for(60_000)
    assert c.active_controller.id == leader
    until = c.sim.now_ms - 1_000
    events = c.sim.trace.events()
    max_wait = c.raft_config.fetch_max_wait_ms
    checked = 0
    for b in c.broker_ids:
        start = rec.starts[b]
        trips = predict_round_trips(
            rec.steps, start["to_leader"], start["to_broker"], sent_at=start["sent_at"],
            end_offset=start["end_offset"], high_watermark=start["high_watermark"],
            max_wait_ms=max_wait, until_ms=until)
        arrived = [t for t, kind, node, peer, what in events if kind == "recv" and
                   node == leader and peer == b and what == "FetchRequest" and
                   start["sent_at"] < t <= until]
        received = [(t, end, hw) for t, end, hw in rec.after[b] if start["sent_at"] < t <= until]
        assert [t.arrived_ms for t in trips] == arrived[:len(trips)]
        assert [(t.received_ms, t.end_offset, t.high_watermark) for t in trips] == received
        assert len(trips) > 60 * 2  # about 2.7 round trips a second
        checked += len(trips)
    assert checked > 4 * 120
