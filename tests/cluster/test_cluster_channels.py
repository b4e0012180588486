"""A broker's heartbeats travel on its controller channel (Kafka's broker keeps that connection
apart from its Raft client's), so they never queue behind the metadata fetches to the same
controller: a slow fetch path leaves the heartbeat round trips and the lease alone."""

from __future__ import annotations

from kraft_testkit import Cluster
from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import rpc
from kraft_testkit.sim import LinkProfile, Uniform


def _round_trips(c: Cluster, broker: int, kind: str, since: int) -> list[int]:
    """ms from each ``kind`` request the broker sent to the moment it was received."""
    sent: list[int] = []
    trips = []
    for t, what, node, peer, detail in c.sim.trace.events():
        if t < since:
            continue
        if what == "send" and node == broker and detail == kind:
            sent.append(t)
        elif what == "recv" and peer == broker and detail == kind and sent:
            trips.append(t - sent.pop(0))
    return trips


def test_heartbeats_do_not_wait_behind_delayed_fetches():
    c = Cluster(3, 2, seed=4, trace_keep=None, link=LinkProfile(Uniform(1, 5)))
    since = c.sim.now_ms  # booted
    c.network.delay(700, rpc.carrying(M.FetchRequest), src=0)
    c.run_for(20_000)
    heartbeats = _round_trips(c, 0, "BrokerHeartbeatRequest", since)
    fetches = _round_trips(c, 0, "FetchRequest", since)
    assert len(heartbeats) >= 8 and max(heartbeats) <= 5  # the link's own latency only
    assert min(fetches) >= 700
    assert not c.broker_state(0).fenced


def test_the_same_seed_gives_the_same_run_with_channels():
    digests = set()
    for _ in range(2):
        c = Cluster(3, 2, seed=9)
        c.run_for(5_000)
        digests.add(c.sim.trace.digest())
    assert len(digests) == 1
