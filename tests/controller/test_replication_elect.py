"""ElectLeaders (PREFERRED and UNCLEAN) and periodic leader balancing."""

from __future__ import annotations

import pytest
from replication_helpers import alter_isr, apply, cluster, create_topic, ctx, elect, fence, unfence

from kraft_testkit.controller.replication import (
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    alter_partition,
    balance_partition_leaders,
    elect_leaders,
    handle_broker_fenced,
    handle_broker_unfenced,
)
from kraft_testkit.metadata import NO_LEADER, LeaderRecoveryState
from kraft_testkit.protocol.error_codes import ErrorCode as E

# Kafka's ApiError(Errors) answers carry the error's default message
NOT_NEEDED = "Leader election not needed for topic partition."
NO_PREFERRED = "The preferred leader was not available."
NO_ELIGIBLE = "Eligible topic partition leaders are not available."


def moved_leader():
    """Topic "t" partition 0 on [1, 2, 3], led by 2 after 1 was fenced and came back in sync."""
    image = create_topic(ctx(cluster((1, 2, 3))), "t", -1, -1,
                         assignments={0: [1, 2, 3], 1: [2, 3, 1]})
    image = apply(image, [*handle_broker_fenced(ctx(image), 1), fence(image, 1)])
    image = apply(image, [*handle_broker_unfenced(ctx(image), 1), unfence(image, 1)])
    image = apply(image, alter_partition(ctx(image), alter_isr(image, "t", 0, [2, 3, 1])))
    reg = image.topic("t").partitions[0]
    assert reg.leader == 2 and reg.isr == (2, 3, 1)
    return image


def partition_results(result):
    return {(t.topic, p.partition_id): (p.error_code, p.error_message)
            for t in result.response.replica_election_results for p in t.partition_result}


def test_preferred_election_restores_first_replica():
    image = moved_leader()
    result = elect_leaders(ctx(image), elect(ELECTION_PREFERRED, {"t": [0, 1]}))
    assert partition_results(result) == {("t", 0): (E.NONE, None),
                                         ("t", 1): (E.ELECTION_NOT_NEEDED, NOT_NEEDED)}
    reg = apply(image, result).topic("t").partitions[0]
    assert reg.leader == 1 and reg.leader_epoch == 2


def test_preferred_leader_not_available():
    image = moved_leader()
    image = apply(image, alter_partition(ctx(image), alter_isr(image, "t", 0, [2, 3])))
    result = elect_leaders(ctx(image), elect(ELECTION_PREFERRED, {"t": [0]}))
    assert partition_results(result) == {("t", 0): (E.PREFERRED_LEADER_NOT_AVAILABLE, NO_PREFERRED)}
    assert result.records == ()


def test_unknown_topics_and_partitions():
    image = moved_leader()
    result = elect_leaders(ctx(image), elect(ELECTION_PREFERRED, {"nope": [0], "t": [7]}))
    assert partition_results(result) == {
        ("nope", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope"),
        ("t", 7): (E.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-7")}


def test_null_list_elects_everywhere_and_hides_unneeded():
    image = moved_leader()
    image = create_topic(ctx(image), "u", 2, 3)
    result = elect_leaders(ctx(image), elect(ELECTION_PREFERRED, None))
    assert [t.topic for t in result.response.replica_election_results] == ["t", "u"]
    assert partition_results(result) == {("t", 0): (E.NONE, None)}
    assert apply(image, result).topic("t").partitions[0].leader == 1


def test_empty_list_does_nothing():
    result = elect_leaders(ctx(moved_leader()), elect(ELECTION_PREFERRED, {}))
    assert result.response.replica_election_results == () and result.records == ()


def leaderless():
    """Topic "t" partition 0 on [1, 2, 3] with ISR [1] and leader -1 (1 fenced last)."""
    image = create_topic(ctx(cluster((1, 2, 3))), "t", -1, -1, assignments={0: [1, 2, 3]})
    image = apply(image, alter_partition(ctx(image), alter_isr(image, "t", 0, [1])))
    image = apply(image, [*handle_broker_fenced(ctx(image), 1), fence(image, 1)])
    reg = image.topic("t").partitions[0]
    assert (reg.leader, reg.isr) == (NO_LEADER, (1,))
    return image


def test_unclean_election_picks_out_of_sync_replica():
    image = leaderless()
    result = elect_leaders(ctx(image), elect(ELECTION_UNCLEAN, {"t": [0]}))
    assert partition_results(result) == {("t", 0): (E.NONE, None)}
    reg = apply(image, result).topic("t").partitions[0]
    assert (reg.leader, reg.isr) == (2, (2,))
    assert reg.leader_recovery_state == LeaderRecoveryState.RECOVERING
    again = elect_leaders(ctx(apply(image, result)), elect(ELECTION_UNCLEAN, {"t": [0]}))
    assert partition_results(again) == {("t", 0): (E.ELECTION_NOT_NEEDED, NOT_NEEDED)}


def test_unclean_election_without_candidates():
    image = leaderless()
    image = image.replay([fence(image, 2), fence(image, 3)])
    result = elect_leaders(ctx(image), elect(ELECTION_UNCLEAN, {"t": [0]}))
    assert partition_results(result) == {("t", 0): (E.ELIGIBLE_LEADERS_NOT_AVAILABLE, NO_ELIGIBLE)}


def test_preferred_election_on_leaderless_partition_without_isr_candidate():
    image = leaderless()
    result = elect_leaders(ctx(image), elect(ELECTION_PREFERRED, {"t": [0]}))
    assert partition_results(result) == {("t", 0): (E.PREFERRED_LEADER_NOT_AVAILABLE, NO_PREFERRED)}


@pytest.mark.parametrize("election_type", [2, -1])
def test_unknown_election_type(election_type):
    result = elect_leaders(ctx(moved_leader()), elect(election_type, {"t": [0, 1]}))
    assert result.response.error_code == E.INVALID_REQUEST and result.records == ()
    assert set(partition_results(result).values()) == {
        (E.INVALID_REQUEST, f"Unknown election type {election_type}")}


def test_balancing_moves_preferred_leaders_back():
    image = moved_leader()
    records, more = balance_partition_leaders(ctx(image))
    assert not more and len(records) == 1
    assert apply(image, records).topic("t").partitions[0].leader == 1
    assert balance_partition_leaders(ctx(apply(image, records))) == ([], False)
    capped, more = balance_partition_leaders(ctx(image), limit=0)
    assert capped == [] and more
