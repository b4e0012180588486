"""The data plane behind the sockets: replication follows the replica fetches, acks=all waits
for the ISR, a killed leader's unreplicated tail is truncated when it comes back."""

from __future__ import annotations

from gateway_helpers import RawClient, one_record_batch

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

P = M.ProduceRequest


def _produce(srv, leader: int, topic: str, value: bytes, acks: int, version: int = 9):
    client = RawClient(srv.address(leader)[1])
    try:
        if acks == 0:
            client.correlation += 1
            from kraft_testkit.protocol import rpc

            client.send_bytes(rpc.encode_request(_request(topic, value, 0), 9, client.correlation))
            return None
        answer = client.request(_request(topic, value, acks), version)
        return answer.responses[0].partition_responses[0]
    finally:
        client.close()


def _request(topic: str, value: bytes, acks: int):
    part = P.PartitionProduceData(index=0, records=one_record_batch(value))
    return P(acks=acks, timeout_ms=10_000,
             topic_data=(P.TopicProduceData(name=topic, partition_data=(part,)),))


def _logs(srv, topic: str) -> dict[int, list[bytes]]:
    with srv.hold() as c:
        t = c.metadata.topic(topic)
        return {b: [x.data for x in srv.data_plane.log(b, t.id, 0).batches]
                for b in t.partitions[0].replicas}


def test_a_dead_leaders_unreplicated_tail_is_truncated(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("t", partitions=1, replication_factor=3)
        c.run_for(2_000)
        leader = c.metadata.topic("t").partitions[0].leader
    assert _produce(srv, leader, "t", b"kept", -1).error_code == 0  # on every ISR member
    assert _produce(srv, leader, "t", b"lost", 1).base_offset == 1  # on the leader only
    assert [len(v) for v in _logs(srv, "t").values()].count(2) == 1
    with srv.hold() as c:
        c.faults.kill(leader)                     # before any follower fetched "lost"
        c.run_until(lambda c: c.metadata.topic("t").partitions[0].leader not in (-1, leader),
                    timeout_ms=30_000)
        new_leader = c.metadata.topic("t").partitions[0].leader
        c.run_until(lambda c: all((b := c.broker(n)) is None or
                                  b.image.topic("t").partitions[0].leader == new_leader
                                  for n in c.broker_ids), timeout_ms=10_000)
    assert _produce(srv, new_leader, "t", b"after", -1).base_offset == 1
    with srv.hold() as c:
        c.faults.start(leader)
        c.run_until(lambda c: leader in c.metadata.topic("t").partitions[0].isr,
                    timeout_ms=60_000)
    logs = _logs(srv, "t")
    assert logs[leader] == logs[new_leader]       # the old leader truncated "lost"
    assert b"lost" not in b"".join(logs[leader]) and b"after" in b"".join(logs[leader])


def test_acks_all_needs_min_insync_replicas(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("strict", partitions=1, replication_factor=3,
                       configs={"min.insync.replicas": "3"})
        c.run_for(1_000)
        t = c.metadata.topic("strict").partitions[0]
        leader, follower = t.leader, next(r for r in t.replicas if r != t.leader)
        c.faults.kill(follower)                   # the ISR shrinks after replica.lag.time.max.ms
        c.run_until(lambda c: follower not in c.broker(leader).logic.replica("strict", 0).isr,
                    timeout_ms=60_000)
    answer = _produce(srv, leader, "strict", b"x", -1)
    assert answer.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert _produce(srv, leader, "strict", b"y", 1).error_code == 0  # acks=1 needs no quorum


def test_a_non_leader_names_the_leader(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("where", partitions=1, replication_factor=3)
        c.run_for(1_000)
        t = c.metadata.topic("where").partitions[0]
        other = next(r for r in t.replicas if r != t.leader)
    answer = _produce(srv, other, "where", b"x", 1, version=10)  # v10+ names the leader
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == \
        (t.leader, t.leader_epoch)


def test_acks_zero_gets_no_answer_but_appends(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("quiet", partitions=1, replication_factor=1)
        c.run_for(1_000)
        leader = c.metadata.topic("quiet").partitions[0].leader
    _produce(srv, leader, "quiet", b"fire-and-forget", 0)
    srv.wait_until(lambda c: srv.data_plane.log(
        leader, c.metadata.topic("quiet").id, 0).log_end_offset == 1, timeout_s=60)


def test_acks_zero_with_an_error_closes_the_connection(kraft_bootstrap, kraft_cluster):
    client = RawClient(kraft_bootstrap.address(kraft_cluster.brokers[0])[1])
    from kraft_testkit.protocol import rpc

    client.send_bytes(rpc.encode_request(_request("no-such-topic", b"x", 0), 9, 1))
    assert client.closed_by_peer()


def test_idempotent_producers_get_kafkas_sequence_checks(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("idem", partitions=1, replication_factor=3)
        c.run_for(1_000)
        leader = c.metadata.topic("idem").partitions[0].leader
    client = RawClient(srv.address(leader)[1])
    init = client.request(M.InitProducerIdRequest(transactional_id=None,
                                                  transaction_timeout_ms=60_000), 4)
    assert init.error_code == 0 and init.producer_epoch == 0
    pid = init.producer_id

    def send(value: bytes, epoch: int, seq: int):
        part = P.PartitionProduceData(index=0,
                                      records=one_record_batch(value, (pid, epoch, seq)))
        answer = client.request(P(acks=-1, timeout_ms=10_000, topic_data=(
            P.TopicProduceData(name="idem", partition_data=(part,)),)), 9)
        r = answer.responses[0].partition_responses[0]
        return r.error_code, r.base_offset

    assert send(b"a", 0, 0) == (0, 0)
    assert send(b"b", 0, 1) == (0, 1)
    assert send(b"b", 0, 1) == (0, 1)          # a retried duplicate: the first append's offset
    assert send(b"d", 0, 3)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert send(b"x", 1, 0) == (0, 2)          # a bumped epoch starts again at 0
    assert send(b"y", 0, 2)[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    second = client.request(M.InitProducerIdRequest(transactional_id=None,
                                                    transaction_timeout_ms=60_000), 4)
    assert second.producer_id == pid + 1       # the next id of the broker's block
    tx = client.request(M.InitProducerIdRequest(transactional_id="tx",
                                                transaction_timeout_ms=60_000), 4)
    assert tx.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    client.close()
    assert len(_logs(srv, "idem")[leader]) == 3
