"""Example tests written against the pytest plugin: run them with `pytest examples/`.

Each test gets a fresh in-process cluster; everything happens in virtual time, so waiting out a
broker's lease below (``broker.session.timeout.ms``, 9 s by default as in Kafka; the test waits
15 virtual seconds) takes milliseconds, and a failing test prints its seed and a replay line.
"""

import pytest

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import KafkaApiError


def test_failover_keeps_the_topic(kraft_cluster):
    kraft_cluster.create_topic("orders", partitions=6, replication_factor=3)
    old = kraft_cluster.active_controller
    kraft_cluster.faults.kill(old)
    kraft_cluster.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=10_000)
    assert len(kraft_cluster.metadata.topic("orders").partitions) == 6


@pytest.mark.kraft(controllers=3, brokers=4, racks=2, seed=7)
def test_an_isolated_broker_is_fenced_and_leads_nothing(kraft_cluster, kraft_clock, kraft_network):
    kraft_cluster.create_topic("payments", partitions=8, replication_factor=3)
    b = kraft_cluster.brokers[1]
    kraft_network.isolate(b)
    kraft_clock.advance(15_000)
    assert kraft_cluster.broker_state(b).fenced
    assert kraft_cluster.metadata.partitions_led_by(b.id) == []


def test_lost_heartbeats_fence_a_broker_without_a_partition(kraft_cluster, kraft_network,
                                                          kraft_clock):
    b = kraft_cluster.brokers[0]
    kraft_network.drop(M.BrokerHeartbeatRequest, src=b.id)      # only heartbeats are lost
    kraft_clock.run_until(lambda c: c.broker_state(b).fenced, timeout_ms=30_000)


def test_duplicate_topic_is_refused(kraft_cluster):
    kraft_cluster.create_topic("t", 1, 1)
    with pytest.raises(KafkaApiError, match="TOPIC_ALREADY_EXISTS"):
        kraft_cluster.create_topic("t", 1, 1)
