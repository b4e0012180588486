"""KIP-848 consumer groups (``group.protocol=consumer``) with confluent-kafka (librdkafka 2.16):
two members split the partitions, a third joins and one leaves without a stop-the-world
rebalance (members keep what they are not asked to give up), commits are checked against member
epochs, the coordinator's broker is killed and the group goes on from its committed offsets,
and a new member resumes exactly there. Both server-side assignors."""

from __future__ import annotations

import pytest
from group_clients import close_leftovers, wait_for
from kip848_clients import ProtocolMember

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.groups.coordinator import OFFSETS_TOPIC, partition_for

ck = pytest.importorskip("confluent_kafka")

TOPIC, PARTITIONS = "orders", 6
CONFIGS = {"group.consumer.heartbeat.interval.ms": 1000}


@pytest.fixture(autouse=True)
def _members_closed():
    """A test that fails half-way leaves no member's client running into the next test."""
    yield
    close_leftovers()


def _produce(bootstrap: str, values: list[str]) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i, v in enumerate(values):
        p.produce(TOPIC, value=v, partition=i % PARTITIONS)
    assert p.flush(60) == 0


def _split(members) -> bool:
    parts = [m.assignment for m in members]
    return all(parts) and sum(len(p) for p in parts) == PARTITIONS and \
        frozenset().union(*parts) == frozenset(range(PARTITIONS))


def _values(members) -> list[str]:
    return sorted(v for m in members for v in m.values())


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_consumer_protocol_group_rebalances_incrementally_and_survives(assignor):
    group = f"billing-{assignor}"
    cluster = Cluster(3, 3, seed=31, configs=CONFIGS)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        first = [f"a{i:03}" for i in range(60)]
        _produce(boot, first)
        a = ProtocolMember(boot, group, TOPIC, "a", assignor)
        b = ProtocolMember(boot, group, TOPIC, "b", assignor)
        everyone = [a, b]
        wait_for(lambda: _split([a, b]) and set(_values([a, b])) == set(first), 90,
                 lambda: f"{a.assignment} {b.assignment} {len(_values([a, b]))}")
        a.commit(), b.commit()
        if assignor == "range":
            assert sorted([sorted(a.assignment), sorted(b.assignment)]) == [[0, 1, 2], [3, 4, 5]]

        c = ProtocolMember(boot, group, TOPIC, "c", assignor)  # a third joins: three ways
        everyone.append(c)
        mark_a, mark_b = len(a.history), len(b.history)
        wait_for(lambda: _split([a, b, c]) and all(len(m.assignment) == 2 for m in (a, b, c)),
                 90, lambda: f"{a.assignment} {b.assignment} {c.assignment}")
        if assignor == "uniform":  # sticky: a and b only gave some up, never all at once
            assert all(h for h in a.history[mark_a:]) and all(h for h in b.history[mark_b:])
        # (range is not sticky: a member whose new range is all another's first revokes all)
        b.close()                             # one leaves: back to two
        mark_a, mark_c = len(a.history), len(c.history)
        wait_for(lambda: _split([a, c]), 90, lambda: f"{a.assignment} {c.assignment}")
        if assignor == "uniform":
            assert all(h for h in a.history[mark_a:]) and all(h for h in c.history[mark_c:])

        second = [f"b{i:03}" for i in range(30)]
        _produce(boot, second)
        wait_for(lambda: set(_values(everyone)) == set(first + second), 90,
                 lambda: f"{len(_values(everyone))} of {len(first + second)}")
        a.commit(), c.commit()

        with srv.hold() as cl:  # the group's coordinator dies
            topic = cl.metadata.topic(OFFSETS_TOPIC)
            coordinator = topic.partitions[partition_for(group, 50)].leader
            cl.faults.kill(coordinator)
        third = [f"c{i:03}" for i in range(30)]
        _produce(boot, third)
        wait_for(lambda: set(_values(everyone)) == set(first + second + third), 120,
                 lambda: f"{len(_values(everyone))} of {len(first + second + third)} "
                 f"a={a.assignment} c={c.assignment}")
        a.commit(), c.commit()
        after_commit = [v for v in _values(everyone) if v[0] in "bc"]
        assert after_commit == sorted(second + third)  # committed before: read exactly once
        with srv.hold() as cl:
            new = cl.metadata.topic(OFFSETS_TOPIC).partitions[partition_for(group, 50)].leader
            assert new not in (-1, coordinator)
        a.close(), c.close()

        fourth = [f"d{i:03}" for i in range(12)]
        _produce(boot, fourth)
        d = ProtocolMember(boot, group, TOPIC, "d", assignor)  # resumes at the commits
        wait_for(lambda: len(d.records) >= 12, 90, lambda: f"{len(d.records)} of 12")
        d.commit()
        d.close()
        assert sorted(d.values()) == fourth
        firsts: dict[int, int] = {}
        for p, offset, _ in d.records:
            firsts.setdefault(p, offset)
        assert firsts == {p: 20 for p in range(PARTITIONS)}
        for m in everyone + [d]:
            assert m.errors == []
        assert srv.handler_errors == []


def test_the_admin_client_describes_lists_and_deletes_a_consumer_group():
    """confluent's AdminClient: describe_consumer_groups (ConsumerGroupDescribe), the type
    filter of list_consumer_groups (ListGroups v5), delete_consumer_groups once empty."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    cluster = Cluster(3, 3, seed=13, configs=CONFIGS)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=3, replication_factor=3))
        m = ProtocolMember(srv.bootstrap_servers, "audit", TOPIC, "solo", "range")
        wait_for(lambda: m.assignment == frozenset({0, 1, 2}), 90, lambda: f"{m.assignment}")
        admin = AdminClient({"bootstrap.servers": srv.bootstrap_servers})

        def describe():
            return admin.describe_consumer_groups(["audit"])["audit"].result(30)
        d = describe()
        assert (d.type, d.state, d.partition_assignor) == \
            (ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE, "range")
        [member] = d.members
        assert member.client_id == "solo"
        assert {tp.partition for tp in member.assignment.topic_partitions} == {0, 1, 2}
        assert {tp.partition for tp in member.target_assignment.topic_partitions} == {0, 1, 2}
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30)
        assert [g.group_id for g in listed.valid] == ["audit"]
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(30)
        assert listed.valid == []
        m.close()                            # leaves: the group is empty
        wait_for(lambda: describe().state == ConsumerGroupState.EMPTY, 60,
                 lambda: f"{describe().state}")
        admin.delete_consumer_groups(["audit"])["audit"].result(30)
        d = describe()   # GROUP_ID_NOT_FOUND from ConsumerGroupDescribe: librdkafka falls back
        assert (d.state, d.members) == (ConsumerGroupState.DEAD, []), (d.state, d.type)
        assert admin.list_consumer_groups().result(30).valid == []
        assert m.errors == [] and srv.handler_errors == []
