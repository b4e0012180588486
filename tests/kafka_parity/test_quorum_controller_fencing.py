"""Kafka 4.2.1 ``QuorumControllerTest``'s broker fencing and registration scenarios, ported to a
whole kit cluster (one controller, real brokers over the simulated network): Kafka's test sends
the heartbeats itself; here a broker that "stops heartbeating" is a killed one.

The lease task is ``QuorumController``'s ``maybeFenceStaleBroker`` periodic task: every
session/8 (``maybeFenceStaleBrokerPeriodNs``) from activation, one expired session per run,
10 ms later again when a run found one (``PeriodicTask``'s immediate period).
"""

from __future__ import annotations

import pytest

from kraft_testkit import Cluster
from kraft_testkit.controller.cluster import SOFT_STATE_KEY

SESSION_MS = 1000


def _manager(c: Cluster):
    return c.controller_node(c.active_controller).controller.soft[SOFT_STATE_KEY]


@pytest.mark.kafka("QuorumControllerTest#testFenceMultipleBrokers")
def test_fence_multiple_brokers():
    """Five brokers, topic foo with 5 partitions x 5 replicas; brokers 2-5 stop heartbeating:
    within 3 session timeouts all four are fenced, broker 1 is not, foo-0's ISR is [1] and
    its leader 1, and leaders are imbalanced. Each is fenced by the first check after its
    session expired (later by 10 ms per broker fenced before it in the same round)."""
    c = Cluster(1, 5, seed=3, configs={"broker.session.timeout.ms": SESSION_MS,
                                       "broker.heartbeat.interval.ms": 250})
    all_brokers = [c.brokers[i] for i in range(5)]
    keep, fence = all_brokers[0], all_brokers[1:]
    c.create_topic("foo", partitions=5, replication_factor=5)
    manager = _manager(c)
    period = SESSION_MS / 8
    for b in fence:
        c.faults.kill(b)
    start = c.now_ms
    contact: dict[int, int] = {}
    fenced_at: dict[int, int] = {}
    while len(fenced_at) < len(fence) and c.now_ms - start <= 3 * SESSION_MS:
        for b in fence:
            reg = c.metadata.cluster.broker(b.id)
            t = manager.contact_ms(b.id, reg.epoch)
            if t is not None:
                contact[b.id] = t
            if b.id not in fenced_at and c.controller_node(c.active_controller).controller \
                    .image.cluster.broker(b.id).fenced:
                fenced_at[b.id] = c.now_ms
        c.run_for(1)
    assert sorted(fenced_at) == [b.id for b in fence]
    assert max(fenced_at.values()) - start <= 3 * SESSION_MS
    for b, at in fenced_at.items():
        assert contact[b] + SESSION_MS < at <= contact[b] + SESSION_MS + period + 10 * 3
    c.run_for(SESSION_MS)
    assert not c.broker_state(keep).fenced
    assert all(c.broker_state(b).fenced for b in fence)
    p0 = c.metadata.partition("foo", 0)
    assert list(p0.isr) == [keep.id] and p0.leader == keep.id
    assert any(p.leader != p.replicas[0] for p in c.metadata.topic("foo").partitions.values())
