"""Broker registration against finalized features, differential: the inputs and messages of
Kafka's ``ClusterControlManagerTest`` (``testRegistrationWithUnsupportedFeature``,
``testRegistrationWithUnsupportedMetadataVersion``; 4.0 line). The response carries only the
error code (BrokerRegistrationResponse has no message); the message is the kit's
``registration_feature_error``, Kafka's ``processRegistrationFeature``.
"""

from __future__ import annotations

from cluster_helpers import Harness

from kraft_testkit.controller.features import finalized_features, registration_feature_error
from kraft_testkit.controller.result import record
from kraft_testkit.metadata import VersionRange
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

MV = "metadata.version"


def test_registration_with_unsupported_feature():
    h = Harness(15)                                   # 3.7-IV0
    h.append([record(M.FeatureLevelRecord(name="test.feature.version", feature_level=1), 0)])
    announced = [(MV, VersionRange(2, 15))]           # 3.1-IV0 .. 3.7-IV0, nothing else
    assert registration_feature_error(finalized_features(h.image), announced) == (
        "Unable to register because the broker does not support finalized version 1 of "
        "test.feature.version. The broker wants a version between 0 and 0, inclusive.")
    response = h.register(0, mv_range=(2, 15))
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION and h.last_records == []


def test_registration_with_unsupported_metadata_version():
    h = Harness(4)                                    # 3.3-IV0
    assert registration_feature_error(finalized_features(h.image), []) == (
        "Unable to register because the broker does not support finalized version 4 of "
        "metadata.version. The broker wants a version between 1 and 1, inclusive.")
    assert registration_feature_error(finalized_features(h.image), [(MV, VersionRange(7, 7))]) == (
        "Unable to register because the broker does not support finalized version 4 of "
        "metadata.version. The broker wants a version between 7 and 7, inclusive.")
    assert h.register(0, mv_range=None).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert h.register(0, mv_range=(7, 7)).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert h.register(0, mv_range=(1, 7)).error_code == ErrorCode.NONE


def test_a_feature_the_cluster_has_not_finalized_counts_as_level_0():
    """processRegistrationFeature: versionOrDefault(name, 0) must be in the announced range, so a
    broker that can only run an unfinalized feature at [1, 1] is refused (issue 8: the kit
    accepted it)."""
    h = Harness(15)
    announced = [(MV, VersionRange(1, 15)), ("group.version", VersionRange(1, 1))]
    assert registration_feature_error(finalized_features(h.image), announced) == (
        "Unable to register because the broker does not support finalized version 0 of "
        "group.version. The broker wants a version between 1 and 1, inclusive.")
    assert h.register(0, features=[("group.version", 1, 1)]).error_code == \
        ErrorCode.UNSUPPORTED_VERSION
    assert h.register(0, features=[("group.version", 0, 1)]).error_code == ErrorCode.NONE
