"""The history of Kafka's golden log C_mv18_3brokers (a test harness run of a Kafka trunk build
of late 2023, 3.7-to-be: one controller 1000, brokers 0-2 starting one after the other,
metadata.version 18), rebuilt with the facade and compared record type by record type (and
version) with Kafka's own log. The kit follows Kafka 4.2, whose bootstrap has no
ZkMigrationStateRecord (``ActivationRecordsGenerator#recordsForEmptyLog``): that one record, and
so one offset, is the whole difference."""

from __future__ import annotations

import os

import pytest
from cluster_scn_helpers import GOLDEN_DIR, Rec, log_records, read_records

from kraft_testkit.cluster import Cluster

KAFKA_LOG = os.path.join(GOLDEN_DIR, "C_mv18_3brokers", "__cluster_metadata-0",
                         "00000000000000000000.log")

pytestmark = pytest.mark.skipif(not os.path.exists(KAFKA_LOG),
                                reason=f"golden log not found: {KAFKA_LOG}")

#: records whose count depends on timing alone (Kafka wrote one every 500 ms while it waited)
TIMING = {"NoOpRecord"}
#: what the 3.7 build wrote and Kafka 4.x does not
ONLY_3X = {"ZkMigrationStateRecord"}


def build_history(seed: int, tmp_path) -> list[Rec]:
    """One controller; brokers started one at a time, each once the previous one runs."""
    c = Cluster(1, 3, seed=seed, metadata_version=18, boot=False)
    for b in (1, 2):
        c.faults.kill(b)  # not started yet, in effect: they come one after the other
    for b in (0, 1, 2):
        if b:
            c.faults.start(b)
        c.run_until(lambda c, b=b: (m := c.broker(b)) is not None and m.state_name == "RUNNING"
                    and not c.broker_state(b).fenced, 30_000)
    c.run_for(100)
    return log_records(c, tmp_path / "ours.log")


def shape(records: list[Rec], drop: set[str] = frozenset()) -> list[tuple[str, int]]:
    return [(r.type, r.version) for r in records if r.type not in TIMING | drop]


@pytest.mark.parametrize("seed", range(4))
def test_same_record_types_and_versions_as_kafka(seed, tmp_path):
    kafka = read_records(KAFKA_LOG)
    ours = build_history(seed, tmp_path)
    assert shape(ours) == shape(kafka, ONLY_3X)
    assert "ZkMigrationStateRecord" in {r.type for r in kafka}


@pytest.mark.parametrize("seed", range(4))
def test_same_contents_where_deterministic(seed, tmp_path):
    kafka = read_records(KAFKA_LOG)
    ours = build_history(seed, tmp_path)
    # the bootstrap transaction right after the LeaderChangeMessage, in one batch: 3.7 wrote
    # the ZK migration state (NONE) in it, 4.x does not
    for log, boot_types in ((kafka, ["BeginTransactionRecord", "FeatureLevelRecord",
                                     "ZkMigrationStateRecord", "EndTransactionRecord"]),
                            (ours, ["BeginTransactionRecord", "FeatureLevelRecord",
                                    "EndTransactionRecord"])):
        leader_change = log[0]
        assert leader_change.type == "LeaderChangeMessage" and leader_change.control
        assert leader_change.msg.leader_id == 1000
        assert [v.voter_id for v in leader_change.msg.voters] == [1000]
        boot = log[1:1 + len(boot_types)]
        assert [r.type for r in boot] == boot_types
        assert len({r.batch for r in boot}) == 1
        assert boot[0].msg.name == "Bootstrap records"
        assert (boot[1].msg.name, boot[1].msg.feature_level) == ("metadata.version", 18)
    assert kafka[3].msg.zk_migration_state == 0
    for log in (kafka, ours):
        regs = [r for r in log if r.type == "RegisterBrokerRecord"]
        assert [r.msg.broker_id for r in regs] == [0, 1, 2]
        for r in regs:
            # the broker epoch is the record's offset; it is unfenced right after
            assert r.msg.broker_epoch == r.offset
            assert r.msg.is_migrating_zk_broker is False and r.msg.fenced is True
            assert len(r.msg.log_dirs) >= 1
            unfence = [u for u in log if u.type == "BrokerRegistrationChangeRecord"
                       and u.msg.broker_id == r.msg.broker_id]
            assert [(u.msg.broker_epoch, u.msg.fenced) for u in unfence] == [(r.offset, -1)]
            # Kafka 3.7 brokers name only metadata.version from 3.0-IV1; 4.2's name every 4.2
            # feature, metadata.version from 3.3-IV3 (BrokerFeatures#defaultSupportedFeatures)
            mv = [f for f in r.msg.features if f.name == "metadata.version"]
            assert len(mv) == 1 and mv[0].min_supported_version == (1 if log is kafka else 7)


@pytest.mark.parametrize("seed", range(2))
def test_controller_registers_like_kafka(seed, tmp_path):
    """KIP-919: from 3.7-IV0 the controller registers itself, right after the bootstrap records."""
    kafka = read_records(KAFKA_LOG)
    ours = build_history(seed, tmp_path)
    # after the LeaderChange and the bootstrap records: 4 of them in 3.7, 3 in 4.x
    for log, offset in ((kafka, 5), (ours, 4)):
        reg = [r for r in log if r.type == "RegisterControllerRecord"]
        assert [r.msg.controller_id for r in reg] == [1000]
        assert reg[0].offset == offset
        mv = [f for f in reg[0].msg.features if f.name == "metadata.version"]
        floor = 1 if log is kafka else 7   # 3.7's controllers vs 4.2's QuorumFeatures
        assert [(f.name, f.min_supported_version) for f in mv] == [("metadata.version", floor)]
        assert mv[0].max_supported_version >= 18
        assert reg[0].msg.zk_migration_ready is False
        assert len(reg[0].msg.end_points) == 1
