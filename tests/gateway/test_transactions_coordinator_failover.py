"""The transaction coordinator's broker dies between PrepareCommit and CompleteCommit: the new
leader of the transactional id's ``__transaction_state`` partition reloads PrepareCommit from
its replica (``TransactionStateManager#loadTransactionsForTxnTopicPartition``), writes the
markers still missing and moves to CompleteCommit (``TransactionMarkerChannelManager``); a
``read_committed`` consumer sees the transaction's records exactly once. The transaction is
spoken on the wire (a client library could move virtual time between the EndTxn answer and
the kill, closing the window), with transaction.version 1 and 2 requests."""

from __future__ import annotations

import pytest
from txn_clients import read_all
from txn_wire import Wire

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.groups.coordinator import partition_for
from kraft_testkit.gateway.txn import log_state, records
from kraft_testkit.gateway.txn.state import COMPLETE_COMMIT, PREPARE_COMMIT, TXN_TOPIC
from kraft_testkit.protocol import messages as M

TOPIC, PARTITIONS = "fo", 3


def _last_value(c, srv, tid: str):
    """The last TransactionLogValue of ``tid`` in its partition's current leader log."""
    t = c.metadata.topic(TXN_TOPIC)
    p = partition_for(tid, len(t.partitions))
    log = srv.data_plane.log(t.partitions[p].leader, t.id, p)
    values = [records.replay([b.data]).get(tid) for b in log.batches]
    return [v for v in values if v is not None][-1], t.partitions[p].leader


def _commit_markers(c, srv) -> dict[int, int]:
    """partition -> how many commit markers its leader's log holds."""
    t = c.metadata.topic(TOPIC)
    out = {}
    for p, reg in t.partitions.items():
        log = srv.data_plane.log(reg.leader, t.id, p)
        out[p] = sum(1 for b in log.batches if b.is_control and
                     log_state.marker_type(b.data) == log_state.COMMIT)
    return out


@pytest.mark.parametrize("tv", [1, 2])
def test_a_new_coordinator_finishes_a_prepared_commit(tv):
    pytest.importorskip("kafka")
    cluster = Cluster(3, 3, seed=40 + tv)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        tid = f"fo-{tv}"
        w = Wire(srv, tid, topic=TOPIC)
        w.init()
        if tv == 1:
            T = M.AddPartitionsToTxnRequest
            added = w.conn(w.coordinator).request(T(
                v3_and_below_transactional_id=tid, v3_and_below_producer_id=w.pid,
                v3_and_below_producer_epoch=w.epoch, v3_and_below_topics=(
                    T.AddPartitionsToTxnTopic(name=TOPIC, partitions=tuple(range(PARTITIONS))),
                )), 3)
            assert all(r.partition_error_code == 0 for t in added.results_by_topic_v3_and_below
                       for r in t.results_by_partition)
        values = [f"r{i}" for i in range(9)]
        for p in range(PARTITIONS):
            assert w.produce(p, values[p::PARTITIONS], version=12 if tv == 2 else 9) == 0
        ended = w.end(True, version=5 if tv == 2 else 3)
        assert ended.error_code == 0
        victim = w.coordinator
        with srv.hold() as c:
            value, leader = _last_value(c, srv, tid)
            assert (value.transaction_status, leader) == (PREPARE_COMMIT, victim)
            assert value.producer_epoch == w.epoch    # TV2: the bumped one EndTxn answered
            c.faults.kill(victim)
            c.run_until(lambda c: not any(
                reg.leader in (-1, victim) for name in (TOPIC, TXN_TOPIC)
                for reg in c.metadata.topic(name).partitions.values()), timeout_ms=60_000)
        w.close()
        got = read_all("kafka-python", srv.bootstrap_servers, TOPIC, PARTITIONS, len(values))
        assert sorted(got) == values                  # every record once
        value, leader = srv.call(lambda c: _last_value(c, srv, tid))
        assert value.transaction_status == COMPLETE_COMMIT and leader != victim
        assert all(n >= 1 for n in srv.call(lambda c: _commit_markers(c, srv)).values())
