"""The transaction admin APIs through kafka-python 3.0's KafkaAdminClient (confluent-kafka 2.16
and aiokafka 0.14 expose none): ListTransactions with its filters, DescribeTransactions, and
``abort_transaction`` (a WriteTxnMarkers to the partition leader, as ``kafka-transactions.sh
abort`` sends); WriteTxnMarkers' errors and OffsetFetch's ``require_stable`` on the wire."""

from __future__ import annotations

import contextlib

import pytest
from gateway_helpers import RawClient
from txn_clients import PRODUCERS, read_all
from txn_wire import Wire

from kraft_testkit import Cluster, serve
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

TOPIC = "adm"


@contextlib.contextmanager
def _admin(srv):
    import kafka
    admin = kafka.KafkaAdminClient(bootstrap_servers=srv.bootstrap_servers,
                                   request_timeout_ms=60_000)
    try:
        yield admin
    finally:
        admin.close()


def _listed(admin, **filters) -> dict[str, str]:
    out = {}
    for listings in admin.list_transactions(**filters).values():
        for t in listings:
            out[t.transactional_id] = t.state.value
    return out


def test_list_and_describe_transactions():
    pytest.importorskip("kafka")
    cluster = Cluster(3, 3, seed=31)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=3, replication_factor=3))
        done = PRODUCERS["kafka-python"](srv.bootstrap_servers, "adm-done")
        done.init()
        done.begin()
        done.send(TOPIC, "d", 0)
        done.commit()
        done.close()
        p = PRODUCERS["kafka-python"](srv.bootstrap_servers, "adm-open")
        p.init()
        p.begin()
        p.send(TOPIC, "o0", 0)
        p.send(TOPIC, "o2", 2)
        p.flush()
        srv.run_for(5_000)
        with _admin(srv) as admin:
            assert _listed(admin) == {"adm-done": "CompleteCommit", "adm-open": "Ongoing"}
            assert _listed(admin, state_filters=["Ongoing"]) == {"adm-open": "Ongoing"}
            assert _listed(admin, transactional_id_pattern="adm-d.*") == {
                "adm-done": "CompleteCommit"}
            assert _listed(admin, transactional_id_pattern="adm") == {}   # a whole-id match
            # running longer than 3 s: both (a completed transaction keeps its start time)
            assert _listed(admin, duration_filter_ms=3_000) == {
                "adm-done": "CompleteCommit", "adm-open": "Ongoing"}
            assert _listed(admin, duration_filter_ms=600_000) == {}
            desc = admin.describe_transactions(["adm-open"])["adm-open"]
            assert desc.state.value == "Ongoing"
            assert {(tp.topic, tp.partition) for tp in desc.topic_partitions} == {
                (TOPIC, 0), (TOPIC, 2)}
            pid = desc.producer_id
            assert _listed(admin, producer_id_filters=[pid]) == {"adm-open": "Ongoing"}
            with pytest.raises(Exception, match="(?i)transactional.?id.?not.?found|105"):
                admin.describe_transactions(["nobody"])
        p.commit()
        p.close()

        # the raw answers for what the client hides: unknown state names, a bad pattern
        client = RawClient(srv.address(cluster.broker_ids[0])[1], timeout=60)
        got = client.request(M.ListTransactionsRequest(state_filters=("Ongoing", "Sleeping")), 2)
        assert got.error_code == 0 and got.unknown_state_filters == ("Sleeping",)
        bad = client.request(M.ListTransactionsRequest(transactional_id_pattern="(adm"), 2)
        assert bad.error_code == E.INVALID_REGULAR_EXPRESSION
        client.close()


def test_admin_abort_writes_an_abort_marker_and_markers_are_checked():
    pytest.importorskip("kafka")
    from kafka import TopicPartition
    from kafka.admin import AbortTransactionSpec
    cluster = Cluster(3, 3, seed=32)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=2, replication_factor=3))
        w = Wire(srv, "adm-w", topic=TOPIC)
        w.init()
        assert w.produce(0, ["h0", "h1"]) == 0       # Produce v12: an open transaction
        # zombie-coordinator and stale-epoch markers are refused by the partition leader
        leader = w.conn(w.leaders[0])
        WM = M.WriteTxnMarkersRequest

        def marker(epoch: int, coordinator_epoch: int, tv: int = 0, partition: int = 0):
            got = w.conn(w.leaders[partition]).request(WM(markers=(WM.WritableTxnMarker(
                producer_id=w.pid, producer_epoch=epoch, transaction_result=False,
                topics=(WM.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=(partition,)),),
                coordinator_epoch=coordinator_epoch, transaction_version=tv),)), 2)
            return got.markers[0].topics[0].partitions[0].error_code
        assert marker(w.epoch - 1, 0) == E.INVALID_PRODUCER_EPOCH
        assert marker(w.epoch, 0, tv=2) == E.INVALID_PRODUCER_EPOCH  # TV2: strictly newer
        unknown = leader.request(WM(markers=(WM.WritableTxnMarker(
            producer_id=w.pid, producer_epoch=w.epoch, transaction_result=False,
            topics=(WM.WritableTxnMarkerTopic(name="nope", partition_indexes=(0,)),),
            coordinator_epoch=0),)), 1)
        assert unknown.markers[0].topics[0].partitions[0].error_code == \
            E.UNKNOWN_TOPIC_OR_PARTITION
        follower = next(b for b in cluster.broker_ids if b != w.leaders[0])
        got = w.conn(follower).request(WM(markers=(WM.WritableTxnMarker(
            producer_id=w.pid, producer_epoch=w.epoch, transaction_result=False,
            topics=(WM.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=(0,)),),
            coordinator_epoch=0),)), 1)
        assert got.markers[0].topics[0].partitions[0].error_code == E.NOT_LEADER_OR_FOLLOWER

        # the admin abort (coordinator epoch -1) ends the transaction in that partition
        with _admin(srv) as admin:
            admin.abort_transaction(AbortTransactionSpec(
                topic_partition=TopicPartition(TOPIC, 0), producer_id=w.pid,
                producer_epoch=w.epoch, coordinator_epoch=-1))
        # the last stable offset moved past the abort marker: nothing is held back any more
        L = M.ListOffsetsRequest
        offsets = leader.request(L(replica_id=-1, isolation_level=1, topics=(L.ListOffsetsTopic(
            name=TOPIC, partitions=(L.ListOffsetsPartition(partition_index=0, timestamp=-1),)),)),
            5)
        assert offsets.topics[0].partitions[0].offset == 3
        assert read_all("kafka-python", srv.bootstrap_servers, TOPIC, 2, 0, timeout_s=3) == []
        assert sorted(read_all("kafka-python", srv.bootstrap_servers, TOPIC, 2, 2,
                               committed=False)) == ["h0", "h1"]
        assert marker(w.epoch, 5) == 0             # a newer coordinator's marker is taken
        assert marker(w.epoch, 3) == E.TRANSACTION_COORDINATOR_FENCED   # then an older one not
        w.close()


def test_offset_fetch_require_stable_sees_a_pending_transactional_commit():
    pytest.importorskip("kafka")
    cluster = Cluster(3, 3, seed=33)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=2, replication_factor=3))
        group = "stable"
        w = Wire(srv, "adm-s", topic=TOPIC)
        w.init()
        coord = w.conn(w.coordinator)
        added = coord.request(M.AddOffsetsToTxnRequest(
            transactional_id="adm-s", producer_id=w.pid, producer_epoch=w.epoch,
            group_id=group), 3)
        assert added.error_code == 0
        boot = w.conn(cluster.broker_ids[0])
        found = boot.request(M.FindCoordinatorRequest(key=group, key_type=0), 3)
        gc = w.conn(found.node_id)
        T = M.TxnOffsetCommitRequest
        got = gc.request(T(transactional_id="adm-s", group_id=group, producer_id=w.pid,
                           producer_epoch=w.epoch, topics=(T.TxnOffsetCommitRequestTopic(
                               name=TOPIC, partitions=(T.TxnOffsetCommitRequestPartition(
                                   partition_index=1, committed_offset=42,
                                   committed_metadata=""),)),)), 3)
        assert got.topics[0].partitions[0].error_code == 0
        F = M.OffsetFetchRequest

        def fetch(stable: bool):
            r = gc.request(F(groups=(F.OffsetFetchRequestGroup(group_id=group, topics=(
                F.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=(0, 1)),)),),
                require_stable=stable), 8)
            return {p.partition_index: (p.committed_offset, p.error_code)
                    for p in r.groups[0].topics[0].partitions}
        assert fetch(True) == {0: (-1, 0), 1: (-1, E.UNSTABLE_OFFSET_COMMIT)}
        assert fetch(False) == {0: (-1, 0), 1: (-1, 0)}
        assert w.end(True, version=3).error_code == 0
        srv.run_until(lambda c: (srv.txns.tick(), not srv.txns.busy())[1], timeout_ms=30_000)
        assert fetch(True) == {0: (-1, 0), 1: (42, 0)}
        w.close()
