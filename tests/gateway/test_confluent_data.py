"""confluent-kafka's Producer and Consumer (librdkafka) against the in-process cluster: produce
with acks=all and read back with assign(), across a controller failover and a broker kill."""

from __future__ import annotations

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def _produce(bootstrap: str, topic: str, partition: int, values: list[str]) -> list:
    delivered = []

    def on_delivery(err, msg):
        assert err is None, err
        delivered.append((msg.partition(), msg.offset(), msg.value().decode()))

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                  "message.timeout.ms": 30_000, "retry.backoff.ms": 50,
                  "topic.metadata.refresh.interval.ms": 500})
    for v in values:
        p.produce(topic, value=v, partition=partition, on_delivery=on_delivery)
    assert p.flush(60) == 0
    return delivered


def _consume(bootstrap: str, topic: str, partition: int, count: int) -> list[tuple[int, str]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kit-test",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, partition, 0)])
    got: list[tuple[int, str]] = []
    try:
        for _ in range(300):
            if len(got) >= count:
                break
            m = c.poll(0.1)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append((m.offset(), m.value().decode()))
    finally:
        c.close()
    return got


def _leader(cluster, topic: str, partition: int) -> int:
    return cluster.metadata.topic(topic).partitions[partition].leader


def test_produce_and_consume_round_trip(kraft_bootstrap, kraft_cluster):
    admin = AdminClient({"bootstrap.servers": kraft_bootstrap.bootstrap_servers})
    admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(60)
    delivered = _produce(kraft_bootstrap.bootstrap_servers, "orders", 1,
                         [f"order-{i}" for i in range(20)])
    assert [o for _, o, _ in delivered] == list(range(20))
    got = _consume(kraft_bootstrap.bootstrap_servers, "orders", 1, 20)
    assert got == [(i, f"order-{i}") for i in range(20)]
    with kraft_bootstrap.hold() as c:  # every ISR replica holds the committed records
        topic = c.metadata.topic("orders")
        for b in topic.partitions[1].isr:
            log = kraft_bootstrap.data_plane.log(b, topic.id, 1)
            assert log.log_end_offset == 20


def test_failover_and_broker_kill_lose_no_acknowledged_record(kraft_bootstrap, kraft_cluster):
    bootstrap = kraft_bootstrap.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("payments", 1, 3)])["payments"].result(60)
    first = _produce(bootstrap, "payments", 0, [f"a{i}" for i in range(10)])
    assert len(first) == 10

    with kraft_bootstrap.hold() as c:  # a scripted controller failover
        old = c.active_controller
        c.faults.kill(old)
        c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=10_000)
    # the admin client's requests reach the new controller (forwarded by the brokers)
    admin.create_topics([NewTopic("after-failover", 2, 3)])["after-failover"].result(60)
    assert kraft_cluster.metadata.topic("after-failover") is not None

    with kraft_bootstrap.hold() as c:  # kill the partition leader; wait for a new one
        leader = _leader(c, "payments", 0)
        c.faults.kill(leader)
        c.run_until(lambda c: _leader(c, "payments", 0) not in (-1, leader) and all(
            (b := c.broker(n)) is None or
            b.image.topic("payments").partitions[0].leader != leader
            for n in c.broker_ids), timeout_ms=30_000)
        new_leader = _leader(c, "payments", 0)
    second = _produce(bootstrap, "payments", 0, [f"b{i}" for i in range(10)])
    assert [o for _, o, _ in second] == list(range(10, 20))

    got = _consume(bootstrap, "payments", 0, 20)
    assert [v for _, v in got] == [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)]
    md = admin.list_topics(timeout=60)
    assert md.topics["payments"].partitions[0].leader == new_leader
    assert leader not in md.brokers  # the dead broker is gone from Metadata


def test_idempotent_producer(kraft_bootstrap, kraft_cluster):
    """librdkafka with enable.idempotence=true: InitProducerId, then sequenced batches."""
    admin = AdminClient({"bootstrap.servers": kraft_bootstrap.bootstrap_servers})
    admin.create_topics([NewTopic("idem", 2, 3)])["idem"].result(60)
    p = Producer({"bootstrap.servers": kraft_bootstrap.bootstrap_servers,
                  "enable.idempotence": True})
    errors = []
    for i in range(30):
        p.produce("idem", value=str(i), partition=i % 2,
                  on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(60) == 0
    assert errors == [None] * 30
    got = _consume(kraft_bootstrap.bootstrap_servers, "idem", 1, 15)
    assert [v for _, v in got] == [str(i) for i in range(1, 30, 2)]
