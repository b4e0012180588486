"""DescribeConfigs, DescribeAcls and DescribeClientQuotas are answered by the node asked, from
the metadata it has replayed, as Kafka 4.x brokers answer them (never forwarded): a broker cut
off from the controllers still answers at once, with its stale image."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

TOPIC, BROKER = 2, 4
D = M.DescribeConfigsRequest


def _describe(resource_type: int, name: str, keys=None) -> M.DescribeConfigsRequest:
    return D(resources=(D.DescribeConfigsResource(resource_type=resource_type,
                                                  resource_name=name,
                                                  configuration_keys=keys),),
             include_synonyms=False, include_documentation=False)


def _client(srv, node) -> RawClient:
    return RawClient(srv.address(node)[1])


def _cut_from_controllers(srv, broker: int):
    """Cut ``broker`` off every controller (the clients still reach it)."""
    with srv.hold() as c:
        return c.sim.network.partition([broker], list(c.controller_ids))


@pytest.mark.kraft(brokers=3, seed=5)
def test_a_partitioned_broker_answers_from_its_stale_image_at_once(kraft_bootstrap,
                                                                   kraft_cluster):
    stale, fresh = kraft_cluster.broker_ids[0], kraft_cluster.broker_ids[1]
    with kraft_bootstrap.hold() as c:
        c.create_topic("t", partitions=1, replication_factor=2,
                       configs={"retention.ms": "1000"})
        c.run_until(lambda c: all(c.broker(b).metadata_offset >= c.metadata.provenance.offset
                                  for b in c.broker_ids), 10_000)
    _cut_from_controllers(kraft_bootstrap, stale)
    with kraft_bootstrap.hold() as c:
        c.alter_configs(topic="t", set={"retention.ms": "2000"})
        c.create_acl(principal="User:alice", resource_type=TOPIC, resource_name="t",
                     operation=3)
        c.alter_client_quota({"user": "alice"}, {"producer_byte_rate": 1024.0})
        c.run_until(lambda c: c.broker(fresh).metadata_offset >= c.metadata.provenance.offset,
                    10_000)
    before = kraft_bootstrap.call(lambda c: c.now_ms)  # after hold() let the others catch up

    def read_all(node):
        client = _client(kraft_bootstrap, node)
        config = client.request(_describe(TOPIC, "t", ("retention.ms",)), 4).results[0]
        A = M.DescribeAclsRequest
        acls = client.request(A(resource_type_filter=1, resource_name_filter=None,
                                pattern_type_filter=1, principal_filter=None, host_filter=None,
                                operation=1, permission_type=1), 3)
        Q = M.DescribeClientQuotasRequest
        quotas = client.request(Q(components=(Q.ComponentData(
            entity_type="user", match_type=0, match="alice"),), strict=False), 1)
        client.close()
        return config, acls, quotas

    config, acls, quotas = read_all(stale)
    assert config.error_code == 0 and [(e.name, e.value) for e in config.configs] == \
        [("retention.ms", "1000")]
    assert acls.error_code == 0 and acls.resources == ()
    assert quotas.error_code == 0 and quotas.entries == ()
    assert kraft_bootstrap.call(lambda c: c.now_ms) == before  # no virtual time passed

    config, acls, quotas = read_all(fresh)
    assert [(e.name, e.value) for e in config.configs] == [("retention.ms", "2000")]
    [resource] = acls.resources
    assert (resource.resource_name, [a.principal for a in resource.acls]) == \
        ("t", ["User:alice"])
    assert [(v.key, v.value) for v in quotas.entries[0].values] == \
        [("producer_byte_rate", 1024.0)]


def test_broker_resources_name_the_broker_asked(kraft_bootstrap, kraft_cluster):
    me, other = kraft_cluster.broker_ids[0], kraft_cluster.broker_ids[1]
    with kraft_bootstrap.hold() as c:
        c.alter_configs(broker=me, set={"log.cleaner.threads": "2"})
        c.run_until(lambda c: c.broker(me).metadata_offset >= c.metadata.provenance.offset,
                    10_000)  # the broker answers from what it has replayed
    client = _client(kraft_bootstrap, me)
    own = client.request(_describe(BROKER, str(me)), 4).results[0]
    assert own.error_code == 0
    entries = {e.name: e for e in own.configs}
    assert entries["log.cleaner.threads"].value == "2"
    assert entries["log.cleaner.threads"].config_source == 2  # DYNAMIC_BROKER_CONFIG
    wrong = client.request(_describe(BROKER, str(other)), 4).results[0]
    assert wrong.error_code == ErrorCode.INVALID_REQUEST
    assert wrong.error_message == \
        f"Unexpected broker id, expected {me} or empty string, but received {other}"
    unknown = client.request(_describe(TOPIC, "nope"), 4).results[0]
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    client.close()


def test_a_standby_controller_answers_describe_configs_itself(kraft_bootstrap, kraft_cluster):
    with kraft_bootstrap.hold() as c:
        c.create_topic("c", partitions=1, replication_factor=1)
        standby = next(n for n in c.controller_ids if n != c.active_controller.id)
        c.run_until(lambda c: c.controller_node(standby).controller.committed.topic("c")
                    is not None, 10_000)
    client = _client(kraft_bootstrap, standby)
    result = client.request(_describe(TOPIC, "c", ("cleanup.policy",)), 4).results[0]
    assert result.error_code == 0 and result.configs[0].value == "delete"
    client.close()


def test_confluent_admin_describes_a_brokers_configs():
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, ConfigResource

    from kraft_testkit import Cluster, serve

    cluster = Cluster(controllers=1, brokers=2, seed=9)
    broker = cluster.broker_ids[1]
    cluster.alter_configs(broker=broker, set={"log.cleaner.threads": "3"})
    with serve(cluster) as srv:
        admin = AdminClient({"bootstrap.servers": srv.bootstrap_servers})
        futures = admin.describe_configs([ConfigResource("broker", str(broker))])
        entries = next(iter(futures.values())).result(60)
        assert entries["log.cleaner.threads"].value == "3"
        assert entries["log.cleaner.threads"].source == \
            ck.admin.ConfigSource.DYNAMIC_BROKER_CONFIG.value


def test_kafka_python_admin_describes_broker_configs_and_acls():
    pytest.importorskip("kafka")
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType,
                             ACLResourcePatternType, ConfigResource, ConfigResourceType,
                             KafkaAdminClient, ResourcePatternFilter, ResourceType)

    from kraft_testkit import Cluster, serve

    cluster = Cluster(controllers=1, brokers=2, seed=10)
    broker = cluster.broker_ids[1]
    cluster.alter_configs(broker=broker, set={"log.cleaner.threads": "4"})
    cluster.create_acl(principal="User:bob", resource_type=TOPIC, resource_name="x",
                       operation=3)
    with serve(cluster) as srv:
        admin = KafkaAdminClient(bootstrap_servers=srv.bootstrap_servers,
                                 request_timeout_ms=20_000)
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(broker))])
        entry = described["broker"][str(broker)]["log.cleaner.threads"]
        assert (entry["value"], entry["config_source"]) == ("4", "DYNAMIC_BROKER_CONFIG")
        acls, error = admin.describe_acls(ACLFilter(
            principal=None, host=None, operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                   ACLResourcePatternType.ANY)))
        assert [(a.principal, a.resource_pattern.resource_name) for a in acls] == \
            [("User:bob", "x")]
        admin.close()


@pytest.mark.kraft(brokers=2, seed=3)
def test_a_restarted_broker_answers_only_once_it_caught_up(kraft_bootstrap, kraft_cluster):
    """Kafka enables a broker's request processing only after it replayed the metadata log:
    a read sent right after a restart gets the topic's configs, never an empty image's
    UNKNOWN_TOPIC_OR_PARTITION."""
    broker = kraft_cluster.broker_ids[0]
    with kraft_bootstrap.hold() as c:
        c.create_topic("t", partitions=1, replication_factor=1,
                       configs={"retention.ms": "1000"})
        c.run_until(lambda c: c.broker(broker).metadata_offset >= c.metadata.provenance.offset,
                    10_000)
        c.faults.kill(c.brokers[0])
        c.faults.start(c.brokers[0])
        assert c.broker(broker).state_name == "STARTING"
    client = _client(kraft_bootstrap, broker)
    result = client.request(_describe(TOPIC, "t", ("retention.ms",)), 4).results[0]
    client.close()
    assert result.error_code == 0
    assert [(e.name, e.value) for e in result.configs] == [("retention.ms", "1000")]
    with kraft_bootstrap.hold() as c:
        assert c.broker(broker).state_name != "STARTING"
