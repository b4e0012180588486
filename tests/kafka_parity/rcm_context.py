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
                                 node_id=3000, extra=self.extra)

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

    def _change(self, broker_id: int, **fields: int) -> None:
        epoch = self.image.cluster.brokers[broker_id].epoch
        self.replay([M.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch,
                                                      **fields)])

    def unfence_brokers(self, *broker_ids: int) -> None:
        for b in broker_ids:
            self.replay(R.handle_broker_unfenced(self.ctx(), b))
            self._change(b, fenced=-1)

    def in_controlled_shutdown_brokers(self, *broker_ids: int) -> None:
        for b in broker_ids:
            self._change(b, in_controlled_shutdown=1)

    def fence_brokers(self, *broker_ids: int) -> None:
        for b in broker_ids:
            self.replay(R.handle_broker_fenced(self.ctx(), b))

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
