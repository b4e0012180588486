"""The settings records' part of a metadata delta: configs, client quotas, features, the ZK
migration state and producer ids, replayed and built into their image sections.

A mixin of :class:`~.delta.MetadataDelta` (which holds the state), apart so that the delta
module stays about topics and brokers.
"""

from __future__ import annotations

from typing import Any

from . import versions as V
from .delta_security import UNSET
from .errors import MetadataReplayError
from .frozen import EMPTY, FrozenDict, derive
from .image import (
    ClientQuotasImage,
    ConfigResource,
    ConfigurationsImage,
    FeaturesImage,
    QuotaEntity,
    quota_entity,
)

_UNSET = UNSET
#: Kafka's ZkMigrationState values (NONE, MIGRATION, PRE_MIGRATION, POST_MIGRATION, ZK)
_ZK_MIGRATION_STATES = frozenset(range(5))


class SettingsRecords:
    """Replay of Config, ClientQuota, FeatureLevel (both dialects), ZkMigrationState and
    ProducerIds records, and the image sections they build."""

    __slots__ = ()
    _mv: Any
    _features: dict
    _zk: Any
    _configs: dict
    _cleared_configs: set
    _quotas: dict
    _next_producer_id: Any

    def _build_features(self, old: FeaturesImage) -> FeaturesImage:
        if self._mv is _UNSET and not self._features and self._zk is _UNSET:
            return old
        return FeaturesImage(
            old.metadata_version if self._mv is _UNSET else self._mv,
            derive(old.finalized, self._features),
            old.zk_migration_state if self._zk is _UNSET else self._zk)

    def _build_configs(self, old: ConfigurationsImage) -> ConfigurationsImage:
        if not self._configs:
            return old
        changed: dict[ConfigResource, FrozenDict | None] = {}
        for resource, changes in self._configs.items():
            start = EMPTY if resource in self._cleared_configs else \
                old.resources.get(resource, EMPTY)
            configs = derive(start, changes)
            changed[resource] = configs or None
        return ConfigurationsImage(derive(old.resources, changed))

    def _build_quotas(self, old: ClientQuotasImage) -> ClientQuotasImage:
        if not self._quotas:
            return old
        changed: dict[QuotaEntity, FrozenDict | None] = {}
        for entity, changes in self._quotas.items():
            quotas = derive(old.entities.get(entity, EMPTY), changes)
            changed[entity] = quotas or None
        return ClientQuotasImage(derive(old.entities, changed))

    def _config(self, rec: Any) -> None:
        resource = ConfigResource(rec.resource_type, rec.resource_name)
        changes = self._configs.get(resource)
        if changes is None:
            changes = self._configs[resource] = {}
        changes[rec.name] = rec.value  # None removes the key

    def _client_quota(self, rec: Any) -> None:
        entity = quota_entity((e.entity_type, e.entity_name) for e in rec.entity)
        changes = self._quotas.get(entity)
        if changes is None:
            changes = self._quotas[entity] = {}
        changes[rec.key] = None if rec.remove else float(rec.value)

    # ------------------------------------------------------------- features

    def _feature_level(self, rec: Any) -> None:
        if rec.name == "kraft.version":
            return  # lives in the Raft log: 4.x's FeaturesDelta#replay skips such a record
        self._set_feature(rec, rec.name, rec.feature_level)

    def _draft_feature_level(self, rec: Any) -> None:
        # The draft dialect finalizes a range; the level in force is its maximum.
        if rec.min_feature_level > rec.max_feature_level:
            raise MetadataReplayError(
                f"min level {rec.min_feature_level} above max {rec.max_feature_level}", rec)
        self._set_feature(rec, rec.name, rec.max_feature_level)

    def _draft_remove_feature_level(self, rec: Any) -> None:
        self._set_feature(rec, rec.name, 0)

    def _set_feature(self, rec: Any, name: str, level: int) -> None:
        if level < 0:
            raise MetadataReplayError(f"negative feature level {level}", rec)
        if name == V.FEATURE_NAME:
            if not V.is_known(level):
                raise MetadataReplayError(
                    f"metadata.version {level} is not a released level "
                    f"({V.VERSIONS[0].level}..{V.LATEST})", rec)
            self._mv = level
        else:
            self._features[name] = level or None  # level 0 removes the feature

    def _zk_migration_state(self, rec: Any) -> None:
        if rec.zk_migration_state not in _ZK_MIGRATION_STATES:
            raise MetadataReplayError(
                f"unknown ZK migration state {rec.zk_migration_state}", rec)
        self._zk = rec.zk_migration_state

    def _producer_ids(self, rec: Any) -> None:
        self._next_producer_id = rec.next_producer_id
