"""QuorumControllerTest (Kafka 4.2.1), ported: activation over an empty or half-written log,
bootstrap records beyond the feature levels, and the idle NoOp writes.

Kafka's ``getActivationRecords`` runs ``ActivationRecordsGenerator.generate`` and replays what it
returns into a ``FeatureControlManager``; the kit's seam is the same pair,
``controller.bootstrap.activation_records`` and ``MetadataImage.replay``. Scenarios about broker
registration, heartbeats and fencing are ported elsewhere (tests/kafka_parity's
ClusterControlManagerTest and BrokerHeartbeatManagerTest files).
"""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.controller.bootstrap import BootstrapError, BootstrapMetadata, \
    activation_records
from kraft_testkit.controller.result import record
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M

BROKER = 4  # ConfigResource.Type.BROKER


def _from_version(name: str) -> BootstrapMetadata:
    """Kafka's ``BootstrapMetadata.fromVersion(mv, "test")``: the metadata.version record."""
    level = V.get(name).level
    return BootstrapMetadata.from_records(
        [record(M.FeatureLevelRecord(name="metadata.version", feature_level=level), 0)], "test")


def _activated(name: str) -> MetadataImage:
    """Kafka's ``getActivationRecords(mv)``: generate over an empty log, replay the result."""
    return MetadataImage.EMPTY.replay(activation_records(MetadataImage.EMPTY,
                                                         _from_version(name), 3))


@pytest.mark.kafka("QuorumControllerTest#testActivationRecords33")
def test_activation_records_33():
    assert _activated("3.3-IV3").metadata_version == V.get("3.3-IV3").level


@pytest.mark.kafka("QuorumControllerTest#testActivationRecords34")
def test_activation_records_34():
    assert _activated("3.4-IV0").metadata_version == V.get("3.4-IV0").level


@pytest.mark.kafka("QuorumControllerTest#testActivationRecordsNonEmptyLog")
def test_activation_records_non_empty_log():
    assert _activated("3.9-IV0").metadata_version == V.get("3.9-IV0").level


@pytest.mark.kafka("QuorumControllerTest#testActivationRecordsPartialBootstrap")
def test_activation_records_partial_bootstrap():
    """A log that holds only the start of the bootstrap transaction (transactionStartOffset 0):
    aborted, then the bootstrap again in a transaction of its own."""
    partial = MetadataImage.EMPTY.replay(
        [record(M.BeginTransactionRecord(name="Bootstrap records"), 0)])
    records = activation_records(partial, _from_version("3.6-IV1"), 3)
    kinds = [type(r.message).__name__ for r in records]
    assert kinds[0] == "AbortTransactionRecord"
    assert kinds[1] == "BeginTransactionRecord"
    assert kinds[-1] == "EndTransactionRecord"


def _open_transaction(name: str) -> MetadataImage:
    """A non-empty log (metadata.version ``name``) whose last transaction never ended (Kafka's
    test: BeginTransactionRecord at offset 10, a later commit at 20)."""
    level = V.get(name).level
    image = MetadataImage.EMPTY.replay(
        [record(M.FeatureLevelRecord(name="metadata.version", feature_level=level), 0)])
    image = image.replay([record(M.BeginTransactionRecord(name="an operation"), 0)])
    assert image.in_transaction
    return image


@pytest.mark.kafka("QuorumControllerTest#testActivationRecordsPartialTransaction")
def test_activation_records_partial_transaction():
    image = _open_transaction("3.6-IV1")
    records = activation_records(image, _from_version("3.6-IV1"), 3)
    assert type(records[0].message) is M.AbortTransactionRecord
    assert not image.replay(records).in_transaction  # transactionStartOffset back to -1


@pytest.mark.kafka("QuorumControllerTest#testActivationRecordsPartialTransactionNoSupport")
def test_activation_records_partial_transaction_no_support():
    image = _open_transaction("3.6-IV0")  # before metadata transactions (3.6-IV1)
    with pytest.raises(BootstrapError):
        activation_records(image, _from_version("3.6-IV0"), 3)


@pytest.mark.kafka("QuorumControllerTest#testInsertBootstrapRecordsToEmptyLog")
def test_insert_bootstrap_records_to_empty_log():
    """Kafka's COMPLEX_BOOTSTRAP: metadata.version at the minimum (3.3-IV3) and a ConfigRecord
    foo=bar on the default broker resource; the active controller's image shows both."""
    boot = BootstrapMetadata.from_records([
        record(M.FeatureLevelRecord(name="metadata.version",
                                    feature_level=V.MINIMUM_VERSION_4X), 0),
        record(M.ConfigRecord(resource_type=BROKER, resource_name="", name="foo", value="bar"),
               0)], "test bootstrap")
    image = MetadataImage.EMPTY.replay(activation_records(MetadataImage.EMPTY, boot, 3))
    assert image.metadata_version == V.MINIMUM_VERSION_4X
    assert dict(image.configs.broker("")) == {"foo": "bar"}


@pytest.mark.kafka("QuorumControllerTest#testNoOpRecordWriteAfterTimeout")
def test_no_op_record_write_after_timeout():
    """Three controllers, ``metadata.max.idle.interval.ms`` 1 (Kafka's test: 100 us): once the
    high watermark is established it moves, twice, within Kafka's 1 s replication delay, by
    the active controller's NoOpRecords."""
    with Cluster(3, 0, seed=5, configs={"metadata.max.idle.interval.ms": 1}) as c:
        active = c.replica(c.active_controller)
        c.run_until(lambda _: active.hw > 0, timeout_ms=1_000)
        for _ in range(2):
            before = active.hw
            c.run_until(lambda _, b=before: active.hw > b, timeout_ms=1_000)
        since = [r for r in c.records() if r.offset >= before]
        assert "NO_OP_RECORD" in {r.type for r in since}
