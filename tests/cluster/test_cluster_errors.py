"""Kafka error codes from the controller, through ``c.request(...)`` and the admin operations,
over the simulated network in wire mode; the committed image is unchanged by a refused request."""

from __future__ import annotations

import random

import pytest
from cluster_scn_helpers import (
    alter_partition,
    alter_partition_codes,
    fenced_at,
    heartbeat,
    name,
    registration,
)

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import SEED_ALIASES, ErrorCode, KafkaApiError
from kraft_testkit.protocol.uuid import Uuid

SEEDS = range(4)


def uuid(seed: int, salt: int = 0) -> Uuid:
    return Uuid.random(random.Random(seed * 1000 + salt))


@pytest.fixture(params=SEEDS)
def cluster(request):
    c = Cluster(3, 3, seed=request.param)
    c.create_topic("t", 3, 3)
    return c


# ------------------------------------------------------------------ membership


def test_duplicate_broker_registration(cluster):
    c = cluster
    before = c.metadata.cluster.broker(0)
    r = c.request(registration(c, 0, uuid(c.seed, 1)))
    assert name(r.error_code) == "DUPLICATE_BROKER_REGISTRATION"
    after = c.metadata.cluster.broker(0)
    assert after == before  # the live incarnation keeps its registration
    # the same incarnation registering again is an amendment: accepted, same epoch
    machine = c.broker(0).logic
    body = registration(c, 0, machine.incarnation_id, log_dirs=list(before.log_dirs))
    r = c.request(body)
    assert (name(r.error_code), r.broker_epoch) == ("NONE", before.epoch)
    assert c.metadata.cluster.broker(0).epoch == before.epoch


def test_inconsistent_cluster_id(cluster):
    c = cluster
    # the seeds call it INVALID_CLUSTER_ID
    assert SEED_ALIASES["INVALID_CLUSTER_ID"] == ErrorCode.INCONSISTENT_CLUSTER_ID
    other = str(uuid(c.seed, 2))
    assert other != c.cluster_id
    r = c.request(registration(c, 77, uuid(c.seed, 3), cluster_id=other))
    assert name(r.error_code) == "INCONSISTENT_CLUSTER_ID"
    assert c.metadata.cluster.broker(77) is None


@pytest.mark.parametrize("mv", [(1, 5), (20, 25)])
def test_unsupported_metadata_version_range(cluster, mv):
    c = cluster
    r = c.request(registration(c, 78, uuid(c.seed, 4), mv=mv))
    assert name(r.error_code) == "UNSUPPORTED_VERSION"
    assert c.metadata.cluster.broker(78) is None


def test_stale_broker_epoch_heartbeat(cluster):
    c = cluster
    reg = c.metadata.cluster.broker(1)
    for epoch in (reg.epoch - 1, reg.epoch + 1000, -1):
        r = c.request(heartbeat(1, epoch, c.metadata.offset))
        assert name(r.error_code) == "STALE_BROKER_EPOCH"
    # an unknown broker id is answered the same way
    r = c.request(heartbeat(99, 5, c.metadata.offset))
    assert name(r.error_code) == "STALE_BROKER_EPOCH"
    assert c.metadata.cluster.broker(1) == reg


def test_not_controller_from_a_non_active_controller(cluster):
    c = cluster
    active = c.active_controller
    others = [h for h in c.controllers if h != active]
    for other in others:
        r = c.request(M.UnregisterBrokerRequest(broker_id=0), to=other)
        assert name(r.error_code) == "NOT_CONTROLLER"
        r = c.request(heartbeat(0, c.metadata.cluster.broker(0).epoch, 0), to=other)
        assert name(r.error_code) == "NOT_CONTROLLER"
        r = c.request(M.ListPartitionReassignmentsRequest(timeout_ms=1000, topics=None), to=other)
        assert name(r.error_code) == "NOT_CONTROLLER"
    assert c.metadata.cluster.broker(0) is not None
    # without to=, the facade finds the active controller
    r = c.request(heartbeat(0, 1 << 40, 0))
    assert name(r.error_code) == "STALE_BROKER_EPOCH"


def create_topics_request(*names: str):
    R = M.CreateTopicsRequest
    return R(topics=[R.CreatableTopic(name=n, num_partitions=1, replication_factor=1,
                                      assignments=[], configs=[]) for n in names],
             timeout_ms=1000, validate_only=False)


@pytest.mark.parametrize("seed", range(2))
def test_not_controller_names_every_requested_topic(seed):
    c = Cluster(3, 3, seed=seed)
    other = next(h for h in c.controllers if h != c.active_controller)
    r = c.request(create_topics_request("x", "y"), to=other)
    assert [(t.name, name(t.error_code)) for t in r.topics] == [("x", "NOT_CONTROLLER"),
                                                                ("y", "NOT_CONTROLLER")]


@pytest.mark.parametrize("seed", range(4))
def test_admin_op_retries_when_the_active_controller_resigns_meanwhile(seed):
    """A CreateTopics waits for its commit on an active controller cut off from the quorum; it
    resigns and answers NOT_CONTROLLER for the topic; the admin client retries on the new one."""
    c = Cluster(3, 3, seed=seed)
    active = c.active_controller
    others = [h.id for h in c.controllers if h != active]
    c.network.partition([active.id], others)  # the admin client and brokers reach everyone
    topic = c.create_topic("x", 1, 1)
    assert topic is not None and c.active_controller != active
    c.network.heal()


def cut_off_active(seed: int) -> tuple[Cluster, object]:
    c = Cluster(3, 3, seed=seed)
    active = c.active_controller
    c.network.partition([active.id], [h.id for h in c.controllers if h != active])
    return c, active


@pytest.mark.parametrize("seed", [0, 4])
def test_admin_op_sent_as_the_active_controller_resigns(seed):
    probe, active = cut_off_active(seed)
    probe.run_until(lambda c: not c.controller_node(active).controller.active, 20_000)
    resigned_at = probe.now_ms
    c, active = cut_off_active(seed)  # same seed, same run: send 1 ms before it resigns
    c.run_for(resigned_at - 1 - c.now_ms)
    topic = c.create_topic("x", 1, 1)
    assert topic is not None and c.active_controller != active


def test_unregister_unknown_broker(cluster):
    with pytest.raises(KafkaApiError, match="BROKER_ID_NOT_REGISTERED"):
        cluster.unregister_broker(42)


# ------------------------------------------------------------------ topics and configs


def test_topic_errors(cluster):
    c = cluster
    names_before = c.metadata.topics.names()
    with pytest.raises(KafkaApiError, match="TOPIC_ALREADY_EXISTS") as e:
        c.create_topic("t", 1, 1)
    assert e.value.name == "TOPIC_ALREADY_EXISTS"
    for rf in (4, 0, -2):
        with pytest.raises(KafkaApiError, match="INVALID_REPLICATION_FACTOR"):
            c.create_topic("u", 1, rf)
    for n in (0, -5):
        with pytest.raises(KafkaApiError, match="INVALID_PARTITIONS"):
            c.create_topic("u", n, 1)
    with pytest.raises(KafkaApiError, match="INVALID_PARTITIONS"):
        c.create_partitions("t", 2)  # not an increase
    with pytest.raises(KafkaApiError, match="INVALID_PARTITIONS"):
        c.create_partitions("t", 3)
    with pytest.raises(KafkaApiError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        c.delete_topic("nope")
    with pytest.raises(KafkaApiError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        c.create_partitions("nope", 4)
    with pytest.raises(KafkaApiError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        c.describe_configs(topic="nope")
    with pytest.raises(KafkaApiError, match="INVALID_REPLICA_ASSIGNMENT"):
        c.create_topic("u", assignments=[[0, 0]])
    assert c.metadata.topics.names() == names_before
    assert len(c.metadata.topic("t").partitions) == 3


def test_invalid_config(cluster):
    c = cluster
    with pytest.raises(KafkaApiError, match="INVALID_CONFIG"):
        c.alter_configs(topic="t", set={"cleanup.policy": "bogus"})
    with pytest.raises(KafkaApiError, match="INVALID_CONFIG"):
        c.alter_configs(topic="t", set={"no.such.config": "1"})
    with pytest.raises(KafkaApiError, match="INVALID_CONFIG"):
        c.create_topic("u", 1, 1, configs={"retention.ms": "not-a-number"})
    assert dict(c.metadata.configs.topic("t")) == {}
    assert c.metadata.topic("u") is None
    with pytest.raises(KafkaApiError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        c.alter_configs(topic="nope", set={"retention.ms": "1"})


def test_reassignment_and_election_errors(cluster):
    c = cluster
    with pytest.raises(KafkaApiError, match="NO_REASSIGNMENT_IN_PROGRESS"):
        c.reassign("t", 0, None)
    with pytest.raises(KafkaApiError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        c.reassign("nope", 0, [0, 1])
    with pytest.raises(KafkaApiError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        c.reassign("t", 9, [0, 1])
    with pytest.raises(KafkaApiError, match="INVALID_REPLICA_ASSIGNMENT"):
        c.reassign("t", 0, [0, 0, 1])
    # preferred leaders lead already
    assert c.elect_leaders("t") == {("t", p): "ELECTION_NOT_NEEDED" for p in range(3)}
    assert c.elect_leaders("t", [0], election="unclean") == {("t", 0): "ELECTION_NOT_NEEDED"}
    assert c.elect_leaders() == {}  # all partitions: the ones not needing it are left out
    R = M.ElectLeadersRequest
    r = c.request(R(election_type=0, topic_partitions=[R.TopicPartitions(topic="nope",
                                                                         partitions=[0])],
                    timeout_ms=1000))
    assert [name(p.error_code) for t in r.replica_election_results
            for p in t.partition_result] == ["UNKNOWN_TOPIC_OR_PARTITION"]


# ------------------------------------------------------------------ AlterPartition


@pytest.mark.parametrize("seed", SEEDS)
def test_alter_partition_stale_leader_epoch(seed):
    """A leader change bumps the leader epoch: the old epoch is FENCED_LEADER_EPOCH for the old
    leader and the new one alike."""
    c = Cluster(3, 3, seed=seed)
    c.create_topic("p", assignments=[[0, 1, 2]])
    c.reassign("p", 0, [1, 0, 2])  # same replicas, new preferred leader: completes at once
    p = c.metadata.partition("p", 0)
    assert (p.replicas, p.leader, p.adding_replicas, p.removing_replicas) == ((1, 0, 2), 0, (), ())
    assert c.elect_leaders("p", [0]) == {("p", 0): "NONE"}
    p = c.metadata.partition("p", 0)
    assert p.leader == 1 and p.leader_epoch >= 1
    stale = p.leader_epoch - 1
    for broker in (0, 1):
        body = alter_partition(c, "p", 0, broker=broker, leader_epoch=stale)
        assert alter_partition_codes(c, body) == ("NONE", ["FENCED_LEADER_EPOCH"])
    # the old leader with the current epoch is not the leader
    body = alter_partition(c, "p", 0, broker=0)
    assert alter_partition_codes(c, body) == ("NONE", ["INVALID_REQUEST"])
    # an epoch from the future: this controller must be behind
    body = alter_partition(c, "p", 0, leader_epoch=p.leader_epoch + 3)
    assert alter_partition_codes(c, body) == ("NONE", ["NOT_CONTROLLER"])
    assert c.metadata.partition("p", 0) == p


@pytest.mark.parametrize("seed", SEEDS)
def test_alter_partition_stale_partition_epoch_and_accepted_change(seed):
    c = Cluster(3, 3, seed=seed)
    c.create_topic("p", assignments=[[0, 1, 2]])
    p = c.metadata.partition("p", 0)
    # an accepted shrink bumps the partition epoch and answers with the new state
    r = c.request(alter_partition(c, "p", 0, isr=[0, 1]))
    assert name(r.error_code) == "NONE"
    answer = r.topics[0].partitions[0]
    assert (name(answer.error_code), tuple(answer.isr)) == ("NONE", (0, 1))
    assert answer.partition_epoch == p.partition_epoch + 1
    q = c.metadata.partition("p", 0)
    assert q.partition_epoch >= answer.partition_epoch
    body = alter_partition(c, "p", 0, partition_epoch=p.partition_epoch)
    assert alter_partition_codes(c, body) == ("NONE", ["INVALID_UPDATE_VERSION"])
    # the leader grows the ISR back by itself (its follower fetches)
    c.run_until(lambda c: set(c.metadata.partition("p", 0).isr) == {0, 1, 2}, 60_000)


@pytest.mark.parametrize("seed", SEEDS)
def test_alter_partition_ineligible_replicas(seed):
    c = Cluster(3, 3, seed=seed)
    c.create_topic("p", assignments=[[0, 1, 2]])
    # an ISR member named with a wrong broker epoch (KIP-903)
    body = alter_partition(c, "p", 0, isr_epochs={2: c.metadata.cluster.broker(2).epoch + 100})
    assert alter_partition_codes(c, body) == ("NONE", ["INELIGIBLE_REPLICA"])
    # a fenced ISR member
    c.network.isolate(2)
    fenced_at(c, 2)
    p = c.metadata.partition("p", 0)
    assert 2 not in p.isr and p.leader == 0
    body = alter_partition(c, "p", 0, isr=[0, 1, 2])
    assert alter_partition_codes(c, body) == ("NONE", ["INELIGIBLE_REPLICA"])
    # a replica that is not registered at all is not a valid ISR member
    assert c.metadata.partition("p", 0) == p
    # the leader's own broker epoch must be current
    body = alter_partition(c, "p", 0, broker_epoch=c.metadata.cluster.broker(0).epoch - 1)
    assert alter_partition_codes(c, body) == ("STALE_BROKER_EPOCH", [])
    # an unknown topic id
    body = alter_partition(c, "p", 0)
    body = body.replace(topics=[body.topics[0].replace(topic_id=uuid(seed, 9))])
    assert alter_partition_codes(c, body) == ("NONE", ["UNKNOWN_TOPIC_ID"])
    c.network.heal()
