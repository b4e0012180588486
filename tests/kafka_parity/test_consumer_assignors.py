"""Kafka 4.2.1's server-side assignor tests, ported: ``OptimizedUniformAssignmentBuilderTest``
(the uniform assignor over a homogeneous subscription) and ``RangeAssignorTest``
(``gateway/groups/consumer/assignors.py``). Members iterate in TreeMap order as in the Kafka
tests; topic ids are the Kafka tests' where the order depends on them."""

from __future__ import annotations

import pytest

from kraft_testkit.gateway.groups.consumer.assignors import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    assign,
)
from kraft_testkit.gateway.groups.consumer.java_order import uuid_order
from kraft_testkit.protocol.uuid import Uuid

kafka = pytest.mark.kafka
T1 = Uuid("T1-A4s3VTwiI5CTbEp6POw")   # OptimizedUniformAssignmentBuilderTest's topic ids
T2 = Uuid("T2-B4s3VTwiI5YHbPp6YUe")
T3 = Uuid("T3-CU8fVTLCz5YMkLoDQsa")


def _run(name, topics, members, homogeneous=True):
    """members: [(id, instance id, subscribed ids, assignment {topic: parts}, ordered?)]."""
    specs = []
    for mid, iid, subscribed, assignment, ordered in members:
        order = list(assignment) if ordered else uuid_order(assignment)
        specs.append(MemberSpec(mid, iid, None, tuple(subscribed),
                                {t: frozenset(assignment[t]) for t in order}))
    inverted = {(t, p) for s in specs for t, ps in s.assignment.items() for p in ps}
    result = assign(name, GroupSpec(specs, homogeneous, inverted),
                    lambda t: topics.get(t, -1))
    return {m: {t: set(ps) for t, ps in a.items() if ps} for m, a in result.items()}


def _m(mid, subscribed, assignment=None, iid=None, ordered=False):
    return (mid, iid, subscribed, assignment or {}, ordered)


@kafka("OptimizedUniformAssignmentBuilderTest#testOneMemberNoTopicSubscription")
def test_uniform_one_member_no_topic_subscription():
    assert _run("uniform", {T1: 3}, [_m("A", ())]) == {}


@kafka("OptimizedUniformAssignmentBuilderTest#testOneMemberSubscribedToNonexistentTopic")
def test_uniform_one_member_subscribed_to_a_nonexistent_topic():
    with pytest.raises(PartitionAssignorError):
        _run("uniform", {T1: 3}, [_m("A", (T2,))])


@kafka("OptimizedUniformAssignmentBuilderTest#testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks")
def test_uniform_first_assignment_two_members_two_topics():
    got = _run("uniform", {T1: 3, T3: 2}, [_m("A", (T1, T3)), _m("B", (T1, T3))])
    assert got == {"A": {T3: {0, 1}}, "B": {T1: {0, 1, 2}}}


@kafka("OptimizedUniformAssignmentBuilderTest#"
       "testFirstAssignmentNumMembersGreaterThanTotalNumPartitions")
def test_uniform_more_members_than_partitions():
    got = _run("uniform", {T3: 2}, [_m("A", (T3,)), _m("B", (T3,)), _m("C", (T3,))])
    assert got == {"A": {}, "B": {T3: {0}}, "C": {T3: {1}}}


@kafka("OptimizedUniformAssignmentBuilderTest#"
       "testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment")
def test_uniform_rebalances_an_unbalanced_assignment():
    got = _run("uniform", {T1: 3, T2: 3}, [
        _m("A", (T1, T2), {T1: {0, 1}, T2: {0, 1}}, ordered=True),
        _m("B", (T1, T2), {T1: {2}, T2: {2}}, ordered=True)])
    assert got == {"A": {T1: {0, 1}, T2: {0}}, "B": {T1: {2}, T2: {1, 2}}}


@kafka("OptimizedUniformAssignmentBuilderTest#"
       "testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics")
def test_uniform_partitions_added():
    got = _run("uniform", {T1: 6, T2: 5}, [
        _m("A", (T1, T2), {T1: {0, 2}, T2: {0}}, ordered=True),
        _m("B", (T1, T2), {T1: {1}, T2: {1, 2}}, ordered=True)])
    assert got == {"A": {T1: {0, 2}, T2: {0, 3, 4}}, "B": {T1: {1, 3, 4, 5}, T2: {1, 2}}}


@kafka("OptimizedUniformAssignmentBuilderTest#"
       "testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics")
def test_uniform_a_member_joins():
    got = _run("uniform", {T1: 3, T2: 3}, [
        _m("A", (T1, T2), {T1: {0, 2}, T2: {0}}, ordered=True),
        _m("B", (T1, T2), {T1: {1}, T2: {1, 2}}, ordered=True),
        _m("C", (T1, T2))])
    assert got == {"A": {T1: {0, 2}}, "B": {T1: {1}, T2: {1}}, "C": {T2: {0, 2}}}


@kafka("OptimizedUniformAssignmentBuilderTest#"
       "testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics")
def test_uniform_a_member_leaves():
    got = _run("uniform", {T1: 3, T2: 3}, [
        _m("A", (T1, T2), {T1: {0}, T2: {0}}),
        _m("B", (T1, T2), {T1: {1}, T2: {1}})])
    assert got == {"A": {T1: {0}, T2: {0, 2}}, "B": {T1: {1, 2}, T2: {1}}}


@kafka("OptimizedUniformAssignmentBuilderTest#"
       "testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics")
def test_uniform_a_subscription_removed():
    got = _run("uniform", {T1: 2, T2: 2}, [
        _m("A", (T2,), {T1: {0}, T2: {0}}),
        _m("B", (T2,), {T1: {1}, T2: {1}})])
    assert got == {"A": {T2: {0}}, "B": {T2: {1}}}


@kafka("OptimizedUniformAssignmentBuilderTest#testReassignmentStickinessWhenAlreadyBalanced")
def test_uniform_stickiness_when_already_balanced():
    got = _run("uniform", {T1: 5}, [
        _m("A", (T1,), {T1: {0, 3}}), _m("B", (T1, T2), {T1: {1}}),
        _m("C", (T1, T2), {T1: {2, 4}})])
    assert got == {"A": {T1: {0, 3}}, "B": {T1: {1}}, "C": {T1: {2, 4}}}


@kafka("RangeAssignorTest#testOneMemberNoTopic")
def test_range_one_member_no_topic():
    assert _run("range", {T1: 3}, [_m("A", ())]) == {"A": {}}


@kafka("RangeAssignorTest#testOneMemberSubscribedToNonExistentTopic")
def test_range_nonexistent_topic():
    with pytest.raises(PartitionAssignorError):
        _run("range", {T1: 3}, [_m("A", (T2,))])


@kafka("RangeAssignorTest#testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions")
def test_range_two_members_two_topics():
    got = _run("range", {T1: 3, T3: 2}, [_m("A", (T1, T3)), _m("B", (T1, T3))])
    assert got == {"A": {T1: {0, 1}, T3: {0}}, "B": {T1: {2}, T3: {1}}}


@kafka("RangeAssignorTest#testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions")
def test_range_three_members_different_subscriptions():
    got = _run("range", {T1: 3, T2: 3, T3: 2}, [
        _m("A", (T1, T2)), _m("B", (T3,)), _m("C", (T2, T3))], homogeneous=False)
    assert got == {"A": {T1: {0, 1, 2}, T2: {0, 1}}, "B": {T3: {0}},
                   "C": {T2: {2}, T3: {1}}}


@kafka("RangeAssignorTest#testFirstAssignmentNumMembersGreaterThanNumPartitions")
def test_range_more_members_than_partitions():
    got = _run("range", {T1: 3, T3: 2}, [_m("A", (T1, T3)), _m("B", (T1, T3)),
                                         _m("C", (T1, T3))])
    assert got == {"A": {T1: {0}, T3: {0}}, "B": {T1: {1}, T3: {1}}, "C": {T1: {2}}}


@kafka("RangeAssignorTest#testStaticMembership")
def test_range_static_membership():
    first = _run("range", {T1: 3}, [_m("A", (T1,), iid="instanceA"),
                                     _m("B", (T1,), iid="instanceB")])
    again = _run("range", {T1: 3}, [_m("B", (T1,), iid="instanceB"),
                                     _m("memberA1", (T1,), iid="instanceA")])
    assert again["memberA1"] == first["A"] and again["B"] == first["B"]


@kafka("RangeAssignorTest#testMixedStaticMembership")
def test_range_mixed_static_membership():
    first = _run("range", {T1: 5}, [_m("A", (T1,), iid="instanceA"),
                                     _m("B", (T1,)), _m("C", (T1,), iid="instanceC")])
    again = _run("range", {T1: 5}, [_m("B", (T1,)), _m("C", (T1,), iid="instanceC"),
                                     _m("memberA1", (T1,), iid="instanceA")])
    assert again["memberA1"] == first["A"]
    assert (again["B"], again["C"]) == (first["B"], first["C"])


@kafka("RangeAssignorTest#testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded")
def test_range_a_member_joins_more_members_than_partitions():
    got = _run("range", {T1: 2, T2: 2}, [
        _m("A", (T1, T2), {T1: {0}, T2: {0}}), _m("B", (T1, T2), {T1: {1}, T2: {1}}),
        _m("C", (T1, T2))])
    assert got == {"A": {T1: {0}, T2: {0}}, "B": {T1: {1}, T2: {1}}, "C": {}}


T4 = Uuid("T4-Tw9fVTLCz5HbPp6YQsa")   # UniformHeterogeneousAssignmentBuilderTest's (with T1-T3)


def _hetero(topics, members):
    return _run("uniform", topics, members, homogeneous=False)


@kafka("UniformHeterogeneousAssignmentBuilderTest#testTwoMembersNoTopicSubscription")
def test_hetero_no_topic_subscription():
    assert _hetero({T1: 3}, [_m("A", ()), _m("B", ())]) == {}


@kafka("UniformHeterogeneousAssignmentBuilderTest#testTwoMembersSubscribedToNonexistentTopics")
def test_hetero_nonexistent_topics():
    with pytest.raises(PartitionAssignorError):
        _hetero({T1: 3}, [_m("A", (T3,)), _m("B", (T2,))])


@kafka("UniformHeterogeneousAssignmentBuilderTest#testFirstAssignmentTwoMembersTwoTopics")
def test_hetero_first_assignment_two_members_two_topics():
    got = _hetero({T1: 3, T3: 6}, [_m("A", (T1, T3)), _m("B", (T3,))])
    assert got == {"A": {T1: {0, 1, 2}, T3: {4}}, "B": {T3: {0, 1, 2, 3, 5}}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testFirstAssignmentNumMembersGreaterThanTotalNumPartitions")
def test_hetero_more_members_than_partitions():
    got = _hetero({T1: 2, T3: 1}, [_m("A", (T3,)), _m("B", (T3,)), _m("C", (T1,))])
    assert got == {"A": {T3: {0}}, "B": {}, "C": {T1: {0, 1}}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment")
def test_hetero_unbalanced_previous_assignment():
    got = _hetero({T1: 6, T2: 4, T3: 4}, [
        _m("A", (T1,), {T1: {0, 1, 2}}), _m("B", (T1, T2), {T1: {3}, T2: {0}}),
        _m("C", (T1, T2, T3), {T1: {4, 5}, T2: {1, 2, 3}, T3: {0, 1, 2, 3}})])
    assert got == {"A": {T1: {0, 1, 2, 5}}, "B": {T1: {3}, T2: {0, 1, 2, 3}},
                   "C": {T1: {4}, T3: {0, 1, 2, 3}}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testReassignmentWhenPartitionsAreAddedForTwoMembers")
def test_hetero_partitions_added():
    got = _hetero({T1: 6, T2: 5, T3: 3, T4: 3}, [
        _m("A", (T1, T3), {T1: {0, 1, 2, 3}, T3: {0, 1}}),
        _m("B", (T1, T2, T3, T4), {T2: {0, 1, 2}, T4: {0, 1, 2}})])
    assert got == {"A": {T1: {0, 1, 2, 3, 4, 5}, T3: {0, 1, 2}},
                   "B": {T2: {0, 1, 2, 3, 4}, T4: {0, 1, 2}}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics")
def test_hetero_member_and_partitions_added():
    got = _hetero({T1: 6, T2: 7}, [
        _m("A", (T1,), {T1: {0, 2}, T2: {0}}), _m("B", (T1, T2), {T1: {1}, T2: {1, 2}}),
        _m("C", (T1, T2))])
    assert got == {"A": {T1: {0, 2, 3, 4, 5}}, "B": {T1: {1}, T2: {1, 2, 6}},
                   "C": {T2: {0, 3, 4, 5}}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics")
def test_hetero_member_removed():
    got = _hetero({T1: 3, T2: 8, T3: 3}, [
        _m("A", (T1, T3), {T1: {0, 1, 2}, T3: {0, 1}}), _m("B", (T2,), {T2: {3, 4, 5, 6}})])
    assert got == {"A": {T1: {0, 1, 2}, T3: {0, 1, 2}}, "B": {T2: set(range(8))}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics")
def test_hetero_subscription_removed():
    got = _hetero({T1: 3, T2: 5}, [
        _m("A", (T1,), {T1: {0, 2}, T2: {1, 3}}), _m("B", (T1, T2), {T1: {1}, T2: {0, 2, 4}})])
    assert got == {"A": {T1: {0, 1, 2}}, "B": {T2: {0, 1, 2, 3, 4}}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions")
def test_hetero_partitions_run_out():
    got = _hetero({T1: 2, T2: 2, T3: 2}, [
        _m("A", (T1, T2, T3), {T1: {0, 1}, T2: {0, 1}, T3: {0, 1}}), _m("B", (T1, T2, T3))])
    assert got == {"A": {T2: {0}, T3: {0, 1}}, "B": {T1: {0, 1}, T2: {1}}}


@kafka("UniformHeterogeneousAssignmentBuilderTest#"
       "testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions")
def test_hetero_a_member_without_subscriptions():
    got = _hetero({T1: 3}, [_m("A", (T1,)), _m("B", ())])
    assert got == {"A": {T1: {0, 1, 2}}, "B": {}}
