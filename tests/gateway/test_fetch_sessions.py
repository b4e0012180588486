"""Client fetch sessions (KIP-227) on the wire, as a Kafka 4.2 broker answers them
(``FetchManager#newContext``; Kafka: ``FetchSessionTest``, ``KafkaApisTest``
``testFetchRequest*Session*``): a full fetch opens a session, incremental fetches name only
what changed and get only what changed, wrong epochs and unknown ids are refused, epoch -1
closes it; kafka-python, which uses sessions, reads through them."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient, one_record_batch

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

F, P = M.FetchRequest, M.ProduceRequest


def _produce(client: RawClient, topic: str, value: bytes) -> None:
    part = P.PartitionProduceData(index=0, records=one_record_batch(value))
    answer = client.request(P(acks=-1, timeout_ms=10_000, topic_data=(
        P.TopicProduceData(name=topic, partition_data=(part,)),)), 9)
    assert answer.responses[0].partition_responses[0].error_code == 0


def _fetch(client: RawClient, session_id: int, epoch: int, offsets: dict[int, int],
           forget: tuple[int, ...] = (), topic: str = "s"):
    topics = (F.FetchTopic(topic=topic, partitions=tuple(
        F.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
        for p, o in offsets.items())),) if offsets else ()
    forgotten = (F.ForgottenTopic(topic=topic, partitions=forget),) if forget else ()
    return client.request(F(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=session_id, session_epoch=epoch,
                            topics=topics, forgotten_topics_data=forgotten), 12)


def _partitions(answer) -> dict[int, tuple[int, bytes]]:
    return {p.partition_index: (p.high_watermark, p.records or b"")
            for t in answer.responses for p in t.partitions}


def test_a_session_answers_only_what_changed(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("s", partitions=2, replication_factor=3)
        c.run_for(1_000)
        t = c.metadata.topic("s")
        assert t.partitions[0].leader == t.partitions[1].leader or True
        leader = t.partitions[0].leader
        both = [p for p, reg in t.partitions.items() if reg.leader == leader]
    client = RawClient(srv.address(leader)[1])
    _produce(client, "s", b"one")
    full = _fetch(client, 0, 0, {p: 0 for p in both})          # full: opens a session
    sid = full.session_id
    assert full.error_code == 0 and sid != 0
    assert b"one" in _partitions(full)[0][1] and set(_partitions(full)) == set(both)

    quiet = _fetch(client, sid, 1, {0: 1})                     # nothing new: nothing sent
    assert (quiet.error_code, quiet.session_id, _partitions(quiet)) == (0, sid, {})
    _produce(client, "s", b"two")
    news = _fetch(client, sid, 2, {})                          # the session remembers offset 1
    assert list(_partitions(news)) == [0] and b"two" in _partitions(news)[0][1]
    assert _partitions(news)[0][0] == 2                         # the new high watermark

    assert _fetch(client, sid, 2, {}).error_code == E.INVALID_FETCH_SESSION_EPOCH
    assert _fetch(client, sid + 1, 1, {}).error_code == E.FETCH_SESSION_ID_NOT_FOUND
    if len(both) == 2:                                         # forget one: it is not fetched
        assert _partitions(_fetch(client, sid, 3, {0: 2}, forget=(1,))) == {}
    closed = _fetch(client, sid, -1, {0: 2})                   # epoch -1: sessionless
    assert closed.session_id == 0 and 0 in _partitions(closed)
    assert _fetch(client, sid, 4, {}).error_code == E.FETCH_SESSION_ID_NOT_FOUND
    client.close()


def test_a_restarted_broker_knows_no_session(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("r", partitions=1, replication_factor=3)
        c.run_for(1_000)
        leader = c.metadata.topic("r").partitions[0].leader
    client = RawClient(srv.address(leader)[1])
    sid = _fetch(client, 0, 0, {0: 0}, topic="r").session_id
    assert sid != 0
    client.close()
    with srv.hold() as c:
        c.faults.kill(leader)
        c.faults.start(leader)
        c.run_until(lambda c: c.broker(leader) is not None and
                    c.broker(leader).state_name == "RUNNING", timeout_ms=60_000)
    client = RawClient(srv.address(leader)[1])
    assert _fetch(client, sid, 1, {}, topic="r").error_code == E.FETCH_SESSION_ID_NOT_FOUND
    client.close()


def test_kafka_python_reads_through_incremental_sessions(kraft_bootstrap):
    kafka = pytest.importorskip("kafka")
    from kafka import TopicPartition

    srv = kraft_bootstrap
    srv.call(lambda c: c.create_topic("k", partitions=1, replication_factor=3))
    producer = kafka.KafkaProducer(bootstrap_servers=srv.bootstrap_servers, acks="all")
    consumer = kafka.KafkaConsumer(bootstrap_servers=srv.bootstrap_servers,
                                   enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("k", 0)])
    got = []
    for i in range(6):                                # one record at a time: many fetches
        producer.send("k", b"v%d" % i, partition=0)
        producer.flush()
        while len(got) <= i:
            for records in consumer.poll(timeout_ms=200).values():
                got += [r.value for r in records]
    consumer.close()
    producer.close()
    assert got == [b"v%d" % i for i in range(6)]
    sessions = [s for _, cache in srv.fetch_sessions.values() for shard in cache.shards
                for s in shard.sessions.values()]
    assert any(s.epoch > 2 for s in sessions)        # it fetched incrementally
    assert srv.handler_errors == []
