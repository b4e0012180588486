"""OffsetForLeaderEpoch (23) as Kafka answers a consumer's truncation check: the leader's epoch
cache (``LeaderEpochFileCache#endOffsetFor``, cut at the log start by ``truncateFromStart``),
and on the wire after a leader change (``Partition#lastOffsetForLeaderEpoch``)."""

from __future__ import annotations

from gateway_helpers import RawClient, one_record_batch

from kraft_testkit.gateway.data_plane import PartitionLog
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

O, P = M.OffsetForLeaderEpochRequest, M.ProduceRequest


def _log(epochs: list[int]) -> PartitionLog:
    """One one-record batch per entry, appended at that leader epoch."""
    log = PartitionLog()
    for i, epoch in enumerate(epochs):
        log.append([one_record_batch(b"v%d" % i)], epoch, i)
    return log


def test_the_epoch_cache_answers_as_kafkas():
    """LeaderEpochFileCacheTest: shouldReturnLogEndOffsetIfLatestEpochRequested,
    shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested,
    shouldReturnUnsupportedIfNoEpochRecorded (-1), shouldReturnUndefinedOffsetIfEpochIsGreater,
    shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch,
    shouldRetainLatestEpochOnTruncatingFromStart-style log-start cuts."""
    log = _log([0, 0, 2, 2, 5])                        # offsets 0-4
    assert log.end_offset_for_epoch(5, 5) == (5, 5)     # the latest epoch: the log end
    assert log.end_offset_for_epoch(0, 5) == (0, 2)     # epoch 0 ends where 2 starts
    assert log.end_offset_for_epoch(1, 5) == (0, 2)     # no epoch 1: the one below, 2's start
    assert log.end_offset_for_epoch(4, 5) == (2, 4)
    assert log.end_offset_for_epoch(6, 5) == (-1, -1)   # newer than any: undefined
    assert log.end_offset_for_epoch(-1, 5) == (-1, -1)  # UNDEFINED_EPOCH
    # a leader elected at epoch 7 that appended nothing: its epoch starts at its log end
    assert log.end_offset_for_epoch(5, 7) == (5, 5)
    assert log.end_offset_for_epoch(7, 7) == (7, 5)
    log.high_watermark = 5
    log.increment_log_start(3)                          # epoch 0 gone; epoch 2 starts at 3
    assert log.epoch_entries(5) == [(2, 3), (5, 4)]
    assert log.end_offset_for_epoch(0, 5) == (0, 3)     # older than every entry: itself
    assert log.end_offset_for_epoch(2, 5) == (2, 4)


def _request(topic: str, epoch: int, current: int = -1):
    return O(replica_id=-1, topics=(O.OffsetForLeaderTopic(topic=topic, partitions=(
        O.OffsetForLeaderPartition(partition=0, current_leader_epoch=current,
                                   leader_epoch=epoch),)),))


def test_a_consumer_checks_its_epoch_after_a_leader_change(kraft_bootstrap, kraft_cluster):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("e", partitions=1, replication_factor=3)
        c.run_for(1_000)
        reg = c.metadata.topic("e").partitions[0]
        leader, first_epoch = reg.leader, reg.leader_epoch
    client = RawClient(srv.address(leader)[1])
    for v in (b"a", b"b", b"c"):
        part = P.PartitionProduceData(index=0, records=one_record_batch(v))
        client.request(P(acks=-1, timeout_ms=10_000, topic_data=(
            P.TopicProduceData(name="e", partition_data=(part,)),)), 9)
    client.close()
    with srv.hold() as c:
        c.faults.kill(leader)
        c.run_until(lambda c: c.metadata.topic("e").partitions[0].leader not in (-1, leader),
                    timeout_ms=30_000)
        reg = c.metadata.topic("e").partitions[0]
        new_leader, epoch = reg.leader, reg.leader_epoch
        follower = next(r for r in reg.replicas if r not in (leader, new_leader))
    assert epoch > first_epoch
    client = RawClient(srv.address(new_leader)[1])
    answer = client.request(_request("e", first_epoch, epoch), 4).topics[0].partitions[0]
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, first_epoch, 3)
    answer = client.request(_request("e", epoch, epoch), 4).topics[0].partitions[0]
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, epoch, 3)
    answer = client.request(_request("e", first_epoch, first_epoch), 3).topics[0].partitions[0]
    assert answer.error_code == E.FENCED_LEADER_EPOCH   # the client's metadata is stale
    answer = client.request(_request("e", epoch, epoch + 1), 2).topics[0].partitions[0]
    assert answer.error_code == E.UNKNOWN_LEADER_EPOCH  # the broker's is
    client.close()
    client = RawClient(srv.address(follower)[1])        # a follower at the same epoch
    answer = client.request(_request("e", epoch, epoch), 4).topics[0].partitions[0]
    assert (answer.error_code, answer.end_offset) == (E.NOT_LEADER_OR_FOLLOWER, -1)
    answer = client.request(_request("e", epoch, first_epoch), 4).topics[0].partitions[0]
    assert answer.error_code == E.FENCED_LEADER_EPOCH   # epoch checked first (getLocalLog)
    client.close()
