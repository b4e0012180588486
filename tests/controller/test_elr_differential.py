"""Eligible leader replicas (KIP-966), differential: the same inputs as Kafka's own unit tests,
the same records out.

Each case below is one of Kafka's ``PartitionChangeBuilderTest.testEligibleLeaderReplicas_*``
(apache/kafka, metadata/src/test/java/org/apache/kafka/controller/PartitionChangeBuilderTest.java):
partition state, acceptable-leader predicate, min ISR 3, target ISR and flags as there; the
expected PartitionChangeRecord fields are the ones that test asserts (v2, metadata.version
4.0-IV1 or later). The expected values were read from Kafka's test, not from this code.
"""

from __future__ import annotations

import pytest

from kraft_testkit.controller.partition_change import Election, Elr, build_partition_change
from kraft_testkit.metadata import DirectoryId, LeaderRecoveryState, PartitionRegistration
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol.uuid import Uuid

TOPIC = Uuid.parse("FbrrdcfiR-KC2CPSTHaJrg")
MV = V.IBP_4_0_IV1  # the first level writing PartitionChangeRecord v2


def partition(isr, elr=(), last_known=(), leader=1) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=(1, 2, 3, 4), directories=(DirectoryId.MIGRATING,) * 4, isr=tuple(isr),
        leader=leader, leader_recovery_state=LeaderRecoveryState.RECOVERED.value,
        leader_epoch=100, partition_epoch=200, elr=tuple(elr), last_known_elr=tuple(last_known))


def build(reg, acceptable, *, isr=None, last_known_leader=False, unclean_shutdown=(),
          enabled=True, mv=MV):
    return build_partition_change(
        reg, TOPIC, 0, acceptable_leader=acceptable, metadata_version=mv, isr=isr,
        election=Election.PREFERRED, default_dir=lambda b: DirectoryId.MIGRATING,
        elr=Elr(enabled, 3, tuple(unclean_shutdown), last_known_leader))


def fields(rec, *names):
    msg = rec.message
    return {n: getattr(msg, n) for n in names}


def test_isr_shrink_below_min_isr_moves_members_to_elr():
    """testEligibleLeaderReplicas_IsrShrinkBelowMinISR (version 2)."""
    rec = build(partition((1, 2, 3, 4)), lambda r: r != 3, isr=[1, 2])
    assert rec.version == 2
    assert fields(rec, "isr", "leader", "eligible_leader_replicas", "last_known_elr") == {
        "isr": (1, 2), "leader": -2, "eligible_leader_replicas": (3, 4), "last_known_elr": None}
    merged = partition((1, 2, 3, 4)).merge(rec.message)
    assert (merged.elr, merged.last_known_elr) == ((3, 4), ())


def test_isr_expand_to_min_isr_clears_elr_and_last_known_elr():
    """testEligibleLeaderReplicas_IsrExpandAboveMinISR (version 2)."""
    reg = partition((1, 2), elr=(3,), last_known=(4,))
    rec = build(reg, lambda r: r != 3, isr=[1, 2, 3])
    assert fields(rec, "isr", "leader", "eligible_leader_replicas", "last_known_elr") == {
        "isr": (1, 2, 3), "leader": -2, "eligible_leader_replicas": (),
        "last_known_elr": ()}


def test_isr_adding_a_member_not_in_elr_leaves_elr_alone():
    """testEligibleLeaderReplicas_IsrAddNewMemberNotInELR (version 2)."""
    reg = partition((1,), elr=(3,), last_known=(2,))
    rec = build(reg, lambda r: r != 3, isr=[1, 4])
    assert fields(rec, "isr", "leader", "eligible_leader_replicas", "last_known_elr") == {
        "isr": (1, 4), "leader": -2, "eligible_leader_replicas": None, "last_known_elr": None}
    merged = reg.merge(rec.message)
    assert (merged.elr, merged.last_known_elr) == ((3,), (2,))


def test_unclean_shutdown_replicas_leave_elr_for_last_known_elr():
    """testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr (version 2)."""
    reg = partition((1,), elr=(2, 3))
    rec = build(reg, lambda r: r != 3, unclean_shutdown=[3])
    assert fields(rec, "isr", "leader", "eligible_leader_replicas", "last_known_elr") == {
        "isr": None, "leader": -2, "eligible_leader_replicas": (2,), "last_known_elr": (3,)}


@pytest.mark.parametrize("last_known_leader", [True, False])
def test_an_elr_member_is_elected_when_the_isr_empties(last_known_leader):
    """testEligibleLeaderReplicas_ElrCanBeElected."""
    reg = partition((1,), elr=(3,), last_known=() if last_known_leader else (2,))
    rec = build(reg, lambda r: r != 1, isr=[], last_known_leader=last_known_leader)
    assert fields(rec, "isr", "leader", "eligible_leader_replicas", "leader_recovery_state") == {
        "isr": (3,), "leader": 3, "eligible_leader_replicas": (1,),
        "leader_recovery_state": -1}
    merged = reg.merge(rec.message)
    assert (merged.isr, merged.elr) == ((3,), (1,))
    assert merged.last_known_elr == (() if last_known_leader else (2,))


@pytest.mark.parametrize("last_known_leader", [True, False])
def test_the_isr_can_shrink_to_empty(last_known_leader):
    """testEligibleLeaderReplicas_IsrCanShrinkToZero."""
    reg = partition((1, 2, 3, 4))
    rec = build(reg, lambda r: False, isr=[], last_known_leader=last_known_leader)
    assert fields(rec, "isr", "leader", "eligible_leader_replicas", "last_known_elr") == {
        "isr": (), "leader": -1, "eligible_leader_replicas": (1, 2, 3, 4),
        "last_known_elr": (1,) if last_known_leader else None}
    merged = reg.merge(rec.message)
    assert merged.isr == () and merged.elr == (1, 2, 3, 4)
    if last_known_leader:
        # a later change keeps the last known leader while the partition stays leaderless
        again = build(merged, lambda r: False, unclean_shutdown=[2], last_known_leader=True)
        assert again.message.last_known_elr is None


def test_the_last_known_leader_is_elected_when_isr_and_elr_are_empty():
    """testEligibleLeaderReplicas_ElectLastKnownLeader: an unclean election (RECOVERING)."""
    reg = partition((), last_known=(1,), leader=-1)
    rec = build(reg, lambda r: True, isr=[], last_known_leader=True)
    assert fields(rec, "isr", "leader", "leader_recovery_state", "last_known_elr",
                  "eligible_leader_replicas") == {
        "isr": (1,), "leader": 1, "leader_recovery_state": LeaderRecoveryState.RECOVERING.value,
        "last_known_elr": (), "eligible_leader_replicas": None}


def test_no_last_known_leader_election_while_elr_is_not_empty():
    """testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail: no change at all."""
    reg = partition((), elr=(3,), last_known=(1,), leader=-1)
    assert build(reg, lambda r: r != 3, isr=[], last_known_leader=True) is None


def test_elr_off_clears_the_elr_and_keeps_the_isr_non_empty():
    """With ELR disabled (the version < 2 rows of the same tests) the ELR is cleared and the
    last ISR member stays in the ISR (pre-KIP-966 behaviour)."""
    reg = partition((1,), elr=(3,), last_known=(2,))
    rec = build(reg, lambda r: r != 3, isr=[1, 4], enabled=False)
    assert rec.message.eligible_leader_replicas == ()
    rec = build(partition((1, 2, 3, 4)), lambda r: False, isr=[], enabled=False)
    assert rec.message.isr is None and rec.message.leader == -1
    # below 4.0-IV1 the records cannot carry ELR: the builder ignores it and writes v1
    rec = build(partition((1, 2, 3, 4)), lambda r: r != 3, isr=[1, 2], mv=V.IBP_3_9_IV0)
    assert rec.version == 1 and rec.message.eligible_leader_replicas is None
