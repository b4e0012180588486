"""The metadata.version table and what it gates."""

from __future__ import annotations

import pytest

from kraft_testkit.metadata import UnknownMetadataVersionError
from kraft_testkit.metadata import versions as V


def test_levels_and_names_follow_kafka():
    assert [v.level for v in V.VERSIONS] == list(range(1, 31))
    assert V.get(1).name == "3.0-IV1" and V.get(19).name == "3.7-IV4"
    assert V.get("3.7-IV3").level == 18 and V.get("3.7").level == 19 and V.get("3.3").level == 7
    assert str(V.get(16)) == "3.7-IV1" and V.get(16).release == "3.7"
    # Kafka 4.2: 4.0-IV1 (23) added the ELR records; "4.2" is its last production level
    assert V.get("4.0-IV1").level == 23 and V.get("4.2").level == 29 == V.LATEST_PRODUCTION
    assert V.get("4.2.1").level == 29 and V.get("4.1").level == 27 and V.get("4.0").level == 25
    # 4.2.1 MetadataVersion#didMetadataChange over 4.x's levels (4.3-IV0 is a placeholder)
    assert [lv for lv in range(7, 31) if V.get(lv).did_metadata_change] == \
        [7, 8, 11, 13, 14, 15, 17, 23]
    with pytest.raises(UnknownMetadataVersionError):
        V.get(0)
    with pytest.raises(UnknownMetadataVersionError):
        V.get("4.3")        # 4.3-IV0 is not production in 4.2: no short name for it
    with pytest.raises(UnknownMetadataVersionError):
        V.get("5.0")


def test_non_production_levels_need_unstable_feature_versions():
    assert V.check_usable(29).name == "4.2-IV1" and not V.is_production(30)
    with pytest.raises(UnknownMetadataVersionError, match="not production-ready"):
        V.check_usable("4.3-IV0")
    assert V.check_usable(30, unstable=True).name == "4.3-IV0"


@pytest.mark.parametrize("predicate,first", [
    (V.is_leader_recovery_supported, 3),
    (V.is_feature_level_record_supported, 4),
    (V.is_noop_record_supported, 5),
    (V.is_broker_registration_change_record_supported, 6),
    (V.is_in_controlled_shutdown_state_supported, 7),
    (V.is_migration_supported, 8),
    (V.is_scram_supported, 11),
    (V.is_metadata_transaction_supported, 13),
    (V.is_delegation_token_supported, 14),
    (V.is_controller_registration_supported, 15),
    (V.is_directory_assignment_supported, 17),
])
def test_capabilities_start_at_their_level(predicate, first):
    assert [predicate(level) for level in range(1, 20)] == [level >= first
                                                          for level in range(1, 20)]
    assert predicate(V.get(first))


def test_record_versions_per_level():
    assert [V.register_broker_record_version(level) for level in (6, 7, 8, 16, 17, 18)] == [
        0, 1, 2, 2, 3, 3]
    assert [V.partition_record_version(level) for level in (16, 17, 19, 22, 23, 29)] == [
        0, 1, 1, 1, 2, 2]
    assert [V.partition_change_record_version(level) for level in (16, 17, 22, 23)] == [
        0, 1, 1, 2]
    assert V.is_leader_epoch_bump_required_on_isr_shrink(11)
    assert not V.is_leader_epoch_bump_required_on_isr_shrink(12)
    assert [V.is_elr_supported(level) for level in (19, 22, 23, 29)] == [False, False, True, True]
    assert V.register_controller_record_version(15) == 0
    with pytest.raises(UnknownMetadataVersionError):
        V.register_controller_record_version(14)
    assert V.broker_registration_change_record_version() == 0
    assert V.broker_registration_change_record_version(in_controlled_shutdown=True) == 1
    assert V.broker_registration_change_record_version(log_dirs=True) == 2
