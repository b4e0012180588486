"""What a new active controller writes first: the bootstrap records of an empty log.

After Kafka 4.2.1's ``BootstrapMetadata`` and ``ActivationRecordsGenerator``
(``recordsForEmptyLog`` / ``recordsForNonEmptyLog``). The bootstrap metadata is the
FeatureLevelRecord of metadata.version (plus other finalized features, sorted by name, and with
ELR on the cluster-level min.insync.replicas); an empty log gets it inside a metadata
transaction named "Bootstrap records" from 3.6-IV1, or as one plain atomic batch before that.
Kafka 4.x writes no ZkMigrationStateRecord (3.x wrote one, state NONE, from 3.4-IV0 on), so the
first record after the bootstrap sits at the offset a real 4.2 cluster gives it. A log whose
bootstrap transaction was cut off by a failover gets it aborted and written again; a non-empty
log with any other open transaction gets it aborted and nothing else. A log that predates
3.3-IV0 cannot be bootstrapped (FeatureLevelRecord did not exist): Kafka refuses, and so do we.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import KraftError
from ..metadata import MetadataImage
from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.frames import MetadataRecord
from ..metadata import feature_versions as FV
from .features import BROKER_RESOURCE, MIN_ISR, feature_level_record
from .result import record

TRANSACTION_NAME = "Bootstrap records"
FAILOVER_REASON = "Controller failover"


class BootstrapError(KraftError, ValueError):
    """Bootstrap metadata that Kafka would refuse (a level before 3.3-IV0, an unknown level, no
    metadata.version, or a half-written log the metadata.version cannot repair)."""


@dataclass(frozen=True, slots=True)
class BootstrapMetadata:
    """The records an empty metadata log starts with, and the metadata.version they set."""

    records: tuple[MetadataRecord, ...]
    metadata_version: int
    source: str = "the default bootstrap"

    @classmethod
    def from_version(cls, metadata_version: int | str, features: Mapping[str, int] | None = None,
                     source: str = "the default bootstrap", *,
                     unstable: bool = False) -> BootstrapMetadata:
        """metadata.version (level or name like ``"4.2-IV1"``) and other feature levels, as
        Kafka's format step computes them: features not given get their default level at that
        metadata.version (``Feature.defaultVersion``: at 4.2-IV1 group.version 1,
        transaction.version 2, eligible.leader.replicas.version 1, share.version 1,
        streams.version 1); a non-production level needs ``unstable``; every level must meet
        its dependencies; a feature at level 0 is simply not finalized. These are the records
        ``kafka-storage format`` puts in ``bootstrap.checkpoint``."""
        try:
            mv = V.check_usable(metadata_version, unstable=unstable).level
        except KraftError as e:
            raise BootstrapError(str(e)) from None
        levels = FV.default_levels(mv)
        for name, level in (features or {}).items():
            if name == V.FEATURE_NAME:
                continue
            feature = FV.FEATURES.get(name)
            if feature is None:
                raise BootstrapError(f"Unsupported feature: {name}. Supported features are: "
                                     f"{', '.join(sorted(FV.FEATURES))}")
            if type(level) is not int or feature.level(level, unstable=unstable) is None:
                raise BootstrapError(f"No feature:{name} with feature level {level}")
            levels[name] = level
        if levels[FV.KRAFT_VERSION] != 0:
            raise BootstrapError("kraft.version lives in the Raft log, not in the bootstrap "
                                 "metadata: a static quorum has kraft.version 0; "
                                 "Cluster(kraft_version=1) formats a dynamic one (KIP-853)")
        levels[V.FEATURE_NAME] = mv
        for name in sorted(FV.FEATURES):
            try:
                FV.validate_level(name, levels[name], levels)
            except FV.FeatureDependencyError as e:
                raise BootstrapError(str(e)) from None
        records = [feature_level_record(V.FEATURE_NAME, mv)]
        for name in FV.RECORDED:
            if levels[name] > 0:
                records.append(feature_level_record(name, levels[name]))
        return cls.from_records(records, source)

    @classmethod
    def from_records(cls, records: Iterable[MetadataRecord],
                     source: str = "the given records") -> BootstrapMetadata:
        records = tuple(records)
        levels = [r.message.feature_level for r in records
                  if isinstance(r.message, M.FeatureLevelRecord) and r.message.name == V.FEATURE_NAME]
        if not levels:
            raise BootstrapError(f"No FeatureLevelRecord for {V.FEATURE_NAME} was found in the "
                                 f"bootstrap metadata from {source}")
        mv = levels[-1]
        if not V.is_known(mv):
            raise BootstrapError(f"unknown metadata.version level {mv} in {source}")
        if mv < V.MINIMUM_BOOTSTRAP_VERSION:
            raise BootstrapError(
                f"Bootstrap metadata versions before {V.get(V.MINIMUM_BOOTSTRAP_VERSION).name} "
                f"are not supported. Can't load metadata from {source}")
        return cls(records, mv, source)

    def checkpoint(self, now_ms: int) -> bytes:
        """The ``bootstrap.checkpoint`` file of these records, as Kafka 4.2.1's
        ``BootstrapDirectory#writeBinaryFile`` writes it through ``BatchFileWriter``: snapshot
        format from offset 0 in epoch 0 (header batch, the records, footer batch), every batch
        stamped ``now_ms``, the header's LastContainedLogTimestamp 0."""
        from ..protocol.frames import encode_record
        from ..raft.snapshot import encode_snapshot

        return encode_snapshot(0, 0, [encode_record(r) for r in self.records], now_ms,
                               last_contained_ms=0).data

    def feature_level(self, name: str) -> int:
        """The level the bootstrap records finalize ``name`` at (0 if they do not)."""
        levels = [r.message.feature_level for r in self.records
                  if isinstance(r.message, M.FeatureLevelRecord) and r.message.name == name]
        return levels[-1] if levels else 0


def bootstrap_records(metadata_version: int | str,
                      features: Mapping[str, int] | None = None, *,
                      unstable: bool = False, min_insync_replicas: int = 1) -> list[MetadataRecord]:
    """The records an empty log gets at this metadata.version, exactly as the first active
    controller writes them (with the transaction markers where the version has them)."""
    return activation_records(MetadataImage.EMPTY, BootstrapMetadata.from_version(
        metadata_version, features, unstable=unstable), min_insync_replicas)


def is_empty_log(image: MetadataImage) -> bool:
    """Nothing committed yet, except possibly a bootstrap transaction that never ended."""
    return image.visible() == MetadataImage.EMPTY


def activation_records(image: MetadataImage, bootstrap: BootstrapMetadata,
                       min_insync_replicas: int = 1) -> list[MetadataRecord]:
    """What a controller appends as it becomes active over ``image`` (the committed state).

    An empty log gets the bootstrap records, and with ELR on Kafka's ELR safety record (a
    cluster-level min.insync.replicas, the controller's static one); a log with an open
    metadata transaction gets it aborted (and, if that was the cut-off bootstrap, the bootstrap
    again). One batch: with transactions the markers make it atomic to readers, without them
    the batch does.
    """
    open_transaction = image.in_transaction
    if is_empty_log(image):
        mv = bootstrap.metadata_version
        transactional = V.is_metadata_transaction_supported(mv)
        records: list[MetadataRecord] = []
        if open_transaction:
            if not transactional:
                raise BootstrapError(
                    f"Detected a partial bootstrap records transaction, but the metadata.version "
                    f"{V.get(mv).name} does not support transactions. Cannot continue.")
            records.append(_abort_record())
        if transactional:
            records.append(record(M.BeginTransactionRecord(name=TRANSACTION_NAME), 0))
        records.extend(bootstrap.records)
        if bootstrap.feature_level(FV.ELR_VERSION) > 0:
            records.append(record(M.ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="",
                                                 name=MIN_ISR, value=str(min_insync_replicas)), 0))
        if transactional:
            records.append(record(M.EndTransactionRecord(), 0))
        return records
    if open_transaction:
        mv = image.metadata_version or V.MINIMUM_KRAFT_VERSION
        if not V.is_metadata_transaction_supported(mv):
            raise BootstrapError(
                f"Detected an in-progress transaction, but the metadata.version "
                f"{V.get(mv).name} does not support transactions. Cannot continue.")
        return [_abort_record()]
    return []


def _abort_record() -> MetadataRecord:
    return record(M.AbortTransactionRecord(reason=FAILOVER_REASON), 0)

