"""UpdateFeatures and the finalized metadata.version, as Kafka 4.x's FeatureControlManager decides.

Since Kafka 3.9 (KIP-1022) the first failing update fails the whole request with a top-level
error ("The update failed for all features since the following feature had an error: ...");
``only`` reads that error like a per-feature result.
"""

from __future__ import annotations

import pytest
from cluster_helpers import CONTROLLER_ID, Harness, controller_registration

from kraft_testkit.controller import cluster
from kraft_testkit.controller.features import (
    UpgradeType,
    finalized_features,
    metadata_changed_between,
    metadata_version,
    update_features,
)
from kraft_testkit.controller.result import record
from kraft_testkit.metadata import MetadataImage, VersionRange
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

Key = M.UpdateFeaturesRequest.FeatureUpdateKey
MV = "metadata.version"
SAFE, UNSAFE, UPGRADE = UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE, UpgradeType.UPGRADE
WITH_GROUPS = {MV: VersionRange(1, V.LATEST), "group.version": VersionRange(0, 1)}


def request(*updates: tuple[str, int, int], validate_only: bool = False,
            allow_downgrade: bool = False) -> M.UpdateFeaturesRequest:
    return M.UpdateFeaturesRequest(
        feature_updates=tuple(Key(feature=n, max_version_level=lv, upgrade_type=t,
                                  allow_downgrade=allow_downgrade) for n, lv, t in updates),
        validate_only=validate_only)


def update(h: Harness, *updates, supported=None, quorum=None, **kw) -> M.UpdateFeaturesResponse:
    return h.run(update_features(h.ctx(), request(*updates, **kw), supported_features=supported,
                                 quorum_node_ids=quorum))


def only(response: M.UpdateFeaturesResponse):
    if response.error_code != ErrorCode.NONE:
        assert response.results == ()
        assert response.error_message.startswith(
            "The update failed for all features since the following feature had an error: ")
        return M.UpdateFeaturesResponse.UpdatableFeatureResult(
            feature="?", error_code=response.error_code, error_message=response.error_message)
    (result,) = response.results
    return result


# ---------------------------------------------------------------- metadata.version


def test_upgrade_metadata_version():
    h = Harness(8)
    result = only(update(h, (MV, 18, UPGRADE)))
    assert (result.feature, result.error_code, result.error_message) == (MV, 0, None)
    (rec,) = h.last_records
    assert rec.message == M.FeatureLevelRecord(name=MV, feature_level=18) and rec.version == 0
    assert h.image.metadata_version == 18


def test_validate_only_answers_the_same_and_writes_nothing():
    h = Harness(8)
    result = only(update(h, (MV, 18, UPGRADE), validate_only=True))
    assert result.error_code == 0 and h.last_records == []
    result = only(update(h, (MV, 5, UPGRADE), validate_only=True))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION and h.last_records == []
    assert h.image.metadata_version == 8


def test_downgrade_needs_a_downgrade_type():
    h = Harness(19)
    result = only(update(h, (MV, 18, UPGRADE)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "safe or unsafe downgrade" in result.error_message


def test_a_downgrade_type_cannot_upgrade():
    h = Harness(17)
    result = only(update(h, (MV, 18, SAFE)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "Can't downgrade to a newer version." in result.error_message


@pytest.mark.parametrize("kind", [SAFE, UNSAFE])
def test_downgrade_without_metadata_changes_is_allowed(kind):
    h = Harness(19)                  # 3.7-IV4 -> 3.7-IV2: IV3 and IV4 changed no records
    assert not metadata_changed_between(17, 19)
    assert only(update(h, (MV, 17, kind))).error_code == 0
    assert h.image.metadata_version == 17


def test_downgrade_across_a_metadata_change_is_refused_even_unsafe():
    h = Harness(18)                  # 3.7-IV2 (17) changed records
    result = only(update(h, (MV, 16, SAFE)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "Refusing to perform the requested downgrade" in result.error_message
    result = only(update(h, (MV, 16, UNSAFE)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "Unsafe metadata downgrade is not supported" in result.error_message
    assert h.last_records == [] and h.image.metadata_version == 18


def test_v0_allow_downgrade_is_a_safe_downgrade():
    h = Harness(19)
    response = update(h, (MV, 18, 1), allow_downgrade=True)
    assert only(response).error_code == 0 and h.image.metadata_version == 18


@pytest.mark.parametrize("level, why", [
    (3, "only supports versions 7-29"),   # QuorumFeatures: a 4.2 controller runs 7..29
    (-1, "cannot be less than 0"),
    (99, "only supports versions"),
    (0, "only supports versions"),
])
def test_metadata_version_limits(level, why):
    h = Harness(8)
    result = only(update(h, (MV, level, SAFE if 0 <= level < 8 else UPGRADE)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION and why in result.error_message


@pytest.mark.parametrize("code", [0, 4, 7, -1])
def test_unknown_upgrade_type(code):
    h = Harness(8)
    result = only(update(h, (MV, 18, code)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "upgrade type" in result.error_message


def test_every_registered_broker_must_support_the_new_level():
    h = Harness(8)
    h.register(1, mv_range=(1, 19), log_dirs=())
    h.register(2, mv_range=(1, 17), log_dirs=())
    h.heartbeat(2, want_fence=True)    # fenced brokers count too
    result = only(update(h, (MV, 18, UPGRADE)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "Broker 2 only supports versions" in result.error_message
    assert only(update(h, (MV, 17, UPGRADE))).error_code == 0


def test_registered_controllers_and_voters_must_support_it():
    h = Harness(15)
    h.run(cluster.register_controller(h.ctx(), controller_registration(CONTROLLER_ID)))
    h.run(cluster.register_controller(h.ctx(), controller_registration(2, mv_range=(1, 16))))
    result = only(update(h, (MV, 17, UPGRADE)))
    assert "Controller 2 only supports versions" in result.error_message
    assert only(update(h, (MV, 16, UPGRADE), quorum=[CONTROLLER_ID, 2])).error_code == 0
    result = only(update(h, (MV, 16, UPGRADE), quorum=[CONTROLLER_ID, 2, 3]))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "controller 3 has not registered" in result.error_message


def test_this_controller_must_support_it():
    h = Harness(8)
    result = only(update(h, (MV, 18, UPGRADE), supported={MV: VersionRange(1, 17)}))
    assert result.error_message.endswith(f"Local controller {CONTROLLER_ID} only supports "
                                         "versions 1-17")


# ---------------------------------------------------------------- other features


def test_finalize_and_remove_a_feature():
    h = Harness(18)
    h.register(1, features=[("group.version", 0, 1)])
    result = only(update(h, ("group.version", 1, UPGRADE), supported=WITH_GROUPS))
    assert result.error_code == 0
    assert finalized_features(h.image) == {MV: 18, "group.version": 1}
    result = only(update(h, ("group.version", 0, SAFE), supported=WITH_GROUPS))
    assert result.error_code == 0
    assert h.last_records[0].message == M.FeatureLevelRecord(name="group.version",
                                                             feature_level=0)
    assert finalized_features(h.image) == {MV: 18}


def test_a_feature_nobody_knows_cannot_be_finalized():
    h = Harness(18)
    result = only(update(h, ("a.version", 1, UPGRADE)))
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert "does not support this feature." in result.error_message
    h.register(1)   # knows nothing of group.version
    result = only(update(h, ("group.version", 1, UPGRADE), supported=WITH_GROUPS))
    assert "Broker 1 does not support this feature." in result.error_message
    # turning it off is always supported
    assert only(update(h, ("group.version", 0, UPGRADE))).error_code == 0


def test_one_failing_update_fails_the_request_and_success_is_written_together():
    """Kafka 4.x: the first error aborts every update (top-level error, no results); on
    success each feature gets a NONE result in request order, the records one atomic batch."""
    h = Harness(8)
    response = update(h, (MV, 18, UPGRADE), ("group.version", 1, UPGRADE),
                      ("a.version", 2, UPGRADE), supported=WITH_GROUPS)
    assert response.error_code == ErrorCode.INVALID_UPDATE_VERSION and response.results == ()
    assert response.error_message == (
        "The update failed for all features since the following feature had an error: "
        "Invalid update version 2 for feature a.version. Local controller "
        f"{CONTROLLER_ID} does not support this feature.")
    assert h.last_records == [] and h.image.metadata_version == 8
    response = update(h, (MV, 18, UPGRADE), ("group.version", 1, UPGRADE), supported=WITH_GROUPS)
    assert [(r.feature, r.error_code) for r in response.results] == \
        [(MV, 0), ("group.version", 0)]
    assert [r.message.name for r in h.last_records] == [MV, "group.version"]
    assert h.image.metadata_version == 18
    assert finalized_features(h.image)["group.version"] == 1


def test_a_feature_named_twice_keeps_the_last_update():
    h = Harness(8)
    response = update(h, (MV, 99, UPGRADE), (MV, 13, UPGRADE))
    assert only(response).error_code == 0 and h.image.metadata_version == 13


def test_metadata_version_gates_as_3_0_iv1_without_a_record():
    assert metadata_version(MetadataImage.EMPTY) == 1
    assert finalized_features(MetadataImage.EMPTY) == {MV: 1}
    h = Harness(None)
    assert only(update(h, (MV, 7, UPGRADE))).error_code == 0
    assert metadata_version(h.image) == 7
