"""Stepping mode never stalls a client: what a client waits for (replication behind acks=1, a
dead leader's replacement, brokers catching up with a topic the test created) is brought by
virtual time jumping, with each of the three clients no one here wrote.

Each scenario: a topic created from the test (``srv.call``), an acks=1 produce read back at
once, the partition leader killed under ``hold()`` with no time run, then more records produced
and everything read back, all within the clients' ordinary timeouts.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kraft_testkit import Cluster, serve

TOPIC = "nostall"


def _confluent(bootstrap: str):
    ck = pytest.importorskip("confluent_kafka")

    def produce(values: list[str], acks: str) -> list[int]:
        offsets: list[int] = []
        errors: list = []

        def done(err, msg) -> None:
            (errors.append(err) if err is not None else offsets.append(msg.offset()))
        p = ck.Producer({"bootstrap.servers": bootstrap, "acks": acks,
                         "message.timeout.ms": 30_000, "linger.ms": 5})
        for v in values:
            p.produce(TOPIC, value=v.encode(), partition=0, on_delivery=done)
        assert p.flush(60) == 0
        assert errors == []
        return sorted(offsets)

    def consume(count: int) -> list[str]:
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "nostall",
                         "enable.auto.commit": False})
        c.assign([ck.TopicPartition(TOPIC, 0, 0)])
        got: list[str] = []
        deadline = time.monotonic() + 60
        try:
            while len(got) < count and time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is not None:
                    assert m.error() is None, m.error()
                    got.append(m.value().decode())
        finally:
            c.close()
        return got

    return produce, consume


def _kafka_python(bootstrap: str):
    kafka = pytest.importorskip("kafka")

    def produce(values: list[str], acks: str) -> list[int]:
        p = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks=1 if acks == "1" else "all",
                                retries=20, retry_backoff_ms=100, request_timeout_ms=30_000)
        try:
            futures = [p.send(TOPIC, v.encode(), partition=0) for v in values]
            return sorted(f.get(timeout=60).offset for f in futures)
        finally:
            p.close()

    def consume(count: int) -> list[str]:
        c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        c.assign([kafka.TopicPartition(TOPIC, 0)])
        c.seek(kafka.TopicPartition(TOPIC, 0), 0)
        got: list[str] = []
        deadline = time.monotonic() + 60
        try:
            while len(got) < count and time.monotonic() < deadline:
                for records in c.poll(timeout_ms=200).values():
                    got.extend(r.value.decode() for r in records)
        finally:
            c.close()
        return got

    return produce, consume


def _aiokafka(bootstrap: str):
    aiokafka = pytest.importorskip("aiokafka")

    async def _produce(values: list[str], acks: str) -> list[int]:
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap,
                                      acks=1 if acks == "1" else "all",
                                      request_timeout_ms=30_000, retry_backoff_ms=100)
        await p.start()
        try:
            futures = [await p.send(TOPIC, v.encode(), partition=0) for v in values]
            return sorted([(await f).offset for f in futures])
        finally:
            await p.stop()

    async def _consume(count: int) -> list[str]:
        c = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await c.start()
        try:
            tp = aiokafka.TopicPartition(TOPIC, 0)
            c.assign([tp])
            c.seek(tp, 0)
            got: list[str] = []
            while len(got) < count:
                got.append((await asyncio.wait_for(c.getone(), 60)).value.decode())
            return got
        finally:
            await c.stop()

    return (lambda values, acks: asyncio.run(_produce(values, acks)),
            lambda count: asyncio.run(_consume(count)))


CLIENTS = {"confluent": _confluent, "kafka-python": _kafka_python, "aiokafka": _aiokafka}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_acks_1_and_a_leader_kill_under_hold_do_not_stall(client):
    cluster = Cluster(3, 3, seed=23)
    with serve(cluster) as srv:
        produce, consume = CLIENTS[client](srv.bootstrap_servers)
        srv.call(lambda c: c.create_topic(TOPIC, partitions=1, replication_factor=3))
        first = [f"a{i}" for i in range(200)]
        assert produce(first, "1") == list(range(200))
        assert consume(200) == first  # acks=1: the consumer's long poll brings replication

        with srv.hold() as c:  # killed, and no time run: the clients' waits bring the rest
            old = c.metadata.topic(TOPIC).partitions[0].leader
            c.faults.kill(old)
            killed_at = c.now_ms
        second = [f"b{i}" for i in range(50)]
        assert produce(second, "1") == list(range(200, 250))
        assert consume(250) == first + second
        with srv.hold() as c:
            assert c.metadata.topic(TOPIC).partitions[0].leader not in (-1, old)
            jumped = c.now_ms - killed_at
        assert srv.handler_errors == []
    # the jump is what a real cluster needs: the dead leader's session (counted from its last
    # heartbeat, before the kill) to expire, and a little more; no long idle stretch
    session = cluster.config.broker_session_timeout_ms
    heartbeat = cluster.config.broker_heartbeat_interval_ms
    assert session - heartbeat <= jumped <= 3 * session


def test_hold_leaves_the_brokers_caught_up():
    cluster = Cluster(3, 3, seed=5)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic("fresh", partitions=2, replication_factor=3))
        with srv.hold() as c:
            offset = c.metadata.provenance.offset
            assert all(c.broker(n).metadata_offset >= offset for n in c.broker_ids)
            assert all(c.broker(n).image.topic("fresh") is not None for n in c.broker_ids)
