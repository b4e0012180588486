"""Striped, rack-aware replica placement, checked over many seeds."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from replication_helpers import cluster, shutting_down

from kraft_testkit.controller.placement import UsableBroker, place_replicas, usable_brokers
from kraft_testkit.protocol.error_codes import ErrorCode, KafkaApiError

RACKS = {b: "abc"[b % 3] for b in range(9)}


def brokers(n=9, racks=RACKS, fenced=()):
    return [UsableBroker(b, racks.get(b) if racks else None, b in fenced) for b in range(n)]


@pytest.mark.parametrize("seed", range(40))
def test_each_partition_spans_all_racks_and_distinct_brokers(seed):
    placed = place_replicas(random.Random(seed), brokers(), 30, 3)
    for replicas in placed:
        assert len(set(replicas)) == 3
        assert {RACKS[b] for b in replicas} == {"a", "b", "c"}


@pytest.mark.parametrize("seed", range(20))
def test_leadership_stripes_across_racks(seed):
    """Each partition starts one rack further on: leaders are shared exactly by rack. (Within a
    rack Kafka's striping may favour some brokers; only rack balance is promised.)"""
    placed = place_replicas(random.Random(seed), brokers(), 90, 3)
    assert Counter(RACKS[r[0]] for r in placed) == {"a": 30, "b": 30, "c": 30}
    assert {b for r in placed for b in r} == set(range(9))


def test_without_racks_every_broker_leads_once_per_round():
    for seed in range(10):
        placed = place_replicas(random.Random(seed), brokers(5, None), 5, 2)
        assert sorted(r[0] for r in placed) == [0, 1, 2, 3, 4]


def test_same_seed_same_placement_other_seed_other_start():
    a = place_replicas(random.Random(7), brokers(), 12, 3)
    assert a == place_replicas(random.Random(7), brokers(), 12, 3)
    assert len({tuple(place_replicas(random.Random(s), brokers(), 12, 3)) for s in range(10)}) > 1


@pytest.mark.parametrize("seed", range(20))
def test_fenced_brokers_never_lead_and_come_last(seed):
    placed = place_replicas(random.Random(seed), brokers(6, None, fenced={0, 1}), 20, 3)
    for replicas in placed:
        assert replicas[0] not in (0, 1)
        assert len(set(replicas)) == 3
    # four unfenced brokers suffice for RF 3: fenced ones are not needed
    assert all(not {0, 1} & set(r) for r in placed)
    # RF 6 needs every broker, fenced ones included (never first)
    for replicas in place_replicas(random.Random(seed), brokers(6, None, fenced={0, 1}), 5, 6):
        assert sorted(replicas) == list(range(6)) and replicas[0] not in (0, 1)


def test_single_unfenced_broker_leads_everything():
    placed = place_replicas(random.Random(1), brokers(3, None, fenced={1, 2}), 5, 2)
    assert all(r[0] == 0 for r in placed)


@pytest.mark.parametrize("rf, fenced, message", [
    (0, (), "Invalid replication factor 0: the replication factor must be positive."),
    (2, (0, 1, 2), "All brokers are currently fenced."),
    (4, (), ("The target replication factor of 4 cannot be reached because only 3 broker(s) "
            "are registered.")),
])
def test_placement_errors(rf, fenced, message):
    with pytest.raises(KafkaApiError) as e:
        place_replicas(random.Random(0), brokers(3, None, fenced=fenced), 1, rf)
    assert e.value.code == ErrorCode.INVALID_REPLICATION_FACTOR and e.value.message == message


def test_usable_brokers_skip_controlled_shutdown():
    image = cluster((1, 2, 3), racks={1: "x"}, fenced=(3,))
    image = image.replay([shutting_down(image, 2)])
    assert usable_brokers(image) == [UsableBroker(1, "x", False), UsableBroker(3, None, True)]


def test_brokers_without_rack_form_their_own_rack():
    racks = {0: None, 1: None, 2: "r", 3: "r"}
    for seed in range(10):
        for replicas in place_replicas(random.Random(seed), brokers(4, racks), 8, 2):
            assert {racks[b] for b in replicas} == {None, "r"}


def test_racks_are_drawn_for_in_kafkas_hash_map_order():
    """Racks whose Java HashMap order ("Aa", "BB", "zz", "e", "rack-a", ...) differs from their
    sorted order: with Kafka's MockRandom the placer gives what Kafka 4.2.1's
    StripedReplicaPlacer gives for these brokers (run on Kafka's class); visiting racks sorted
    would differ from the third partition on."""
    from kraft_testkit.controller.java_random import MockRandom
    racks = {1: "zz", 2: "Aa", 3: "rack-a", 4: "us-east-1a", 5: "zz", 6: "BB", 7: "rack-a",
             8: "Aa", 9: "e", 10: None}
    usable = [UsableBroker(b, r, b in (4, 8)) for b, r in racks.items()]
    assert place_replicas(MockRandom(), usable, 14, 3) == [
        (10, 2, 6), (2, 6, 9), (6, 9, 7), (9, 3, 4), (7, 4, 1), (5, 4, 10), (1, 10, 2),
        (10, 2, 6), (10, 9, 1), (9, 5, 3), (1, 7, 4), (3, 4, 2), (2, 4, 6), (2, 6, 10)]


def test_java_hash_map_order_and_draws():
    """String.hashCode, HashMap bucket order with resizes, and nextInt(bound) as Java has them
    (values printed by a JVM)."""
    from kraft_testkit.controller.java_random import (MockRandom, hash_map_order, java_shuffle,
                                                      optional_string_hash)
    keys = [None, "1", "3", "2", "rack-a", "Aa", "BB", "zz", "us-east-1a", "us-east-1b", "x",
            "y", "z", "q", "w", "e", "r", "t", "u"]
    assert hash_map_order(keys, optional_string_hash) == [
        None, "Aa", "BB", "zz", "e", "rack-a", "1", "q", "2", "r", "3", "t", "u", "w", "x",
        "us-east-1a", "y", "us-east-1b", "z"]
    draws = MockRandom()
    assert [draws.randrange(i % 7 + 1) for i in range(20)] == [
        0, 1, 1, 3, 0, 4, 5, 0, 0, 0, 2, 4, 2, 0, 0, 0, 2, 3, 2, 5]
    items = [1, 2, 3, 4, 5, 6]
    java_shuffle(items, MockRandom())
    assert items == [3, 4, 6, 1, 5, 2]
