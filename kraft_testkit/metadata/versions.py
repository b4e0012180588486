"""Kafka's released metadata.version levels, and what each one allows.

One table, after Apache Kafka's ``MetadataVersion`` enum as released in 4.2 (KRaft levels only,
3.0-IV1 = 1 through 4.2-IV1 = 29, ``LATEST_PRODUCTION`` = 4.2-IV1), plus 4.3-IV0 (30) as the
one *non-production* level a 4.2 node knows: it is refused unless the user enables unstable
feature versions (Kafka's ``unstable.feature.versions.enable``). Kafka 4.x itself no longer
boots below 3.3-IV3 (7); the kit keeps the 3.x levels so ``metadata_version=`` can select the
behaviour of older releases (docs/fidelity.md lists them). Everything that gates a record shape
on metadata.version asks a predicate here, so the controller, the snapshot writer and the tests
agree. Predicates take a feature level (int) or a :class:`MetadataVersion`.

ELR (KIP-966) records start at 4.0-IV1 (23): PartitionRecord/PartitionChangeRecord v2 and
ClearElrRecord. Whether the controller *uses* ELR is the eligible.leader.replicas.version
feature (controller/feature_table.py), on by default from 4.1-IV0 (26).
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import UnknownMetadataVersionError

FEATURE_NAME = "metadata.version"


class MetadataVersion(NamedTuple):
    """One released level: ``level`` is what FeatureLevelRecord carries, ``name`` Kafka's
    ``3.7-IV4`` spelling, ``did_metadata_change`` whether records changed since the level before."""

    level: int
    name: str
    did_metadata_change: bool

    @property
    def release(self) -> str:
        return self.name.split("-")[0]

    def __str__(self) -> str:
        return self.name


VERSIONS: tuple[MetadataVersion, ...] = (
    MetadataVersion(1, "3.0-IV1", True),    # first KRaft level
    MetadataVersion(2, "3.1-IV0", False),   # topic ids in Fetch
    MetadataVersion(3, "3.2-IV0", True),    # leader recovery state (KIP-704)
    MetadataVersion(4, "3.3-IV0", False),   # metadata.version in the log (KIP-778)
    MetadataVersion(5, "3.3-IV1", True),    # NoOpRecord (KIP-835)
    MetadataVersion(6, "3.3-IV2", True),    # BrokerRegistrationChangeRecord replaces Fence/Unfence
    MetadataVersion(7, "3.3-IV3", True),    # InControlledShutdown (KIP-841)
    MetadataVersion(8, "3.4-IV0", True),    # ZK migration (KIP-866), RegisterBrokerRecord v2
    MetadataVersion(9, "3.5-IV0", False),   # tiered storage (KIP-405)
    MetadataVersion(10, "3.5-IV1", False),  # replica epoch in Fetch (KIP-903)
    MetadataVersion(11, "3.5-IV2", True),   # SCRAM credentials
    MetadataVersion(12, "3.6-IV0", False),  # no leader epoch bump on ISR shrink (KAFKA-15021)
    MetadataVersion(13, "3.6-IV1", True),   # metadata transactions
    MetadataVersion(14, "3.6-IV2", True),   # delegation tokens
    MetadataVersion(15, "3.7-IV0", True),   # controller registration (KIP-919)
    MetadataVersion(16, "3.7-IV1", False),  # reserved
    MetadataVersion(17, "3.7-IV2", True),   # JBOD: log dirs, partition directories (KIP-858)
    MetadataVersion(18, "3.7-IV3", False),  # reserved (ELR moved to a later release)
    MetadataVersion(19, "3.7-IV4", False),  # Fetch v16 (KIP-951)
    MetadataVersion(20, "3.8-IV0", False),  # the 3.8 release
    MetadataVersion(21, "3.9-IV0", False),  # ListOffsets v9 (KIP-1005), Fetch v17
    MetadataVersion(22, "4.0-IV0", False),  # group.version 1 bootstrap (KIP-848)
    MetadataVersion(23, "4.0-IV1", True),   # ELR fields, ClearElrRecord (KIP-966)
    MetadataVersion(24, "4.0-IV2", False),  # transaction.version 1, 2 bootstrap (KIP-890)
    MetadataVersion(25, "4.0-IV3", False),  # async remote LIST_OFFSETS (KIP-1075)
    MetadataVersion(26, "4.1-IV0", False),  # ELR on by default for new clusters (KIP-966)
    MetadataVersion(27, "4.1-IV1", False),  # replica fetcher Fetch v18
    MetadataVersion(28, "4.2-IV0", False),  # share groups on by default (KIP-932)
    MetadataVersion(29, "4.2-IV1", False),  # streams groups on by default (KIP-1071)
    MetadataVersion(30, "4.3-IV0", False),  # 4.2.1: a non-production placeholder, no change
)

MINIMUM_KRAFT_VERSION = 1       # 3.0-IV1
MINIMUM_BOOTSTRAP_VERSION = 4   # 3.3-IV0: the first level FeatureLevelRecord can carry
MINIMUM_VERSION_4X = 7          # 3.3-IV3: the lowest level Kafka 4.x accepts
LATEST_PRODUCTION = 29          # 4.2-IV1: Kafka 4.2's LATEST_PRODUCTION, the kit's default
LATEST = VERSIONS[-1].level     # latest *testing* level (needs unstable feature versions)
RELEASE = "4.2"                 # the Kafka release the kit follows by default

BY_LEVEL: dict[int, MetadataVersion] = {v.level: v for v in VERSIONS}
BY_NAME: dict[str, MetadataVersion] = {v.name: v for v in VERSIONS}
for _v in VERSIONS:  # "3.7" means the release's last production level, as Kafka parses it
    if _v.level <= LATEST_PRODUCTION:
        BY_NAME[_v.release] = _v

# Levels at which a capability starts (the predicates below read these).
IBP_3_2_IV0 = 3
IBP_3_3_IV0 = 4
IBP_3_3_IV1 = 5
IBP_3_3_IV2 = 6
IBP_3_3_IV3 = 7
IBP_3_4_IV0 = 8
IBP_3_5_IV2 = 11
IBP_3_6_IV0 = 12
IBP_3_6_IV1 = 13
IBP_3_6_IV2 = 14
IBP_3_7_IV0 = 15
IBP_3_7_IV2 = 17
IBP_3_9_IV0 = 21
IBP_4_0_IV0 = 22
IBP_4_0_IV1 = 23
IBP_4_0_IV2 = 24
IBP_4_1_IV0 = 26
IBP_4_1_IV1 = 27
IBP_4_2_IV0 = 28
IBP_4_2_IV1 = 29
IBP_4_3_IV0 = 30

def level_of(mv: int | MetadataVersion) -> int:
    return mv.level if isinstance(mv, MetadataVersion) else int(mv)


def get(mv: int | str | MetadataVersion) -> MetadataVersion:
    """The level for a feature level or a name (``18``, ``"3.7-IV3"``, ``"3.7"``, ``"4.2.1"``:
    as in Kafka's ``fromVersionString``, only the first two parts of a release count)."""
    if isinstance(mv, MetadataVersion):
        return mv
    if isinstance(mv, str):
        key = mv if "-" in mv else ".".join(mv.split(".")[:2])
        found = BY_NAME.get(key)
    else:
        found = BY_LEVEL.get(mv)
    if found is None:
        known = f"{VERSIONS[0].level}..{VERSIONS[-1].level}"
        raise UnknownMetadataVersionError(
            f"no released metadata.version {mv!r} (known levels {known}, names like '4.2-IV1')")
    return found


def is_known(level: int) -> bool:
    return level in BY_LEVEL


def is_production(mv: int | MetadataVersion) -> bool:
    """Kafka's ``isProduction``: at or below LATEST_PRODUCTION (4.2-IV1)."""
    return level_of(mv) <= LATEST_PRODUCTION


def check_usable(mv: int | str | MetadataVersion, *, unstable: bool = False) -> MetadataVersion:
    """The level, if a node may run it: a non-production level needs ``unstable`` (Kafka's
    ``unstable.feature.versions.enable``), else UnknownMetadataVersionError, worded as Kafka's
    ``fromVersionString`` words it."""
    found = get(mv)
    if not unstable and not is_production(found):
        allowed = ", ".join(v.name for v in VERSIONS if v.level <= LATEST_PRODUCTION
                            and v.level >= MINIMUM_BOOTSTRAP_VERSION)
        raise UnknownMetadataVersionError(
            f"Unknown metadata.version '{mv}'. Supported metadata.version are: {allowed} "
            f"({found.name} is not production-ready: set unstable.feature.versions.enable)")
    return found


# ---------------------------------------------------------------- capabilities


def is_leader_recovery_supported(mv: int | MetadataVersion) -> bool:
    return level_of(mv) >= IBP_3_2_IV0


def is_feature_level_record_supported(mv: int | MetadataVersion) -> bool:
    """FeatureLevelRecord (so metadata.version itself) can be written from 3.3-IV0 on."""
    return level_of(mv) >= MINIMUM_BOOTSTRAP_VERSION


def is_noop_record_supported(mv: int | MetadataVersion) -> bool:
    return level_of(mv) >= IBP_3_3_IV1


def is_broker_registration_change_record_supported(mv: int | MetadataVersion) -> bool:
    """From 3.3-IV2 the controller writes BrokerRegistrationChangeRecord, before that
    Fence/UnfenceBrokerRecord."""
    return level_of(mv) >= IBP_3_3_IV2


def is_in_controlled_shutdown_state_supported(mv: int | MetadataVersion) -> bool:
    return level_of(mv) >= IBP_3_3_IV3


def is_migration_supported(mv: int | MetadataVersion) -> bool:
    """ZK migration state (ZkMigrationStateRecord, RegisterBrokerRecord.IsMigratingZkBroker)."""
    return level_of(mv) >= IBP_3_4_IV0


def is_scram_supported(mv: int | MetadataVersion) -> bool:
    return level_of(mv) >= IBP_3_5_IV2


def is_leader_epoch_bump_required_on_isr_shrink(mv: int | MetadataVersion) -> bool:
    return level_of(mv) < IBP_3_6_IV0


def is_metadata_transaction_supported(mv: int | MetadataVersion) -> bool:
    return level_of(mv) >= IBP_3_6_IV1


def is_delegation_token_supported(mv: int | MetadataVersion) -> bool:
    return level_of(mv) >= IBP_3_6_IV2


def is_controller_registration_supported(mv: int | MetadataVersion) -> bool:
    return level_of(mv) >= IBP_3_7_IV0


def is_directory_assignment_supported(mv: int | MetadataVersion) -> bool:
    """Broker log dirs and partition replica directories (JBOD in KRaft)."""
    return level_of(mv) >= IBP_3_7_IV2


def is_elr_supported(mv: int | MetadataVersion) -> bool:
    """ELR fields and ClearElrRecord exist from 4.0-IV1 (whether they are *used* is the
    eligible.leader.replicas.version feature)."""
    return level_of(mv) >= IBP_4_0_IV1


# ---------------------------------------------------------------- record versions


def register_broker_record_version(mv: int | MetadataVersion) -> int:
    if is_directory_assignment_supported(mv):
        return 3  # LogDirs
    if is_migration_supported(mv):
        return 2  # IsMigratingZkBroker
    if is_in_controlled_shutdown_state_supported(mv):
        return 1  # InControlledShutdown
    return 0


def register_controller_record_version(mv: int | MetadataVersion) -> int:
    if not is_controller_registration_supported(mv):
        raise UnknownMetadataVersionError(
            f"controller registration needs metadata.version 3.7-IV0 (15) or later, not {mv}")
    return 0


def partition_record_version(mv: int | MetadataVersion) -> int:
    if is_elr_supported(mv):
        return 2
    return 1 if is_directory_assignment_supported(mv) else 0


def partition_change_record_version(mv: int | MetadataVersion) -> int:
    if is_elr_supported(mv):
        return 2
    return 1 if is_directory_assignment_supported(mv) else 0


def broker_registration_change_record_version(*, in_controlled_shutdown: bool = False,
                                              log_dirs: bool = False) -> int:
    """The lowest version carrying the fields in use (Kafka writes v0 for a plain fence/unfence,
    v1 with InControlledShutdown, v2 with LogDirs)."""
    if log_dirs:
        return 2
    return 1 if in_controlled_shutdown else 0
