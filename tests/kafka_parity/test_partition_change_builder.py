"""PartitionChangeBuilderTest (Kafka 4.2.1), driven through the kit's build_partition_change
(and, where Kafka's test asks the builder for its election alone, the builder's election step).

A test parameterized by PartitionChangeRecord version runs at the metadata.version Kafka pairs
with it: v0 3.7-IV0, v1 3.7-IV2, v2 4.0-IV1 (ELR on from v2). Kafka's default directory
provider answers UNASSIGNED.
"""

from __future__ import annotations

import pytest

from kraft_testkit.controller.partition_change import (Election, Elr, _Change,
                                                       build_partition_change)
from kraft_testkit.metadata import (NO_LEADER, NO_LEADER_CHANGE, DirectoryId,
                                    LeaderRecoveryState, PartitionRegistration)
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid

U = Uuid.parse
UNASSIGNED = DirectoryId.UNASSIGNED
RECOVERED = LeaderRecoveryState.RECOVERED.value
RECOVERING = LeaderRecoveryState.RECOVERING.value
MV_OF_VERSION = {0: V.IBP_3_7_IV0, 1: V.IBP_3_7_IV2, 2: V.IBP_4_0_IV1}
VERSIONS = pytest.mark.parametrize("version", [0, 1, 2])
MINIMUM = V.IBP_3_3_IV3  # MetadataVersion.MINIMUM_VERSION


def reg(replicas, isr, leader, dirs=None, *, elr=(), last_known=(), removing=(), adding=(),
        lrs=RECOVERED) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=tuple(replicas), directories=tuple(dirs or (UNASSIGNED,) * len(replicas)),
        isr=tuple(isr), removing_replicas=tuple(removing), adding_replicas=tuple(adding),
        leader=leader, leader_recovery_state=lrs, leader_epoch=100, partition_epoch=200,
        elr=tuple(elr), last_known_elr=tuple(last_known))


FOO = reg([2, 1, 3], [2, 1, 3], 1,
          [U("dpdvA5AZSWySmnPFTnu5Kw"), U("V60B3cglScq3Xk8BX1NxAQ"), UNASSIGNED])
FOO_ID = U("FbrrdcfiR-KC2CPSTHaJrg")
BAR = reg([1, 2, 3, 4], [1, 2, 3], 1,
          [UNASSIGNED, U("X5FnAcIgTheWgTMzeO5WHw"), U("GtrcdoSOTm2vFMGFeZq0eg"),
           U("YcOqPw5ARmeKr1y9W3AkFw")], removing=[1], adding=[4])
BAR_ID = U("LKfUsCBnQKekvL9O5dY9nw")
BAZ = reg([2, 1, 3], [1, 3], 3,
          [U("ywnfFpTBTbOsFdZ6uAdOmw"), U("Th0x70ecRbWvZNNV33jyRA"), U("j216tuSoQsC9JFd1Z5ZP6w")])
BAZ_ID = U("wQzt5gkSTwuQNXZF5gIw7A")
OFFLINE_WITHOUT_ELR = reg([2, 1, 3], [3], -1)
OFFLINE_WITH_ELR = reg([2, 1, 3], [], -1, elr=[3], last_known=[2])
OFFLINE_ID = U("LKfUsCBnQKekvL9O5dY9nw")


def not_3(r: int) -> bool:
    return r != 3


def build(partition, topic_id, acceptable, mv, *, min_isr=2, elr_on=None, election=Election.ONLINE,
          last_known_leader=True, unclean_shutdown=(), **targets):
    """A builder as Kafka's test sets it up, then ``build()``: the record or None."""
    enabled = V.is_elr_supported(mv) if elr_on is None else elr_on
    return build_partition_change(
        partition, topic_id, 0, acceptable_leader=acceptable, metadata_version=mv,
        election=election, default_dir=lambda b: UNASSIGNED,
        elr=Elr(enabled, min_isr, tuple(unclean_shutdown), last_known_leader), **targets)


def foo(version_or_mv, *, by_mv=False, **kw):
    mv = version_or_mv if by_mv else MV_OF_VERSION[version_or_mv]
    return build(FOO, FOO_ID, not_3, mv, **kw)


def bar(version, **kw):
    return build(BAR, BAR_ID, not_3, MV_OF_VERSION[version], elr_on=version >= 2, **kw)


def baz(version, **kw):
    return build(BAZ, BAZ_ID, lambda r: True, MV_OF_VERSION[version], elr_on=version >= 2, **kw)


def offline(version, **kw):
    mv = MV_OF_VERSION[version]
    partition = OFFLINE_WITH_ELR if V.is_elr_supported(mv) else OFFLINE_WITHOUT_ELR
    return build(partition, OFFLINE_ID, lambda r: r == 1, mv, elr_on=V.is_elr_supported(mv),
                 **kw)


def pcr(topic_id, **fields) -> M.PartitionChangeRecord:
    for key, value in fields.items():
        if isinstance(value, list):
            fields[key] = tuple(value)
    return M.PartitionChangeRecord(topic_id=topic_id, partition_id=0, **fields)


def assert_record(rec, version: int, topic_id, **fields):
    assert rec is not None
    assert (rec.version, rec.message) == (version, pcr(topic_id, **fields))


def elect(version, partition, acceptable, *, election=Election.ONLINE, isr=None, replicas=None,
          elr_on=None):
    """``electLeader()`` alone, on the builder's targets (Kafka's test calls it directly)."""
    mv = MV_OF_VERSION[version]
    enabled = V.is_elr_supported(mv) if elr_on is None else elr_on
    change = _Change(partition, acceptable, election, Elr(enabled, 2))
    if isr is not None:
        change.isr = tuple(isr)
    if replicas is not None:
        change.replicas = tuple(replicas)
    return tuple(change.elect())


@pytest.mark.kafka("PartitionChangeBuilderTest#testElectLeader")
@VERSIONS
def test_elect_leader(version):
    assert elect(version, FOO, not_3, election=Election.PREFERRED) == (2, False)
    assert elect(version, FOO, not_3) == (1, False)
    assert elect(version, FOO, not_3, election=Election.UNCLEAN) == (1, False)
    assert elect(version, FOO, not_3, isr=[1, 3]) == (1, False)
    assert elect(version, FOO, not_3, election=Election.UNCLEAN, isr=[1, 3]) == (1, False)
    assert elect(version, FOO, not_3, isr=[3]) == (NO_LEADER, False)
    assert elect(version, FOO, not_3, election=Election.UNCLEAN, isr=[3]) == (2, True)
    assert elect(version, FOO, not_3, election=Election.UNCLEAN, isr=[4],
                 replicas=[2, 1, 3, 4]) == (4, False)
    every = lambda r: True  # noqa: E731
    assert elect(version, BAZ, every, election=Election.PREFERRED) == (3, False)
    assert elect(version, BAZ, every) == (3, False)
    assert elect(version, BAZ, every, election=Election.UNCLEAN) == (3, False)


@pytest.mark.kafka("PartitionChangeBuilderTest#testNoLeaderEpochBumpIfNothingChanged")
@VERSIONS
def test_no_leader_epoch_bump_if_nothing_changed(version):
    assert foo(version) is None


@pytest.mark.kafka("PartitionChangeBuilderTest#testNoLeaderEpochBumpOnIsrShrink")
@pytest.mark.parametrize("mv", [V.IBP_3_6_IV0, V.IBP_3_7_IV2, V.IBP_4_0_IV0])
def test_no_leader_epoch_bump_on_isr_shrink(mv):
    assert foo(mv, by_mv=True, isr=[2, 1]).message.leader == NO_LEADER_CHANGE


@pytest.mark.kafka("PartitionChangeBuilderTest#testLeaderEpochBumpOnIsrShrink")
@pytest.mark.parametrize("mv", [V.IBP_3_4_IV0, V.IBP_3_5_IV2])
def test_leader_epoch_bump_on_isr_shrink(mv):
    assert foo(mv, by_mv=True, isr=[2, 1]).message.leader == 1


@pytest.mark.kafka("PartitionChangeBuilderTest#testNoLeaderEpochBumpOnIsrExpansion")
@pytest.mark.parametrize("mv", [V.IBP_3_4_IV0, V.IBP_3_5_IV2, V.IBP_3_6_IV0, V.IBP_3_7_IV2,
                                V.IBP_4_0_IV0])
def test_no_leader_epoch_bump_on_isr_expansion(mv):
    assert foo(mv, by_mv=True, isr=[2, 1, 3, 4]).message.leader == NO_LEADER_CHANGE


@pytest.mark.kafka("PartitionChangeBuilderTest#testLeaderEpochBumpOnNewReplicaSetDisjoint")
@pytest.mark.parametrize("mv", [V.IBP_3_4_IV0, V.IBP_3_5_IV2, V.IBP_3_6_IV0, V.IBP_3_7_IV2,
                                V.IBP_4_0_IV0])
def test_leader_epoch_bump_on_new_replica_set_disjoint(mv):
    assert foo(mv, by_mv=True, replicas=[2, 1, 4]).message.leader == 1


@pytest.mark.kafka("PartitionChangeBuilderTest#testNoChange")
@VERSIONS
def test_no_change(version):
    assert foo(version) is None
    assert foo(version, election=Election.UNCLEAN) is None
    assert bar(version) is None
    assert bar(version, election=Election.UNCLEAN) is None
    assert baz(version, election=Election.PREFERRED) is None


@pytest.mark.kafka("PartitionChangeBuilderTest#testIsrChangeDoesntBumpLeaderEpoch")
@VERSIONS
def test_isr_change_doesnt_bump_leader_epoch(version):
    assert_record(foo(version, isr=[2, 1]), version, FOO_ID, isr=[2, 1])


@pytest.mark.kafka("PartitionChangeBuilderTest#testIsrChangeAndLeaderChange")
@VERSIONS
def test_isr_change_and_leader_change(version):
    assert_record(foo(version, isr=[2, 3]), version, FOO_ID, isr=[2, 3], leader=2)


def dirs_of(partition, *brokers):
    where = dict(zip(partition.replicas, partition.directories))
    return [where.get(b, UNASSIGNED) for b in brokers]


@pytest.mark.kafka("PartitionChangeBuilderTest#testReassignmentRearrangesReplicas")
@VERSIONS
def test_reassignment_rearranges_replicas(version):
    extra = {"directories": dirs_of(FOO, 3, 2, 1)} if version >= 1 else {}
    assert_record(foo(version, replicas=[3, 2, 1]), version, FOO_ID, replicas=[3, 2, 1],
                  **extra)


@pytest.mark.kafka("PartitionChangeBuilderTest#testIsrEnlargementCompletesReassignment")
@VERSIONS
def test_isr_enlargement_completes_reassignment(version):
    extra = {"directories": dirs_of(BAR, 2, 3, 4)} if version >= 1 else {}
    assert_record(bar(version, isr=[1, 2, 3, 4]), version, BAR_ID, replicas=[2, 3, 4],
                  isr=[2, 3, 4], leader=2, removing_replicas=[], adding_replicas=[], **extra)


@pytest.mark.kafka("PartitionChangeBuilderTest#testRevertReassignment")
@VERSIONS
def test_revert_reassignment(version):
    """The revert of BAR (replicas and ISR 1, 2, 3) as the kit's cancel computes it."""
    from kraft_testkit.controller.reassignment_replicas import Revert
    revert = Revert.of(BAR)
    assert (revert.replicas, revert.isr) == ((1, 2, 3), (1, 2, 3))
    extra = {"directories": dirs_of(BAR, 1, 2, 3)} if version >= 1 else {}
    assert_record(bar(version, replicas=revert.replicas, isr=revert.isr, removing=[], adding=[]),
                  version, BAR_ID, replicas=[1, 2, 3], leader=1, removing_replicas=[],
                  adding_replicas=[], **extra)


@pytest.mark.kafka("PartitionChangeBuilderTest#testRemovingReplicaReassignment")
@VERSIONS
def test_removing_replica_reassignment(version):
    extra = {"directories": dirs_of(FOO, 1, 2)} if version >= 1 else {}
    assert_record(foo(version, replicas=[1, 2, 3], removing=[3]), version, FOO_ID,
                  replicas=[1, 2], isr=[2, 1], leader=1, **extra)


@pytest.mark.kafka("PartitionChangeBuilderTest#testAddingReplicaReassignment")
@VERSIONS
def test_adding_replica_reassignment(version):
    extra = {"directories": dirs_of(FOO, 1, 2, 3) + [UNASSIGNED]} if version >= 1 else {}
    assert_record(foo(version, replicas=[1, 2, 3, 4], adding=[4]), version, FOO_ID,
                  replicas=[1, 2, 3, 4], adding_replicas=[4], **extra)


@pytest.mark.kafka("PartitionChangeBuilderTest#testUncleanLeaderElection")
@VERSIONS
def test_unclean_leader_election(version):
    assert_record(foo(version, election=Election.UNCLEAN, isr=[3]), version, FOO_ID,
                  isr=[2], leader=2, leader_recovery_state=RECOVERING)
    cleared = {"eligible_leader_replicas": [], "last_known_elr": []} if version >= 2 else {}
    for rec in (offline(version, election=Election.UNCLEAN),
                offline(version, election=Election.UNCLEAN, isr=[2])):
        assert_record(rec, version, OFFLINE_ID, isr=[1], leader=1,
                      leader_recovery_state=RECOVERING, **cleared)


@pytest.mark.kafka("PartitionChangeBuilderTest#testChangeInLeadershipDoesNotChangeRecoveryState")
def test_change_in_leadership_does_not_change_recovery_state():
    partition = reg([1, 2, 3], [1], 1, lrs=RECOVERING)
    rec = build(partition, FOO_ID, lambda b: False, MINIMUM, isr=[])
    assert (rec.message.leader_recovery_state, rec.message.leader) == (-1, NO_LEADER)
    partition = partition.merge(rec.message)
    assert (partition.leader, partition.isr[0], partition.leader_recovery_state) == \
        (NO_LEADER, 1, RECOVERING)
    rec = build(partition, FOO_ID, lambda b: True, MINIMUM)
    assert rec.message.leader_recovery_state == -1
    partition = partition.merge(rec.message)
    assert (partition.leader, partition.isr[0], partition.leader_recovery_state) == \
        (1, 1, RECOVERING)


@pytest.mark.kafka("PartitionChangeBuilderTest#testUncleanSetsLeaderRecoveringState")
def test_unclean_sets_leader_recovering_state():
    partition = reg([1, 2, 3], [2, 3], NO_LEADER)
    rec = build(partition, FOO_ID, lambda b: b == 1, MINIMUM, election=Election.UNCLEAN)
    assert (rec.message.leader_recovery_state, rec.message.leader, rec.message.isr) == \
        (RECOVERING, 1, (1,))
    partition = partition.merge(rec.message)
    assert (partition.leader, partition.isr, partition.leader_recovery_state) == \
        (1, (1,), RECOVERING)


@pytest.mark.kafka("PartitionChangeBuilderTest#"
       "testStoppedLeaderIsDemotedAfterReassignmentCompletesEvenIfNoNewEligibleLeaders")
def test_stopped_leader_is_demoted_after_reassignment_completes():
    partition = reg([2, 3, 0, 1], [0, 1], 0, removing=[0, 1], adding=[2, 3])
    partition = partition._replace(leader_epoch=0, partition_epoch=0)
    topic_id = U("XCBQClkBSZyphD87QUXzDA")
    rec = build(partition, topic_id, lambda b: False, MINIMUM, isr=[0, 1, 2, 3])
    assert_record(rec, 0, topic_id, replicas=[2, 3], isr=[2, 3], removing_replicas=[],
                  adding_replicas=[], leader=NO_LEADER)


ELR_PARTITION_ID = U("FbrrdcfiR-KC2CPSTHaJrg")


def elr_build(partition, acceptable, version=2, *, last_known_leader=False, **kw):
    return build(partition, ELR_PARTITION_ID, acceptable, MV_OF_VERSION[version], min_isr=3,
                 elr_on=version >= 2, election=Election.PREFERRED,
                 last_known_leader=last_known_leader, **kw)


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_IsrShrinkBelowMinISR")
@VERSIONS
def test_elr_isr_shrink_below_min_isr(version):
    partition = reg([1, 2, 3, 4], [1, 2, 3, 4], 1)
    rec = elr_build(partition, not_3, version, isr=[1, 2])
    extra = {"eligible_leader_replicas": [3, 4]} if version >= 2 else {}
    assert_record(rec, version, ELR_PARTITION_ID, isr=[1, 2], **extra)
    merged = partition.merge(rec.message)
    assert (merged.elr, merged.last_known_elr) == (((3, 4), ()) if version >= 2 else ((), ()))


@pytest.mark.kafka("PartitionChangeBuilderTest#"
       "testEligibleLeaderReplicas_lastKnownElrShouldBePopulatedWhenNoLeader")
def test_elr_last_known_elr_populated_when_no_leader():
    partition = reg([1, 2, 3], [1], 1, elr=[2])
    rec = elr_build(partition, lambda r: False, last_known_leader=True)
    assert rec.message.leader == NO_LEADER
    assert rec.message.isr is None
    assert rec.message.last_known_elr == (1,)
    assert partition.merge(rec.message).last_known_elr == (1,)


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_IsrExpandAboveMinISR")
@VERSIONS
def test_elr_isr_expand_above_min_isr(version):
    partition = reg([1, 2, 3, 4], [1, 2], 1, elr=[3], last_known=[4])
    rec = elr_build(partition, not_3, version, isr=[1, 2, 3])
    assert_record(rec, version, ELR_PARTITION_ID, isr=[1, 2, 3], eligible_leader_replicas=[],
                  last_known_elr=[])
    merged = partition.merge(rec.message)
    assert (merged.elr, merged.last_known_elr) == ((), ())


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_IsrAddNewMemberNotInELR")
@VERSIONS
def test_elr_isr_add_new_member_not_in_elr(version):
    partition = reg([1, 2, 3, 4], [1], 1, elr=[3], last_known=[2])
    rec = elr_build(partition, not_3, version, isr=[1, 4])
    extra = {} if version >= 2 else {"eligible_leader_replicas": [], "last_known_elr": []}
    assert_record(rec, version, ELR_PARTITION_ID, isr=[1, 4], **extra)
    merged = partition.merge(rec.message)
    assert (merged.elr, merged.last_known_elr) == (((3,), (2,)) if version >= 2 else ((), ()))


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr")
@VERSIONS
def test_elr_remove_unclean_shutdown_replicas_from_elr(version):
    partition = reg([1, 2, 3, 4], [1], 1, elr=[2, 3])
    rec = elr_build(partition, not_3, version, unclean_shutdown=[3])
    extra = ({"eligible_leader_replicas": [2], "last_known_elr": [3]} if version >= 2
             else {"eligible_leader_replicas": []})
    assert_record(rec, version, ELR_PARTITION_ID, **extra)
    merged = partition.merge(rec.message)
    assert (merged.elr, merged.last_known_elr) == (((2,), (3,)) if version >= 2 else ((), ()))


@pytest.mark.kafka("PartitionChangeBuilderTest#testKeepsDirectoriesAfterReassignment")
def test_keeps_directories_after_reassignment():
    d = [U("v1PVrX6uS5m8CByXlLfmWg"), U("iU2znv45Q9yQkOpkTSy3jA"), U("fM5NKyWTQHqEihjIkUl99Q")]
    partition = reg([2, 1, 3], [2, 1, 3], 1, d)
    rec = build(partition, FOO_ID, lambda r: True, V.IBP_3_7_IV2, replicas=[3, 1, 5, 4])
    assert_record(rec, 1, FOO_ID, leader=1, replicas=[3, 1, 5, 4],
                  directories=[d[2], d[1], UNASSIGNED, UNASSIGNED])


@pytest.mark.kafka("PartitionChangeBuilderTest#testUpdateDirectories")
def test_update_directories():
    d = [U("S1zMYZczRjWmucidLqGA5g"), U("7SVUYdL6QJWXGnzHyEdVNw"), U("uHSN9YpISIG2JcZMJKAqGQ")]
    partition = reg([2, 1, 3], [2, 1, 3], 2, d)
    rec = build(partition, FOO_ID, lambda r: True, V.LATEST_PRODUCTION,
                directories={1: DirectoryId.LOST})
    assert_record(rec, 2, FOO_ID, directories=[d[0], DirectoryId.LOST, d[2]])


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_ElrCanBeElected")
@pytest.mark.parametrize("last_known_leader", [True, False])
def test_elr_can_be_elected(last_known_leader):
    partition = reg([1, 2, 3, 4], [1], 1, elr=[3], last_known=[] if last_known_leader else [2])
    rec = elr_build(partition, lambda r: r != 1, last_known_leader=last_known_leader, isr=[])
    assert_record(rec, 2, ELR_PARTITION_ID, isr=[3], eligible_leader_replicas=[1], leader=3)
    merged = partition.merge(rec.message)
    assert (merged.elr, merged.last_known_elr, merged.isr) == \
        ((1,), () if last_known_leader else (2,), (3,))


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_IsrCanShrinkToZero")
@pytest.mark.parametrize("last_known_leader", [True, False])
def test_elr_isr_can_shrink_to_zero(last_known_leader):
    partition = reg([1, 2, 3, 4], [1, 2, 3, 4], 1)
    rec = elr_build(partition, lambda r: False, last_known_leader=last_known_leader, isr=[])
    extra = {"last_known_elr": [1]} if last_known_leader else {}
    assert_record(rec, 2, ELR_PARTITION_ID, isr=[], leader=NO_LEADER,
                  eligible_leader_replicas=[1, 2, 3, 4], **extra)
    partition = partition.merge(rec.message)
    assert partition.elr == (1, 2, 3, 4) and partition.isr == ()
    if last_known_leader:
        assert partition.last_known_elr == (1,)
        again = elr_build(partition, lambda r: False, last_known_leader=True,
                          unclean_shutdown=[2])
        assert again.message.last_known_elr is None
    else:
        assert partition.last_known_elr == ()


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_ElectLastKnownLeader")
def test_elr_elect_last_known_leader():
    partition = reg([1, 2, 3, 4], [], NO_LEADER, last_known=[1])
    rec = elr_build(partition, lambda r: True, last_known_leader=True, isr=[])
    assert_record(rec, 2, ELR_PARTITION_ID, isr=[1], leader=1,
                  leader_recovery_state=RECOVERING, last_known_elr=[])
    merged = partition.merge(rec.message)
    assert (merged.elr, merged.last_known_elr, merged.isr) == ((), (), (1,))


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail")
def test_elr_elect_last_known_leader_should_fail():
    partition = reg([1, 2, 3, 4], [], NO_LEADER, elr=[3], last_known=[1])
    assert elr_build(partition, not_3, last_known_leader=True, isr=[]) is None


@pytest.mark.kafka("PartitionChangeBuilderTest#testEligibleLeaderReplicas_NotEligibleLastKnownLeader")
@pytest.mark.parametrize("election", list(Election))
def test_elr_not_eligible_last_known_leader(election):
    partition = reg([1, 2, 3, 4], [], NO_LEADER, last_known=[1])
    assert build(partition, ELR_PARTITION_ID, lambda r: False, V.IBP_4_0_IV1, min_isr=3,
                 elr_on=True, election=election, last_known_leader=True, isr=[]) is None
