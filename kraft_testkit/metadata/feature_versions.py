"""The finalized features of Kafka 4.2 besides metadata.version, with their levels.

After Kafka's ``Feature`` enum and its ``FeatureVersion`` classes (``KRaftVersion``,
``GroupVersion``, ``TransactionVersion``, ``EligibleLeaderReplicasVersion``, ``ShareVersion``,
``StreamsVersion``) as released in 4.2. Each level names the metadata.version from which a new
cluster gets it by default (``bootstrapMetadataVersion``) and the levels of other features it
needs (``dependencies``). Three rules come from Kafka and are used by the format step
(bootstrap) and by UpdateFeatures alike:

* the default level of a feature at a metadata.version is the highest level whose bootstrap
  metadata.version is at or below it (``Feature.defaultVersion``);
* a level above 0 needs metadata.version 3.3-IV3 (7, ``MetadataVersion.MINIMUM_VERSION``) and
  every dependency at or above its level (``Feature.validateVersion``), else
  ``FeatureDependencyError`` worded as Kafka words it;
* a node supports levels ``[minimumProduction, latestProduction]``, or up to the latest
  *testing* level when unstable feature versions are enabled (``QuorumFeatures``).

kraft.version is special, as in Kafka: it lives in the Raft log (KRaftVersionRecord), never in
a FeatureLevelRecord. A quorum is formatted at kraft.version 0 (static voters) or 1
(``Cluster(kraft_version=1)``, KIP-853 dynamic voters); every node announces [0, 1] for it, and
UpdateFeatures upgrades 0 -> 1 through the Raft leader (``controller/kraft_version.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from . import versions as V
from .errors import MetadataError

KRAFT_VERSION = "kraft.version"
GROUP_VERSION = "group.version"
TRANSACTION_VERSION = "transaction.version"
ELR_VERSION = "eligible.leader.replicas.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"


class FeatureDependencyError(MetadataError, ValueError):
    """A feature level whose dependencies do not hold (Kafka's IllegalArgumentException from
    ``Feature.validateVersion``; the controller turns it into INVALID_UPDATE_VERSION)."""


class FeatureLevel(NamedTuple):
    """One level of a feature: what a new cluster at ``bootstrap_mv`` or later gets, and the
    feature levels it needs (metadata.version included)."""

    level: int
    bootstrap_mv: int
    dependencies: Mapping[str, int] = {}


class Feature(NamedTuple):
    name: str
    levels: tuple[FeatureLevel, ...]
    latest_production: int

    @property
    def minimum_production(self) -> int:
        return self.levels[0].level

    @property
    def latest_testing(self) -> int:
        return self.levels[-1].level

    def level(self, level: int, *, unstable: bool = True) -> FeatureLevel | None:
        """The level, if known (and production-ready unless ``unstable``)."""
        for fl in self.levels:
            if fl.level == level and (unstable or level <= self.latest_production):
                return fl
        return None

    def default_level(self, metadata_version: int) -> int:
        """Kafka's ``Feature.defaultVersion``: the highest level bootstrapped at or below
        ``metadata_version``."""
        chosen = self.levels[0].level
        for fl in self.levels:
            if fl.bootstrap_mv > metadata_version:
                break
            chosen = fl.level
        return chosen

    def supported_range(self, *, unstable: bool = False) -> tuple[int, int]:
        return self.minimum_production, self.latest_testing if unstable else self.latest_production


_MV = V.FEATURE_NAME
FEATURES: dict[str, Feature] = {f.name: f for f in (
    # KIP-853 dynamic quorums; level 1 needs metadata.version 3.9-IV0
    Feature(KRAFT_VERSION, (FeatureLevel(0, V.MINIMUM_KRAFT_VERSION),
                            FeatureLevel(1, V.IBP_3_9_IV0, {_MV: V.IBP_3_9_IV0})), 1),
    # KIP-848 consumer rebalance protocol
    Feature(GROUP_VERSION, (FeatureLevel(0, V.MINIMUM_KRAFT_VERSION),
                            FeatureLevel(1, V.IBP_4_0_IV0)), 1),
    # KIP-890 transactions: 1 = flexible transaction state records, 2 = epoch bump per txn
    Feature(TRANSACTION_VERSION, (FeatureLevel(0, V.MINIMUM_KRAFT_VERSION),
                                  FeatureLevel(1, V.IBP_4_0_IV2),
                                  FeatureLevel(2, V.IBP_4_0_IV2)), 2),
    # KIP-966 eligible leader replicas: on by default from 4.1-IV0, needs the 4.0-IV1 records
    Feature(ELR_VERSION, (FeatureLevel(0, V.MINIMUM_KRAFT_VERSION),
                          FeatureLevel(1, V.IBP_4_1_IV0, {_MV: V.IBP_4_0_IV1})), 1),
    # KIP-932 share groups: production-ready in 4.2; 4.2.1's ShareVersion.SV_1 has no
    # dependency (4.1's preview needed 4.1-IV1)
    Feature(SHARE_VERSION, (FeatureLevel(0, V.MINIMUM_VERSION_4X),
                            FeatureLevel(1, V.IBP_4_2_IV0)), 1),
    # KIP-1071 streams groups: production-ready in 4.2
    Feature(STREAMS_VERSION, (FeatureLevel(0, V.MINIMUM_VERSION_4X),
                              FeatureLevel(1, V.IBP_4_2_IV1)), 1),
)}

#: features that get a FeatureLevelRecord (kraft.version lives in the Raft log instead)
RECORDED = tuple(sorted(n for n in FEATURES if n != KRAFT_VERSION))


def validate_level(name: str, level: int, levels: Mapping[str, int]) -> None:
    """Kafka's ``Feature.validateVersion``: ``name`` at ``level`` given the (proposed) levels of
    every feature, metadata.version included; raises FeatureDependencyError."""
    mv = levels.get(_MV)
    if level >= 1 and (mv is None or mv < V.MINIMUM_VERSION_4X):
        raise FeatureDependencyError(
            f"{name} could not be set to {level} because it depends on metadata.version="
            f"{V.MINIMUM_VERSION_4X} ({V.get(V.MINIMUM_VERSION_4X).name})")
    feature = FEATURES.get(name)
    fl = feature.level(level) if feature is not None else None
    for dependency, needed in sorted((fl.dependencies if fl else {}).items()):
        have = levels.get(dependency)
        if have is None or have < needed:
            raise FeatureDependencyError(
                f"{name} could not be set to {level} because it depends on {dependency} level "
                f"{needed}")


def default_levels(metadata_version: int, *, kraft_version: int = 0) -> dict[str, int]:
    """What the format step finalizes for a new cluster at ``metadata_version`` (Kafka's
    ``Formatter.calculateEffectiveFeatureLevels`` with no --feature flags); kraft.version is
    the quorum's (0: static voters)."""
    out = {name: f.default_level(metadata_version) for name, f in FEATURES.items()}
    out[KRAFT_VERSION] = kraft_version
    return out


def supported_ranges(*, unstable: bool = False,
                     minimum_metadata_version: int = V.MINIMUM_VERSION_4X
                     ) -> dict[str, tuple[int, int]]:
    """What a 4.2 node supports, metadata.version included (Kafka 4.2.1's
    ``QuorumFeatures#defaultSupportedFeatureMap`` and ``BrokerFeatures#defaultSupportedFeatures``:
    metadata.version [3.3-IV3 (7), 4.2-IV1 (29)], every feature
    [minimumProduction, latestProduction], latestTesting with unstable feature versions;
    features whose top level is 0 are left out). ``minimum_metadata_version`` lowers the
    metadata.version floor for the kit's 3.x emulation (clusters formatted below 3.3-IV3,
    which 4.x cannot run)."""
    out = {_MV: (minimum_metadata_version, V.LATEST if unstable else V.LATEST_PRODUCTION)}
    for name, feature in sorted(FEATURES.items()):
        low, high = feature.supported_range(unstable=unstable)
        if high > 0:
            out[name] = (low, high)
    return out


def node_minimum_metadata_version(cluster_metadata_version: int) -> int:
    """The metadata.version floor the kit's nodes announce in a cluster formatted at
    ``cluster_metadata_version``: 4.x's 3.3-IV3, or 3.0-IV1 (3.x software) below it."""
    return V.MINIMUM_VERSION_4X if cluster_metadata_version >= V.MINIMUM_VERSION_4X \
        else V.MINIMUM_KRAFT_VERSION
