"""Kafka 4.2.1 ``QuorumFeaturesTest``, ported: what a 4.2 controller supports
(``QuorumFeatures#defaultSupportedFeatureMap``, the kit's ``supported_features_of``) and the
wording of ``QuorumFeatures#reasonNotSupported``."""

from __future__ import annotations

import pytest

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller.features import reason_not_supported, supported_features_of
from kraft_testkit.metadata import VersionRange
from kraft_testkit.metadata import versions as V

MV = V.FEATURE_NAME
#: Feature.PRODUCTION_FEATURES of 4.2.1 with [minimumProduction, latestProduction]; at
#: latestTesting (4.3-IV0) each one's defaultLevel is the same level
PRODUCTION = {"kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
              "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1),
              "streams.version": (0, 1)}


def _supported(unstable: bool) -> dict[str, VersionRange]:
    return supported_features_of(NodeConfig(unstable_feature_versions_enable=unstable))


@pytest.mark.kafka("QuorumFeaturesTest#testDefaultFeatureMap")
def test_default_feature_map():
    expected = {MV: VersionRange(V.MINIMUM_VERSION_4X, V.LATEST_PRODUCTION)}
    expected.update({n: VersionRange(*r) for n, r in PRODUCTION.items()})
    assert _supported(False) == expected
    assert (V.MINIMUM_VERSION_4X, V.LATEST_PRODUCTION) == (7, 29)


@pytest.mark.kafka("QuorumFeaturesTest#testDefaultFeatureMapWithUnstable")
def test_default_feature_map_with_unstable():
    expected = {MV: VersionRange(V.MINIMUM_VERSION_4X, V.LATEST)}
    expected.update({n: VersionRange(*r) for n, r in PRODUCTION.items()})
    assert _supported(True) == expected
    assert V.LATEST == 30


@pytest.mark.kafka("QuorumFeaturesTest#ensureDefaultSupportedFeaturesRangeMaxNotZero")
@pytest.mark.parametrize("unstable", [True, False])
def test_no_supported_range_tops_at_zero(unstable):
    assert all(r.max != 0 for r in _supported(unstable).values())


@pytest.mark.kafka("QuorumFeaturesTest#testReasonNotSupported")
def test_reason_not_supported():
    assert reason_not_supported(10, "Local controller 0", VersionRange(0, 3)) == \
        "Local controller 0 only supports versions 0-3"
    assert reason_not_supported(3, "Local controller 0", VersionRange(0, 3)) is None
