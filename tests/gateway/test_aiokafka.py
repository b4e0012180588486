"""aiokafka (asyncio, its own protocol code) against the in-process cluster: admin, producer
with acks=all, consumer with assign(), across a partition leader kill."""

from __future__ import annotations

import asyncio

import pytest

aiokafka = pytest.importorskip("aiokafka")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic


async def _produce(bootstrap: str, values: list[str]) -> list[int]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                request_timeout_ms=20_000, retry_backoff_ms=100)
    await producer.start()
    try:
        return [(await producer.send_and_wait("aio", v.encode(), partition=0)).offset
                for v in values]
    finally:
        await producer.stop()


async def _consume(bootstrap: str, count: int) -> list[str]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition("aio", 0)])
        await consumer.seek_to_beginning()
        return [(await asyncio.wait_for(consumer.getone(), 20)).value.decode()
                for _ in range(count)]
    finally:
        await consumer.stop()


def test_aiokafka_round_trip_across_a_leader_kill(kraft_bootstrap, kraft_cluster):
    bootstrap = kraft_bootstrap.bootstrap_servers

    async def create() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("aio", 1, 3)])
        finally:
            await admin.close()

    asyncio.run(create())
    assert kraft_cluster.metadata.topic("aio") is not None
    assert asyncio.run(_produce(bootstrap, ["a", "b", "c"])) == [0, 1, 2]
    with kraft_bootstrap.hold() as c:
        leader = c.metadata.topic("aio").partitions[0].leader
        c.faults.kill(leader)
        c.run_until(lambda c: all((b := c.broker(n)) is None or
                                  b.image.topic("aio").partitions[0].leader not in (-1, leader)
                                  for n in c.broker_ids), timeout_ms=30_000)
    assert asyncio.run(_produce(bootstrap, ["d", "e"])) == [3, 4]
    assert asyncio.run(_consume(bootstrap, 5)) == ["a", "b", "c", "d", "e"]
    assert kraft_bootstrap.handler_errors == []
