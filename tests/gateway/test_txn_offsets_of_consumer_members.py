"""TxnOffsetCommit for a KIP-848 consumer group: the member checks of Kafka 4.2.1's
``OffsetMetadataManager#validateTransactionalOffsetCommit`` over ``ConsumerGroup#validateOffsetCommit``
(a stale member epoch answered ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID, a
commit naming no member unchecked), spoken on the wire by raw clients."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient
from txn_wire import TOPIC, Wire

from kraft_testkit import Cluster, serve
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

GROUP = "eos-consumers"


def _commit(w: Wire, coordinator: RawClient, offset: int, **member) -> int:
    T = M.TxnOffsetCommitRequest
    got = coordinator.request(T(
        transactional_id=w.tid, group_id=GROUP, producer_id=w.pid, producer_epoch=w.epoch,
        topics=(T.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=(
            T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                              committed_metadata=""),)),), **member), 5)
    return got.topics[0].partitions[0].error_code


def test_a_consumer_members_transactional_commit_is_checked_by_its_member_epoch():
    pytest.importorskip("kafka")
    cluster = Cluster(3, 3, seed=29)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=2, replication_factor=3))
        w = Wire(srv, "eos-member")
        w.init()
        boot = w.conn(srv.cluster.broker_ids[0])
        found = boot.request(M.FindCoordinatorRequest(key=GROUP, key_type=0), 3)
        assert found.error_code == 0
        coordinator = w.conn(found.node_id)
        joined = coordinator.request(M.ConsumerGroupHeartbeatRequest(
            group_id=GROUP, member_id="member-a", member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=(TOPIC,), topic_partitions=()), 1)
        assert (joined.error_code, joined.member_epoch) == (0, 1)

        assert _commit(w, coordinator, 5, member_id="member-a", generation_id=7) == \
            E.ILLEGAL_GENERATION
        assert _commit(w, coordinator, 5, member_id="member-z", generation_id=1) == \
            E.UNKNOWN_MEMBER_ID
        assert _commit(w, coordinator, 5, member_id="member-a", generation_id=1) == 0
        assert _commit(w, coordinator, 6) == 0          # no member named: not checked
        w.close()
