"""confluent-kafka's AdminClient (librdkafka) against the in-process cluster: what it reads and
writes is what ``cluster.metadata`` shows."""

from __future__ import annotations

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)


@pytest.fixture
def admin(kraft_bootstrap):
    return AdminClient({"bootstrap.servers": kraft_bootstrap.bootstrap_servers})


def test_create_and_describe_topics_match_the_metadata(admin, kraft_bootstrap, kraft_cluster):
    futures = admin.create_topics([NewTopic("orders", 6, 3), NewTopic("audit", 1, 2)])
    for f in futures.values():
        f.result(60)
    md = admin.list_topics(timeout=60)
    image = kraft_cluster.metadata
    for name in ("orders", "audit"):
        topic = image.topic(name)
        assert sorted(md.topics[name].partitions) == sorted(topic.partitions)
        for pid, reg in topic.partitions.items():
            p = md.topics[name].partitions[pid]
            assert (p.leader, list(p.replicas), list(p.isrs)) == \
                (reg.leader, list(reg.replicas), list(reg.isr))
    assert sorted(md.brokers) == kraft_cluster.broker_ids
    assert md.cluster_id == kraft_cluster.cluster_id


def test_duplicate_topic_is_kafkas_error(admin):
    admin.create_topics([NewTopic("dup", 1, 1)])["dup"].result(60)
    with pytest.raises(ck.KafkaException) as e:
        admin.create_topics([NewTopic("dup", 1, 1)])["dup"].result(60)
    assert e.value.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS


def test_describe_cluster(admin, kraft_cluster):
    desc = admin.describe_cluster(request_timeout=60).result(60)
    assert desc.cluster_id == kraft_cluster.cluster_id
    assert sorted(n.id for n in desc.nodes) == kraft_cluster.broker_ids
    assert desc.controller.id in kraft_cluster.broker_ids  # a KRaft broker names a live broker


def test_incremental_alter_and_describe_configs(admin, kraft_cluster):
    admin.create_topics([NewTopic("cfg", 1, 3)])["cfg"].result(60)
    res = ConfigResource("topic", "cfg", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(60)
    assert kraft_cluster.metadata.configs.topic("cfg")["retention.ms"] == "3600000"
    described = admin.describe_configs([ConfigResource("topic", "cfg")])
    entries = next(iter(described.values())).result(60)
    assert entries["retention.ms"].value == "3600000"


def test_create_partitions_and_delete_topic(admin, kraft_cluster):
    admin.create_topics([NewTopic("grow", 2, 3)])["grow"].result(60)
    admin.create_partitions([NewPartitions("grow", 5)])["grow"].result(60)
    assert len(kraft_cluster.metadata.topic("grow").partitions) == 5
    admin.delete_topics(["grow"])["grow"].result(60)
    assert kraft_cluster.metadata.topic("grow") is None
    assert "grow" not in admin.list_topics(timeout=60).topics


def test_admin_requests_survive_a_controller_failover(admin, kraft_bootstrap, kraft_cluster):
    admin.create_topics([NewTopic("before", 1, 3)])["before"].result(60)
    with kraft_bootstrap.hold() as c:
        old = c.active_controller
        c.faults.kill(old)  # the next request is forwarded until a new controller answers
    admin.create_topics([NewTopic("during", 3, 3)])["during"].result(60)
    assert kraft_cluster.active_controller not in (None, old)
    assert kraft_cluster.metadata.topic("during") is not None


def test_acls_round_trip(admin, kraft_cluster):
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL,
                         "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    admin.create_acls([binding])[binding].result(60)
    assert len(kraft_cluster.metadata.acls.acls) == 1
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    assert admin.describe_acls(flt).result(60) == [binding]
    assert admin.delete_acls([flt])[flt].result(60) == [binding]
    assert len(kraft_cluster.metadata.acls.acls) == 0


def test_list_offsets_after_producing(admin, kraft_bootstrap):
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    admin.create_topics([NewTopic("counted", 1, 3)])["counted"].result(60)
    p = Producer({"bootstrap.servers": kraft_bootstrap.bootstrap_servers, "acks": "all",
                  "enable.idempotence": False})
    for i in range(7):
        p.produce("counted", value=str(i), partition=0, timestamp=1_000 + i)
    assert p.flush(60) == 0
    tp = TopicPartition("counted", 0)
    latest = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(60)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(60)
    assert (earliest.offset, latest.offset) == (0, 7)


def test_elect_leaders(admin, kraft_cluster):
    from confluent_kafka import ElectionType, TopicPartition

    admin.create_topics([NewTopic("elect", 1, 3)])["elect"].result(60)
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("elect", 0)]).result(60)
    # the preferred replica leads already: Kafka's ELECTION_NOT_NEEDED
    assert result[TopicPartition("elect", 0)].code() == ck.KafkaError.ELECTION_NOT_NEEDED
