"""DeleteRecords (21) on the wire, as Kafka 4.2's ``ReplicaManager#deleteRecords`` answers it:
the leader moves its log start, followers follow with their next replica fetch, the answer
waits for the low watermark; ListOffsets EARLIEST and Fetch see the new start at once; Kafka's
errors for a follower, an unknown partition, an offset past the high watermark, a compacted
topic and an internal one. (Kafka: ``DeleteRecordsRequestTest``, ``ReplicaManagerTest``
``testDeleteRecords*``.)"""

from __future__ import annotations

from gateway_helpers import RawClient, one_record_batch

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

D, P, F, L = M.DeleteRecordsRequest, M.ProduceRequest, M.FetchRequest, M.ListOffsetsRequest


def _delete(client: RawClient, topic: str, offset: int, partition: int = 0,
            timeout_ms: int = 30_000, version: int = 2):
    req = D(topics=(D.DeleteRecordsTopic(name=topic, partitions=(
        D.DeleteRecordsPartition(partition_index=partition, offset=offset),)),),
        timeout_ms=timeout_ms)
    answer = client.request(req, version).topics[0].partitions[0]
    return answer.error_code, answer.low_watermark


def _produce(client: RawClient, topic: str, values: list[bytes]) -> None:
    for v in values:
        part = P.PartitionProduceData(index=0, records=one_record_batch(v))
        answer = client.request(P(acks=-1, timeout_ms=10_000, topic_data=(
            P.TopicProduceData(name=topic, partition_data=(part,)),)), 9)
        assert answer.responses[0].partition_responses[0].error_code == 0


def _earliest(client: RawClient, topic: str) -> int:
    answer = client.request(L(replica_id=-1, isolation_level=0, topics=(L.ListOffsetsTopic(
        name=topic, partitions=(L.ListOffsetsPartition(partition_index=0, timestamp=-2),)),)), 7)
    return answer.topics[0].partitions[0].offset


def _fetch(client: RawClient, topic: str, offset: int):
    req = F(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
            topics=(F.FetchTopic(topic=topic, partitions=(F.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),)),))
    return client.request(req, 11).responses[0].partitions[0]


def _topic(srv, name: str, configs: dict | None = None) -> tuple[int, list[int]]:
    with srv.hold() as c:
        c.create_topic(name, partitions=1, replication_factor=3, configs=configs or {})
        c.run_for(1_000)
        reg = c.metadata.topic(name).partitions[0]
        return reg.leader, [r for r in reg.replicas if r != reg.leader]


def _log_starts(srv, name: str) -> dict[int, int]:
    with srv.hold() as c:
        t = c.metadata.topic(name)
        return {b: srv.data_plane.log(b, t.id, 0).log_start_offset
                for b in t.partitions[0].replicas}


def test_the_leader_moves_its_log_start_and_followers_follow(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    leader, followers = _topic(srv, "t")
    client = RawClient(srv.address(leader)[1])
    _produce(client, "t", [b"r%d" % i for i in range(10)])

    assert _delete(client, "t", 4) == (E.NONE, 4)  # answered once every replica is at 4
    assert _log_starts(srv, "t") == {b: 4 for b in [leader, *followers]}
    assert _earliest(client, "t") == 4
    below = _fetch(client, "t", 3)
    assert below.error_code == E.OFFSET_OUT_OF_RANGE
    at = _fetch(client, "t", 4)
    assert at.error_code == 0 and at.log_start_offset == 4 and b"r4" in at.records
    assert b"r3" not in at.records

    assert _delete(client, "t", 2) == (E.NONE, 4)   # never back: answered with the start
    assert _delete(client, "t", -1) == (E.NONE, 10)  # -1: up to the high watermark
    assert _earliest(client, "t") == 10
    assert _delete(client, "t", 11)[0] == E.OFFSET_OUT_OF_RANGE  # past the high watermark
    assert _delete(client, "t", -2)[0] == E.OFFSET_OUT_OF_RANGE
    _produce(client, "t", [b"after"])               # appends go on at the log end
    assert _fetch(client, "t", 10).records.count(b"after") == 1
    client.close()


def test_kafkas_errors(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    leader, followers = _topic(srv, "plain")
    _topic(srv, "compacted", {"cleanup.policy": "compact"})
    both_leader, _ = _topic(srv, "both", {"cleanup.policy": "compact,delete"})
    follower = RawClient(srv.address(followers[0])[1])
    assert _delete(follower, "plain", 0) == (E.NOT_LEADER_OR_FOLLOWER, -1)
    assert _delete(follower, "nope", 0) == (E.UNKNOWN_TOPIC_OR_PARTITION, -1)
    assert _delete(follower, "plain", 0, partition=7) == (E.UNKNOWN_TOPIC_OR_PARTITION, -1)
    follower.close()
    with srv.hold() as c:
        compact_leader = c.metadata.topic("compacted").partitions[0].leader
    client = RawClient(srv.address(compact_leader)[1])
    assert _delete(client, "compacted", 0) == (E.POLICY_VIOLATION, -1)
    client.close()
    client = RawClient(srv.address(both_leader)[1])
    assert _delete(client, "both", 0, version=0) == (E.NONE, 0)  # delete is among the policies
    client.close()
    with srv.hold() as c:  # an internal topic, even at its leader
        c.create_topic("__consumer_offsets", partitions=1, replication_factor=3)
        c.run_for(1_000)
        internal_leader = c.metadata.topic("__consumer_offsets").partitions[0].leader
    client = RawClient(srv.address(internal_leader)[1])
    assert _delete(client, "__consumer_offsets", 0, version=1) == (E.INVALID_TOPIC_EXCEPTION, -1)
    client.close()


def test_a_silent_follower_holds_the_answer_until_the_timeout(kraft_bootstrap, kraft_cluster):
    """``DelayedDeleteRecords``: a live replica that does not fetch keeps the low watermark
    down; at ``timeout_ms`` the answer is REQUEST_TIMED_OUT with the low watermark as it was,
    while the leader's own log start has moved (what consumers see)."""
    srv = kraft_bootstrap
    leader, followers = _topic(srv, "slow")
    client = RawClient(srv.address(leader)[1])
    _produce(client, "slow", [b"r%d" % i for i in range(5)])
    with srv.hold() as c:
        c.faults.pause(followers[0])              # alive (not fenced yet), not fetching
    assert _delete(client, "slow", 3, timeout_ms=1_000) == (E.REQUEST_TIMED_OUT, 0)
    assert _earliest(client, "slow") == 3
    with srv.hold() as c:
        c.faults.resume(followers[0])
    assert _delete(client, "slow", 3) == (E.NONE, 3)  # the follower fetched: low watermark 3
    client.close()


def test_a_new_leader_keeps_the_log_start(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    leader, _ = _topic(srv, "moved")
    client = RawClient(srv.address(leader)[1])
    _produce(client, "moved", [b"r%d" % i for i in range(6)])
    assert _delete(client, "moved", 5) == (E.NONE, 5)
    client.close()
    with srv.hold() as c:
        c.faults.kill(leader)
        c.run_until(lambda c: c.metadata.topic("moved").partitions[0].leader not in (-1, leader),
                    timeout_ms=30_000)
        new_leader = c.metadata.topic("moved").partitions[0].leader
    client = RawClient(srv.address(new_leader)[1])
    assert _earliest(client, "moved") == 5
    assert _fetch(client, "moved", 4).error_code == E.OFFSET_OUT_OF_RANGE
    client.close()
