"""Paced time with real clients: the cluster lives on (heartbeats, lease expiry, elections)
while an idempotent librdkafka producer keeps writing through a leader kill."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


@pytest.mark.kraft_gateway(speed=10)
def test_idempotent_producer_rides_out_a_leader_kill_in_paced_time(kraft_bootstrap,
                                                                   kraft_cluster):
    srv = kraft_bootstrap
    bootstrap = srv.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("stream", 1, 3)])["stream"].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5, "retry.backoff.ms": 100,
                         "message.timeout.ms": 60_000})
    failures = []

    def delivered(err, msg):
        if err is not None:
            failures.append(err)

    victim = None
    for i in range(200):
        producer.produce("stream", value=str(i), partition=0, on_delivery=delivered)
        producer.poll(0)
        if i == 100:
            victim = srv.call(lambda c: c.metadata.topic("stream").partitions[0].leader)
            srv.call(lambda c: c.faults.kill(victim))  # no run_until: paced time elects
        time.sleep(0.002)
    assert producer.flush(60) == 0 and failures == []
    new_leader = srv.call(lambda c: c.metadata.topic("stream").partitions[0].leader)
    assert new_leader not in (-1, victim)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "paced",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("stream", 0, 0)])
    values = []
    deadline = time.monotonic() + 120  # a bound for a loaded machine; it ends on the 200th
    while len(values) < 200 and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            values.append(int(m.value()))
    consumer.close()
    assert values == list(range(200))  # every record once, in order, across the failover
