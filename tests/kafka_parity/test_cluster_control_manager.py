"""Kafka 4.2.1 ``ClusterControlManagerTest``, ported: broker and controller registration checks
through the kit's ``controller.cluster`` over an image holding exactly what Kafka's test
replays. BrokerRegistrationResponse carries only an error code; the message Kafka's test
asserts is the one ``registration_feature_error`` gives (``processRegistrationFeature``)."""

from __future__ import annotations

import pytest
from controller_seam import MV, Seam, level

from kraft_testkit.controller import cluster
from kraft_testkit.controller.features import finalized_features, registration_feature_error
from kraft_testkit.metadata import VersionRange
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

CLUSTER = "fPZv1VBsRFmnlRvmGcOW9w"
INCARNATION = Uuid(bytes(15) + b"\x11")
DIRS = (Uuid(bytes.fromhex("c8919a6237db4194951405cd4b7b9766")),
        Uuid(bytes.fromhex("323dc2d6e3924b6dbc7849e9c95ce601")))
KRAFT = "kraft.version"
MINIMUM = V.MINIMUM_VERSION_4X
IBP_3_4_IV0, IBP_3_5_IV0, IBP_3_7_IV0, IBP_3_9_IV0 = 8, 9, 15, 21


def request(*feats: tuple[str, int, int], broker_id: int = 0, cluster_id: str = CLUSTER,
            log_dirs=DIRS) -> M.BrokerRegistrationRequest:
    cls = M.BrokerRegistrationRequest
    return cls(broker_id=broker_id, cluster_id=cluster_id, incarnation_id=INCARNATION,
               rack=None, listeners=(), log_dirs=tuple(log_dirs),
               features=tuple(cls.Feature(name=n, min_supported_version=lo,
                                          max_supported_version=hi) for n, lo, hi in feats))


def register(seam: Seam, req, *, kraft_version: int = 0) -> int:
    return seam.run(cluster.register_broker(seam.ctx(), req,
                                            kraft_version=kraft_version)).error_code


def why(finalized: dict, *feats: tuple[str, int, int]):
    return registration_feature_error(finalized, [(n, VersionRange(lo, hi))
                                                  for n, lo, hi in feats])


def _seam(*records) -> Seam:
    seam = Seam(*records, cluster_id=CLUSTER)
    seam.activate()
    return seam


@pytest.mark.kafka("ClusterControlManagerTest#testRegistrationWithIncorrectClusterId")
def test_registration_with_incorrect_cluster_id():
    seam = _seam(level(MV, MINIMUM))
    assert register(seam, request((MV, MINIMUM, MINIMUM), cluster_id="WIjw3grwRZmR2uOpdpVXbg")) \
        == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert seam.last_records == []


@pytest.mark.kafka("ClusterControlManagerTest#testRegistrationWithUnsupportedFeature")
def test_registration_with_unsupported_feature():
    seam = _seam(level(MV, IBP_3_7_IV0), level("test.feature.version", 1))
    finalized = finalized_features(seam.image)
    assert why(finalized, (MV, MINIMUM, IBP_3_7_IV0)) == (
        ErrorCode.UNSUPPORTED_VERSION,
        "Unable to register because the broker does not support finalized version 1 of "
        "test.feature.version. The broker wants a version between 0 and 0, inclusive.")
    assert register(seam, request((MV, MINIMUM, IBP_3_7_IV0))) == ErrorCode.UNSUPPORTED_VERSION
    assert seam.last_records == []


@pytest.mark.kafka("ClusterControlManagerTest#testRegistrationWithUnsupportedKraftVersion")
def test_registration_with_unsupported_kraft_version():
    """The quorum controller adds the Raft log's kraft.version (1) to the finalized features:
    a broker not naming kraft.version, or naming [0, 0], is refused; [1, 1] registers."""
    seam = _seam(level(MV, IBP_3_9_IV0))
    finalized = {**finalized_features(seam.image), KRAFT: 1}
    message = ("Unable to register because the broker does not support finalized version 1 of "
               "kraft.version. The broker wants a version between 0 and 0, inclusive.")
    only_mv = (MV, IBP_3_9_IV0, IBP_3_9_IV0)
    assert why(finalized, only_mv) == (ErrorCode.UNSUPPORTED_VERSION, message)
    assert why(finalized, only_mv, (KRAFT, 0, 0)) == (ErrorCode.UNSUPPORTED_VERSION, message)
    assert register(seam, request(only_mv), kraft_version=1) == ErrorCode.UNSUPPORTED_VERSION
    assert register(seam, request(only_mv, (KRAFT, 0, 0)), kraft_version=1) == \
        ErrorCode.UNSUPPORTED_VERSION
    assert register(seam, request(only_mv, (KRAFT, 1, 1)), kraft_version=1) == ErrorCode.NONE


@pytest.mark.kafka("ClusterControlManagerTest#testRegistrationWithUnsupportedMetadataVersion")
def test_registration_with_unsupported_metadata_version():
    seam = _seam(level(MV, IBP_3_5_IV0))
    finalized = finalized_features(seam.image)
    for lo_hi in (MINIMUM, IBP_3_4_IV0):
        assert why(finalized, (MV, lo_hi, lo_hi)) == (
            ErrorCode.UNSUPPORTED_VERSION,
            f"Unable to register because the broker does not support finalized version 9 of "
            f"metadata.version. The broker wants a version between {lo_hi} and {lo_hi}, "
            f"inclusive.")
        assert register(seam, request((MV, lo_hi, lo_hi))) == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.kafka("ClusterControlManagerTest#testRegisterControlWithUnsupportedMetadataVersion")
def test_controller_registration_needs_3_7_iv0():
    seam = _seam(level(MV, 14))                        # 3.6-IV2
    response = seam.run(cluster.register_controller(seam.ctx(), M.ControllerRegistrationRequest(
        controller_id=1)))
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert response.error_message == ("The current MetadataVersion is too old to support "
                                      "controller registrations.")
