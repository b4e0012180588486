"""Consumer groups (the classic protocol) with each client library no one here wrote: a group of
two splits the partitions, rebalances when a third joins and when one leaves, commits, survives
its coordinator's broker being killed, and a new member resumes exactly at the committed
offsets; the offsets live in ``__consumer_offsets``."""

from __future__ import annotations

import pytest
from group_clients import MEMBERS, close_leftovers, wait_for

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway.groups.coordinator import OFFSETS_TOPIC, partition_for

TOPIC, GROUP, PARTITIONS = "orders", "billing", 6


@pytest.fixture(autouse=True)
def _members_closed():
    """A test that fails half-way leaves no member's client running into the next test."""
    yield
    close_leftovers()


def _produce(bootstrap: str, values: list[str]) -> None:
    kafka = pytest.importorskip("kafka")
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20,
                            retry_backoff_ms=100)
    for i, v in enumerate(values):
        p.send(TOPIC, v.encode(), partition=i % PARTITIONS)
    p.flush(60)
    p.close()


def _split(members) -> bool:
    """Every partition assigned to exactly one of ``members``, each of which has some."""
    parts = [m.assignment for m in members]
    return all(parts) and sum(len(p) for p in parts) == PARTITIONS and \
        frozenset().union(*parts) == frozenset(range(PARTITIONS))


def _values(members) -> list[str]:
    return sorted(v for m in members for _, _, v in m.records)


@pytest.mark.parametrize("client", ["aiokafka", "confluent", "kafka-python"])
def test_a_group_rebalances_commits_and_survives_its_coordinator(client):
    pytest.importorskip({"confluent": "confluent_kafka", "kafka-python": "kafka",
                         "aiokafka": "aiokafka"}[client])
    Member = MEMBERS[client]
    cluster = Cluster(3, 3, seed=31)
    with serve(cluster) as srv:
        boot = srv.bootstrap_servers
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        first = [f"a{i:03}" for i in range(60)]
        _produce(boot, first)

        a, b = Member(boot, GROUP, TOPIC, "a"), Member(boot, GROUP, TOPIC, "b")
        everyone = [a, b]
        # before the first commit a member that had the partitions alone may have read some
        # that the split hands to the other, who reads them again (at least once, as in Kafka)
        wait_for(lambda: _split([a, b]) and set(_values([a, b])) == set(first), 90,
                 lambda: f"{a.assignment} {b.assignment} {len(_values([a, b]))}")
        a.commit(), b.commit()

        c = Member(boot, GROUP, TOPIC, "c")  # a third joins: three ways
        everyone.append(c)
        wait_for(lambda: _split([a, b, c]), 90,
                 lambda: f"{a.assignment} {b.assignment} {c.assignment}")
        b.close()                             # one leaves: back to two
        wait_for(lambda: _split([a, c]), 90, lambda: f"{a.assignment} {c.assignment}")

        second = [f"b{i:03}" for i in range(30)]
        _produce(boot, second)
        wait_for(lambda: set(_values(everyone)) == set(first + second), 90,
                 lambda: f"{len(_values(everyone))} of {len(first + second)}")
        a.commit(), c.commit()

        with srv.hold() as cl:  # the group's coordinator dies (no time run: waits bring it)
            topic = cl.metadata.topic(OFFSETS_TOPIC)
            assert len(topic.partitions) == 50  # offsets.topic.num.partitions
            coordinator = topic.partitions[partition_for(GROUP, 50)].leader
            cl.faults.kill(coordinator)
        third = [f"c{i:03}" for i in range(30)]
        _produce(boot, third)
        wait_for(lambda: set(_values(everyone)) == set(first + second + third), 120,
                 lambda: f"{len(_values(everyone))} of {len(first + second + third)}: "
                 f"missing {sorted(set(first + second + third) - set(_values(everyone)))} "
                 f"a={a.assignment} c={c.assignment} {srv.call(lambda c: c.now_ms)} "
                 f"{srv.call(lambda c: [(p.leader, p.isr) for p in c.metadata.topic(TOPIC).partitions.values()])}")
        a.commit(), c.commit()
        after_commit = [v for v in _values(everyone) if v[0] in "bc"]
        assert after_commit == sorted(second + third)  # committed before: read exactly once
        with srv.hold() as cl:
            new = cl.metadata.topic(OFFSETS_TOPIC).partitions[partition_for(GROUP, 50)].leader
            assert new not in (-1, coordinator)
        a.close(), c.close()

        fourth = [f"d{i:03}" for i in range(12)]
        _produce(boot, fourth)
        d = Member(boot, GROUP, TOPIC, "d")  # resumes at the committed offsets: only the new
        wait_for(lambda: len(d.records) >= 12, 90, lambda: f"{len(d.records)} of 12")
        d.commit()
        d.close()
        assert sorted(v for _, _, v in d.records) == fourth
        firsts = {}
        for p, offset, _ in d.records:
            firsts.setdefault(p, offset)
        assert firsts == {p: 20 for p in range(PARTITIONS)}  # 10 + 5 + 5 consumed before
        for m in everyone + [d]:
            assert m.errors == []
        assert srv.handler_errors == []
