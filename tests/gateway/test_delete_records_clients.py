"""DeleteRecords through each client library's admin (confluent-kafka's ``delete_records``,
kafka-python's ``KafkaAdminClient.delete_records``, aiokafka's ``AIOKafkaAdminClient``): the
low watermark comes back, the client's beginning offsets move, a consumer from the beginning
starts there, and an offset past the high watermark is the client's OFFSET_OUT_OF_RANGE."""

from __future__ import annotations

import asyncio

import pytest

TOPIC = "ledger"


def _create_and_fill(srv, count: int = 10) -> None:
    """Two partitions, ``count`` records each (b"p<partition>-<i>"), through kafka-python."""
    kafka = pytest.importorskip("kafka")
    srv.call(lambda c: c.create_topic(TOPIC, partitions=2, replication_factor=3))
    p = kafka.KafkaProducer(bootstrap_servers=srv.bootstrap_servers, acks="all")
    for part in (0, 1):
        for i in range(count):
            p.send(TOPIC, b"p%d-%d" % (part, i), partition=part)
    p.flush(60)
    p.close()


def _log_starts(srv) -> set[tuple[int, int]]:
    """(partition, log start) over every replica: the followers followed the leader."""
    with srv.hold() as c:
        t = c.metadata.topic(TOPIC)
        return {(p, srv.data_plane.log(b, t.id, p).log_start_offset)
                for p, reg in t.partitions.items() for b in reg.replicas}


def test_confluent_admin_delete_records(kraft_bootstrap):
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    _create_and_fill(kraft_bootstrap)
    admin = AdminClient({"bootstrap.servers": kraft_bootstrap.bootstrap_servers})
    futures = admin.delete_records([TopicPartition(TOPIC, 0, 4),
                                    TopicPartition(TOPIC, 1, ck.OFFSET_END)])
    lows = {tp.partition: f.result(60).low_watermark for tp, f in futures.items()}
    assert lows == {0: 4, 1: 10}  # OFFSET_END (-1): up to the high watermark
    assert _log_starts(kraft_bootstrap) == {(0, 4), (1, 10)}
    (bad,) = admin.delete_records([TopicPartition(TOPIC, 0, 99)]).values()
    with pytest.raises(ck.KafkaException) as e:
        bad.result(60)
    assert e.value.args[0].code() == ck.KafkaError.OFFSET_OUT_OF_RANGE

    c = Consumer({"bootstrap.servers": kraft_bootstrap.bootstrap_servers, "group.id": "dr",
                  "enable.auto.commit": False})
    assert c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=60) == (4, 10)
    c.assign([TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)])
    got = []
    for _ in range(200):
        m = c.poll(0.1)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.offset(), m.value()))
        if len(got) == 6:
            break
    c.close()
    assert got == [(i, b"p0-%d" % i) for i in range(4, 10)]


def test_kafka_python_admin_delete_records(kraft_bootstrap):
    kafka = pytest.importorskip("kafka")
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import OffsetOutOfRangeError

    _create_and_fill(kraft_bootstrap)
    admin = KafkaAdminClient(bootstrap_servers=kraft_bootstrap.bootstrap_servers)
    result = admin.delete_records({TopicPartition(TOPIC, 0): 3, TopicPartition(TOPIC, 1): 7})
    assert {tp.partition: r["low_watermark"] for tp, r in result.items()} == {0: 3, 1: 7}
    assert _log_starts(kraft_bootstrap) == {(0, 3), (1, 7)}
    with pytest.raises(OffsetOutOfRangeError):
        admin.delete_records({TopicPartition(TOPIC, 0): 11})
    admin.close()

    consumer = kafka.KafkaConsumer(bootstrap_servers=kraft_bootstrap.bootstrap_servers,
                                   enable_auto_commit=False, auto_offset_reset="earliest")
    parts = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    assert consumer.beginning_offsets(parts) == {parts[0]: 3, parts[1]: 7}
    consumer.assign([parts[1]])
    consumer.seek_to_beginning(parts[1])
    got = []
    for _ in range(100):
        for records in consumer.poll(timeout_ms=100).values():
            got += [(r.offset, r.value) for r in records]
        if len(got) >= 3:
            break
    consumer.close()
    assert got == [(i, b"p1-%d" % i) for i in range(7, 10)]


def test_aiokafka_admin_delete_records(kraft_bootstrap):
    pytest.importorskip("aiokafka")
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
    from aiokafka.errors import OffsetOutOfRangeError

    _create_and_fill(kraft_bootstrap)
    boot = kraft_bootstrap.bootstrap_servers

    async def main() -> tuple[dict, dict]:
        admin = AIOKafkaAdminClient(bootstrap_servers=boot)
        await admin.start()
        try:
            lows = await admin.delete_records({
                TopicPartition(TOPIC, 0): RecordsToDelete(before_offset=5),
                TopicPartition(TOPIC, 1): RecordsToDelete(before_offset=1)})
            with pytest.raises(OffsetOutOfRangeError):
                await admin.delete_records(
                    {TopicPartition(TOPIC, 1): RecordsToDelete(before_offset=50)})
        finally:
            await admin.close()
        consumer = AIOKafkaConsumer(bootstrap_servers=boot, enable_auto_commit=False)
        await consumer.start()
        try:
            begins = await consumer.beginning_offsets([TopicPartition(TOPIC, 0),
                                                       TopicPartition(TOPIC, 1)])
        finally:
            await consumer.stop()
        return lows, begins

    lows, begins = asyncio.run(main())
    assert {tp.partition: low for tp, low in lows.items()} == {0: 5, 1: 1}
    assert {tp.partition: off for tp, off in begins.items()} == {0: 5, 1: 1}
    assert _log_starts(kraft_bootstrap) == {(0, 5), (1, 1)}
    assert kraft_bootstrap.handler_errors == []
