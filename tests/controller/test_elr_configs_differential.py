"""ELR and min.insync.replicas configs, differential: the inputs and expected records/errors of
Kafka's ``ConfigurationControlManagerTest`` (``testMaybeGenerateElrSafetyRecords``,
``testRejectMinIsrChangeWhenElrEnabled``, ``testElrUpgrade``; 4.x), run through the kit's
UpdateFeatures and IncrementalAlterConfigs commands.
"""

from __future__ import annotations

import pytest
from cluster_helpers import Harness

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


@pytest.mark.parametrize("mv, expected", [(23, ErrorCode.NONE),
                                          (22, ErrorCode.INVALID_UPDATE_VERSION)])
def test_elr_upgrade(mv, expected):
    h = harness(mv, static_min_isr=2)
    assert enable_elr(h).error_code == expected
