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


def registration_feature_error(finalized: Mapping[str, int],
                               supported: Iterable[tuple[str, VersionRange]]) -> str | None:
    """Why a node announcing ``supported`` may not register, or None.

    Kafka 4.x's ``processRegistrationFeature``: every feature the node names must include the
    finalized level, a feature the cluster has not finalized counting as level 0 (so a node
    announcing only [1, 1] of it is refused); every finalized feature it does not name counts
    as [0, 0]; metadata.version, unnamed, as 3.0-IV1 only.
    """
    ranges = dict(supported)
    ranges.setdefault(FEATURE_NAME, VersionRange(V.MINIMUM_KRAFT_VERSION,
                                                 V.MINIMUM_KRAFT_VERSION))
    for name in list(ranges) + sorted(set(finalized) - set(ranges)):
        level = finalized.get(name, V.MINIMUM_KRAFT_VERSION if name == FEATURE_NAME else 0)
        if level == 0 and name not in ranges:
            continue  # not finalized and not named: nothing to check
        r = ranges.get(name, DISABLED)
        if not r.min <= level <= r.max:
            return (f"Unable to register because the broker does not support finalized version "
                    f"{level} of {name}. The broker wants a version between {r.min} and "
                    f"{r.max}, inclusive.")
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
    """The extra checks of a metadata.version change (Kafka's ``updateMetadataVersion``)."""
    if not V.is_known(level):
        return _invalid_metadata_version(level, "Unknown metadata.version.")
    if zk_migration_state(image).in_progress:
        return _invalid_metadata_version(
            level, "Unable to modify metadata.version while a ZK migration is in progress.")
    if level < V.MINIMUM_BOOTSTRAP_VERSION:
        return _invalid_metadata_version(
            level, "Unable to set a metadata.version less than "
                   f"{V.get(V.MINIMUM_BOOTSTRAP_VERSION).name}")
    current = metadata_version(image)
    if level < current and metadata_changed_between(level, current):
        if upgrade is UpgradeType.UNSAFE_DOWNGRADE:
            return _invalid_metadata_version(
                level, "Unsafe metadata downgrade is not supported in this version.")
        return _invalid_metadata_version(
            level, "Refusing to perform the requested downgrade because it might delete "
                   "metadata information.")
    return None


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
    ``unstable.feature.versions.enable`` is set), as Kafka's QuorumFeatures/BrokerFeatures."""
    unstable = bool(getattr(config, "unstable_feature_versions_enable", False))
    return {name: VersionRange(*r) for name, r in FV.supported_ranges(unstable=unstable).items()}


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
