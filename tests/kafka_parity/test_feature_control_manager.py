"""Kafka 4.2.1 ``FeatureControlManagerTest``, ported: UpdateFeatures checks and feature replay
through the kit's ``controller.features`` over an image holding exactly the records Kafka's test
replays. Messages are ``FeatureControlManager#updateFeatures``' (the QuorumController adds its
"The update failed for all features" prefix, stripped by the seam)."""

from __future__ import annotations

import pytest
from controller_seam import MV, SAFE, UNSAFE, UPGRADE, Seam, level, quorum_features

from kraft_testkit.controller.features import finalized_features
from kraft_testkit.metadata import VersionRange
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol.error_codes import ErrorCode

INVALID = ErrorCode.INVALID_UPDATE_VERSION
TEST_FEATURE = "test.feature.version"
TV = "transaction.version"
MINIMUM = V.MINIMUM_VERSION_4X          # MetadataVersion.MINIMUM_VERSION, 3.3-IV3
IBP_3_4_IV0, IBP_3_5_IV0, IBP_3_5_IV1 = 8, 9, 10
IBP_3_6_IV0 = 12


def _manager_at(mv: int) -> Seam:
    return Seam(level(MV, mv))


def _test_manager() -> tuple[Seam, dict]:
    """createTestManager: supports metadata.version 3.3-IV3..3.6-IV0, at 3.4-IV0."""
    return _manager_at(IBP_3_4_IV0), quorum_features((MV, MINIMUM, IBP_3_6_IV0))


@pytest.mark.kafka("FeatureControlManagerTest#testUpdateFeatures")
def test_update_features():
    seam = _manager_at(MINIMUM)
    supported = quorum_features((TEST_FEATURE, 0, 2))
    assert finalized_features(seam.image) == {MV: MINIMUM}
    assert seam.update({TEST_FEATURE: 3}, {TEST_FEATURE: SAFE}, supported=supported) == (
        INVALID, f"Invalid update version 3 for feature {TEST_FEATURE}. Local controller 0 only "
                 "supports versions 0-2")
    assert seam.update({TEST_FEATURE: 1, "bar": 1}, supported=supported) == (
        INVALID, "Invalid update version 1 for feature bar. Local controller 0 does not support "
                 "this feature.")
    assert seam.last_records == []
    assert seam.update({TEST_FEATURE: 1}, supported=supported) == (ErrorCode.NONE, None)
    assert [(r.message.name, r.message.feature_level, r.version) for r in seam.last_records] \
        == [(TEST_FEATURE, 1, 0)]


@pytest.mark.kafka("FeatureControlManagerTest#testReplay")
def test_replay():
    seam = Seam(level(MV, MINIMUM), level("foo", 2))
    assert finalized_features(seam.image) == {MV: MINIMUM, "foo": 2}


@pytest.mark.kafka("FeatureControlManagerTest#testReplayKraftVersionFeatureLevel")
def test_replay_of_a_kraft_version_level_changes_nothing():
    seam = Seam(level(MV, MINIMUM), level("kraft.version", 1))
    assert finalized_features(seam.image) == {MV: MINIMUM}


@pytest.mark.kafka("FeatureControlManagerTest#testUpdateFeaturesErrorCases")
def test_update_features_error_cases():
    seam = _manager_at(MINIMUM)
    seam.activate()
    seam.run(__import__("kraft_testkit.controller.cluster", fromlist=["x"]).register_broker(
        seam.ctx(), _broker(5, [(MV, MINIMUM, MINIMUM), (TV, 0, 2)])))
    supported = quorum_features(("foo", 1, 5), (TV, 0, 3))
    assert seam.update({"foo": 3}, {"foo": SAFE}, supported=supported) == (
        INVALID, "Invalid update version 3 for feature foo. Broker 5 does not support this "
                 "feature.")
    assert seam.update({TV: 2}, supported=supported) == (ErrorCode.NONE, None)
    assert finalized_features(seam.image)[TV] == 2
    assert seam.update({TV: 1}, supported=supported) == (
        INVALID, f"Invalid update version 1 for feature {TV}. Can't downgrade the version of "
                 "this feature without setting the upgrade type to either safe or unsafe "
                 "downgrade.")
    assert seam.update({TV: 1}, {TV: SAFE}, supported=supported) == (ErrorCode.NONE, None)
    assert [(r.message.name, r.message.feature_level) for r in seam.last_records] == [(TV, 1)]


def _broker(broker_id: int, feats):
    from kraft_testkit.protocol import messages as M
    from kraft_testkit.protocol.uuid import Uuid

    cls = M.BrokerRegistrationRequest
    return cls(broker_id=broker_id, cluster_id="x", incarnation_id=Uuid(bytes(15) + b"\x07"),
               listeners=(), features=tuple(cls.Feature(name=n, min_supported_version=lo,
                                                        max_supported_version=hi)
                                            for n, lo, hi in feats),
               log_dirs=(Uuid(bytes(15) + b"\x09"),))


@pytest.mark.kafka("FeatureControlManagerTest#testReplayRecords")
def test_replay_records():
    seam = _manager_at(MINIMUM)
    supported = quorum_features((TEST_FEATURE, 0, 5), (TV, 0, 2))
    assert seam.update({TEST_FEATURE: 1, TV: 2}, supported=supported) == (ErrorCode.NONE, None)
    assert finalized_features(seam.image) == {MV: MINIMUM, TEST_FEATURE: 1, TV: 2}


@pytest.mark.kafka("FeatureControlManagerTest#testApplyMetadataVersionChangeRecord")
def test_apply_metadata_version_change_record():
    seam, _ = _test_manager()
    seam.replay([level(MV, IBP_3_4_IV0 + 1)])
    assert V.get(seam.image.metadata_version).name == "3.5-IV0"


@pytest.mark.kafka("FeatureControlManagerTest#testCannotDowngradeToHigherVersion")
def test_cannot_downgrade_to_higher_version():
    seam, supported = _test_manager()
    assert seam.update({MV: IBP_3_5_IV0}, {MV: SAFE}, supported=supported,
                       validate_only=True) == (
        INVALID, "Invalid update version 9 for feature metadata.version. Can't downgrade to a "
                 "newer version.")


@pytest.mark.kafka("FeatureControlManagerTest#testCannotUnsafeDowngradeToHigherVersion")
def test_cannot_unsafe_downgrade_to_higher_version():
    seam, supported = _test_manager()
    assert seam.update({MV: IBP_3_5_IV0}, {MV: UNSAFE}, supported=supported,
                       validate_only=True) == (
        INVALID, "Invalid update version 9 for feature metadata.version. Can't downgrade to a "
                 "newer version.")


@pytest.mark.kafka("FeatureControlManagerTest#testCannotUpgradeToLowerVersion")
def test_cannot_upgrade_to_lower_version():
    seam = _manager_at(IBP_3_5_IV1)
    supported = quorum_features((MV, MINIMUM, IBP_3_6_IV0))
    assert seam.update({MV: IBP_3_5_IV0}, {MV: UPGRADE}, supported=supported,
                       validate_only=True) == (
        INVALID, "Invalid update version 9 for feature metadata.version. Can't downgrade the "
                 "version of this feature without setting the upgrade type to either safe or "
                 "unsafe downgrade.")


@pytest.mark.kafka("FeatureControlManagerTest#testCanUpgradeToHigherVersion")
def test_can_upgrade_to_higher_version():
    seam, supported = _test_manager()
    assert seam.update({MV: IBP_3_5_IV0}, {MV: UPGRADE}, supported=supported,
                       validate_only=True) == (ErrorCode.NONE, None)


@pytest.mark.kafka("FeatureControlManagerTest#testCannotUseSafeDowngradeIfMetadataChanged")
def test_cannot_use_safe_downgrade_if_metadata_changed():
    seam, supported = _test_manager()
    assert seam.update({MV: MINIMUM}, {MV: SAFE}, supported=supported, validate_only=True) == (
        INVALID, "Unsupported metadata.version downgrade from 8 to 7. Refusing to perform the "
                 "requested downgrade because it might delete metadata information.")


@pytest.mark.kafka("FeatureControlManagerTest#testUnsafeDowngradeIsTemporarilyDisabled")
def test_unsafe_downgrade_is_temporarily_disabled():
    seam, supported = _test_manager()
    assert seam.update({MV: MINIMUM}, {MV: UNSAFE}, supported=supported,
                       validate_only=True) == (
        INVALID, "Unsupported metadata.version downgrade from 8 to 7. Unsafe metadata downgrade "
                 "is not supported in this version.")


@pytest.mark.kafka("FeatureControlManagerTest#testCanUseSafeDowngradeIfMetadataDidNotChange")
def test_can_use_safe_downgrade_if_metadata_did_not_change():
    seam = _manager_at(IBP_3_5_IV0)
    supported = quorum_features((MV, MINIMUM, IBP_3_6_IV0))
    assert seam.update({MV: IBP_3_4_IV0}, {MV: SAFE}, supported=supported,
                       validate_only=True) == (ErrorCode.NONE, None)


@pytest.mark.kafka("FeatureControlManagerTest#testCannotDowngradeBeforeMinimumKraftVersion")
def test_cannot_downgrade_before_the_minimum_version():
    seam = _manager_at(MINIMUM)
    supported = quorum_features((MV, MINIMUM, V.LATEST))
    assert seam.update({MV: 6}, {MV: UNSAFE}, supported=supported, validate_only=True) == (
        INVALID, f"Invalid update version 6 for feature metadata.version. Local controller 0 "
                 f"only supports versions {MINIMUM}-{V.LATEST}")
