"""Finalized features: metadata.version as the gate of every record shape, and UpdateFeatures.

After Kafka 4.x's ``FeatureControlManager`` and ``QuorumFeatures``. A feature level may change
only if this controller's software, every registered broker and every registered controller
support it, and its dependencies hold (metadata/feature_versions.py); metadata.version
downgrades are allowed only between levels whose metadata did not change (an "unsafe" downgrade
across a metadata change is refused, as released Kafka still does); a level of 0 removes a
feature (a FeatureLevelRecord with level 0). The first failing update fails the whole request
with a top-level error in the response (never raised), as Kafka 4.x answers.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

from ..metadata import MetadataImage, VersionRange
from ..metadata import feature_versions as FV
from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord
from .result import ControllerContext, ControllerResult, record

FEATURE_NAME = V.FEATURE_NAME
#: what a node that does not know a feature supports: only "off"
DISABLED = VersionRange(0, 0)
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER

FeatureResult = M.UpdateFeaturesResponse.UpdatableFeatureResult


class UpgradeType(enum.IntEnum):
    """Kafka's ``FeatureUpdate.UpgradeType`` wire codes."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def from_code(cls, code: int) -> UpgradeType:
        return cls(code) if code in (1, 2, 3) else cls.UNKNOWN


class ZkMigrationState(enum.IntEnum):
    """Kafka's ``ZkMigrationState`` (ZkMigrationStateRecord values)."""

    NONE = 0
    MIGRATION = 1
    PRE_MIGRATION = 2
    POST_MIGRATION = 3
    ZK = 4

    @property
    def in_progress(self) -> bool:
        return self in (ZkMigrationState.MIGRATION, ZkMigrationState.PRE_MIGRATION)


# ---------------------------------------------------------------- reading the image


def metadata_version(image: MetadataImage) -> int:
    """The finalized metadata.version level that gates record shapes. A log without a
    FeatureLevelRecord for it is read as 3.0-IV1, as Kafka does."""
    mv = image.metadata_version
    return V.MINIMUM_KRAFT_VERSION if mv is None else mv


def finalized_features(image: MetadataImage) -> dict[str, int]:
    """Every finalized feature level, metadata.version included (Kafka's finalizedFeatures)."""
    out = dict(image.features.finalized)
    out[FEATURE_NAME] = metadata_version(image)
    return out


def zk_migration_state(image: MetadataImage) -> ZkMigrationState:
    return ZkMigrationState(image.features.zk_migration_state)


def _range_str(r: VersionRange) -> str:
    """Kafka's ``VersionRange.toString``: ``4-7``, ``3`` when min == max, ``1+`` up to Short.MAX."""
    if r.min == r.max:
        return str(r.min)
    if r.max == 0x7FFF:
        return f"{r.min}+"
    return f"{r.min}-{r.max}"


def reason_not_supported(level: int, who: str, supported: VersionRange) -> str | None:
    """Why ``who`` cannot run at ``level`` (Kafka's ``QuorumFeatures.reasonNotSupported``)."""
    if supported.min <= level <= supported.max:
        return None
    if supported.max == 0:
        return f"{who} does not support this feature."
    return f"{who} only supports versions {_range_str(supported)}"


def _unsupported(level: int, name: str, r: VersionRange) -> tuple[ErrorCode, str]:
    return ErrorCode.UNSUPPORTED_VERSION, (
        f"Unable to register because the broker does not support finalized version {level} of "
        f"{name}. The broker wants a version between {r.min} and {r.max}, inclusive.")


def registration_feature_error(finalized: Mapping[str, int],
                               supported: Iterable[tuple[str, VersionRange]]
                               ) -> tuple[ErrorCode, str] | None:
    """Why a broker announcing ``supported`` may not register (error code and message), or None.

    Kafka 4.2.1's ``ClusterControlManager#registerBroker`` with ``processRegistrationFeature``:
    each named feature in request order must include its finalized level, one the cluster has
    not finalized counting as 0 (so [1, 1] of it is refused: UNSUPPORTED_VERSION); a request
    naming no metadata.version is INVALID_REGISTRATION (KAFKA-18601); then every finalized
    feature above 0 it does not name counts as [0, 0]. ``finalized`` is what the quorum
    controller passes in: the finalized features plus the Raft log's kraft.version.
    """
    named: set[str] = set()
    for name, r in supported:
        level = finalized.get(name, 0)
        if not r.min <= level <= r.max:
            return _unsupported(level, name, r)
        named.add(name)
    if FEATURE_NAME not in named:
        return ErrorCode.INVALID_REGISTRATION, \
            f"Request features do not contain '{FEATURE_NAME}'"
    for name, level in sorted(finalized.items()):
        if level != 0 and name not in named:
            return _unsupported(level, name, DISABLED)
    return None


# ---------------------------------------------------------------- UpdateFeatures


def _upgrade_type(update: M.UpdateFeaturesRequest.FeatureUpdateKey) -> UpgradeType:
    """v0 carried AllowDowngrade (safe downgrade); v1 carries UpgradeType."""
    if update.upgrade_type == UpgradeType.UPGRADE and update.allow_downgrade:
        return UpgradeType.SAFE_DOWNGRADE
    return UpgradeType.from_code(update.upgrade_type)


def _invalid_update(name: str, level: int, why: str) -> tuple[ErrorCode, str]:
    return ErrorCode.INVALID_UPDATE_VERSION, \
        f"Invalid update version {level} for feature {name}. {why}"


def _invalid_metadata_version(level: int, why: str) -> tuple[ErrorCode, str]:
    return ErrorCode.INVALID_UPDATE_VERSION, f"Invalid metadata.version {level}. {why}"


def _why_unsupported(image: MetadataImage, node_id: int, name: str, level: int,
                     supported: Mapping[str, VersionRange],
                     quorum_node_ids: Sequence[int] | None) -> str | None:
    """The first node that cannot run ``name`` at ``level``: this controller, then each
    registered broker (fenced ones too), then each registered controller; and every voter must
    have registered, when the metadata.version in force has controller registrations."""
    why = reason_not_supported(level, f"Local controller {node_id}",
                               supported.get(name, DISABLED))
    if why:
        return why
    for broker_id in image.cluster.broker_ids():
        ranges = image.cluster.brokers[broker_id].supported_features
        why = reason_not_supported(level, f"Broker {broker_id}", ranges.get(name, DISABLED))
        if why:
            return why
    if V.is_controller_registration_supported(metadata_version(image)):
        found = {node_id}
        for controller_id in sorted(image.cluster.controllers):
            if controller_id == node_id:
                continue
            ranges = image.cluster.controllers[controller_id].supported_features
            why = reason_not_supported(level, f"Controller {controller_id}",
                                       ranges.get(name, DISABLED))
            if why:
                return why
            found.add(controller_id)
        for voter in quorum_node_ids or ():
            if voter not in found:
                return f"controller {voter} has not registered, and may not support this feature"
    return None


def _metadata_version_change(image: MetadataImage, level: int,
                             upgrade: UpgradeType) -> tuple[ErrorCode, str] | None:
    """The extra checks of a metadata.version change (Kafka 4.2.1's
    ``FeatureControlManager#updateMetadataVersion``): a level 4.x knows (the kit's 3.x
    emulation also knows 3.3-IV0..IV2), and a downgrade only across levels whose metadata did
    not change."""
    if not V.is_known(level) or level < V.MINIMUM_BOOTSTRAP_VERSION:
        return _invalid_metadata_version(
            level, f"Valid versions are from {V.MINIMUM_VERSION_4X} to {V.LATEST}.")
    current = metadata_version(image)
    if level < current and metadata_changed_between(level, current):
        if upgrade is UpgradeType.UNSAFE_DOWNGRADE:
            return _unsupported_downgrade(
                current, level, "Unsafe metadata downgrade is not supported in this version.")
        return _unsupported_downgrade(
            current, level, "Refusing to perform the requested downgrade because it might "
                            "delete metadata information.")
    return None


def _unsupported_downgrade(current: int, level: int, why: str) -> tuple[ErrorCode, str]:
    return ErrorCode.INVALID_UPDATE_VERSION, \
        f"Unsupported metadata.version downgrade from {current} to {level}. {why}"


def metadata_changed_between(low: int, high: int) -> bool:
    """True if any level in (low, high] changed the metadata (a downgrade would lose data)."""
    return any(V.BY_LEVEL[lv].did_metadata_change
               for lv in range(low + 1, high + 1) if lv in V.BY_LEVEL)


def _update_feature(ctx: ControllerContext, name: str, level: int, upgrade: UpgradeType,
                    supported: Mapping[str, VersionRange],
                    quorum_node_ids: Sequence[int] | None,
                    proposed: Mapping[str, int]
                    ) -> tuple[ErrorCode, str | None, MetadataRecord | None]:
    """One update, as Kafka 4.x's ``FeatureControlManager.updateFeature`` checks it: upgrade
    type, sign, support on every node, direction, then metadata.version's extra rules or the
    feature's dependencies against the *proposed* levels (all updates of the request)."""
    image = ctx.image
    if upgrade is UpgradeType.UNKNOWN:
        return (*_invalid_update(name, level,
                                 "The controller does not support the given upgrade type."), None)
    current = finalized_features(image).get(name, 0)
    if level < 0:
        return (*_invalid_update(name, level, "A feature version cannot be less than 0."), None)
    why = _why_unsupported(image, ctx.node_id, name, level, supported, quorum_node_ids)
    if why:
        return (*_invalid_update(name, level, why), None)
    if level < current and upgrade is UpgradeType.UPGRADE:
        return (*_invalid_update(
            name, level, "Can't downgrade the version of this feature without setting the "
                         "upgrade type to either safe or unsafe downgrade."), None)
    if level > current and upgrade is not UpgradeType.UPGRADE:
        return (*_invalid_update(name, level, "Can't downgrade to a newer version."), None)
    if name == FEATURE_NAME:
        error = _metadata_version_change(image, level, upgrade)
        if error:
            return (*error, None)
    else:
        try:
            FV.validate_level(name, level, proposed)
        except FV.FeatureDependencyError as e:
            return (*_invalid_update(name, level, str(e)), None)
    return ErrorCode.NONE, None, feature_level_record(name, level)


def feature_level_record(name: str, level: int) -> MetadataRecord:
    """A FeatureLevelRecord (level 0 removes the feature); its only version is 0."""
    return record(M.FeatureLevelRecord(name=name, feature_level=level), 0)


FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


def supported_features_of(config) -> dict[str, VersionRange]:
    """What a node with ``config`` supports (production levels, or testing ones too when
    ``unstable.feature.versions.enable`` is set), as Kafka 4.2.1's
    ``QuorumFeatures#defaultSupportedFeatureMap`` / ``BrokerFeatures#defaultSupportedFeatures``."""
    return {name: VersionRange(*r) for name, r in supported_ranges_of(config).items()}


def supported_ranges_of(config) -> dict[str, tuple[int, int]]:
    """:func:`supported_features_of` as plain (min, max) pairs, what a registration carries."""
    unstable = bool(getattr(config, "unstable_feature_versions_enable", False))
    floor = getattr(config, "supported_metadata_version_min", V.MINIMUM_VERSION_4X)
    return FV.supported_ranges(unstable=unstable, minimum_metadata_version=floor)


def update_features(ctx: ControllerContext, request: M.UpdateFeaturesRequest, *,
                    supported_features: Mapping[str, VersionRange] | None = None,
                    quorum_node_ids: Sequence[int] | None = None
                    ) -> ControllerResult[M.UpdateFeaturesResponse]:
    """UpdateFeatures as Kafka 4.x answers it: the updates are checked in request order (a
    feature named twice keeps its last update) against the levels they propose together; the
    first error fails the whole request with a top-level INVALID_UPDATE_VERSION ("The update
    failed for all features since ...") and no per-feature results; on success every feature
    gets a NONE result (request versions 0 and 1) and the records are written atomically.
    Turning ELR on also writes Kafka's ELR safety config records first
    (``ConfigurationControlManager.maybeGenerateElrSafetyRecords``). ``supported_features`` is
    what this controller supports (default: its config's); ``quorum_node_ids`` are the voters,
    which must all have registered."""
    supported = supported_features_of(ctx.config) if supported_features is None \
        else supported_features
    updates: dict[str, M.UpdateFeaturesRequest.FeatureUpdateKey] = {}
    for update in request.feature_updates:
        updates[update.feature] = update
    proposed = finalized_features(ctx.image)
    proposed.update({name: u.max_version_level for name, u in updates.items()})
    records: list[MetadataRecord] = []
    for name, update in updates.items():
        code, message, rec = _update_feature(ctx, name, update.max_version_level,
                                             _upgrade_type(update), supported, quorum_node_ids,
                                             proposed)
        if code != ErrorCode.NONE:
            return ControllerResult((), M.UpdateFeaturesResponse(
                error_code=code, error_message=FAILED_PREFIX + (message or ""), results=()))
        records.append(rec)
    results = tuple(FeatureResult(feature=name, error_code=ErrorCode.NONE, error_message=None)
                    for name in updates)
    response = M.UpdateFeaturesResponse(error_code=ErrorCode.NONE, error_message=None,
                                        results=results)
    if request.validate_only:
        return ControllerResult((), response)
    if updates.get(FV.ELR_VERSION) is not None and \
            updates[FV.ELR_VERSION].max_version_level > 0:
        records = elr_safety_records(ctx.image, ctx.config) + records
    return ControllerResult(tuple(records), response, atomic=True)


def elr_enabled(image: MetadataImage) -> bool:
    """Kafka's ``isElrFeatureEnabled``: eligible.leader.replicas.version >= 1 (its records need
    metadata.version 4.0-IV1, which the feature's dependency guarantees)."""
    return image.features.finalized.get(FV.ELR_VERSION, 0) >= 1 and \
        V.is_elr_supported(metadata_version(image))


MIN_ISR = "min.insync.replicas"


def elr_safety_records(image: MetadataImage, config) -> list[MetadataRecord]:
    """What makes turning ELR on safe: a cluster-level min.insync.replicas (the static value,
    Kafka's default 1) when there is none, and no broker-level ones."""
    out: list[MetadataRecord] = []
    if MIN_ISR not in image.configs.broker(""):
        static = getattr(config, "min_insync_replicas", 1)
        out.append(record(M.ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="",
                                         name=MIN_ISR, value=str(static)), 0))
    brokers = sorted((r for r in image.configs.resources
                      if r.type == BROKER_RESOURCE and r.name.isdigit()), key=lambda r: int(r.name))
    for resource in brokers:
        if MIN_ISR in image.configs.resources[resource]:
            out.append(record(M.ConfigRecord(resource_type=BROKER_RESOURCE,
                                             resource_name=resource.name, name=MIN_ISR,
                                             value=None), 0))
    return out
