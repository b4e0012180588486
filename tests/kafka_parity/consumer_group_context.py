"""A ``GroupMetadataManagerTestContext`` for the kit's consumer group manager: a metadata image
of topics, a shard, the coordinator's clock, Kafka's MockPartitionAssignor; heartbeats return
(response fields, records) as Kafka's ``CoordinatorResult`` does, or raise the error."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kraft_testkit.config import NodeConfig
from kraft_testkit.gateway.groups.consumer import records as R
from kraft_testkit.gateway.groups.consumer.manager import ConsumerGroupManager
from kraft_testkit.gateway.groups.consumer.metadata_hash import metadata_hash
from kraft_testkit.protocol import messages as M

DEFAULT_CLIENT_ID, DEFAULT_CLIENT_ADDRESS = "client", "/127.0.0.1"


@dataclass
class _Topic:
    name: str
    id: Any
    partitions: dict


class Image:
    """``MetadataImageBuilder``: topics with their partition counts (replicas on broker 0)."""

    def __init__(self, topics: dict[str, tuple[Any, int]] | None = None) -> None:
        by_name = {n: _Topic(n, tid, {p: SimpleNamespace(replicas=(0,)) for p in range(count)})
                   for n, (tid, count) in (topics or {}).items()}
        self.topics = SimpleNamespace(topics_by_name=by_name)
        self.cluster = SimpleNamespace(brokers={0: SimpleNamespace(rack="rack0")})
        self._by_id = {t.id: t for t in by_name.values()}

    def topic(self, key: Any) -> Any:
        return self.topics.topics_by_name.get(key) if isinstance(key, str) \
            else self._by_id.get(key)

    def hash_of(self, *names: str) -> int:
        return metadata_hash(set(names), self)


class MockAssignor:
    """``MockPartitionAssignor``: answers the prepared group assignment."""

    def __init__(self) -> None:
        self.prepared: dict = {}

    def prepare(self, assignment: dict) -> None:
        self.prepared = {m: {t: frozenset(ps) for t, ps in a.items()}
                         for m, a in assignment.items()}

    def __call__(self, name: str, spec: Any, partitions_of: Any) -> dict:
        return dict(self.prepared)


@dataclass
class Context:
    image: Image = field(default_factory=Image)
    assignors: str = "range"
    now: int = 0

    def __post_init__(self) -> None:
        config = NodeConfig(group_consumer_assignors=self.assignors)
        cluster = SimpleNamespace(config=config,
                                  broker=lambda _: SimpleNamespace(image=self.image))
        self.coordinator = SimpleNamespace(cluster=cluster, session_now=lambda: self.now,
                                           random_bits=lambda bits: 42)
        self.manager = ConsumerGroupManager(self.coordinator)
        self.assignor = MockAssignor()
        self.manager.assign_fn = self.assignor
        self.shard = SimpleNamespace(broker=0, consumer_groups={}, groups={})

    def replay(self, *records: Any) -> None:
        for rec in records:
            R.apply(self.shard.consumer_groups, rec)

    def with_group(self, group_id: str, epoch: int, members: list, targets: dict,
                   assignment_epoch: int, metadata_hash: int = 0) -> None:
        """``ConsumerGroupBuilder``: members, target assignments and epochs as records."""
        for m in members:
            self.replay(R.member_record(group_id, m))
        self.replay(R.epoch_record(group_id, epoch, metadata_hash))
        for member_id, target in targets.items():
            self.replay(R.target_member_record(group_id, member_id, target))
        self.replay(R.target_epoch_record(group_id, assignment_epoch))
        for m in members:
            self.replay(R.current_assignment_record(group_id, m))

    def heartbeat(self, version: int = 1, **fields: Any) -> tuple[dict, list]:
        req = M.ConsumerGroupHeartbeatRequest(**fields)
        out = self.manager.heartbeat(self.shard, req, version, DEFAULT_CLIENT_ID,
                                     DEFAULT_CLIENT_ADDRESS)
        interval = self.coordinator.cluster.config.group_consumer_heartbeat_interval_ms
        answer = {"member_id": out.member_id, "member_epoch": out.member_epoch,
                  "heartbeat_interval_ms": interval if out.member_epoch >= 0 else 0,
                  "assignment": None if out.assignment is None else
                  {t: set(ps) for t, ps in out.assignment.items()}}
        return answer, out.records

    def group(self, group_id: str) -> Any:
        return self.shard.consumer_groups[group_id]
