"""Kafka 4.2.1's ``CurrentAssignmentBuilderTest`` (modern/consumer), ported: a member's next
state towards its target assignment (``gateway/groups/consumer/group.py:reconcile``)."""

from __future__ import annotations

import pytest

from kraft_testkit.gateway.groups.consumer.group import (
    STABLE,
    UNKNOWN,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    FencedMemberEpoch,
    Member,
    reconcile,
)
from kraft_testkit.protocol.uuid import Uuid

T1, T2 = Uuid(bytes([1] * 16)), Uuid(bytes([2] * 16))
kafka = pytest.mark.kafka


def _member(state, epoch, previous, assigned, pending=None) -> Member:
    return Member("member", member_epoch=epoch, previous_member_epoch=previous, state=state,
                  subscribed_topic_names=("topic1", "topic2"),
                  assigned={t: frozenset(p) for t, p in assigned.items() if p},
                  pending_revocation={t: frozenset(p) for t, p in (pending or {}).items() if p})


def _build(member, epoch, target, partition_epoch, owned=None, subscribed=(T1, T2)):
    return reconcile(member, epoch, {t: frozenset(p) for t, p in target.items()},
                     set(subscribed), partition_epoch, owned)


@kafka("CurrentAssignmentBuilderTest#testStableToStable")
def test_stable_to_stable():
    m = _member(STABLE, 10, 9, {T1: {1, 2, 3}, T2: {4, 5, 6}})
    got = _build(m, 11, {T1: {1, 2, 3}, T2: {4, 5, 6}}, lambda t, p: 10)
    assert got == _member(STABLE, 11, 10, {T1: {1, 2, 3}, T2: {4, 5, 6}})


@kafka("CurrentAssignmentBuilderTest#testStableToStableWithNewPartitions")
def test_stable_to_stable_with_new_partitions():
    m = _member(STABLE, 10, 10, {T1: {1, 2, 3}, T2: {4, 5, 6}})
    got = _build(m, 11, {T1: {1, 2, 3, 4}, T2: {4, 5, 6, 7}}, lambda t, p: -1)
    assert got == _member(STABLE, 11, 10, {T1: {1, 2, 3, 4}, T2: {4, 5, 6, 7}})


@kafka("CurrentAssignmentBuilderTest#testStableToUnrevokedPartitions")
def test_stable_to_unrevoked_partitions():
    m = _member(STABLE, 10, 10, {T1: {1, 2, 3}, T2: {4, 5, 6}})
    got = _build(m, 11, {T1: {2, 3, 4}, T2: {5, 6, 7}}, lambda t, p: -1)
    assert got == _member(UNREVOKED_PARTITIONS, 10, 10, {T1: {2, 3}, T2: {5, 6}},
                          {T1: {1}, T2: {4}})


@kafka("CurrentAssignmentBuilderTest#testStableToUnreleasedPartitions")
def test_stable_to_unreleased_partitions():
    m = _member(STABLE, 10, 10, {T1: {1, 2, 3}, T2: {4, 5, 6}})
    got = _build(m, 11, {T1: {1, 2, 3, 4}, T2: {4, 5, 6, 7}}, lambda t, p: 10)
    assert got == _member(UNRELEASED_PARTITIONS, 11, 10, {T1: {1, 2, 3}, T2: {4, 5, 6}})


@kafka("CurrentAssignmentBuilderTest#"
       "testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions")
def test_stable_to_unreleased_when_the_owned_partitions_lack_the_revoked_ones():
    m = _member(STABLE, 10, 10, {T1: {1, 2, 3}, T2: {4, 5, 6}})
    got = _build(m, 11, {T1: {1, 2, 3}, T2: {4, 5, 7}},
                 lambda t, p: 10 if t == T2 else -1, owned=[])
    assert got == _member(UNRELEASED_PARTITIONS, 11, 10, {T1: {1, 2, 3}, T2: {4, 5}})


@kafka("CurrentAssignmentBuilderTest#testUnrevokedPartitionsToStable")
def test_unrevoked_partitions_to_stable():
    m = _member(UNREVOKED_PARTITIONS, 10, 10, {T1: {2, 3}, T2: {5, 6}}, {T1: {1}, T2: {4}})
    got = _build(m, 11, {T1: {2, 3}, T2: {5, 6}}, lambda t, p: -1,
                 owned=[(T1, [2, 3]), (T2, [5, 6])])
    assert got == _member(STABLE, 11, 10, {T1: {2, 3}, T2: {5, 6}})


@kafka("CurrentAssignmentBuilderTest#testRemainsInUnrevokedPartitions")
def test_remains_in_unrevoked_partitions():
    m = _member(UNREVOKED_PARTITIONS, 10, 10, {T1: {2, 3}, T2: {5, 6}}, {T1: {1}, T2: {4}})
    target = {T1: {3}, T2: {6}}
    assert _build(m, 12, target, lambda t, p: -1, owned=None) == m
    assert _build(m, 12, target, lambda t, p: -1, owned=[(T1, [1, 2, 3]), (T2, [5, 6])]) == m
    assert _build(m, 12, target, lambda t, p: -1, owned=[(T1, [2, 3]), (T2, [4, 5, 6])]) == m


@kafka("CurrentAssignmentBuilderTest#testUnrevokedPartitionsToUnrevokedPartitions")
def test_unrevoked_partitions_to_unrevoked_partitions():
    m = _member(UNREVOKED_PARTITIONS, 10, 10, {T1: {2, 3}, T2: {5, 6}}, {T1: {1}, T2: {4}})
    got = _build(m, 12, {T1: {3}, T2: {6}}, lambda t, p: -1,
                 owned=[(T1, [2, 3]), (T2, [5, 6])])
    assert got == _member(UNREVOKED_PARTITIONS, 10, 10, {T1: {3}, T2: {6}},
                          {T1: {2}, T2: {5}})


@kafka("CurrentAssignmentBuilderTest#testUnrevokedPartitionsToUnreleasedPartitions")
def test_unrevoked_partitions_to_unreleased_partitions():
    m = _member(UNREVOKED_PARTITIONS, 11, 10, {T1: {2, 3}, T2: {5, 6}})
    got = _build(m, 11, {T1: {2, 3, 4}, T2: {5, 6, 7}}, lambda t, p: 10,
                 owned=[(T1, [2, 3]), (T2, [5, 6])])
    assert got == _member(UNRELEASED_PARTITIONS, 11, 11, {T1: {2, 3}, T2: {5, 6}})


@kafka("CurrentAssignmentBuilderTest#"
       "testUnrevokedPartitionsToStableWithReturnedPartitionsPendingRevocation")
def test_unrevoked_to_stable_with_a_pending_partition_back_in_the_target():
    m = _member(UNREVOKED_PARTITIONS, 10, 10, {T1: {2, 3}, T2: {5, 6}}, {T1: {4}})

    def epochs(t, p):
        return 10 if (t == T1 and p in (2, 3, 4)) or (t == T2 and p in (5, 6)) else -1
    got = _build(m, 12, {T1: {2, 3, 4}, T2: {5, 6, 7}}, epochs,
                 owned=[(T1, [2, 3]), (T2, [5, 6])])
    assert got == _member(STABLE, 12, 10, {T1: {2, 3, 4}, T2: {5, 6, 7}})


@kafka("CurrentAssignmentBuilderTest#testUnreleasedPartitionsToStable")
def test_unreleased_partitions_to_stable():
    m = _member(UNRELEASED_PARTITIONS, 11, 11, {T1: {2, 3}, T2: {5, 6}})
    got = _build(m, 12, {T1: {2, 3}, T2: {5, 6}}, lambda t, p: 10)
    assert got == _member(STABLE, 12, 11, {T1: {2, 3}, T2: {5, 6}})


@kafka("CurrentAssignmentBuilderTest#testUnreleasedPartitionsToStableWithNewPartitions")
def test_unreleased_partitions_to_stable_with_new_partitions():
    m = _member(UNRELEASED_PARTITIONS, 11, 11, {T1: {2, 3}, T2: {5, 6}})
    got = _build(m, 11, {T1: {2, 3, 4}, T2: {5, 6, 7}}, lambda t, p: -1)
    assert got == _member(STABLE, 11, 11, {T1: {2, 3, 4}, T2: {5, 6, 7}})


@kafka("CurrentAssignmentBuilderTest#testUnreleasedPartitionsToUnreleasedPartitions")
def test_unreleased_partitions_to_unreleased_partitions():
    m = _member(UNRELEASED_PARTITIONS, 11, 11, {T1: {2, 3}, T2: {5, 6}})
    assert _build(m, 11, {T1: {2, 3, 4}, T2: {5, 6, 7}}, lambda t, p: 10) == m


@kafka("CurrentAssignmentBuilderTest#testUnreleasedPartitionsToUnrevokedPartitions")
def test_unreleased_partitions_to_unrevoked_partitions():
    m = _member(UNRELEASED_PARTITIONS, 11, 11, {T1: {2, 3}, T2: {5, 6}})
    got = _build(m, 12, {T1: {3}, T2: {6}}, lambda t, p: 10)
    assert got == _member(UNREVOKED_PARTITIONS, 11, 11, {T1: {3}, T2: {6}},
                          {T1: {2}, T2: {5}})


@kafka("CurrentAssignmentBuilderTest#testUnknownState")
def test_unknown_state():
    m = _member(UNKNOWN, 11, 11, {T1: {3}, T2: {6}}, {T1: {2}, T2: {5}})
    with pytest.raises(FencedMemberEpoch):
        _build(m, 12, {T1: {3}, T2: {6}}, lambda t, p: 10)
    got = _build(m, 12, {T1: {3}, T2: {6}}, lambda t, p: 11, owned=[])
    assert got == _member(STABLE, 12, 11, {T1: {3}, T2: {6}})
