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
