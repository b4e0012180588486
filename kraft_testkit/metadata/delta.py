"""Replay of metadata records: a short-lived :class:`MetadataDelta` over an image.

A delta records only what changed (per broker, per topic and partition, per config key, ...);
:meth:`MetadataDelta.apply` builds the next image, copying one map level of each touched section
and sharing everything else. Each record applies atomically: a record that cannot apply raises
:class:`MetadataReplayError` before the delta changes, so the caller may go on or drop it.

Metadata transactions follow Kafka's loader (KIP-866): BeginTransaction first makes everything
replayed so far one step; the records up to EndTransaction then become visible together, and
AbortTransaction drops them. While a transaction is open, :meth:`apply` gives the state before
it plus the open transaction's records in ``pending_transaction``.

Both record dialects replay: released records (frame 1), the seeds' draft records (frame 0,
KIP-631/746 shapes) and the 2023 pre-release partition records, mapped to the same image where
they mean the same thing.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..protocol import messages as M
from ..protocol.codegen import Message
from ..protocol.frames import ControlRecord, MetadataRecord
from ..protocol.log import LogBatch, LogRecord
from ..protocol.uuid import Uuid
from .errors import MetadataReplayError
from . import image as image_module
from .frozen import EMPTY, FrozenDict, derive
from .image import (
    TOPIC_RESOURCE,
    AclsImage,
    ClusterImage,
    ConfigResource,
    DelegationTokensImage,
    MetadataImage,
    ProducerIdsImage,
    Provenance,
    QuotaEntity,
    ScramImage,
    TopicImage,
    TopicsImage,
)
from .delta_security import UNSET, SecurityRecords
from .delta_settings import SettingsRecords
from .partition import PartitionRegistration
from .registrations import BrokerRegistration, ControllerRegistration, sorted_dirs

_UNSET: Any = UNSET
_REGISTRATION_ENTRIES = 512

#: BrokerRegistrationChangeRecord.Fenced: -1 unfence, 0 no change, 1 fence
_FENCING_CHANGE = {-1: False, 0: None, 1: True}
#: BrokerRegistrationChangeRecord.InControlledShutdown: 0 no change, 1 entered
_SHUTDOWN_CHANGE = {0: None, 1: True}


class _TopicChange:
    """A topic created or changed in this delta: its partitions that changed."""

    __slots__ = ("base_partitions", "id", "name", "partitions")

    def __init__(self, name: str, topic_id: Uuid,
                 base_partitions: FrozenDict[int, PartitionRegistration]) -> None:
        self.name = name
        self.id = topic_id
        self.base_partitions = base_partitions
        self.partitions: dict[int, PartitionRegistration] = {}

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        reg = self.partitions.get(partition_id)
        return reg if reg is not None else self.base_partitions.get(partition_id)


class MetadataDelta(SettingsRecords, SecurityRecords):
    """Changes on top of ``image``; replay records in, :meth:`apply` gives the next image."""

    __slots__ = (
        "_acls",
        "_base",
        "_brokers",
        "_cleared_configs",
        "_configs",
        "_controllers",
        "_epoch",
        "_features",
        "_mv",
        "_names",
        "_next_producer_id",
        "_offset",
        "_quotas",
        "_removed_topics",
        "_scram",
        "_tokens",
        "_topics",
        "_txn",
        "_zk",
    )

    def __init__(self, image: MetadataImage = MetadataImage.EMPTY) -> None:
        self._base = image
        self._offset, self._epoch = image.provenance
        self._txn: list[Message] | None = None
        self._clear()
        if image.pending_transaction is not None:
            # Pick the open transaction up again; its records applied once to this same state.
            self._txn = []
            for msg in image.pending_transaction:
                _HANDLERS[type(msg)](self, msg)
                self._txn.append(msg)

    def _clear(self) -> None:
        self._mv: int | Any = _UNSET
        self._features: dict[str, int | None] = {}
        self._zk: int | Any = _UNSET
        self._brokers: dict[int, BrokerRegistration | None] = {}
        self._controllers: dict[int, ControllerRegistration | None] = {}
        self._topics: dict[Uuid, _TopicChange] = {}
        self._removed_topics: dict[Uuid, str] = {}  # topics of the base image removed: id -> name
        self._names: dict[str, Uuid | None] = {}    # topic names taken (id) or freed (None)
        self._configs: dict[ConfigResource, dict[str, str | None]] = {}
        self._cleared_configs: set[ConfigResource] = set()
        self._quotas: dict[QuotaEntity, dict[str, float | None]] = {}
        self._next_producer_id: int | Any = _UNSET
        self._acls: dict[Uuid, Acl | None] = {}
        self._scram: dict[tuple[str, int], ScramCredential | None] = {}
        self._tokens: dict[str, DelegationToken | None] = {}

    # ------------------------------------------------------------- public API

    @property
    def image(self) -> MetadataImage:
        """The image this delta started from (or, after a BeginTransaction, the state before
        the transaction)."""
        return self._base

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    @property
    def provenance(self) -> Provenance:
        return Provenance(self._offset, self._epoch)

    def replay(self, record: Message | MetadataRecord | LogRecord | ControlRecord,
               offset: int | None = None, epoch: int | None = None) -> None:
        """Apply one record. ``offset``/``epoch`` (a LogRecord brings its offset) advance the
        provenance; control records only do that."""
        if type(record) is LogRecord:
            if offset is None:
                offset = record.offset
            payload = record.payload
            if payload is None or type(payload) is ControlRecord:
                self._advance(offset, epoch)
                return
            msg = payload.message
        elif type(record) is MetadataRecord:
            msg = record.message
        elif type(record) is ControlRecord:
            self._advance(offset, epoch)
            return
        else:
            msg = record
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            raise MetadataReplayError("not a metadata record this kit replays", msg, offset)
        try:
            handler(self, msg)
        except MetadataReplayError as e:
            if e.offset is None and offset is not None:
                raise MetadataReplayError(e.reason, e.record, offset) from None
            raise
        if self._txn is not None and handler not in _TXN_MARKERS:
            self._txn.append(msg)
        self._advance(offset, epoch)

    def replay_batch(self, batch: LogBatch) -> None:
        """Every record of a batch read from a log; provenance ends at the batch's last offset
        and carries its leader epoch (control batches only move the provenance)."""
        epoch = batch.batch.partition_leader_epoch
        for rec in batch.records:
            self.replay(rec, rec.offset, epoch)
        self._advance(batch.last_offset, epoch)

    def apply(self) -> MetadataImage:
        """The image with every change so far (an open transaction stays pending)."""
        provenance = Provenance(self._offset, self._epoch)
        if self._txn is not None:
            base = self._base
            return MetadataImage(provenance, base.features, base.cluster, base.topics,
                                 base.configs, base.client_quotas, base.producer_ids, base.acls,
                                 base.scram, base.delegation_tokens, tuple(self._txn))
        return self._build(provenance)

    # ------------------------------------------------------------- building the image

    def _advance(self, offset: int | None, epoch: int | None) -> None:
        if offset is not None:
            self._offset = offset
        if epoch is not None:
            self._epoch = epoch

    def _build(self, provenance: Provenance) -> MetadataImage:
        base = self._base
        return MetadataImage(
            provenance,
            self._build_features(base.features),
            self._build_cluster(base.cluster),
            self._build_topics(base.topics),
            self._build_configs(base.configs),
            self._build_quotas(base.client_quotas),
            (base.producer_ids if self._next_producer_id is _UNSET
             else ProducerIdsImage(self._next_producer_id)),
            AclsImage(derive(base.acls.acls, self._acls)) if self._acls else base.acls,
            ScramImage(derive(base.scram.credentials, self._scram)) if self._scram else base.scram,
            (DelegationTokensImage(derive(base.delegation_tokens.tokens, self._tokens))
             if self._tokens else base.delegation_tokens),
            None,
        )

    def _build_cluster(self, old: ClusterImage) -> ClusterImage:
        if not self._brokers and not self._controllers:
            return old
        return ClusterImage(derive(old.brokers, self._brokers),
                            derive(old.controllers, self._controllers))

    def _build_topics(self, old: TopicsImage) -> TopicsImage:
        if not self._topics and not self._removed_topics:
            return old
        # removals first, then the puts in the delta's order: the maps' order is what a dict
        # copied, emptied and refilled in that order would hold (a name freed and taken again
        # in one delta moves to the end)
        id_changes: list[tuple[Uuid, TopicImage | None]] = []
        name_changes: list[tuple[str, TopicImage | None]] = []
        for topic_id, name in self._removed_topics.items():
            id_changes.append((topic_id, None))
            name_changes.append((name, None))
        for topic_id, change in self._topics.items():
            topic = TopicImage(change.name, topic_id,
                               derive(change.base_partitions, change.partitions))
            id_changes.append((topic_id, topic))
            name_changes.append((change.name, topic))
        return TopicsImage(old.topics_by_id.derive(id_changes),
                           old.topics_by_name.derive(name_changes), weakref.ref(old),
                           frozenset(self._topics.keys() | self._removed_topics.keys()))

    # ------------------------------------------------------------- current views

    def _broker(self, broker_id: int) -> BrokerRegistration | None:
        reg = self._brokers.get(broker_id, _UNSET)
        return self._base.cluster.brokers.get(broker_id) if reg is _UNSET else reg

    def _topic(self, topic_id: Uuid) -> _TopicChange | TopicImage | None:
        change = self._topics.get(topic_id)
        if change is not None:
            return change
        if topic_id in self._removed_topics:
            return None
        return self._base.topics.topics_by_id.get(topic_id)

    def _topic_owning(self, name: str) -> Uuid | None:
        owner = self._names.get(name, _UNSET)
        if owner is not _UNSET:
            return owner
        topic = self._base.topics.topics_by_name.get(name)
        return None if topic is None else topic.id

    def _topic_change(self, topic: _TopicChange | TopicImage) -> _TopicChange:
        if type(topic) is _TopicChange:
            return topic
        change = _TopicChange(topic.name, topic.id, topic.partitions)
        self._topics[topic.id] = change
        return change

    def _partition_of(self, rec: Any) -> tuple[_TopicChange | TopicImage, PartitionRegistration]:
        topic = self._topic(rec.topic_id)
        if topic is None:
            raise MetadataReplayError(f"no topic with id {rec.topic_id}", rec)
        current = topic.partition(rec.partition_id)
        if current is None:
            raise MetadataReplayError(
                f"topic {topic.name!r} has no partition {rec.partition_id}", rec)
        return topic, current

    def _registered(self, rec: Any, broker_id: int, epoch: int, action: str
                    ) -> BrokerRegistration:
        broker = self._broker(broker_id)
        if broker is None:
            raise MetadataReplayError(f"cannot {action} broker {broker_id}: not registered", rec)
        if broker.epoch != epoch:
            raise MetadataReplayError(
                f"cannot {action} broker {broker_id}: epoch {epoch} is not its epoch "
                f"{broker.epoch}", rec)
        return broker

    # ------------------------------------------------------------- cluster records

    def _register_broker(self, rec: Any) -> None:
        self._brokers[rec.broker_id] = _registration(BrokerRegistration, rec)

    def _unregister_broker(self, rec: Any) -> None:
        self._registered(rec, rec.broker_id, rec.broker_epoch, "unregister")
        self._brokers[rec.broker_id] = None

    def _fence_broker(self, rec: Any) -> None:
        broker = self._registered(rec, rec.id, rec.epoch, "fence")
        self._brokers[rec.id] = broker.with_changes(fenced=True)

    def _unfence_broker(self, rec: Any) -> None:
        broker = self._registered(rec, rec.id, rec.epoch, "unfence")
        self._brokers[rec.id] = broker.with_changes(fenced=False)

    def _change_broker_registration(self, rec: Any) -> None:
        broker = self._registered(rec, rec.broker_id, rec.broker_epoch, "change")
        if rec.fenced not in _FENCING_CHANGE:
            raise MetadataReplayError(f"unknown value {rec.fenced} for Fenced", rec)
        in_shutdown = getattr(rec, "in_controlled_shutdown", 0)
        if in_shutdown not in _SHUTDOWN_CHANGE:
            raise MetadataReplayError(
                f"unknown value {in_shutdown} for InControlledShutdown", rec)
        log_dirs = getattr(rec, "log_dirs", None)
        changed = broker.with_changes(
            fenced=_FENCING_CHANGE[rec.fenced],
            in_controlled_shutdown=_SHUTDOWN_CHANGE[in_shutdown],
            log_dirs=sorted_dirs(log_dirs) if log_dirs else None)
        if changed is not broker:
            self._brokers[rec.broker_id] = changed

    def _register_controller(self, rec: Any) -> None:
        self._controllers[rec.controller_id] = _registration(ControllerRegistration, rec)

    # ------------------------------------------------------------- topic records

    def _create_topic(self, rec: Any) -> None:
        topic_id, name = rec.topic_id, rec.name
        existing = self._topic(topic_id)
        if existing is not None:
            raise MetadataReplayError(
                f"topic id {topic_id} already exists (topic {existing.name!r})", rec)
        owner = self._topic_owning(name)
        if owner is not None:
            raise MetadataReplayError(f"topic name {name!r} is taken by topic id {owner}", rec)
        self._topics[topic_id] = _TopicChange(name, topic_id, EMPTY)
        self._names[name] = topic_id

    def _create_partition(self, rec: Any) -> None:
        topic = self._topic(rec.topic_id)
        if topic is None:
            raise MetadataReplayError(f"no topic with id {rec.topic_id}", rec)
        registration = PartitionRegistration.from_record(rec)
        self._topic_change(topic).partitions[rec.partition_id] = registration

    def _change_partition(self, rec: Any) -> None:
        topic, current = self._partition_of(rec)
        merged = current.merge(rec)
        self._topic_change(topic).partitions[rec.partition_id] = merged

    def _clear_elr(self, rec: Any) -> None:
        """Kafka's TopicsDelta.replay(ClearElrRecord): every partition of the named topic (all
        topics when the name is empty) that has an ELR or last known ELR loses both, as a
        partition change (its partition epoch goes up)."""
        if rec.topic_name:
            topic_id = self._topic_owning(rec.topic_name)
            if topic_id is None:
                raise MetadataReplayError(
                    f"Unable to clear elr for topic with name {rec.topic_name}: no such topic "
                    f"found.", rec)
            topic_ids = [topic_id]
        else:
            topic_ids = sorted(set(self._base.topics.topics_by_id) - set(self._removed_topics)
                               | set(self._topics), key=str)
        for topic_id in topic_ids:
            topic = self._topic(topic_id)
            if topic is None:
                continue
            ids = set(topic.partitions)
            if type(topic) is _TopicChange:
                ids |= set(topic.base_partitions)
            for partition_id in sorted(ids):
                current = topic.partition(partition_id)
                if current is not None and (current.elr or current.last_known_elr):
                    cleared = current.merge(M.PartitionChangeRecord(
                        topic_id=topic_id, partition_id=partition_id,
                        eligible_leader_replicas=(), last_known_elr=()))
                    topic = self._topic_change(topic)
                    topic.partitions[partition_id] = cleared

    def _remove_topic(self, rec: Any) -> None:
        topic_id = rec.topic_id
        topic = self._topic(topic_id)
        if topic is None:
            raise MetadataReplayError(f"no topic with id {topic_id}", rec)
        self._topics.pop(topic_id, None)
        base_topic = self._base.topics.topics_by_id.get(topic_id)
        if base_topic is not None:
            self._removed_topics[topic_id] = base_topic.name
        self._names[topic.name] = None
        # Kafka drops the topic's configs with it.
        resource = ConfigResource(TOPIC_RESOURCE, topic.name)
        self._configs[resource] = {}
        self._cleared_configs.add(resource)

    def _no_op(self, rec: Any) -> None:
        pass

    def _no_meaning(self, rec: Any) -> None:
        raise MetadataReplayError(
            "the draft record has no released equivalent in the metadata image", rec)

    # ------------------------------------------------------------- transactions

    def _begin_transaction(self, rec: Any) -> None:
        if self._txn is not None:
            raise MetadataReplayError("BeginTransaction inside an open transaction", rec)
        # Everything before the transaction becomes one step, as Kafka's loader flushes it.
        self._base = self._build(Provenance(self._offset, self._epoch))
        self._clear()
        self._txn = []

    def _end_transaction(self, rec: Any) -> None:
        if self._txn is None:
            raise MetadataReplayError("EndTransaction without a BeginTransaction", rec)
        self._txn = None

    def _abort_transaction(self, rec: Any) -> None:
        if self._txn is None:
            raise MetadataReplayError("AbortTransaction without a BeginTransaction", rec)
        self._clear()
        self._txn = None


# ---------------------------------------------------------------- dispatch by record class

Handler = Callable[[MetadataDelta, Any], None]
D = MetadataDelta

_RELEASED: dict[str, Handler] = {
    "RegisterBrokerRecord": D._register_broker,
    "UnregisterBrokerRecord": D._unregister_broker,
    "TopicRecord": D._create_topic,
    "PartitionRecord": D._create_partition,
    "ConfigRecord": D._config,
    "PartitionChangeRecord": D._change_partition,
    "FenceBrokerRecord": D._fence_broker,
    "UnfenceBrokerRecord": D._unfence_broker,
    "RemoveTopicRecord": D._remove_topic,
    "DelegationTokenRecord": D._delegation_token,
    "UserScramCredentialRecord": D._scram_credential,
    "FeatureLevelRecord": D._feature_level,
    "ClientQuotaRecord": D._client_quota,
    "ProducerIdsRecord": D._producer_ids,
    "BrokerRegistrationChangeRecord": D._change_broker_registration,
    "AccessControlEntryRecord": D._acl,
    "RemoveAccessControlEntryRecord": D._remove_acl,
    "NoOpRecord": D._no_op,
    "ZkMigrationStateRecord": D._zk_migration_state,
    "RemoveUserScramCredentialRecord": D._remove_scram_credential,
    "BeginTransactionRecord": D._begin_transaction,
    "EndTransactionRecord": D._end_transaction,
    "AbortTransactionRecord": D._abort_transaction,
    "RemoveDelegationTokenRecord": D._remove_delegation_token,
    "RegisterControllerRecord": D._register_controller,
    "ClearElrRecord": D._clear_elr,
}

# Draft records whose meaning differs in shape get their own handler; the rest share the
# released one (their missing fields read as Kafka's defaults).
_DRAFT_OVERRIDES: dict[str, Handler] = {
    "AccessControlRecord": D._draft_acl,
    "UserScramCredentialRecord": D._draft_scram_credential,
    "FeatureLevelRecord": D._draft_feature_level,
    "FailedReplicasRecord": D._no_meaning,
    "RemoveFeatureLevelRecord": D._draft_remove_feature_level,
}

_TXN_MARKERS = frozenset({D._begin_transaction, D._end_transaction, D._abort_transaction})


def _dispatch_table() -> dict[type, Handler]:
    table: dict[type, Handler] = {}
    for cls in M.METADATA.values():
        table[cls] = _RELEASED[cls.__name__]
    for cls in M.DRAFT_METADATA.values():
        table[cls] = _DRAFT_OVERRIDES.get(cls.__name__) or _RELEASED[cls.__name__]
    for cls in M.PRERELEASE_METADATA.values():
        table[cls] = _RELEASED[cls.__name__]
    return table


_HANDLERS: dict[type, Handler] = _dispatch_table()
image_module._HOOKS["delta"] = MetadataDelta


# ... and so each node would build the same registration from the same record object: the
# registration (frozen, its mappings frozen) is made once per record object. The memo holds
# the record, so its id cannot name another object while the entry lives.
_REGISTRATIONS: dict[int, tuple[Any, Any]] = {}


def _registration(cls: Any, rec: Any) -> Any:
    """``cls.from_record(rec)``, once per record object."""
    hit = _REGISTRATIONS.get(id(rec))
    if hit is not None and hit[0] is rec:
        return hit[1]
    registration = cls.from_record(rec)
    if len(_REGISTRATIONS) >= _REGISTRATION_ENTRIES:
        _REGISTRATIONS.clear()
    _REGISTRATIONS[id(rec)] = (rec, registration)
    return registration
