"""kafka-python's KafkaAdminClient against the in-process cluster."""

from __future__ import annotations

import time

import pytest

kafka = pytest.importorskip("kafka")
import kafka.errors
from kafka.admin import KafkaAdminClient, NewTopic


@pytest.fixture
def admin(kraft_bootstrap):
    client = KafkaAdminClient(bootstrap_servers=kraft_bootstrap.bootstrap_servers,
                              request_timeout_ms=20_000)
    yield client
    client.close()


def test_create_list_and_describe_topics(admin, kraft_cluster):
    admin.create_topics([NewTopic("orders", 4, 3)])
    assert "orders" in admin.list_topics()
    [desc] = admin.describe_topics(["orders"])
    topic = kraft_cluster.metadata.topic("orders")
    assert desc["name"] == "orders" and desc["topic_id"] == str(topic.id.to_uuid())
    assert {p["partition_index"]: (p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in desc["partitions"]} == \
        {pid: (reg.leader, list(reg.replicas), list(reg.isr))
         for pid, reg in topic.partitions.items()}


def test_describe_cluster(admin, kraft_cluster):
    info = admin.describe_cluster()
    assert info["cluster_id"] == kraft_cluster.cluster_id
    assert sorted(b["broker_id"] for b in info["brokers"]) == kraft_cluster.broker_ids


def test_admin_across_controller_failover_and_broker_kill(admin, kraft_bootstrap, kraft_cluster):
    admin.create_topics([NewTopic("a", 1, 3)])
    with kraft_bootstrap.hold() as c:
        old = c.active_controller
        c.faults.kill(old)
        c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=10_000)
        victim = c.brokers[-1]  # not the broker Metadata names "controller" (kafka-python
        # sends admin requests there and does not retry a dead one)
        c.faults.kill(victim)
        c.run_until(lambda c: c.broker_state(victim).fenced, timeout_ms=30_000)
    _created(admin, NewTopic("b", 2, 2))
    assert kraft_cluster.metadata.topic("b") is not None
    _forget(admin, victim.id)
    info = _retried(admin.describe_cluster)
    assert sorted(b["broker_id"] for b in info["brokers"]) == \
        [b for b in kraft_cluster.broker_ids if b != victim.id]
    _retried(lambda: admin.delete_topics(["a"]))
    assert "a" not in _retried(admin.list_topics)


def _retried(call, attempts: int = 10):
    """A request to kafka-python's least-loaded node fails with a retriable connection error
    ("Connection reset by peer") when that node is the killed broker and the client has not
    learned it yet; Kafka's Java admin retries it on another node after retry.backoff.ms (100),
    kafka-python raises: retry the same way, a bounded number of times."""
    for attempt in range(attempts):
        try:
            return call()
        except kafka.errors.KafkaError as e:
            if not e.retriable or attempt == attempts - 1:
                raise
        time.sleep(0.1)  # the client's retry backoff, not a wait for the cluster


def _created(admin, topic: NewTopic) -> None:
    """CreateTopics, retried as ``_retried`` does (the Metadata that finds the controller may go
    to the killed broker); a retry that finds the topic there means an earlier attempt created
    it and its answer was lost on the reset connection: the topic exists, which is what an
    application retrying a create wants."""
    attempts = []

    def create():
        attempts.append(1)
        try:
            admin.create_topics([topic])
        except kafka.errors.TopicAlreadyExistsError:
            if len(attempts) == 1:
                raise
    _retried(create)


def _forget(admin, victim: int) -> None:
    """Refresh the client's metadata until the killed broker is gone from it (the gateway's
    Metadata leaves fenced brokers out), so its least-loaded node is a live one. kafka-python
    refreshes on its own only every metadata.max.age.ms; its cluster view has no public API."""
    cluster = admin._manager.cluster
    for _ in range(20):
        if victim not in {b.node_id for b in cluster.brokers()}:
            return
        _retried(lambda: admin._manager.run(cluster.refresh_metadata))
    raise AssertionError(f"the admin client still knows broker {victim}")


def test_legacy_alter_configs_replaces_the_whole_set(admin, kraft_bootstrap, kraft_cluster):
    from gateway_helpers import RawClient, port_of
    from kafka.admin import ConfigResource, ConfigResourceType

    from kraft_testkit.protocol import messages as M

    admin.create_topics([NewTopic("cfg", 1, 3, topic_configs={"retention.ms": "1000",
                                                             "cleanup.policy": "compact"})])
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "cfg",
                                        configs={"retention.ms": "5000"})],
                        incremental=False)  # the legacy RPC; kafka-python re-sends the rest
    assert dict(kraft_cluster.metadata.configs.topic("cfg")) == \
        {"retention.ms": "5000", "cleanup.policy": "compact"}
    A = M.AlterConfigsRequest  # a bare AlterConfigs: what it leaves out is deleted
    raw = RawClient(port_of(kraft_bootstrap.bootstrap_servers))
    answer = raw.request(A(resources=(A.AlterConfigsResource(
        resource_type=2, resource_name="cfg",
        configs=(A.AlterableConfig(name="retention.ms", value="7000"),)),)), 1)
    raw.close()
    assert answer.responses[0].error_code == 0
    assert dict(kraft_cluster.metadata.configs.topic("cfg")) == {"retention.ms": "7000"}
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "cfg")])
    entry = described["topic"]["cfg"]["retention.ms"]
    assert (entry["value"], entry["config_source"]) == ("7000", "DYNAMIC_TOPIC_CONFIG")


def test_describe_log_dirs_sizes_the_data_plane(admin, kraft_bootstrap, kraft_cluster):
    from gateway_helpers import RawClient, one_record_batch

    from kraft_testkit.protocol import messages as M

    admin.create_topics([NewTopic("sized", 1, 3)])
    leader = kraft_cluster.metadata.topic("sized").partitions[0].leader
    P = M.ProduceRequest
    raw = RawClient(kraft_bootstrap.address(leader)[1])
    batch = one_record_batch(b"x" * 500)
    assert raw.request(P(acks=-1, timeout_ms=10_000, topic_data=(P.TopicProduceData(
        name="sized", partition_data=(P.PartitionProduceData(index=0, records=batch),)),)),
        9).responses[0].partition_responses[0].error_code == 0
    raw.close()
    answer = {b["broker"]: b["log_dirs"][0] for b in admin.describe_log_dirs()}
    assert sorted(answer) == kraft_cluster.broker_ids
    for log_dir in answer.values():  # acks=all: every ISR replica holds the batch
        [topic] = log_dir["topics"]
        [p] = topic["partitions"]
        assert (topic["name"], p["partition_size"], p["offset_lag"]) == ("sized", len(batch), 0)
