"""The immutable metadata image: what a node knows after replaying the log up to an offset.

Every section is a frozen dataclass over :class:`~.frozen.FrozenDict` maps of immutable values.
A delta rebuilds only the sections it touched; inside a section it copies one map level and
shares every untouched value (brokers, topics, partitions, ...) with the image before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from ..protocol.codegen import Message
from ..protocol.uuid import Uuid
from .frozen import EMPTY, FrozenDict
from .partition import PartitionRegistration
from .pmap import EMPTY_MAP, PersistentMap
from .registrations import BrokerRegistration, ControllerRegistration
from .security import SCRAM_MECHANISMS, Acl, DelegationToken, ScramCredential
from .versions import FEATURE_NAME

if TYPE_CHECKING:
    from ..protocol.frames import MetadataRecord


class Provenance(NamedTuple):
    """Where an image stands in the log: offset and leader epoch of the last record replayed
    (-1 before any). Records of an open transaction count, though they are not visible yet."""

    offset: int = -1
    epoch: int = -1


NO_PROVENANCE = Provenance()


#: Kafka's ConfigResource.Type ids
CONFIG_RESOURCE_TYPES: dict[int, str] = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER",
                                         16: "CLIENT_METRICS", 32: "GROUP"}
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


class ConfigResource(NamedTuple):
    """A configured resource: Kafka's resource type id and the resource name ("" = default)."""

    type: int
    name: str

    def __str__(self) -> str:
        return f"{CONFIG_RESOURCE_TYPES.get(self.type, self.type)}:{self.name}"


#: a client quota entity: ((entity type, entity name or None for the default), ...) by type
QuotaEntity = tuple[tuple[str, "str | None"], ...]


def quota_entity(pairs: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """The canonical key of a quota entity (Kafka keeps it as a map: one name per type)."""
    return tuple(sorted(dict(pairs).items(), key=lambda kv: kv[0]))


def quota_entity_str(entity: QuotaEntity) -> str:
    return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


def _by_int_key(d: dict) -> list:
    return sorted(d.items(), key=lambda kv: kv[0])


# ---------------------------------------------------------------- sections


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    """Finalized feature levels. metadata.version is kept apart (``None`` until a
    FeatureLevelRecord sets it), as Kafka's FeaturesImage does."""

    metadata_version: int | None = None
    finalized: FrozenDict[str, int] = EMPTY
    zk_migration_state: int = 0

    def level(self, name: str) -> int | None:
        if name == FEATURE_NAME:
            return self.metadata_version
        return self.finalized.get(name)

    def to_dict(self) -> dict:
        return {FEATURE_NAME: self.metadata_version,
                "finalized": dict(sorted(self.finalized.items())),
                "zk_migration_state": self.zk_migration_state}


@dataclass(frozen=True, slots=True)
class ClusterImage:
    """Registered brokers and controllers by node id."""

    brokers: FrozenDict[int, BrokerRegistration] = EMPTY
    controllers: FrozenDict[int, ControllerRegistration] = EMPTY

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def controller(self, controller_id: int) -> ControllerRegistration | None:
        return self.controllers.get(controller_id)

    def broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.brokers))

    def unfenced_broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted([i for i, b in self.brokers.items() if not b.fenced]))

    def fenced_broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted([i for i, b in self.brokers.items() if b.fenced]))

    def to_dict(self) -> dict:
        return {"brokers": {str(i): b.to_dict() for i, b in _by_int_key(self.brokers)},
                "controllers": {str(i): c.to_dict() for i, c in _by_int_key(self.controllers)}}


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    id: Uuid
    partitions: FrozenDict[int, PartitionRegistration] = EMPTY

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        return self.partitions.get(partition_id)

    def to_dict(self) -> dict:
        return {"id": str(self.id),
                "partitions": {str(p): r.to_dict() for p, r in _by_int_key(self.partitions)}}


@dataclass(frozen=True, slots=True, weakref_slot=True)
class TopicsImage:
    """Topics by id and by name (the two maps hold the same TopicImage objects).

    A topics image made by a delta remembers (weakly, so no history is kept alive) the one it
    was made from and the topic ids the delta touched: a reader that applied an earlier
    version asks :func:`changed_topics` for what to look at instead of walking every topic,
    as Kafka's publishers get the ``TopicsDelta`` with the image.
    """

    topics_by_id: PersistentMap[Uuid, TopicImage] = EMPTY_MAP
    topics_by_name: PersistentMap[str, TopicImage] = EMPTY_MAP
    derived_from: Any = field(default=None, compare=False, repr=False)
    """``weakref.ref`` to the topics image the delta started from, or None."""
    touched: frozenset = field(default=frozenset(), compare=False, repr=False)
    """Ids of the topics created, changed or removed since ``derived_from``."""

    def __reduce__(self) -> tuple:  # a weak reference does not pickle: the maps do
        return (TopicsImage, (self.topics_by_id, self.topics_by_name))

    def by_id(self, topic_id: bytes) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def by_name(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self.topics_by_name)

    def __len__(self) -> int:
        return len(self.topics_by_id)

    def __iter__(self) -> Iterator[TopicImage]:
        """Topics in name order."""
        return (self.topics_by_name[n] for n in self.names())

    def to_dict(self) -> dict:
        return {t.name: t.to_dict() for t in self}


#: how many versions :func:`changed_topics` follows back before it gives up (then: walk all)
CHANGE_CHAIN_LIMIT = 64


def changed_topics(since: TopicsImage | None, now: TopicsImage) -> set[Uuid] | None:
    """Ids of the topics that may differ between ``since`` and ``now`` (created, changed or
    removed), when ``now`` was derived from ``since`` by deltas whose images are still in
    memory; None when that is unknown (a snapshot load, a chain broken by the garbage
    collector, a longer chain): then the caller compares everything."""
    if now is since:
        return set()
    ids: set[Uuid] = set()
    current = now
    for _ in range(CHANGE_CHAIN_LIMIT):
        ref = current.derived_from
        parent = None if ref is None else ref()
        if parent is None:
            return None
        ids.update(current.touched)
        if parent is since:
            return ids
        current = parent
    return None


@dataclass(frozen=True, slots=True)
class ConfigurationsImage:
    """Dynamic configs by resource; a resource without keys is absent."""

    resources: FrozenDict[ConfigResource, FrozenDict[str, str]] = EMPTY

    def get(self, resource_type: int, name: str) -> FrozenDict[str, str]:
        return self.resources.get(ConfigResource(resource_type, name), EMPTY)

    def topic(self, name: str) -> FrozenDict[str, str]:
        return self.get(TOPIC_RESOURCE, name)

    def broker(self, broker_id: int | str) -> FrozenDict[str, str]:
        return self.get(BROKER_RESOURCE, str(broker_id))

    def to_dict(self) -> dict:
        return {str(r): dict(sorted(c.items())) for r, c in sorted(self.resources.items())}


@dataclass(frozen=True, slots=True)
class ClientQuotasImage:
    """Quota values by entity (see :func:`quota_entity`) and key."""

    entities: FrozenDict[QuotaEntity, FrozenDict[str, float]] = EMPTY

    def get(self, *pairs: tuple[str, str | None]) -> FrozenDict[str, float]:
        return self.entities.get(quota_entity(pairs), EMPTY)

    def to_dict(self) -> dict:
        items = [(quota_entity_str(e), dict(sorted(q.items())))
                 for e, q in self.entities.items()]
        return dict(sorted(items, key=lambda kv: kv[0]))


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    """The next producer id block starts here (-1: none handed out yet)."""

    next_producer_id: int = -1

    def to_dict(self) -> dict:
        return {"next_producer_id": self.next_producer_id}


@dataclass(frozen=True, slots=True)
class AclsImage:
    acls: FrozenDict[Uuid, Acl] = EMPTY

    def to_dict(self) -> dict:
        return {str(i): a.to_dict() for i, a in sorted(self.acls.items())}


@dataclass(frozen=True, slots=True)
class ScramImage:
    """SCRAM credentials by (user name, mechanism id)."""

    credentials: FrozenDict[tuple[str, int], ScramCredential] = EMPTY

    def get(self, user: str, mechanism: int) -> ScramCredential | None:
        return self.credentials.get((user, mechanism))

    def to_dict(self) -> dict:
        return {f"{u}/{SCRAM_MECHANISMS.get(m, m)}": c.to_dict()
                for (u, m), c in sorted(self.credentials.items())}


@dataclass(frozen=True, slots=True)
class DelegationTokensImage:
    tokens: FrozenDict[str, DelegationToken] = EMPTY

    def to_dict(self) -> dict:
        return {i: t.to_dict() for i, t in sorted(self.tokens.items())}


# ---------------------------------------------------------------- the image


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The whole metadata state at :attr:`provenance`.

    ``pending_transaction`` holds the records of a metadata transaction that has begun but not
    ended at this offset: they are not part of the visible state, and a delta built on this image
    picks them up again so that End applies them all together (Abort drops them).
    """

    provenance: Provenance = NO_PROVENANCE
    features: FeaturesImage = FeaturesImage()
    cluster: ClusterImage = ClusterImage()
    topics: TopicsImage = TopicsImage()
    configs: ConfigurationsImage = ConfigurationsImage()
    client_quotas: ClientQuotasImage = ClientQuotasImage()
    producer_ids: ProducerIdsImage = ProducerIdsImage()
    acls: AclsImage = AclsImage()
    scram: ScramImage = ScramImage()
    delegation_tokens: DelegationTokensImage = DelegationTokensImage()
    pending_transaction: tuple[Message, ...] | None = None

    EMPTY: ClassVar[MetadataImage]

    # ------------------------------------------------------------- queries

    @property
    def offset(self) -> int:
        return self.provenance.offset

    @property
    def epoch(self) -> int:
        return self.provenance.epoch

    @property
    def metadata_version(self) -> int | None:
        return self.features.metadata_version

    @property
    def in_transaction(self) -> bool:
        return self.pending_transaction is not None

    def topic(self, topic: str | bytes) -> TopicImage | None:
        """A topic by name (str) or id (Uuid)."""
        if isinstance(topic, str):
            return self.topics.topics_by_name.get(topic)
        return self.topics.topics_by_id.get(topic)

    def partition(self, topic: str | bytes, partition_id: int) -> PartitionRegistration | None:
        t = self.topic(topic)
        return None if t is None else t.partitions.get(partition_id)

    def partitions_led_by(self, broker_id: int) -> list[tuple[str, int]]:
        """(topic name, partition id) of every partition ``broker_id`` leads, in order."""
        out = []
        for t in self.topics.topics_by_id.values():
            for p, reg in t.partitions.items():
                if reg.leader == broker_id:
                    out.append((t.name, p))
        out.sort()
        return out

    def partitions_with_replica(self, broker_id: int) -> list[tuple[str, int]]:
        """(topic name, partition id) of every partition that has ``broker_id`` as a replica."""
        out = []
        for t in self.topics.topics_by_id.values():
            for p, reg in t.partitions.items():
                if broker_id in reg.replicas:
                    out.append((t.name, p))
        out.sort()
        return out

    # ------------------------------------------------------------- derived images

    def with_provenance(self, provenance: Provenance | tuple[int, int]) -> MetadataImage:
        # what dataclasses.replace gives, spelled out: a broker and a controller call this on
        # every committed batch (NoOps included), and replace() is several times slower
        return type(self)(Provenance(*provenance), self.features, self.cluster, self.topics,
                          self.configs, self.client_quotas, self.producer_ids, self.acls,
                          self.scram, self.delegation_tokens, self.pending_transaction)

    def visible(self) -> MetadataImage:
        """The state alone: no provenance, no pending transaction (for comparing states)."""
        if self.provenance == NO_PROVENANCE and self.pending_transaction is None:
            return self
        return replace(self, provenance=NO_PROVENANCE, pending_transaction=None)

    def replay(self, records: Iterable[Any]) -> MetadataImage:
        """The image after ``records`` (messages, MetadataRecords or LogRecords), applied as one
        delta."""
        delta = _HOOKS["delta"](self)
        for r in records:
            delta.replay(r)
        return delta.apply()

    @classmethod
    def from_snapshot(cls, records: Iterable[Any], provenance: Provenance | tuple[int, int]
                      = NO_PROVENANCE) -> MetadataImage:
        """Load the records of a snapshot (as :meth:`write` gives them) into a fresh image."""
        return cls.EMPTY.replay(records).with_provenance(provenance)

    # ------------------------------------------------------------- output

    def write(self, metadata_version: int | None = None, *,
              on_loss: Callable[[str], None] | None = None) -> list[MetadataRecord]:
        """The minimal records of a snapshot of the visible state, in Kafka's order and with the
        record versions ``metadata_version`` (default: the image's) calls for. What that version
        cannot represent goes to ``on_loss`` (default: raise UnwritableMetadataError)."""
        return _HOOKS["write"](self, metadata_version, on_loss=on_loss)

    def to_dict(self, *, provenance: bool = True) -> dict:
        """A JSON-friendly view with a stable key order (for printing and comparing runs)."""
        out: dict[str, Any] = {}
        if provenance:
            out["provenance"] = {"offset": self.provenance.offset, "epoch": self.provenance.epoch}
        out["features"] = self.features.to_dict()
        out["cluster"] = self.cluster.to_dict()
        out["topics"] = self.topics.to_dict()
        out["configs"] = self.configs.to_dict()
        out["client_quotas"] = self.client_quotas.to_dict()
        out["producer_ids"] = self.producer_ids.to_dict()
        out["acls"] = self.acls.to_dict()
        out["scram"] = self.scram.to_dict()
        out["delegation_tokens"] = self.delegation_tokens.to_dict()
        out["pending_transaction"] = (None if self.pending_transaction is None
                                      else [type(m).__name__ for m in self.pending_transaction])
        return out


MetadataImage.EMPTY = MetadataImage()

#: what replay() and write() call: MetadataDelta (delta.py) and write_image (writer.py), which
#: register themselves when they load (the package loads both), so that this module imports
#: neither and the delta, which builds images, is the only one of the two that knows the other
_HOOKS: dict[str, Callable[..., Any]] = {}
