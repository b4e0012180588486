"""Builders shared by the replication-control tests: clusters as replayed images, contexts,
request messages, and the invariants every replayed image must keep."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller.replication import create_topics
from kraft_testkit.controller.result import ControllerContext, ControllerResult
from kraft_testkit.metadata import NO_LEADER, MetadataImage
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.frames import MetadataRecord
from kraft_testkit.protocol.uuid import Uuid

MV_NAME = "metadata.version"
LATEST = V.LATEST_PRODUCTION


def uid(n: int) -> Uuid:
    return Uuid((7000 + n).to_bytes(16, "big"))


def broker_epoch(broker_id: int) -> int:
    """The epoch the helpers register each broker with (its RegisterBrokerRecord offset)."""
    return 100 + broker_id


def register(broker_id: int, *, rack: str | None = None, fenced: bool = False,
             log_dirs: Sequence[Uuid] = ()) -> M.RegisterBrokerRecord:
    return M.RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uid(500 + broker_id),
        broker_epoch=broker_epoch(broker_id),
        end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
            name="PLAINTEXT", host="localhost", port=9092 + broker_id, security_protocol=0)],
        features=[M.RegisterBrokerRecord.BrokerFeature(
            name=MV_NAME, min_supported_version=1, max_supported_version=LATEST)],
        rack=rack, fenced=fenced, log_dirs=list(log_dirs))


def cluster(brokers: Iterable[int] = (0, 1, 2), *, mv: int = LATEST,
            racks: dict[int, str] | None = None, fenced: Iterable[int] = (),
            log_dirs: dict[int, Sequence[Uuid]] | None = None) -> MetadataImage:
    """An image with metadata.version ``mv`` and the given brokers registered (unfenced unless
    listed in ``fenced``)."""
    fenced = set(fenced)
    records: list = [M.FeatureLevelRecord(name=MV_NAME, feature_level=mv)]
    for b in brokers:
        records.append(register(b, rack=(racks or {}).get(b), fenced=b in fenced,
                                log_dirs=(log_dirs or {}).get(b, ())))
    return MetadataImage.EMPTY.replay(records)


def ctx(image: MetadataImage, *, seed: int = 0, node_id: int = 3000,
        **config: object) -> ControllerContext:
    return ControllerContext(image=image, now_ms=0, rng=random.Random(seed),
                             config=NodeConfig.from_kafka(config), cluster_id="test-cluster",
                             node_id=node_id)


def with_image(context: ControllerContext, image: MetadataImage) -> ControllerContext:
    """The same controller (config, rng) looking at a newer image."""
    return ControllerContext(image=image, now_ms=context.now_ms, rng=context.rng,
                             config=context.config, cluster_id=context.cluster_id,
                             node_id=context.node_id)


def apply(image: MetadataImage, records: ControllerResult | Iterable[MetadataRecord]
          ) -> MetadataImage:
    """Replay a command's records, check the invariants, and return the new image."""
    recs = records.records if isinstance(records, ControllerResult) else tuple(records)
    after = image.replay(recs)
    check_invariants(after, before=image)
    return after


# ---------------------------------------------------------------- broker state records


def fence(image: MetadataImage, broker_id: int) -> M.BrokerRegistrationChangeRecord:
    return M.BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=image.cluster.brokers[broker_id].epoch, fenced=1)


def unfence(image: MetadataImage, broker_id: int) -> M.BrokerRegistrationChangeRecord:
    return M.BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=image.cluster.brokers[broker_id].epoch, fenced=-1)


def shutting_down(image: MetadataImage, broker_id: int) -> M.BrokerRegistrationChangeRecord:
    return M.BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=image.cluster.brokers[broker_id].epoch,
        in_controlled_shutdown=1)


def unregister(image: MetadataImage, broker_id: int) -> M.UnregisterBrokerRecord:
    return M.UnregisterBrokerRecord(broker_id=broker_id,
                                    broker_epoch=image.cluster.brokers[broker_id].epoch)


# ---------------------------------------------------------------- requests


def creatable(name: str, partitions: int = -1, rf: int = -1, *,
              assignments: dict[int, Sequence[int]] | None = None,
              configs: dict[str, str | None] | None = None
              ) -> M.CreateTopicsRequest.CreatableTopic:
    CT = M.CreateTopicsRequest
    return CT.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        assignments=[CT.CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
                     for p, b in (assignments or {}).items()],
        configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])


def create_request(*topics: M.CreateTopicsRequest.CreatableTopic,
                   validate_only: bool = False) -> M.CreateTopicsRequest:
    return M.CreateTopicsRequest(topics=list(topics), validate_only=validate_only)


def create_topic(context: ControllerContext, name: str, partitions: int = 1, rf: int = 3,
                 **kw) -> MetadataImage:
    """Create one topic through the real command; return the replayed image."""
    result = create_topics(context, create_request(creatable(name, partitions, rf, **kw)))
    assert result.response.topics[0].error_code == ErrorCode.NONE, result.response
    return apply(context.image, result)


def alter_isr(image: MetadataImage, topic: str, partition: int, isr: Sequence[int], *,
              broker_id: int | None = None, leader_epoch: int | None = None,
              partition_epoch: int | None = None, version: int = 3,
              broker_epochs: dict[int, int] | None = None,
              leader_recovery_state: int = 0) -> M.AlterPartitionRequest:
    """An AlterPartition request as the partition's current leader would send it."""
    t = image.topic(topic)
    reg = t.partitions[partition] if t is not None else None
    leader = broker_id if broker_id is not None else reg.leader
    AP = M.AlterPartitionRequest
    epochs = broker_epochs or {}
    data = AP.PartitionData(
        partition_index=partition,
        leader_epoch=reg.leader_epoch if leader_epoch is None else leader_epoch,
        partition_epoch=reg.partition_epoch if partition_epoch is None else partition_epoch,
        new_isr=list(isr) if version < 3 else [],
        new_isr_with_epochs=[AP.BrokerState(broker_id=b, broker_epoch=epochs.get(b, -1))
                             for b in isr] if version >= 3 else [],
        leader_recovery_state=leader_recovery_state)
    return AP(broker_id=leader,
              broker_epoch=image.cluster.brokers[leader].epoch if leader in image.cluster.brokers
              else -1,
              topics=[AP.TopicData(topic_name=topic, topic_id=t.id if t else Uuid.ZERO,
                                   partitions=[data])])


def reassign(topic: str, partition: int, replicas: Sequence[int] | None
             ) -> M.AlterPartitionReassignmentsRequest:
    R = M.AlterPartitionReassignmentsRequest
    return R(topics=[R.ReassignableTopic(name=topic, partitions=[R.ReassignablePartition(
        partition_index=partition, replicas=None if replicas is None else list(replicas))])])


def elect(election_type: int, partitions: dict[str, Sequence[int]] | None
          ) -> M.ElectLeadersRequest:
    E = M.ElectLeadersRequest
    if partitions is None:
        return E(election_type=election_type, topic_partitions=None)
    return E(election_type=election_type, topic_partitions=[
        E.TopicPartitions(topic=t, partitions=list(p)) for t, p in partitions.items()])


# ---------------------------------------------------------------- invariants


def check_invariants(image: MetadataImage, before: MetadataImage | None = None) -> None:
    """What every replayed image must satisfy (the cluster invariants of docs/architecture.md), and against ``before``: epochs only
    move forward, the partition epoch on every change and the leader epoch on a leader change."""
    brokers = image.cluster.brokers
    for topic in image.topics:
        for pid, reg in topic.partitions.items():
            where = f"{topic.name}-{pid}: {reg}"
            assert reg.isr, f"empty ISR {where}"
            assert set(reg.isr) <= set(reg.replicas), f"ISR outside replicas {where}"
            assert len(set(reg.replicas)) == len(reg.replicas), f"duplicate replicas {where}"
            assert len(reg.directories) == len(reg.replicas), where
            assert set(reg.adding_replicas) <= set(reg.replicas), where
            assert set(reg.removing_replicas) <= set(reg.replicas), where
            # (adding and removing may overlap: Kafka keeps a stale adding list when a new
            # target adds nothing; see reassignment.py)
            if reg.leader != NO_LEADER:
                assert reg.leader in reg.isr, f"leader outside ISR {where}"
                b = brokers.get(reg.leader)
                assert b is not None and not b.fenced, f"fenced or unknown leader {where}"
            if before is None:
                continue
            old_topic = before.topic(topic.id)
            old = old_topic.partitions.get(pid) if old_topic is not None else None
            if old is None or old == reg:
                continue
            assert reg.partition_epoch > old.partition_epoch, f"epoch not bumped {where}"
            assert reg.leader_epoch >= old.leader_epoch, where
            if reg.leader != old.leader:
                assert reg.leader_epoch > old.leader_epoch, f"leader epoch not bumped {where}"


def partition_records(result: ControllerResult | Iterable[MetadataRecord]) -> list:
    recs = result.records if isinstance(result, ControllerResult) else result
    return [r.message for r in recs if isinstance(r.message, M.PartitionChangeRecord)]
