"""Driving one BrokerLogic by hand: images, a scripted controller, virtual time."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from kraft_testkit.broker import BrokerLogic, BrokerState
from kraft_testkit.config import NodeConfig
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc
from kraft_testkit.sim.node import NEVER, Effects

CLUSTER = "broker-test-cluster"
CONTROLLER = 100
E = ErrorCode


def uid(n: int) -> Uuid:
    """A deterministic, non-reserved uuid."""
    return Uuid((7000 + n).to_bytes(16, "big"))


def config(**overrides: object) -> NodeConfig:
    """Released defaults with Kafka-named overrides (``replica_lag_time_max_ms=...`` style)."""
    return NodeConfig.from_kafka({k.replace("_", "."): v for k, v in overrides.items()})


def broker_record(broker_id: int, epoch: int, *, fenced: bool = False,
                  in_controlled_shutdown: bool = False, listener: str = "PLAINTEXT",
                  rack: str | None = None) -> Any:
    cls = M.RegisterBrokerRecord
    return cls(broker_id=broker_id, incarnation_id=uid(500 + broker_id), broker_epoch=epoch,
               end_points=[cls.BrokerEndpoint(name=listener, host=f"broker-{broker_id}",
                                              port=9092, security_protocol=0)],
               features=[cls.BrokerFeature(name="metadata.version", min_supported_version=1,
                                           max_supported_version=19)],
               rack=rack, fenced=fenced, in_controlled_shutdown=in_controlled_shutdown)


def partition_record(topic_n: int, p: int, replicas: Iterable[int], *, isr=None, leader=None,
                     leader_epoch: int = 0, partition_epoch: int = 0) -> Any:
    replicas = list(replicas)
    return M.PartitionRecord(partition_id=p, topic_id=uid(topic_n), replicas=replicas,
                             isr=list(replicas) if isr is None else list(isr),
                             leader=replicas[0] if leader is None else leader,
                             leader_epoch=leader_epoch, partition_epoch=partition_epoch)


def make_image(brokers: Mapping[int, int] = {}, *, fenced: Iterable[int] = (),
               topics: Mapping[str, int] = {}, partitions: Iterable[Any] = (),
               extra: Iterable[Any] = (), offset: int = 10) -> MetadataImage:
    """An image at ``offset``: brokers {id: epoch}, topics {name: uid number}, partition records."""
    fenced = set(fenced)
    records: list[Any] = [M.FeatureLevelRecord(name="metadata.version", feature_level=19)]
    records += [broker_record(b, e, fenced=b in fenced) for b, e in sorted(brokers.items())]
    records += [M.TopicRecord(name=name, topic_id=uid(n)) for name, n in topics.items()]
    records += list(partitions)
    records += list(extra)
    return MetadataImage.EMPTY.replay(records).with_provenance((offset, 1))


def change_record(topic_n: int, p: int, **kw: Any) -> Any:
    return M.PartitionChangeRecord(partition_id=p, topic_id=uid(topic_n), **kw)


class Harness:
    """One broker under a hand-driven clock; everything it sends lands in ``outbox``."""

    def __init__(self, broker_id: int = 1, *, seed: int = 0, cfg: NodeConfig | None = None,
                 **kwargs: Any) -> None:
        self.broker = BrokerLogic(broker_id, CLUSTER, cfg or config(), random.Random(seed),
                                  **kwargs)
        self.now = 0
        self.timer = NEVER
        self.outbox: list[tuple[int, Any]] = []

    @property
    def id(self) -> int:
        return self.broker.broker_id

    # ---------------------------------------------------------------- feeding the broker

    def feed(self, effects: Effects) -> Effects:
        assert isinstance(effects, Effects)
        assert effects.timer_ms is not None
        self.outbox += effects.sends
        self.timer = effects.timer_ms
        return effects

    def at(self, now_ms: int) -> Harness:
        """Move the clock to ``now_ms``, firing every timer due on the way."""
        assert now_ms >= self.now
        while self.timer <= now_ms:
            self.now = max(self.now, self.timer)
            self.feed(self.broker.on_timer(self.now))
        self.now = now_ms
        return self

    def fire(self, now_ms: int) -> Effects:
        """One timer call at ``now_ms`` (however many more are due at that instant)."""
        self.now = now_ms
        return self.feed(self.broker.on_timer(now_ms))

    def advance(self, ms: int) -> Harness:
        return self.at(self.now + ms)

    def start(self) -> None:
        self.feed(self.broker.start(self.now))

    def leader(self, leader_id: int | None, epoch: int = 1) -> None:
        self.feed(self.broker.on_leader_change(leader_id, epoch, self.now))

    def metadata(self, image: MetadataImage, offset: int | None = None) -> None:
        self.feed(self.broker.on_metadata(image, self.now, offset))

    def deliver(self, src: int, msg: Any) -> Effects:
        return self.feed(self.broker.on_message(src, msg, self.now))

    # ---------------------------------------------------------------- reading what it sent

    def take(self, body_type: type, dst: int | None = None) -> list[tuple[int, Any]]:
        """Remove and return queued sends whose body is ``body_type`` (to ``dst``)."""
        hit = [(d, m) for d, m in self.outbox
               if type(getattr(m, "body", m)) is body_type and (dst is None or d == dst)]
        self.outbox = [s for s in self.outbox if s not in hit]
        return hit

    def take_one(self, body_type: type, dst: int | None = None) -> tuple[int, Any]:
        hit = self.take(body_type, dst)
        assert len(hit) == 1, f"expected one {body_type.__name__}, got {hit}"
        return hit[0]

    def answer(self, sent: tuple[int, Any], body: Any) -> Effects:
        """Deliver ``body`` as the response to a request it sent."""
        dst, req = sent
        return self.deliver(dst, rpc.response(req.correlation_id, body))

    # ---------------------------------------------------------------- scripted controller

    def register(self, epoch: int = 10) -> tuple[int, Any]:
        """Answer the pending registration; returns the heartbeat it sends at once."""
        self.answer(self.take_one(M.BrokerRegistrationRequest), M.BrokerRegistrationResponse(
            error_code=E.NONE, broker_epoch=epoch))
        return self.take_one(M.BrokerHeartbeatRequest)

    def heartbeat_reply(self, sent: tuple[int, Any], *, caught_up: bool = True,
                        fenced: bool = True, shut_down: bool = False,
                        error: int = E.NONE) -> Effects:
        return self.answer(sent, M.BrokerHeartbeatResponse(
            error_code=error, is_caught_up=caught_up, is_fenced=fenced,
            should_shut_down=shut_down))

    def to_running(self, image: MetadataImage, *, epoch: int = 10) -> None:
        """start -> registered -> caught up -> recovered -> unfenced, all at ``self.now``."""
        self.start()
        self.leader(CONTROLLER)
        self.metadata(image)
        hb = self.register(epoch)
        self.heartbeat_reply(hb, caught_up=True, fenced=True)
        assert self.broker.state is BrokerState.RECOVERY
        hb = self.take_one(M.BrokerHeartbeatRequest)
        assert hb[1].body.want_fence is False
        self.heartbeat_reply(hb, caught_up=True, fenced=False)
        assert self.broker.state is BrokerState.RUNNING

    def heartbeat_ok(self, *, fenced: bool = False) -> None:
        """Answer every queued heartbeat successfully."""
        for sent in self.take(M.BrokerHeartbeatRequest):
            self.heartbeat_reply(sent, fenced=fenced)

    def events(self) -> list[str]:
        return self.broker.events.texts()


def fetch_request(replica_id: int, replica_epoch: int, parts: Iterable[tuple[int, int, int]],
                  names: Mapping[int, str] | None = None) -> Any:
    """A follower's fetch for (topic uid number, partition, current leader epoch) triples."""
    fq = M.FetchRequest
    by_topic: dict[int, list[Any]] = {}
    for topic_n, p, epoch in parts:
        by_topic.setdefault(topic_n, []).append(fq.FetchPartition(
            partition=p, current_leader_epoch=epoch, fetch_offset=0, partition_max_bytes=1 << 20))
    return fq(replica_state=fq.ReplicaState(replica_id=replica_id, replica_epoch=replica_epoch),
              max_wait_ms=500, min_bytes=1,
              topics=tuple(fq.FetchTopic(topic=(names or {}).get(n, ""), topic_id=uid(n),
                                         partitions=tuple(ps)) for n, ps in by_topic.items()))


def fetch_errors(response: Any) -> dict[tuple[Uuid, int], int]:
    return {(t.topic_id, p.partition_index): p.error_code
            for t in response.responses for p in t.partitions}


def alter_response(request: Any, *, isr: Iterable[int] | None = None, error: int = E.NONE,
                   top_error: int = E.NONE, leader_epoch: int | None = None,
                   partition_epoch: int | None = None) -> Any:
    """The controller's answer to an AlterPartitionRequest: every partition accepted as sent
    (partition epoch + 1) unless told otherwise."""
    rs = M.AlterPartitionResponse
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            new_isr = [s.broker_id for s in p.new_isr_with_epochs] if isr is None else list(isr)
            parts.append(rs.PartitionData(
                partition_index=p.partition_index, error_code=error, leader_id=request.broker_id,
                leader_epoch=p.leader_epoch if leader_epoch is None else leader_epoch,
                isr=new_isr if error == E.NONE else [],
                partition_epoch=(p.partition_epoch + 1 if partition_epoch is None
                                 else partition_epoch)))
        topics.append(rs.TopicData(topic_id=t.topic_id, partitions=tuple(parts)))
    return rs(error_code=top_error, topics=tuple(topics) if top_error == E.NONE else ())
