"""The kit's stand-in for ReplicationControlManagerTest's ``ReplicationControlTestContext``.

An image built by replaying records: metadata.version and eligible.leader.replicas.version
first, brokers registered (fenced, RegisterBrokerRecord's default) with one directory each,
``TESTBROKER0000<n>DIRAAAA``; the kit's controller commands are called on it with Kafka's
``MockRandom`` feeding placement, and their records replayed. Kafka's builder defaults: one
partition and replication factor 3 for -1.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import replication as R
from kraft_testkit.controller.java_random import MockRandom
from kraft_testkit.controller.placement import PLACEMENT_RANDOM_KEY
from kraft_testkit.controller.result import ControllerContext
from kraft_testkit.metadata import MetadataImage, PartitionRegistration
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

CT = M.CreateTopicsRequest
CP = M.CreatePartitionsRequest
MV = "metadata.version"
ELR = "eligible.leader.replicas.version"


def broker_dir(broker_id: int) -> Uuid:
    return Uuid.parse(f"TESTBROKER{broker_id:05d}DIRAAAA")


def default_broker_epoch(broker_id: int) -> int:
    """``ReplicationControlManagerTest.defaultBrokerEpoch``: 100 + the id."""
    return 100 + broker_id


class RcmContext:
    def __init__(self, *, mv: int = V.LATEST_PRODUCTION, elr: bool = False,
                 **config: object) -> None:
        settings = {"default.replication.factor": 3, "num.partitions": 1}
        settings.update(config)
        self.config = NodeConfig.from_kafka(settings)
        self.random = MockRandom()
        self.rng = random.Random(0)  # topic ids (Kafka: Uuid.randomUuid())
        self.extra: dict = {PLACEMENT_RANDOM_KEY: self.random}
        self.image = MetadataImage.EMPTY.replay([
            M.FeatureLevelRecord(name=MV, feature_level=mv),
            M.FeatureLevelRecord(name=ELR, feature_level=1 if elr else 0)])

    # ------------------------------------------------------------- plumbing

    def ctx(self) -> ControllerContext:
        return ControllerContext(image=self.image, now_ms=0, rng=self.rng,
                                 config=self.config, cluster_id="test-cluster",
                                 node_id=0, extra=self.extra)  # Kafka: nodeId 0

    def new_topic_id(self) -> Uuid:
        return Uuid.random(self.rng)

    def replay(self, records: Iterable) -> None:
        self.image = self.image.replay(tuple(records))

    # ------------------------------------------------------------- brokers

    def register_brokers(self, *broker_ids: int, rack: str | None = None) -> None:
        for b in broker_ids:
            self.replay([M.RegisterBrokerRecord(
                broker_id=b, incarnation_id=Uuid((9000 + b).to_bytes(16, "big")),
                broker_epoch=default_broker_epoch(b),
                end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
                    name="PLAINTEXT", host="localhost", port=9092 + b, security_protocol=0)],
                rack=rack, fenced=True, log_dirs=[broker_dir(b)])])

    def register_dirs(self, broker_id: int, dirs: Sequence[Uuid]) -> None:
        """``registerBrokersWithDirs``: the broker registered again with these directories."""
        broker = self.image.cluster.brokers[broker_id]
        self.replay([M.RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=broker.incarnation_id,
            broker_epoch=default_broker_epoch(broker_id),
            end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
                name="PLAINTEXT", host="localhost", port=9092 + broker_id, security_protocol=0)],
            rack=None, fenced=True, log_dirs=list(dirs))])

    def _change(self, broker_id: int, **fields: int) -> None:
        epoch = self.image.cluster.brokers[broker_id].epoch
        self.replay([M.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch,
                                                      **fields)])

    def unfence_brokers(self, *broker_ids: int) -> None:
        """A heartbeat from each: a fenced broker is unfenced (leaderless partitions may get
        it as leader), an unfenced one changes nothing."""
        for b in broker_ids:
            if self.image.cluster.brokers[b].fenced:
                self.replay(R.handle_broker_unfenced(self.ctx(), b))
                self._change(b, fenced=-1)

    def fence_brokers(self, *broker_ids: int) -> None:
        """``fenceBrokers``: every other registered broker heartbeats (a fenced one is
        unfenced), then the sessions of the named ones expire, one broker at a time in id
        order: it leaves its ISRs and leaderships, then is fenced."""
        targets = set(broker_ids)
        self.unfence_brokers(*sorted(set(self.image.cluster.brokers) - targets))
        for b in sorted(targets):
            if not self.image.cluster.brokers[b].fenced:
                self.replay(R.handle_broker_fenced(self.ctx(), b))
                self._change(b, fenced=1)
        assert {b for b, r in self.image.cluster.brokers.items() if r.fenced} == targets

    def handle_brokers_shutdown(self, clean: bool, *broker_ids: int) -> None:
        records = []
        for b in broker_ids:
            records.extend(R.handle_broker_shutdown(self.ctx(), b, clean=clean))
        self.replay(records)

    def alter_topic_config(self, topic: str, key: str, value: str | None) -> None:
        self.replay([M.ConfigRecord(resource_type=2, resource_name=topic, name=key,
                                    value=value)])

    def alter_partition(self, topic: str, partition_id: int, isr: Sequence[int], *,
                        leader: int | None = None, version: int = 3, whole: bool = False,
                        broker_epoch: int | None = None, leader_epoch: int | None = None,
                        partition_epoch: int | None = None, lrs: int = 0,
                        replay: bool = True):
        """An AlterPartition from the partition's leader (each ISR member at its default epoch,
        as ``isrWithDefaultEpoch``); its records are replayed; returns the partition's answer
        (``whole``: the whole response)."""
        t = self.image.topic(topic)
        reg = t.partitions[partition_id]
        leader = reg.leader if leader is None else leader
        AP = M.AlterPartitionRequest
        data = AP.PartitionData(
            partition_index=partition_id,
            leader_epoch=reg.leader_epoch if leader_epoch is None else leader_epoch,
            partition_epoch=reg.partition_epoch if partition_epoch is None else partition_epoch,
            leader_recovery_state=lrs,
            new_isr=list(isr) if version < 3 else [],
            new_isr_with_epochs=[AP.BrokerState(broker_id=b, broker_epoch=default_broker_epoch(b))
                                for b in isr]
            if version >= 3 else [])
        epoch = self.image.cluster.brokers[leader].epoch if broker_epoch is None else broker_epoch
        request = AP(broker_id=leader, broker_epoch=epoch,
                     topics=[AP.TopicData(topic_name=topic, topic_id=t.id, partitions=[data])])
        result = R.alter_partition(self.ctx(), request, version=version)
        if replay:
            self.replay(result.records)
        return result.response if whole else result.response.topics[0].partitions[0]

    def in_controlled_shutdown_brokers(self, *broker_ids: int) -> None:
        for b in broker_ids:
            self._change(b, in_controlled_shutdown=1)

    # ------------------------------------------------------------- topics

    def create_topics(self, *topics: M.CreateTopicsRequest.CreatableTopic,
                      validate_only: bool = False):
        return R.create_topics(self.ctx(), CT(topics=list(topics), validate_only=validate_only))

    def create_test_topic(self, name: str, replicas: Sequence[Sequence[int]] | None = None, *,
                          partitions: int = -1, rf: int = -1,
                          configs: Mapping[str, str] | None = None,
                          expected: int = ErrorCode.NONE):
        """``createTestTopic``: by manual assignment when ``replicas`` is given, else by counts;
        the result must carry ``expected``; a success is replayed."""
        topic = creatable(name, partitions, rf, assignments=replicas, configs=configs)
        result = self.create_topics(topic)
        answer = next(t for t in result.response.topics if t.name == name)
        assert answer.error_code == expected, answer
        if expected == ErrorCode.NONE:
            self.replay(result.records)
        return answer

    def create_partitions(self, count: int, name: str,
                          replicas: Sequence[Sequence[int]] | None,
                          expected: int = ErrorCode.NONE):
        result = R.create_partitions(self.ctx(), CP(topics=[CP.CreatePartitionsTopic(
            name=name, count=count,
            assignments=None if replicas is None else
            [CP.CreatePartitionsAssignment(broker_ids=list(r)) for r in replicas])]))
        assert [r.error_code for r in result.response.results] == [expected], result.response
        self.replay(result.records)
        return result

    def partition(self, topic: str | Uuid, partition_id: int) -> PartitionRegistration:
        return self.image.topic(topic).partitions[partition_id]


def creatable(name: str, partitions: int = -1, rf: int = -1, *,
              assignments: Sequence[Sequence[int]] | None = None,
              configs: Mapping[str, str | None] | None = None) -> M.CreateTopicsRequest.CreatableTopic:
    return CT.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        assignments=[CT.CreatableReplicaAssignment(partition_index=i, broker_ids=list(b))
                     for i, b in enumerate(assignments or ())],
        configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])


def registration(replicas: Sequence[int], isr: Sequence[int], leader: int, *,
                 leader_epoch: int = 0, partition_epoch: int = 0, lrs: int = 0,
                 elr: Sequence[int] = (), last_known_elr: Sequence[int] = (),
                 dirs: Sequence[Uuid] | None = None) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=tuple(replicas),
        directories=tuple(dirs) if dirs is not None else tuple(broker_dir(r) for r in replicas),
        isr=tuple(isr), leader=leader, leader_recovery_state=lrs, leader_epoch=leader_epoch,
        partition_epoch=partition_epoch, elr=tuple(elr), last_known_elr=tuple(last_known_elr))
