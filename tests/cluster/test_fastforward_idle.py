"""The idle-stretch detector (kraft_testkit/fastforward/idle.py) a bulk step starts from:
busy right after every fault and admin request, idle again once the cluster settles, and
conservative: from an instant it calls idle until the test's next action, the cluster runs
nothing but the traffic a bulk step models (Fetch and BrokerHeartbeat messages to or from a
controller, node timers, disk writes of appended NoOps); a replicated topic's broker-to-broker
fetches are not modelled, so such a cluster is never idle."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.idle import MODELLED_MESSAGES, is_idle, why_not_idle
from kraft_testkit.sim import LinkProfile, Uniform


def _watch(c: Cluster, ms: int) -> tuple[int, int]:
    """Step ``ms`` of virtual time event by event. Returns (events after the first idle
    instant, idle instants seen); fails if anything unmodelled runs after an idle instant."""
    end = c.sim.now_ms + ms
    trace = c.sim.trace
    start = None
    idle_instants = 0
    sched = c.sim.scheduler
    while (at := sched.next_at()) is not None and at <= end:
        if is_idle(c):
            idle_instants += 1
            if start is None:
                start = len(trace.events())
        c.sim.step()
    sched.advance_to(end)
    if start is None:
        return 0, 0
    after = trace.events()[start:]
    for t, kind, node, peer, what in after:
        if kind in ("send", "recv"):
            assert what in MODELLED_MESSAGES, (t, kind, node, peer, what)
            assert node in c.controller_ids or peer in c.controller_ids, (t, kind, node, peer)
        else:
            assert kind in ("timer", "disk"), (t, kind, node, peer, what)
    return len(after), idle_instants


@pytest.mark.parametrize("seed, brokers", [(1, 4), (4, 10)])
def test_idle_only_between_settled_instants(seed, brokers):
    c = Cluster(3, brokers, seed=seed, trace_keep=None)
    c.run_until(lambda c: c.all_brokers_running(), timeout_ms=30_000)  # booted already
    events, idle = _watch(c, 6_000)
    assert events > 300 and idle > 100  # settles within the first seconds, stays idle

    c.create_topic("t", 3, 1)  # not replicated: no broker-to-broker fetches
    _watch(c, 4_000)
    assert is_idle(c), why_not_idle(c)

    broker = c.brokers[0]
    c.faults.kill(broker)
    assert any("is killed" in r for r in why_not_idle(c))
    _watch(c, 3_000)
    c.faults.start(broker)
    assert why_not_idle(c)
    _watch(c, 10_000)
    assert is_idle(c), why_not_idle(c)

    old = c.active_controller
    c.faults.kill(old)  # a controller failover: busy until the new quorum has settled
    assert why_not_idle(c)
    _watch(c, 8_000)
    c.faults.start(old)
    _watch(c, 8_000)
    assert is_idle(c), why_not_idle(c)

    c.faults.pause(c.controllers[1])
    assert any("paused" in r for r in why_not_idle(c))
    c.faults.resume(c.controllers[1])
    c.network.isolate(c.brokers[1])
    assert any("partition" in r for r in why_not_idle(c))
    c.network.heal()
    c.network.delay(src=c.brokers[1], ms=5)  # a handle, as for isolate
    assert any("filter" in r for r in why_not_idle(c))
    c.network.clear_filters()
    _watch(c, 20_000)
    assert is_idle(c), why_not_idle(c)


def test_a_lossy_link_is_never_idle():
    c = Cluster(3, 3, seed=2, link=LinkProfile(Uniform(1, 5), drop=0.01))
    c.run_until(lambda c: c.all_brokers_running(), timeout_ms=60_000)
    c.run_for(3_000)
    assert any("loses" in r for r in why_not_idle(c))


def test_a_replicated_topic_is_never_idle():
    """Its followers' fetches between brokers are a loop no bulk step computes yet."""
    c = Cluster(3, 3, seed=5, trace_keep=None)
    c.create_topic("r", 2, 2)
    for _ in range(20):
        c.run_for(250)
        assert any("Fetch" in r for r in why_not_idle(c)), why_not_idle(c)
