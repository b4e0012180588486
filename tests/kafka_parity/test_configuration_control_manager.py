"""ConfigurationControlManagerTest (Kafka 4.2.1), through the kit's IncrementalAlterConfigs and
UpdateFeatures commands. Kafka's test runs on a made-up config schema; the scenarios that need
no schema of their own are ported (the ELR ones, replay, the value size bound, the controller
skipping configs LogConfig no longer knows, with real topic keys standing in for its names).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "controller"))
from cluster_helpers import Harness  # noqa: E402

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import configs
from kraft_testkit.controller.features import UpgradeType, update_features
from kraft_testkit.metadata.feature_versions import supported_ranges
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

ELR = "eligible.leader.replicas.version"
MIN_ISR = "min.insync.replicas"
BROKER = 4
SET, DELETE = 0, 1
IAC = M.IncrementalAlterConfigsRequest


def harness(mv: int, static_min_isr: int | None = None) -> Harness:
    config = NodeConfig.from_kafka({} if static_min_isr is None
                                   else {MIN_ISR: static_min_isr})
    h = Harness(mv, config=config)
    everything = [(n, lo, hi) for n, (lo, hi) in supported_ranges().items()
                  if n != "metadata.version"]
    assert h.register(1, features=everything).error_code == 0
    return h


def alter(h: Harness, name: str, op: int, value: str | None):
    request = IAC(resources=[IAC.AlterConfigsResource(
        resource_type=BROKER, resource_name=name,
        configs=[IAC.AlterableConfig(name=MIN_ISR, config_operation=op, value=value)])],
        validate_only=False)
    (res,) = h.run(configs.incremental_alter_configs(h.ctx(), request)).responses
    return res.error_code, res.error_message


def enable_elr(h: Harness) -> M.UpdateFeaturesResponse:
    return h.run(update_features(h.ctx(), M.UpdateFeaturesRequest(feature_updates=(
        M.UpdateFeaturesRequest.FeatureUpdateKey(feature=ELR, max_version_level=1,
                                                 upgrade_type=UpgradeType.UPGRADE),))))


@pytest.mark.kafka("ConfigurationControlManagerTest#testMaybeGenerateElrSafetyRecords")
@pytest.mark.parametrize("static", [False, True])
def test_maybe_generate_elr_safety_records(static):
    h = harness(23, static_min_isr=2 if static else None)     # 4.0-IV1: ELR off by default
    assert alter(h, "1", SET, "3") == (ErrorCode.NONE, None)   # allowed while ELR is off
    assert [(r.message.resource_name, r.message.value) for r in h.last_records] == [("1", "3")]
    assert enable_elr(h).error_code == ErrorCode.NONE
    effective = "2" if static else "1"
    assert [(type(r.message).__name__, getattr(r.message, "resource_name", None),
             getattr(r.message, "value", None)) for r in h.last_records] == [
        ("ConfigRecord", "", effective), ("ConfigRecord", "1", None),
        ("FeatureLevelRecord", None, None)]
    assert h.image.configs.broker("") == {MIN_ISR: effective}
    assert MIN_ISR not in h.image.configs.broker(1)


@pytest.mark.kafka("ConfigurationControlManagerTest#testRejectMinIsrChangeWhenElrEnabled")
@pytest.mark.parametrize("removal", [False, True])
def test_reject_min_isr_change_when_elr_enabled(removal):
    h = harness(23, static_min_isr=2)
    assert enable_elr(h).error_code == ErrorCode.NONE
    op, value = (DELETE, None) if removal else (SET, "3")
    assert alter(h, "1", op, value) == (
        ErrorCode.INVALID_CONFIG,
        "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    if removal:
        assert alter(h, "", op, value) == (
            ErrorCode.INVALID_CONFIG,
            "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    else:
        assert alter(h, "", op, value) == (ErrorCode.NONE, None)
        # and with ELR on the change clears every ELR (createClearElrRecordsAsNeeded)
        assert [type(r.message).__name__ for r in h.last_records] == ["ConfigRecord",
                                                                      "ClearElrRecord"]
        assert h.last_records[1].message == M.ClearElrRecord(topic_name="")


@pytest.mark.kafka("ConfigurationControlManagerTest#testElrUpgrade")
@pytest.mark.parametrize("mv, expected", [(23, ErrorCode.NONE),
                                          (22, ErrorCode.INVALID_UPDATE_VERSION)])
def test_elr_upgrade(mv, expected):
    h = harness(mv, static_min_isr=2)
    assert enable_elr(h).error_code == expected



TOPIC = 2
MYTOPIC = "mytopic"


@pytest.mark.kafka("ConfigurationControlManagerTest#testReplay")
def test_replay():
    from kraft_testkit.metadata import MetadataImage
    image = MetadataImage.EMPTY
    assert dict(image.configs.get(BROKER, "0")) == {}
    image = image.replay([M.ConfigRecord(resource_type=BROKER, resource_name="0", name="foo.bar",
                                         value="1,2")])
    assert dict(image.configs.get(BROKER, "0")) == {"foo.bar": "1,2"}
    image = image.replay([M.ConfigRecord(resource_type=BROKER, resource_name="0", name="foo.bar",
                                         value=None)])
    assert dict(image.configs.get(BROKER, "0")) == {}
    image = image.replay([
        M.ConfigRecord(resource_type=TOPIC, resource_name=MYTOPIC, name="abc", value="x,y,z"),
        M.ConfigRecord(resource_type=TOPIC, resource_name=MYTOPIC, name="def", value="blah")])
    assert dict(image.configs.get(TOPIC, MYTOPIC)) == {"abc": "x,y,z", "def": "blah"}


def alter_topic(h: Harness, key: str, op: int, value: str | None, name: str = MYTOPIC):
    from kraft_testkit.protocol.uuid import Uuid
    if h.image.topic(name) is None:
        h.image = h.image.replay([M.TopicRecord(name=name, topic_id=Uuid(b"\x01" * 16))])
    request = IAC(resources=[IAC.AlterConfigsResource(
        resource_type=TOPIC, resource_name=name,
        configs=[IAC.AlterableConfig(name=key, config_operation=op, value=value)])])
    result = configs.incremental_alter_configs(h.ctx(), request)
    (res,) = h.run(result).responses
    return res.error_code, res.error_message, result.records


APPEND = 2
THROTTLED = "leader.replication.throttled.replicas"  # a LIST topic key standing in for "abc"


@pytest.mark.kafka("ConfigurationControlManagerTest#testIncrementalAlterConfig")
def test_incremental_alter_config():
    h = harness(29)
    code, _, records = alter_topic(h, THROTTLED, APPEND, "1:2")
    assert code == 0 and [(r.message.name, r.message.value) for r in records] == [
        (THROTTLED, "1:2")]
    code, _, records = alter_topic(h, THROTTLED, DELETE, "xyz")
    assert code == 0 and [(r.message.name, r.message.value) for r in records] == [
        (THROTTLED, None)]
    h.image = h.image.replay([M.ConfigRecord(resource_type=TOPIC, resource_name=MYTOPIC,
                                             name=THROTTLED, value="1:2")])
    large = "\0" * (32767 - APPEND - 1)  # with the current "1:2," it passes 32767 chars
    assert alter_topic(h, THROTTLED, APPEND, large)[:2] == (
        ErrorCode.INVALID_CONFIG, "The configuration value cannot be added because it exceeds "
                                  "the maximum value size of 32767 bytes.")


def with_unsupported_config(h: Harness) -> None:
    alter_topic(h, "retention.ms", SET, "1000")
    h.image = h.image.replay([
        M.ConfigRecord(resource_type=TOPIC, resource_name=MYTOPIC, name="cleanup.policy",
                       value="compact"),
        M.ConfigRecord(resource_type=TOPIC, resource_name=MYTOPIC, name="invalid.config",
                       value="should-be-filtered")])


@pytest.mark.kafka("ConfigurationControlManagerTest#testReplayFiltersInvalidConfigs")
def test_replay_filters_invalid_configs():
    h = harness(29)
    with_unsupported_config(h)
    assert configs.controller_configs(h.image, TOPIC, MYTOPIC) == {
        "retention.ms": "1000", "cleanup.policy": "compact"}


@pytest.mark.kafka("ConfigurationControlManagerTest#testValidateAlterConfigWithInvalidExistingConfigs")
def test_validate_alter_config_with_invalid_existing_configs():
    h = harness(29)
    with_unsupported_config(h)
    assert "invalid.config" not in configs.controller_configs(h.image, TOPIC, MYTOPIC)
    assert alter_topic(h, "segment.ms", SET, "100000")[:2] == (ErrorCode.NONE, None)
