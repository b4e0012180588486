"""The brokers' fetch loops and heartbeats computed from the leader's timeline and the links'
draws (kraft_testkit/fastforward/) against stepping: every round trip of every broker at the
same instants, with the same log end and high watermark; the leader's record of each broker
(DescribeQuorum) along the way; the metadata offset each heartbeat carried; every heartbeat's
send, arrival (where the controller renews the lease), answer and receipt."""

from __future__ import annotations

import pytest

from kraft_testkit.broker.channel import CONTROLLER_CHANNEL
from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.heartbeat_loop import predict_heartbeats
from kraft_testkit.fastforward.timeline import LeaderTimeline
from kraft_testkit.sim import LinkProfile, Uniform
from kraft_testkit.fastforward.observer_loop import (
    LinkClock,
    RoundTrip,
    broker_state_at,
    observer_progress,
    predict_round_trips,
)


class _Recorder:
    """After every event: the leader's state when the leader ran, and each watched broker's
    state after it handled a fetch response (delivered just before)."""

    incremental = True

    def __init__(self, c: Cluster, leader: int, brokers: list[int], start_ms: int) -> None:
        self.c, self.leader, self.brokers, self.start_ms = c, leader, brokers, start_ms
        self.timeline = LeaderTimeline(c, leader)
        self.steps = self.timeline.steps
        self.samples: list[tuple[int, int, dict]] = []  # (at, tie, the leader's observers)
        self.starts: dict[int, dict] = {}  # broker -> where the model starts
        self.hb_starts: dict[int, dict] = {}  # broker -> where the heartbeat model starts
        self.after: dict[int, list[tuple[int, int, int]]] = {b: [] for b in brokers}
        self._delivered: int | None = None
        # each heartbeat a broker sends: the order key of the event it left in, and what it says
        self.heartbeats: dict[int, list[tuple[int, int, int]]] = {b: [] for b in brokers}
        net = c.sim.network
        send = net.send

        def spy(src: int, dst: int, msg: object) -> None:
            if src in self.heartbeats and type(msg).__name__ == "BrokerHeartbeatRequest":
                at, tie, _ = c.sim.scheduler.current_key()
                self.heartbeats[src].append((at, tie, msg.body.current_metadata_offset))
            send(src, dst, msg)

        net.send = spy  # the processes look the method up on every send
        net.on_deliver(self._on_deliver)

    def _on_deliver(self, src: int, dst: int, msg: object) -> None:
        if src == self.leader and dst in self.after and \
                type(msg).__name__ == "BrokerHeartbeatResponse" and \
                dst not in self.hb_starts and self.c.sim.now_ms >= self.start_ms:
            net = self.c.sim.network
            self.hb_starts[dst] = {
                "received": self.c.sim.now_ms,
                "to_leader": LinkClock.of(net, dst, self.leader, CONTROLLER_CHANNEL),
                "to_broker": LinkClock.of(net, self.leader, dst, CONTROLLER_CHANNEL)}
        if src == self.leader and dst in self.after and type(msg).__name__ == "FetchResponse":
            self._delivered = dst
            if dst not in self.starts and self.c.sim.now_ms >= self.start_ms:
                net = self.c.sim.network
                self.starts[dst] = {"sent_at": self.c.sim.now_ms,
                                    "to_leader": LinkClock.of(net, dst, self.leader),
                                    "to_broker": LinkClock.of(net, self.leader, dst)}

    def __call__(self, sim) -> None:
        before = len(self.steps)
        self.timeline(sim)
        if len(self.steps) != before:  # the leader ran
            r = self.c.replica(self.leader)
            at, tie, _ = sim.scheduler.current_key()
            if len(self.steps) % 7 == 0 and sim.now_ms >= self.start_ms + 500:
                part = r.describe_quorum().topics[0].partitions[0]
                self.samples.append((at, tie, {o.replica_id: (
                    o.log_end_offset, o.last_fetch_timestamp, o.last_caught_up_timestamp)
                    for o in part.observers}))
        b, self._delivered = self._delivered, None
        if b is not None:
            r = self.c.replica(b)
            self.after[b].append((sim.now_ms, r.log_end_offset, r.hw))
            start = self.starts.get(b)
            if start is not None and "end_offset" not in start:
                start["end_offset"], start["high_watermark"] = r.log_end_offset, r.hw


@pytest.mark.parametrize("seed, brokers, link", [
    (1, 4, None), (2, 4, None), (5, 4, None), (7, 10, None),
    (3, 6, LinkProfile(Uniform(1, 40))),  # slow links: answers queue behind answers (FIFO)
])
def test_every_round_trip_is_predicted(seed, brokers, link):
    c = Cluster(3, brokers, seed=seed, trace_keep=None, link=link)
    c.run_for(5_000)
    leader = c.active_controller.id
    start_ms = c.sim.now_ms + 1_000
    rec = _Recorder(c, leader, list(c.broker_ids), start_ms)
    c.sim.add_invariant(rec, "recorder")
    c.run_for(60_000)
    assert c.active_controller.id == leader
    now = c.sim.now_ms
    until = now - 1_000
    events = c.sim.trace.events()
    max_wait = c.raft_config.fetch_max_wait_ms
    checked = heartbeats = 0
    for b in c.broker_ids:
        start = rec.starts[b]
        first = (start["end_offset"], start["high_watermark"])
        trips = predict_round_trips(
            rec.steps, start["to_leader"], start["to_broker"], sent_at=start["sent_at"],
            end_offset=first[0], high_watermark=first[1], max_wait_ms=max_wait, until_ms=now)
        arrived = [t for t, kind, node, peer, what in events if kind == "recv" and
                   node == leader and peer == b and what == "FetchRequest" and
                   start["sent_at"] < t <= until]
        received = [(t, end, hw) for t, end, hw in rec.after[b] if start["sent_at"] < t <= until]
        assert [t.arrived_ms for t in trips if t.arrived_ms <= until] == arrived
        assert [(t.received_ms, t.end_offset, t.high_watermark) for t in trips
                if t.received_ms is not None and t.received_ms <= until] == received
        assert len(received) > 60 * 2  # about 2.7 round trips a second
        checked += len(received)
        # the leader's record of the broker, as DescribeQuorum reported it along the way
        for at, tie, seen in rec.samples:
            progress = observer_progress(trips, (at, tie))
            if progress is None:  # before the first fetch of the window: nothing to compute
                assert (at, tie) < (trips[0].arrived_ms, trips[0].arrived_tie)
                continue
            assert (progress.end_offset, progress.last_fetch_ms, progress.caught_up_ms) == \
                seen[b], (b, at)
        assert len(rec.samples) > 150
        # what each heartbeat sent after the start said of the broker's metadata
        sent = [(at, tie, offset) for at, tie, offset in rec.heartbeats[b]
                if at > start["sent_at"]]
        predicted = [(at, tie, broker_state_at(trips, at, tie, end_offset=first[0],
                                               high_watermark=first[1])[1] - 1)
                     for at, tie, _ in sent]
        assert predicted == sent and len(sent) >= 25
        heartbeats += len(sent)
    assert checked > brokers * 120 and heartbeats >= brokers * 25
    # the heartbeat loops on the controller channel
    interval = c.config.broker_heartbeat_interval_ms
    for b in c.broker_ids:
        start = rec.hb_starts[b]
        beats = predict_heartbeats(rec.steps, start["to_leader"], start["to_broker"],
                                   due_ms=start["received"] + interval, interval_ms=interval,
                                   until_ms=until)

        def times(kind: str, node: int, peer: int, what: str) -> list[int]:
            return [t for t, k, n, p, w in events if k == kind and n == node and p == peer
                    and w == what and start["received"] < t <= until]

        assert [h.sent_ms for h in beats] == times("send", b, leader, "BrokerHeartbeatRequest")
        assert [h.arrived_ms for h in beats if h.arrived_ms <= until] == \
            times("recv", leader, b, "BrokerHeartbeatRequest")
        assert [h.answered_ms for h in beats if h.answered_ms is not None] == \
            times("send", leader, b, "BrokerHeartbeatResponse")
        assert [h.received_ms for h in beats if h.received_ms is not None
                and h.received_ms <= until] == times("recv", b, leader, "BrokerHeartbeatResponse")
        assert len(beats) >= 25


def test_a_heartbeat_sees_the_answers_handled_before_it_in_the_same_millisecond():
    def trip(received_ms: int, received_tie: int, end: int) -> RoundTrip:
        return RoundTrip(end - 1, received_ms - 2, 0, end - 1, False, received_ms - 1, 0, end,
                         received_ms, received_tie, end, end)

    trips = [trip(100, 50, 11), trip(200, 70, 12), trip(300, 10, 13)]
    state = {"end_offset": 10, "high_watermark": 10}
    assert broker_state_at(trips, 100, 49, **state) == (10, 10)  # its tie runs first
    assert broker_state_at(trips, 100, 51, **state) == (11, 11)
    assert broker_state_at(trips, 200, 70, **state) == (12, 12)  # the answer's own event
    assert broker_state_at(trips, 250, 0, **state) == (12, 12)
    assert broker_state_at(trips, 999, 0, **state) == (13, 13)
