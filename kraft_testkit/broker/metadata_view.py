"""The MetadataResponse a KRaft broker serves from its metadata image (``KRaftMetadataCache``).

What clients see, as Kafka builds it:

* Brokers: registered, unfenced brokers with the requested listener, by id. Fenced brokers and
  controllers never appear (KIP-631); ``fenced`` adds brokers to treat as fenced (a self-fenced
  broker shows itself so, KIP-343).
* Controller id: KRaft brokers report a random alive broker (clients cannot reach controllers,
  KIP-590), -1 when none is alive; the draw comes from the ``rng`` handed in.
* Partitions: leader, leader epoch, all replicas and the whole ISR (no filtering since v1),
  offline replicas (unregistered, fenced, without the listener, or placed in an offline log
  directory). A partition whose leader is not a registered broker with the listener reports
  leader -1 and LEADER_NOT_AVAILABLE.
* Topics: all of them by name, or those asked for; unknown names get UNKNOWN_TOPIC_OR_PARTITION,
  unknown ids UNKNOWN_TOPIC_ID. ``__consumer_offsets`` and ``__transaction_state`` are internal.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable
from typing import Any

from kraft_testkit.metadata import (
    BrokerRegistration,
    DirectoryId,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

_R: Any = M.MetadataResponse
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
DEFAULT_LISTENER = "PLAINTEXT"


def alive_broker_ids(image: MetadataImage, fenced: Collection[int] = ()) -> list[int]:
    """Unfenced registered brokers, by id (``fenced`` counts as fenced too)."""
    return [b.id for _, b in sorted(image.cluster.brokers.items())
            if not b.fenced and b.id not in fenced]


def reported_controller_id(image: MetadataImage, rng: random.Random | None = None,
                           fenced: Collection[int] = ()) -> int:
    """The controller id a KRaft broker reports: a random alive broker, or -1."""
    alive = alive_broker_ids(image, fenced)
    if not alive:
        return -1
    return alive[0] if rng is None else alive[rng.randrange(len(alive))]


def metadata_response(image: MetadataImage, *, cluster_id: str | None,
                      topics: Iterable[str | Uuid] | None = None,
                      listener: str = DEFAULT_LISTENER, fenced: Collection[int] = (),
                      controller_id: int | None = None,
                      rng: random.Random | None = None) -> Any:
    """The broker's answer to a MetadataRequest for ``topics`` (None: all topics).

    ``controller_id`` None means "as Kafka reports it" (see :func:`reported_controller_id`).
    """
    fenced = frozenset(fenced)
    brokers = []
    for _, b in sorted(image.cluster.brokers.items()):
        endpoint = b.endpoints.get(listener)
        if b.fenced or b.id in fenced or endpoint is None:
            continue
        brokers.append(_R.MetadataResponseBroker(node_id=b.id, host=endpoint.host,
                                                 port=endpoint.port, rack=b.rack))
    if controller_id is None:
        controller_id = reported_controller_id(image, rng, fenced)
    wanted: Iterable[str | Uuid] = image.topics.names() if topics is None else topics
    out = [_topic(image, t, listener, fenced) for t in wanted]
    return _R(throttle_time_ms=0, brokers=tuple(brokers), cluster_id=cluster_id,
              controller_id=controller_id, topics=tuple(out))


def _topic(image: MetadataImage, wanted: str | Uuid, listener: str,
           fenced: frozenset[int]) -> Any:
    topic = image.topic(wanted)
    if topic is None:
        if isinstance(wanted, str):
            return _R.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                            name=wanted, topic_id=Uuid.ZERO)
        return _R.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None,
                                        topic_id=wanted)
    return _R.MetadataResponseTopic(
        error_code=ErrorCode.NONE, name=topic.name, topic_id=topic.id,
        is_internal=topic.name in INTERNAL_TOPICS,
        partitions=tuple(_partition(image, topic, p, listener, fenced)
                         for p in sorted(topic.partitions)))


def _partition(image: MetadataImage, topic: TopicImage, pid: int, listener: str,
               fenced: frozenset[int]) -> Any:
    reg = topic.partitions[pid]
    leader = image.cluster.broker(reg.leader)
    has_leader = leader is not None and listener in leader.endpoints
    return _R.MetadataResponsePartition(
        error_code=ErrorCode.NONE if has_leader else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=pid,
        leader_id=reg.leader if has_leader else -1,
        leader_epoch=reg.leader_epoch,
        replica_nodes=tuple(reg.replicas),
        isr_nodes=tuple(reg.isr),
        offline_replicas=tuple(b for b in reg.replicas
                               if _offline(image.cluster.broker(b), reg, listener, fenced)))


def _offline(broker: BrokerRegistration | None, reg: PartitionRegistration, listener: str,
             fenced: frozenset[int]) -> bool:
    if broker is None or broker.fenced or broker.id in fenced or listener not in broker.endpoints:
        return True
    return not _dir_online(reg.directory(broker.id), broker.log_dirs)


def _dir_online(directory: bytes, online: tuple[Uuid, ...]) -> bool:
    """Kafka's ``DirectoryId.isOnline``: unplaced and pre-JBOD replicas count as online."""
    if directory in (DirectoryId.UNASSIGNED, DirectoryId.MIGRATING):
        return True
    if directory == DirectoryId.LOST:
        return False
    return not online or directory in online
