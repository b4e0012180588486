"""Kafka 4.2.1 ``ActivationRecordsGeneratorTest``: what a controller appends as it becomes active
over an empty log (the kit's ``controller.bootstrap.activation_records``).

Kafka's test checks the activation log message and the ControllerResult's records and
atomicity; the kit writes no log message, so each port checks the records: their number and
kinds, and that a non-transactional bootstrap is one plain batch (no transaction markers).
Kafka's ``BootstrapMetadata.fromVersion`` holds the metadata.version record alone, as
``BootstrapMetadata.from_records`` with that one record does here.
"""

from __future__ import annotations

import pytest

from kraft_testkit.controller.bootstrap import BootstrapMetadata, activation_records
from kraft_testkit.controller.result import record
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M


def _from_version(level: int, **features: int) -> BootstrapMetadata:
    """Kafka's ``BootstrapMetadata.fromVersion(mv, "test")`` (and ``copyWithFeatureRecord``)."""
    recs = [record(M.FeatureLevelRecord(name="metadata.version", feature_level=level), 0)]
    recs += [record(M.FeatureLevelRecord(name=n.replace("_", "."), feature_level=lv), 0)
             for n, lv in features.items()]
    return BootstrapMetadata.from_records(recs, "test")


def _partial_bootstrap(level: int) -> MetadataImage:
    """A log holding only the start of a bootstrap transaction (transactionStartOffset 0)."""
    image = MetadataImage.EMPTY.replay([record(M.BeginTransactionRecord(name="Bootstrap records"),
                                               0)])
    assert image.in_transaction
    return image


def _kinds(records) -> list[str]:
    return [type(r.message).__name__ for r in records]


@pytest.mark.kafka("ActivationRecordsGeneratorTest#testActivationMessageForEmptyLog")
def test_empty_log_at_the_minimum_version_is_one_atomic_record():
    records = activation_records(MetadataImage.EMPTY, _from_version(V.MINIMUM_VERSION_4X), 2)
    assert V.get(V.MINIMUM_VERSION_4X).name == "3.3-IV3"
    assert _kinds(records) == ["FeatureLevelRecord"]


@pytest.mark.kafka("ActivationRecordsGeneratorTest#testActivationMessageForEmptyLogAtMv3_4")
def test_empty_log_at_3_4_has_no_zk_migration_record():
    """3.4-IV0 is where 3.x added a ZkMigrationStateRecord; 4.x writes one record only."""
    records = activation_records(MetadataImage.EMPTY, _from_version(V.get("3.4-IV0").level), 2)
    assert _kinds(records) == ["FeatureLevelRecord"]


@pytest.mark.kafka("ActivationRecordsGeneratorTest#testActivationMessageForEmptyLogAtMv3_6")
def test_empty_log_at_3_6_iv1_is_a_transaction_of_three():
    records = activation_records(MetadataImage.EMPTY, _from_version(V.get("3.6-IV1").level), 2)
    assert _kinds(records) == ["BeginTransactionRecord", "FeatureLevelRecord",
                               "EndTransactionRecord"]
    assert records[0].message.name == "Bootstrap records"


@pytest.mark.kafka(
    "ActivationRecordsGeneratorTest#testActivationMessageForEmptyLogAtMv3_6WithTransaction")
def test_partial_bootstrap_is_aborted_and_written_again():
    level = V.get("3.6-IV1").level
    records = activation_records(_partial_bootstrap(level), _from_version(level), 2)
    assert _kinds(records) == ["AbortTransactionRecord", "BeginTransactionRecord",
                               "FeatureLevelRecord", "EndTransactionRecord"]
    assert records[0].message.reason == "Controller failover"


@pytest.mark.kafka(
    "ActivationRecordsGeneratorTest#testActivationMessageForEmptyLogAtMv4_0WithTransactionAndElr")
def test_partial_bootstrap_with_elr_adds_the_safety_config_record():
    level = V.get("4.0-IV1").level
    boot = _from_version(level, eligible_leader_replicas_version=1)
    records = activation_records(_partial_bootstrap(level), boot, 2)
    assert len(records) == 6
    assert record(M.ConfigRecord(resource_type=4, resource_name="", name="min.insync.replicas",
                                 value="2"), 0) in records
