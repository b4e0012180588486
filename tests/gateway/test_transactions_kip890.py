"""KIP-890 through the gateway, spoken on the wire by a raw client (none of confluent-kafka
2.16, kafka-python 3.0.12 or aiokafka 0.14 sends Produce v12 or EndTxn v5; they send Produce
v10/v9/v7, EndTxn v1/v3/v0):

* transaction.version 2 (part 2): Produce v12 adds its partition to the transaction itself (no
  AddPartitionsToTxn), EndTxn v5 bumps the epoch at every commit and abort and answers the new
  one, markers carry it, and a producer at an older epoch is fenced;
* part 1, for the older clients: a transactional Produce to a partition the transaction never
  added is refused with INVALID_TXN_STATE (v10 and older) or TRANSACTION_ABORTABLE (v11), so a
  hanging transaction cannot start; AddPartitionsToTxn v4+ ``verifyOnly`` answers the same
  check (``TransactionCoordinator#handleVerifyPartitionsInTransaction``).
"""

from __future__ import annotations

import pytest
from txn_clients import read_all
from txn_wire import TOPIC, Wire

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.txn import log_state
from kraft_testkit.gateway.txn.state import ONGOING
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

def _state(srv, tid: str):
    def read(_):
        for shard in srv.txns.shards.values():
            if tid in shard.txns:
                return shard.txns[tid]
        return None
    return srv.call(read)


def _marker_epochs(srv, partition: int) -> list[tuple[int, int]]:
    """(marker type, producer epoch) of the control batches in ``partition``'s leader log."""
    def read(c):
        t = c.metadata.topic(TOPIC)
        log = srv.data_plane.log(t.partitions[partition].leader, t.id, partition)
        return [(log_state.marker_type(b.data), b.producer_epoch) for b in log.batches
                if b.is_control]
    return srv.call(read)


def test_tv2_produce_adds_the_partition_and_every_end_bumps_the_epoch():
    pytest.importorskip("kafka")
    cluster = Cluster(3, 3, seed=21)
    with serve(cluster) as srv:
        assert srv.call(lambda c: dict(__import__(
            "kraft_testkit.controller.features", fromlist=["x"]).finalized_features(
                c.metadata))["transaction.version"]) == 2
        srv.call(lambda c: c.create_topic(TOPIC, partitions=2, replication_factor=3))
        w = Wire(srv, "tv2-a")
        w.init()
        e0 = w.epoch
        assert w.produce(0, ["c0", "c1"]) == 0      # no AddPartitionsToTxn: Produce v12 adds
        assert w.produce(1, ["c2"]) == 0
        meta = _state(srv, "tv2-a")
        assert meta.state == ONGOING and meta.partitions == {(TOPIC, 0), (TOPIC, 1)}
        assert meta.client_tv == 2
        got = w.end(True)
        assert (got.error_code, got.producer_id, got.producer_epoch) == (0, w.pid, e0 + 1)
        assert w.produce(0, ["a0"]) == 0            # the next transaction at the new epoch
        got = w.end(False)
        assert (got.error_code, got.producer_epoch) == (0, e0 + 2)
        # markers carry the bumped epoch: commit at e0+1 (both partitions), abort at e0+2
        assert _marker_epochs(srv, 0) == [(1, e0 + 1), (0, e0 + 2)]
        assert _marker_epochs(srv, 1) == [(1, e0 + 1)]
        # a retried EndTxn (the epoch it was sent with) gets the same answer, not a new end
        again = w.end(False, epoch=e0 + 1)
        assert (again.error_code, again.producer_epoch) == (0, e0 + 2)
        # a producer still at an old epoch is fenced, at the leader and at the coordinator
        assert w.produce(1, ["z"], epoch=e0 + 1) == E.INVALID_PRODUCER_EPOCH
        assert w.end(True, epoch=e0).error_code == E.PRODUCER_FENCED
        # an abort with nothing added is allowed in TV2 (and bumps the epoch)
        got = w.end(False)
        assert (got.error_code, got.producer_epoch) == (0, e0 + 3)
        w.close()
        got = read_all("kafka-python", srv.bootstrap_servers, TOPIC, 2, 3)
        assert sorted(got) == ["c0", "c1", "c2"]


def test_tv1_produce_to_a_partition_not_in_the_transaction_is_refused():
    pytest.importorskip("kafka")
    cluster = Cluster(3, 3, seed=22)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=2, replication_factor=3))
        w = Wire(srv, "tv1-a")
        w.init()
        # never added: refused before anything reaches the log (no hanging transaction)
        assert w.produce(0, ["x"], version=10) == E.INVALID_TXN_STATE
        assert w.produce(0, ["x"], version=11) == E.TRANSACTION_ABORTABLE
        coord = w.conn(w.coordinator)
        add = coord.request(M.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="tv1-a", v3_and_below_producer_id=w.pid,
            v3_and_below_producer_epoch=w.epoch, v3_and_below_topics=(
                M.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC,
                                                                    partitions=(0,)),)), 3)
        assert add.results_by_topic_v3_and_below[0].results_by_partition[0] \
            .partition_error_code == 0
        assert w.produce(0, ["ok"], version=10) == 0
        assert w.produce(1, ["no"], version=10) == E.INVALID_TXN_STATE

        # the broker-to-coordinator form: verifyOnly for both partitions
        T = M.AddPartitionsToTxnRequest
        verify = coord.request(T(transactions=(T.AddPartitionsToTxnTransaction(
            transactional_id="tv1-a", producer_id=w.pid, producer_epoch=w.epoch,
            verify_only=True, topics=(T.AddPartitionsToTxnTopic(name=TOPIC,
                                                                partitions=(0, 1)),)),)), 5)
        codes = {p.partition_index: p.partition_error_code
                 for p in verify.results_by_transaction[0].topic_results[0].results_by_partition}
        assert codes == {0: 0, 1: E.TRANSACTION_ABORTABLE}
        stale = coord.request(T(transactions=(T.AddPartitionsToTxnTransaction(
            transactional_id="tv1-a", producer_id=w.pid, producer_epoch=w.epoch + 1,
            verify_only=True, topics=(T.AddPartitionsToTxnTopic(name=TOPIC,
                                                                partitions=(0,)),)),)), 5)
        assert stale.results_by_transaction[0].topic_results[0].results_by_partition[0] \
            .partition_error_code == E.PRODUCER_FENCED
        assert w.end(True, version=3).error_code == 0
        w.close()
        assert read_all("kafka-python", srv.bootstrap_servers, TOPIC, 2, 1) == ["ok"]


def _txn_offset_commit(w: Wire, group: str, offset: int, version: int) -> int:
    boot = w.conn(w.srv.cluster.broker_ids[0])
    found = boot.request(M.FindCoordinatorRequest(key=group, key_type=0), 3)
    T = M.TxnOffsetCommitRequest
    got = w.conn(found.node_id).request(T(
        transactional_id=w.tid, group_id=group, producer_id=w.pid, producer_epoch=w.epoch,
        topics=(T.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=(
            T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                              committed_metadata=""),)),)), version)
    return got.topics[0].partitions[0].error_code


def _committed(w: Wire, group: str) -> int:
    boot = w.conn(w.srv.cluster.broker_ids[0])
    found = boot.request(M.FindCoordinatorRequest(key=group, key_type=0), 3)
    F = M.OffsetFetchRequest
    got = w.conn(found.node_id).request(F(groups=(F.OffsetFetchRequestGroup(
        group_id=group, topics=(F.OffsetFetchRequestTopics(name=TOPIC,
                                                           partition_indexes=(0,)),)),),
        require_stable=True), 8)
    return got.groups[0].topics[0].partitions[0].committed_offset


def test_txn_offset_commit_is_verified_or_adds_its_partition():
    """TxnOffsetCommit v4 and older without AddOffsetsToTxn: INVALID_TXN_STATE (v3) or
    TRANSACTION_ABORTABLE (v4); v5 (transaction.version 2) adds the group's partition itself."""
    pytest.importorskip("kafka")
    cluster = Cluster(3, 3, seed=23)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=2, replication_factor=3))
        w = Wire(srv, "tv2-o")
        w.init()
        assert _txn_offset_commit(w, "g-o", 7, 3) == E.INVALID_TXN_STATE
        assert _txn_offset_commit(w, "g-o", 7, 4) == E.TRANSACTION_ABORTABLE
        assert _txn_offset_commit(w, "g-o", 7, 5) == 0     # no AddOffsetsToTxn: added
        meta = _state(srv, "tv2-o")
        assert any(t == "__consumer_offsets" for t, _ in meta.partitions)
        assert w.produce(0, ["x"]) == 0
        assert w.end(True).error_code == 0
        srv.run_until(lambda c: (srv.txns.tick(), not srv.txns.busy())[1], timeout_ms=30_000)
        assert _committed(w, "g-o") == 7
        w.close()
