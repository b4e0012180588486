"""The admin operations of the facade, each followed by a look at the committed image (and the
brokers' images once they caught up)."""

from __future__ import annotations

import pytest
from cluster_scn_helpers import fenced_at, led_by, name, partitions

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import KafkaApiError
from kraft_testkit.protocol.errors import UnsupportedVersionError
from kraft_testkit.sim.errors import NodeStateError

SEEDS = range(4)
TOPIC, BROKER = 2, 4


def brokers_caught_up(c: Cluster) -> bool:
    offset = c.metadata.offset
    return all(c.broker(b) is None or c.broker(b).metadata_offset >= offset for b in c.broker_ids)


@pytest.fixture(params=SEEDS)
def cluster(request):
    return Cluster(3, 3, seed=request.param)


def test_topics(cluster):
    c = cluster
    t = c.create_topic("orders", 6, 3, configs={"retention.ms": "1000"})
    assert t == c.metadata.topic("orders")
    assert len(t.partitions) == 6
    for p in t.partitions.values():
        assert len(p.replicas) == 3 and set(p.isr) == set(p.replicas)
        assert p.leader == p.replicas[0] and p.leader_epoch == 0 and p.partition_epoch == 0
    leaders = [p.leader for p in t.partitions.values()]
    assert sorted(leaders.count(b) for b in c.broker_ids) == [2, 2, 2]  # spread evenly
    assert dict(c.metadata.configs.topic("orders")) == {"retention.ms": "1000"}
    # validate-only changes nothing
    c.create_topic("dry", 1, 1, validate_only=True)
    assert c.metadata.topic("dry") is None
    # defaults: num.partitions and default.replication.factor (1 and 1)
    d = c.create_topic("defaults")
    assert len(d.partitions) == 1 and len(d.partitions[0].replicas) == 1
    # manual assignment
    m = c.create_topic("manual", assignments=[[2, 1], [0, 2]])
    assert [m.partitions[i].replicas for i in (0, 1)] == [(2, 1), (0, 2)]
    # growing
    c.create_partitions("orders", 8)
    assert len(c.metadata.topic("orders").partitions) == 8
    c.create_partitions("manual", 3, assignments=[[1, 0]])
    assert c.metadata.partition("manual", 2).replicas == (1, 0)
    # deleting: the topic, its configs, its partitions on the brokers
    old_id = c.metadata.topic("orders").id
    c.delete_topic("orders")
    assert c.metadata.topic("orders") is None and c.metadata.topic(old_id) is None
    assert dict(c.metadata.configs.topic("orders")) == {}
    c.run_until(brokers_caught_up, 5_000)
    for b in c.broker_ids:
        assert c.broker(b).image.topic("orders") is None
        assert not any(n.startswith("orders-") for n in c.broker(b).logic.local_replicas())
    again = c.create_topic("orders", 1, 1)
    assert again.id != old_id


def test_configs(cluster):
    c = cluster
    c.create_topic("t", 1, 3)
    c.alter_configs(topic="t", set={"cleanup.policy": "compact", "retention.ms": "5000"})
    assert dict(c.metadata.configs.topic("t")) == {"cleanup.policy": "compact",
                                                   "retention.ms": "5000"}
    c.alter_configs(topic="t", delete=["retention.ms"])
    assert dict(c.metadata.configs.topic("t")) == {"cleanup.policy": "compact"}
    c.alter_configs(topic="t", set={"cleanup.policy": None})  # None deletes
    assert dict(c.metadata.configs.topic("t")) == {}
    described = c.describe_configs(topic="t")
    assert described["retention.ms"] == "604800000"  # Kafka's default, 7 days
    c.alter_configs(topic="t", set={"retention.ms": "1"}, validate_only=True)
    assert dict(c.metadata.configs.topic("t")) == {}
    # brokers: the cluster default and one broker
    c.alter_configs(broker="", set={"log.retention.ms": "5000"})
    c.alter_configs(broker=1, set={"log.retention.ms": "6000"})
    # min.insync.replicas=1 is Kafka 4.2's ELR safety record, written at bootstrap
    assert dict(c.metadata.configs.broker("")) == {"log.retention.ms": "5000",
                                                   "min.insync.replicas": "1"}
    assert dict(c.metadata.configs.broker(1)) == {"log.retention.ms": "6000"}
    assert c.describe_configs(broker="")["log.retention.ms"] == "5000"
    # as in Kafka, a controller describes only its own id's (or the default) broker configs
    other = next(n for n in c.controller_ids if n != c.active_controller.id)
    with pytest.raises(KafkaApiError, match="INVALID_REQUEST"):
        c.describe_configs(broker=other)
    c.run_until(brokers_caught_up, 5_000)
    assert dict(c.broker(2).image.configs.broker(1)) == {"log.retention.ms": "6000"}
    # a broker's own configs come from that broker (Kafka's admin client asks it), its image
    assert c.describe_configs(broker=1)["log.retention.ms"] == "6000"
    assert c.describe_configs(broker=2)["log.retention.ms"] == "5000"  # the cluster default
    c.faults.kill(c.brokers[1])
    with pytest.raises(NodeStateError, match="down"):
        c.describe_configs(broker=c.brokers[1].id)


def test_quotas(cluster):
    c = cluster
    c.alter_client_quota({"user": "alice"}, {"producer_byte_rate": 1024.0,
                                             "consumer_byte_rate": 2048.0})
    c.alter_client_quota({"client-id": "app"}, {"request_percentage": 50.0})
    assert dict(c.metadata.client_quotas.get(("user", "alice"))) == {
        "producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    assert dict(c.metadata.client_quotas.get(("client-id", "app"))) == {"request_percentage": 50.0}
    c.alter_client_quota({"user": "alice"}, {"producer_byte_rate": None})
    assert dict(c.metadata.client_quotas.get(("user", "alice"))) == {"consumer_byte_rate": 2048.0}
    c.alter_client_quota({"user": "alice"}, {"consumer_byte_rate": None})
    assert ("user", "alice") not in {k[0] for k in c.metadata.client_quotas.entities}
    R = M.DescribeClientQuotasRequest
    r = c.request(R(components=[R.ComponentData(entity_type="client-id", match_type=0,
                                                match="app")], strict=False))
    assert name(r.error_code) == "NONE"
    assert [(e.entity[0].entity_name, [(v.key, v.value) for v in e.values]) for e in r.entries] \
        == [("app", [("request_percentage", 50.0)])]
    with pytest.raises(KafkaApiError, match="INVALID_REQUEST"):
        c.alter_client_quota({"user": "bob"}, {"no_such_quota": 1.0})


def test_acls(cluster):
    c = cluster
    c.create_acl(principal="User:alice", resource_type=TOPIC, resource_name="t", operation=3)
    c.create_acl(principal="User:bob", resource_type=TOPIC, resource_name="t", operation=4,
                 permission=2)
    acls = sorted(c.metadata.acls.acls.values(), key=lambda a: a.principal)
    assert [(a.principal, a.resource_type, a.resource_name, a.operation, a.permission_type)
            for a in acls] == [("User:alice", TOPIC, "t", 3, 3), ("User:bob", TOPIC, "t", 4, 2)]
    R = M.DescribeAclsRequest
    r = c.request(R(resource_type_filter=TOPIC, resource_name_filter="t", pattern_type_filter=3,
                    principal_filter="User:alice", host_filter=None, operation=1,
                    permission_type=1))
    assert name(r.error_code) == "NONE"
    assert [[a.principal for a in res.acls] for res in r.resources] == [["User:alice"]]
    D = M.DeleteAclsRequest
    r = c.request(D(filters=[D.DeleteAclsFilter(
        resource_type_filter=TOPIC, resource_name_filter="t", pattern_type_filter=3,
        principal_filter="User:bob", host_filter=None, operation=1, permission_type=1)]))
    assert [len(f.matching_acls) for f in r.filter_results] == [1]
    assert [a.principal for a in c.metadata.acls.acls.values()] == ["User:alice"]
    with pytest.raises(KafkaApiError):
        c.create_acl(principal="nobody", resource_type=TOPIC, resource_name="t", operation=3)


def test_scram(cluster):
    c = cluster
    c.upsert_scram_credential("alice", "secret")
    c.upsert_scram_credential("alice", "other", mechanism="SCRAM-SHA-512", iterations=8192)
    cred = c.metadata.scram.get("alice", 1)
    assert cred is not None and cred.iterations == 4096 and cred.salt == b"salt-alice"
    assert len(cred.stored_key) == 32 and len(cred.server_key) == 32
    assert c.metadata.scram.get("alice", 2).iterations == 8192
    c.upsert_scram_credential("alice", "changed")
    assert c.metadata.scram.get("alice", 1).stored_key != cred.stored_key
    with pytest.raises(KafkaApiError, match="UNACCEPTABLE_CREDENTIAL|INVALID"):
        c.upsert_scram_credential("bob", "pw", iterations=1)
    assert c.metadata.scram.get("bob", 1) is None


def test_elect_leaders_and_unregister(cluster):
    c = cluster
    c.create_topic("t", 3, 3)
    b = c.seed % 3
    preferred = [pid for _, pid, p in partitions(c.metadata) if p.replicas[0] == b]
    c.network.isolate(b)
    fenced_at(c, b)
    assert led_by(c.metadata, b) == []
    c.network.heal()
    c.run_until(lambda c: not c.broker_state(b).fenced and
                all(b in p.isr for _, _, p in partitions(c.metadata)), 60_000)
    # unfencing does not move leaders back (that is leader balancing's or an election's job)
    assert led_by(c.metadata, b) == []
    result = c.elect_leaders("t")
    assert result == {("t", p): "NONE" if p in preferred else "ELECTION_NOT_NEEDED"
                      for p in range(3)}
    assert sorted(pid for _, pid in led_by(c.metadata, b)) == preferred
    assert c.elect_leaders() == {}
    # unregister a broker that is gone
    gone = (b + 1) % 3
    c.controlled_shutdown(gone)
    c.unregister_broker(gone)
    img = c.metadata
    assert img.cluster.broker(gone) is None and gone not in img.cluster.broker_ids()
    for _, _, p in partitions(img):
        assert gone in p.replicas and gone not in p.isr and p.leader != gone
    assert c.broker_state(gone).registered is False
    with pytest.raises(KafkaApiError, match="BROKER_ID_NOT_REGISTERED"):
        c.unregister_broker(gone)


# ------------------------------------------------------------------ features


@pytest.mark.parametrize("seed", range(3))
def test_metadata_version_upgrade(seed):
    c = Cluster(3, 3, seed=seed, metadata_version=14)
    assert c.metadata.features.metadata_version == 14
    c.update_feature("metadata.version", 19, validate_only=True)
    assert c.metadata.features.metadata_version == 14
    c.update_feature("metadata.version", 19)
    assert c.metadata.features.metadata_version == 19
    c.run_until(brokers_caught_up, 5_000)
    assert all(c.broker(b).image.features.metadata_version == 19 for b in c.broker_ids)
    # 4.3-IV0 is not production-ready in Kafka 4.2: no node supports it
    with pytest.raises(KafkaApiError, match=r"INVALID_UPDATE_VERSION.*supports versions 7-29"):
        c.update_feature("metadata.version", 30)
    with pytest.raises(KafkaApiError, match="INVALID_UPDATE_VERSION.*downgrade"):
        c.update_feature("metadata.version", 18)  # a downgrade needs a downgrade type


@pytest.mark.parametrize("seed", range(3))
def test_single_controller_feature_updates(seed):
    c = Cluster(1, 3, seed=seed, metadata_version=17)
    c.update_feature("metadata.version", 19)
    assert c.metadata.features.metadata_version == 19


@pytest.mark.parametrize("seed", range(2))
def test_feature_upgrade_with_three_controllers_at_3_7(seed):
    """From 3.7-IV0 every controller registers (KIP-919), and every voter must have registered
    for a feature to change."""
    c = Cluster(3, 3, seed=seed, metadata_version=17)
    c.run_until(lambda c: set(c.metadata.cluster.controllers) == set(c.controller_ids), 10_000)
    for n in c.controller_ids:
        reg = c.metadata.cluster.controller(n)
        assert reg.supported_features["metadata.version"].max >= 19
    c.update_feature("metadata.version", 19)
    assert c.metadata.features.metadata_version == 19


@pytest.mark.parametrize("seed", range(2))
def test_metadata_version_safe_downgrade_through_the_admin_op(seed):
    c = Cluster(1, 3, seed=seed, metadata_version=19)
    c.update_feature("metadata.version", 18, upgrade_type="safe_downgrade")
    assert c.metadata.features.metadata_version == 18


@pytest.mark.parametrize("seed", range(2))
def test_metadata_version_downgrades_by_request(seed):
    """The same downgrades, with a v1 UpdateFeaturesRequest built by hand (Kafka 4.x: an error
    is the request's, with no per-feature results)."""
    c = Cluster(1, 3, seed=seed, metadata_version=19)
    R = M.UpdateFeaturesRequest

    def update(level: int, upgrade_type: int) -> tuple[str, str | None]:
        r = c.request(R(timeout_ms=30_000, validate_only=False, feature_updates=[
            R.FeatureUpdateKey(feature="metadata.version", max_version_level=level,
                               upgrade_type=upgrade_type)]))
        if name(r.error_code) != "NONE":
            assert r.results == ()
            return name(r.error_code), r.error_message
        return name(r.results[0].error_code), r.results[0].error_message
    code, why = update(18, 1)                        # plain upgrade type
    assert code == "INVALID_UPDATE_VERSION" and "downgrade" in why
    assert update(18, 2) == ("NONE", None)           # safe: no metadata change 18..19
    assert c.metadata.features.metadata_version == 18
    code, why = update(14, 2)                        # 15 and 17 changed the metadata
    assert code == "INVALID_UPDATE_VERSION"
    assert c.metadata.features.metadata_version == 18
