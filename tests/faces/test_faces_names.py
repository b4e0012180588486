"""Names: short and stable by default; realistic (Faker) from the cluster seed on request."""

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError


def test_default_names_stay_short_and_stable():
    c = Cluster(1, 2, seed=4, racks=2)
    assert c.names.hosts == {1000: "controller-1000", 0: "broker-0", 1: "broker-1"}
    assert c.racks == {0: "rack-0", 1: "rack-1"}
    assert c.names.topics(2) == ["topic-0", "topic-1"]
    assert c.metadata.cluster.broker(1).endpoints["PLAINTEXT"].host == "broker-1"


def test_faker_names_come_from_the_seed_and_reach_the_metadata():
    pytest.importorskip("faker")
    a = Cluster(3, 6, seed=21, racks=3, names="faker")
    b = Cluster(3, 6, seed=21, racks=3, names="faker")
    other = Cluster(3, 6, seed=22, racks=3, names="faker", boot=False)
    assert a.names.hosts == b.names.hosts and a.racks == b.racks
    assert a.names.topics(5) == b.names.topics(5)
    assert other.names.hosts != a.names.hosts
    assert a.trace.digest() == b.trace.digest()
    hosts = a.names.hosts
    assert len(set(hosts.values())) == len(hosts)
    assert all(h.startswith("kafka-") and "." in h for h in hosts.values())
    assert len(set(a.racks.values())) == 3
    for bid in a.broker_ids:                      # brokers register what Faker named them
        reg = a.metadata.cluster.broker(bid)
        assert reg.endpoints["PLAINTEXT"].host == hosts[bid] and reg.rack == a.racks[bid]
    # rack-aware placement over the named racks: every partition spans the three racks
    topic = a.names.topic()
    a.create_topic(topic, partitions=6, replication_factor=3)
    for p in a.metadata.topic(topic).partitions.values():
        assert len({a.racks[r] for r in p.replicas}) == 3


def test_faker_seeding_is_per_cluster_not_global():
    faker = pytest.importorskip("faker")
    first = Cluster(1, 2, seed=8, names="faker", boot=False).names.hosts
    faker.Faker.seed(12345)                     # someone else's global seed changes nothing
    faker.Faker().name()
    assert Cluster(1, 2, seed=8, names="faker", boot=False).names.hosts == first


def test_unknown_names_style_is_a_config_error():
    with pytest.raises(ConfigError, match="names must be one of short, faker, got 'fancy'"):
        Cluster(1, 1, names="fancy", boot=False)


def test_rack_names_are_the_clusters_racks():
    from kraft_testkit.cluster import Cluster

    for style in ("short", "faker"):
        c = Cluster(1, 6, racks=3, names=style, seed=21, boot=False)
        racks = list(dict.fromkeys(c.racks[b] for b in c.broker_ids))
        assert c.names.rack_names(3) == racks
        assert c.names.rack_names(2) == racks[:2]
        more = c.names.rack_names(5)
        assert more[:3] == racks and len(set(more)) == 5 and c.names.rack_names(5) == more
    listed = Cluster(1, 2, racks=["east", "west"], seed=1, boot=False)
    assert listed.names.rack_names(2) == ["east", "west"]


def test_kraft_faker_rack_names_match_the_cluster(pytester):
    pytest.importorskip("faker")
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kraft(names="faker", racks=3, brokers=3, controllers=1)
        def test_racks(kraft_cluster, kraft_faker):
            assert kraft_faker.rack_names(3) == [kraft_cluster.racks[b] for b in (0, 1, 2)]
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
