"""UpdateFeatures, differential: the inputs of Kafka's ``FeatureControlManagerTest`` cases and the
error strings those tests assert (apache/kafka, metadata/src/test/java/org/apache/kafka/
controller/FeatureControlManagerTest.java, 4.0 line), checked through the kit's controller.

Kafka's unit tests call ``FeatureControlManager.updateFeatures`` directly, which returns the
bare ApiError; ``QuorumController.updateFeatures`` then prefixes "The update failed for all
features since the following feature had an error: " for the response. The kit answers the
response, so the expected text below is Kafka's with that prefix.
"""

from __future__ import annotations

import pytest
from cluster_helpers import CONTROLLER_ID, Harness

from kraft_testkit.controller.features import FAILED_PREFIX, UpgradeType, update_features
from kraft_testkit.metadata import VersionRange
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

Key = M.UpdateFeaturesRequest.FeatureUpdateKey
MV = "metadata.version"
TV = "transaction.version"
SAFE, UNSAFE, UPGRADE = (UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE,
                         UpgradeType.UPGRADE)
# TEST_MANAGER_BUILDER1: metadata.version 3.3-IV0 (4), the controller supports 4-7
BUILDER1 = {MV: VersionRange(4, 7)}


def answer(h: Harness, name: str, level: int, upgrade: int, supported, validate_only=True):
    request = M.UpdateFeaturesRequest(validate_only=validate_only, feature_updates=(
        Key(feature=name, max_version_level=level, upgrade_type=upgrade),))
    response = h.run(update_features(h.ctx(), request, supported_features=supported))
    return response.error_code, response.error_message


def error(text: str) -> tuple[int, str]:
    return ErrorCode.INVALID_UPDATE_VERSION, FAILED_PREFIX + text


@pytest.mark.parametrize("name, level, upgrade, expected", [
    # testCannotDowngradeToVersionBeforeMinimumSupportedKraftVersion
    (MV, 3, UNSAFE, error("Invalid update version 3 for feature metadata.version. Local "
                          f"controller {CONTROLLER_ID} only supports versions 4-7")),
    # testCannotDowngradeToHigherVersion, testCannotUnsafeDowngradeToHigherVersion
    (MV, 7, SAFE, error("Invalid update version 7 for feature metadata.version. Can't "
                        "downgrade to a newer version.")),
    (MV, 7, UNSAFE, error("Invalid update version 7 for feature metadata.version. Can't "
                          "downgrade to a newer version.")),
    # testCanUpgradeToHigherVersion
    (MV, 7, UPGRADE, (ErrorCode.NONE, None)),
])
def test_metadata_version_cases_of_test_manager_builder1(name, level, upgrade, expected):
    h = Harness(4)
    assert answer(h, name, level, upgrade, BUILDER1) == expected


@pytest.mark.parametrize("upgrade, expected", [
    # testCannotUpgradeToLowerVersion
    (UPGRADE, error("Invalid update version 4 for feature metadata.version. Can't downgrade the "
                    "version of this feature without setting the upgrade type to either safe or "
                    "unsafe downgrade.")),
    # testCannotUseSafeDowngradeIfMetadataChanged
    (SAFE, error("Invalid metadata.version 4. Refusing to perform the requested downgrade "
                 "because it might delete metadata information.")),
    # testUnsafeDowngradeIsTemporarilyDisabled
    (UNSAFE, error("Invalid metadata.version 4. Unsafe metadata downgrade is not supported in "
                   "this version.")),
])
def test_downgrades_across_a_metadata_change(upgrade, expected):
    h = Harness(7)      # Kafka's TEST_MANAGER_BUILDER1 cases downgrade from 3.3-IV3 to 3.3-IV0
    assert answer(h, MV, 4, upgrade, BUILDER1) == expected


def test_cannot_downgrade_before_3_3_iv0():
    """testCannotDowngradeBefore3_3_IV0."""
    h = Harness(4)
    assert answer(h, MV, 3, UNSAFE, {MV: VersionRange(1, 7)}) == error(
        "Invalid metadata.version 3. Unable to set a metadata.version less than 3.3-IV0")


def test_update_features_error_cases():
    """testUpdateFeaturesErrorCases: foo 1-5 and transaction.version 0-3 on the controller,
    broker 5 knows transaction.version 0-2 only."""
    h = Harness(4)
    h.register(5, features=[(TV, 0, 2)])
    supported = {MV: VersionRange(1, 29), "foo": VersionRange(1, 5), TV: VersionRange(0, 3)}
    assert answer(h, "foo", 3, SAFE, supported) == error(
        "Invalid update version 3 for feature foo. Broker 5 does not support this feature.")
    assert answer(h, TV, 2, UPGRADE, supported, validate_only=False) == (ErrorCode.NONE, None)
    assert [(r.message.name, r.message.feature_level, r.version) for r in h.last_records] == [
        (TV, 2, 0)]
    assert answer(h, TV, 1, UPGRADE, supported) == error(
        "Invalid update version 1 for feature transaction.version. Can't downgrade the version "
        "of this feature without setting the upgrade type to either safe or unsafe downgrade.")
    assert answer(h, TV, 1, SAFE, supported, validate_only=False) == (ErrorCode.NONE, None)
    assert [(r.message.name, r.message.feature_level) for r in h.last_records] == [(TV, 1)]


def test_update_features_unknown_feature_and_range():
    """testUpdateFeatures: test.feature.version 0-2 on the controller; level 3 is out of
    range; a request naming an unknown feature 'bar' fails as a whole."""
    h = Harness(4)
    supported = {MV: VersionRange(1, 29), "test.feature.version": VersionRange(0, 2)}
    assert answer(h, "test.feature.version", 3, SAFE, supported) == error(
        "Invalid update version 3 for feature test.feature.version. Local controller "
        f"{CONTROLLER_ID} only supports versions 0-2")
    request = M.UpdateFeaturesRequest(feature_updates=(
        Key(feature="test.feature.version", max_version_level=1, upgrade_type=UPGRADE),
        Key(feature="bar", max_version_level=1, upgrade_type=UPGRADE)))
    response = h.run(update_features(h.ctx(), request, supported_features=supported))
    assert (response.error_code, response.error_message) == error(
        "Invalid update version 1 for feature bar. Local controller "
        f"{CONTROLLER_ID} does not support this feature.")
    assert h.last_records == []
