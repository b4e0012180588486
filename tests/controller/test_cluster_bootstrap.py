"""Bootstrap and activation records, NoOps, and the golden history of a 3-broker MV 18 cluster
(written by a Kafka trunk build of late 2023, 3.7-to-be; compared as Kafka 4.x writes it)."""

from __future__ import annotations

import heapq

import pytest
from cluster_helpers import CLUSTER_ID, Harness, as_kafka_4, golden_batches, heartbeat, types

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import cluster
from kraft_testkit.controller.bootstrap import (
    BootstrapError,
    BootstrapMetadata,
    activation_records,
    bootstrap_records,
    is_empty_log,
)
from kraft_testkit.controller.noop import maybe_noop, next_noop_ms
from kraft_testkit.controller.result import record
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import encode_record

#: Kafka 4.x's bootstrap transaction (ActivationRecordsGenerator#recordsForEmptyLog): no
#: ZkMigrationStateRecord, which 3.4-3.9 wrote before the EndTransactionRecord
TXN = ["BeginTransactionRecord", "FeatureLevelRecord", "EndTransactionRecord"]


# ---------------------------------------------------------------- bootstrap records


#: what Kafka 4.2's format step finalizes besides metadata.version (Feature.defaultVersion)
FEATURES_AT = {
    22: ["group.version"],
    24: ["group.version", "transaction.version"],
    26: ["eligible.leader.replicas.version", "group.version", "transaction.version"],
    28: ["eligible.leader.replicas.version", "group.version", "share.version",
         "transaction.version"],
    29: ["eligible.leader.replicas.version", "group.version", "share.version",
         "streams.version", "transaction.version"],
}


def _features_at(mv: int) -> list[str]:
    return next((FEATURES_AT[lv] for lv in sorted(FEATURES_AT, reverse=True) if mv >= lv), [])


@pytest.mark.parametrize("mv", [v.level for v in V.VERSIONS if 4 <= v.level <= 29])
def test_bootstrap_records_by_metadata_version(mv):
    records = bootstrap_records(mv)
    others = _features_at(mv)
    names = [r.message.name for r in records if isinstance(r.message, M.FeatureLevelRecord)]
    assert names == ["metadata.version", *others]
    # ELR on (4.1-IV0+): Kafka's ELR safety record, a cluster-level min.insync.replicas
    safety = [r.message for r in records if isinstance(r.message, M.ConfigRecord)]
    assert safety == ([M.ConfigRecord(resource_type=4, resource_name="",
                                      name="min.insync.replicas", value="1")]
                      if mv >= 26 else [])
    records = [r for r in records if not isinstance(r.message, M.ConfigRecord)]
    records = [r for r in records if not (isinstance(r.message, M.FeatureLevelRecord)
                                          and r.message.name != "metadata.version")]
    if mv >= 13:        # 3.6-IV1: metadata transactions
        assert types(records) == TXN
        assert records[0].message == M.BeginTransactionRecord(name="Bootstrap records")
    else:               # one atomic batch; Kafka 4.x writes no ZK migration state at any level
        assert types(records) == ["FeatureLevelRecord"]
    level = next(r.message for r in records if isinstance(r.message, M.FeatureLevelRecord))
    assert level == M.FeatureLevelRecord(name="metadata.version", feature_level=mv)
    assert all(r.version == 0 for r in records)
    image = MetadataImage.EMPTY.replay(records)
    assert image.metadata_version == mv and not image.in_transaction
    assert image.features.zk_migration_state == 0


@pytest.mark.parametrize("mv", [1, 2, 3, 0, 99, "3.2-IV0", "9.9-IV9"])
def test_no_bootstrap_before_3_3_iv0_or_at_unknown_levels(mv):
    with pytest.raises(BootstrapError):
        bootstrap_records(mv)


def test_bootstrap_with_other_features_and_names():
    records = bootstrap_records("3.7-IV4", {"transaction.version": 2, "group.version": 1,
                                           "eligible.leader.replicas.version": 0})
    levels = [(r.message.name, r.message.feature_level) for r in records
              if isinstance(r.message, M.FeatureLevelRecord)]
    assert levels == [("metadata.version", 19), ("group.version", 1),
                      ("transaction.version", 2)]
    image = MetadataImage.EMPTY.replay(records)
    assert dict(image.features.finalized) == {"group.version": 1, "transaction.version": 2}


@pytest.mark.parametrize("mv, features, why", [
    (29, {"zeta.version": 1}, "Unsupported feature: zeta.version"),
    (29, {"group.version": 2}, "No feature:group.version with feature level 2"),
    # ELR needs the 4.0-IV1 records (Feature.validateVersion)
    (22, {"eligible.leader.replicas.version": 1},
     "eligible.leader.replicas.version could not be set to 1 because it depends on "
     "metadata.version level 23"),
    (30, None, "not production-ready"),
    (29, {"kraft.version": 1}, "static"),
])
def test_bootstrap_refuses_what_kafka_format_refuses(mv, features, why):
    with pytest.raises(BootstrapError, match=why):
        bootstrap_records(mv, features)


@pytest.mark.parametrize("mv", [7, 25, 26])
def test_share_version_1_has_no_dependency(mv):
    """Kafka 4.2.1's ShareVersion.SV_1 depends on nothing: `format --feature share.version=1`
    works at any 4.x-bootable metadata.version (4.1's preview needed 4.1-IV1)."""
    records = bootstrap_records(mv, {"share.version": 1})
    levels = {r.message.name: r.message.feature_level for r in records
              if isinstance(r.message, M.FeatureLevelRecord)}
    assert levels["share.version"] == 1 and levels["metadata.version"] == mv


@pytest.mark.parametrize("mv", [4, 6])
def test_a_feature_above_0_needs_the_minimum_4x_metadata_version(mv):
    """Feature.validateVersion: level >= 1 needs MetadataVersion.MINIMUM_VERSION (3.3-IV3)."""
    with pytest.raises(BootstrapError, match=r"share.version could not be set to 1 because it "
                                             r"depends on metadata.version=7 \(3.3-IV3\)"):
        bootstrap_records(mv, {"share.version": 1})


def test_unstable_feature_versions_allow_4_3_iv0():
    records = bootstrap_records(30, unstable=True)
    assert records[1].message == M.FeatureLevelRecord(name="metadata.version", feature_level=30)


def test_bootstrap_metadata_needs_a_metadata_version():
    with pytest.raises(BootstrapError):
        BootstrapMetadata.from_records([record(M.FeatureLevelRecord(name="x", feature_level=1),
                                               0)])
    bm = BootstrapMetadata.from_records(bootstrap_records(7))
    assert bm.metadata_version == 7


def test_bootstrap_bytes_match_kafka():
    """Records 1-4 of the golden log (Kafka 3.7-to-be), byte for byte, less the
    ZkMigrationStateRecord that Kafka 4.x no longer writes (ActivationRecordsGenerator#
    recordsForEmptyLog)."""
    golden = [r for b in golden_batches() for r in b.records][1:5]
    assert type(golden[2].payload.message).__name__ == "ZkMigrationStateRecord"
    del golden[2]
    ours = bootstrap_records(18)
    assert [r.payload for r in golden] == ours
    assert [r.record.value for r in golden] == [encode_record(r) for r in ours]


# ---------------------------------------------------------------- activation


def test_activation_over_a_non_empty_log_writes_nothing():
    image = MetadataImage.EMPTY.replay(bootstrap_records(18))
    assert not is_empty_log(image)
    assert activation_records(image, BootstrapMetadata.from_version(19)) == []


def test_activation_aborts_a_cut_off_bootstrap_and_writes_it_again():
    partial = MetadataImage.EMPTY.replay(bootstrap_records(18)[:2])
    assert partial.in_transaction and is_empty_log(partial)
    records = activation_records(partial, BootstrapMetadata.from_version(18))
    assert types(records) == ["AbortTransactionRecord"] + TXN
    assert records[0].message == M.AbortTransactionRecord(reason="Controller failover")
    image = partial.replay(records)
    assert image.metadata_version == 18 and not image.in_transaction


def test_activation_aborts_any_other_open_transaction():
    image = MetadataImage.EMPTY.replay(bootstrap_records(18))
    image = image.replay([record(M.BeginTransactionRecord(name="big"), 0),
                          record(M.FeatureLevelRecord(name="x.version", feature_level=1), 0)])
    assert image.in_transaction
    assert types(activation_records(image, BootstrapMetadata.from_version(18))) == \
        ["AbortTransactionRecord"]


def test_a_partial_transaction_cannot_be_repaired_without_transactions():
    partial = MetadataImage.EMPTY.replay([record(M.BeginTransactionRecord(name="b"), 0)])
    with pytest.raises(BootstrapError):
        activation_records(partial, BootstrapMetadata.from_version(12))


# ---------------------------------------------------------------- NoOps


def test_noop_every_idle_interval_from_3_3_iv1():
    h = Harness(18)
    ctx = h.ctx()
    assert next_noop_ms(ctx, 0) == 500
    assert maybe_noop(ctx, 0) is None
    h.advance(499)
    assert maybe_noop(h.ctx(), 0) is None
    h.advance(1)
    result = maybe_noop(h.ctx(), 0)
    assert types(result.records) == ["NoOpRecord"] and result.records[0].version == 0
    assert maybe_noop(h.ctx(), 500) is None


@pytest.mark.parametrize("mv, interval, expected", [(4, 500, None), (5, 500, 1500),
                                                    (18, 0, None), (18, 200, 1200)])
def test_noops_need_the_record_and_a_positive_interval(mv, interval, expected):
    config = NodeConfig.from_kafka({"metadata.max.idle.interval.ms": interval})
    h = Harness(mv, config=config)
    assert next_noop_ms(h.ctx(), 1000) == expected
    h.advance(10_000)
    assert (maybe_noop(h.ctx(), 1000) is None) == (expected is None)


# ---------------------------------------------------------------- the golden history


def _golden_requests(golden):
    """The registration requests that produced the golden records (same ids and endpoints)."""
    controller = next(r for r in golden if isinstance(r, M.RegisterControllerRecord))
    c = M.ControllerRegistrationRequest
    controller_request = c(
        controller_id=controller.controller_id, incarnation_id=controller.incarnation_id,
        zk_migration_ready=False,
        listeners=tuple(c.Listener(name=e.name, host=e.host, port=e.port,
                                   security_protocol=e.security_protocol)
                        for e in controller.end_points),
        features=tuple(c.Feature(name=f.name, min_supported_version=f.min_supported_version,
                                 max_supported_version=f.max_supported_version)
                       for f in controller.features))
    b = M.BrokerRegistrationRequest
    broker_requests = [b(
        broker_id=r.broker_id, cluster_id=CLUSTER_ID, incarnation_id=r.incarnation_id,
        listeners=tuple(b.Listener(name=e.name, host=e.host, port=e.port,
                                   security_protocol=e.security_protocol)
                        for e in r.end_points),
        features=tuple(b.Feature(name=f.name, min_supported_version=f.min_supported_version,
                                 max_supported_version=f.max_supported_version)
                       for f in r.features),
        rack=r.rack, log_dirs=r.log_dirs)
        for r in golden if isinstance(r, M.RegisterBrokerRecord)]
    return controller_request, broker_requests


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_bootstrap_registration_and_unfence_reproduce_the_golden_history(seed):
    """Kafka's MV 18 cluster: bootstrap transaction, controller registration, then each broker
    registering (epoch = offset) and being unfenced by its first caught-up heartbeat, with a
    NoOp every 500 ms throughout. The log was written by a Kafka trunk build of late 2023
    (3.7-to-be); compared as Kafka 4.x writes it (no ZkMigrationStateRecord, so offsets and
    broker epochs one lower): same record types, same records, same bytes."""
    batches = golden_batches()
    golden_log = as_kafka_4([(r.offset, r.payload) for batch in batches for r in batch.records
                             if not r.is_control])
    golden = [r.message for _, r in golden_log]
    controller_request, broker_requests = _golden_requests(golden)

    h = Harness(None, activate=False, seed=seed)
    h.append(activation_records(h.image, BootstrapMetadata.from_version(18)))
    cluster.on_become_active(h.ctx())
    last_noop = h.now_ms
    # (time, order, kind, payload): the controller registers at once, brokers join later and
    # send their first heartbeat 60 ms after registering, caught up with their own record.
    events: list = [(48, 0, "controller", controller_request)]
    for i, (at, request) in enumerate(zip((1100, 3100, 5600), broker_requests)):
        events.append((at, 1 + i, "register", request))
    heapq.heapify(events)
    while len(h.log) < len(golden):
        due = next_noop_ms(h.ctx(), last_noop)
        if not events or events[0][0] >= due:
            h.now_ms = due
            h.run(maybe_noop(h.ctx(), last_noop))
            last_noop = due
            continue
        at, order, kind, payload = heapq.heappop(events)
        h.now_ms = at
        if kind == "controller":
            assert h.run(cluster.register_controller(h.ctx(), payload)).error_code == 0
        elif kind == "register":
            response = h.run(cluster.register_broker(h.ctx(), payload))
            assert response.error_code == 0 and response.broker_epoch == h.end_offset
            heapq.heappush(events, (at + 60, order, "heartbeat",
                                    (payload.broker_id, response.broker_epoch)))
        else:
            broker_id, epoch = payload
            response = h.run(cluster.process_broker_heartbeat(
                h.ctx(), heartbeat(broker_id, epoch, h.end_offset)))
            assert response.is_caught_up and not response.is_fenced

    ours = [r for _, r in h.log]
    assert types(ours) == [type(m).__name__ for m in golden]
    assert [r.message for r in ours] == golden
    assert [encode_record(r) for r in ours] == [encode_record(r) for _, r in golden_log]
    assert [off for off, _ in h.log] == [off for off, _ in golden_log]
    assert h.image.cluster.unfenced_broker_ids() == (0, 1, 2)
