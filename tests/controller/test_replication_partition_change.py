"""The partition change builder: leadership, ISR and epoch rules, checked by replaying the record
it builds into a real image."""

from __future__ import annotations

import pytest
from replication_helpers import apply, cluster, create_topic, ctx, fence, shutting_down

from kraft_testkit.controller.eligibility import default_dir_provider, leader_acceptor
from kraft_testkit.controller.partition_change import (
    Election,
    PartitionChangeError,
    build_partition_change,
)
from kraft_testkit.metadata import NO_LEADER, DirectoryId, LeaderRecoveryState
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol.uuid import Uuid


def topic_with(replicas=(1, 2, 3), *, mv=V.LATEST_PRODUCTION, brokers=(1, 2, 3, 4, 5)):
    """Topic "t" with one partition on ``replicas`` (a manual assignment, all in sync)."""
    return _manual(cluster(brokers, mv=mv), replicas)


def _manual(image, replicas):
    return create_topic(ctx(image), "t", -1, -1, assignments={0: replicas})


def change(image, *, acceptable=None, mv=None, **targets):
    reg = image.topic("t").partitions[0]
    return build_partition_change(
        reg, image.topic("t").id, 0,
        acceptable_leader=acceptable or leader_acceptor(image, reg),
        metadata_version=image.metadata_version if mv is None else mv,
        default_dir=default_dir_provider(image), **targets)


def replay(image, rec):
    assert rec is not None
    return apply(image, [rec]).topic("t").partitions[0]


def test_no_change_builds_nothing():
    image = topic_with()
    assert change(image) is None
    assert change(image, isr=[1, 2, 3]) is None


def test_isr_shrink_and_expansion_keep_leader_and_leader_epoch():
    image = topic_with()
    shrink = change(image, isr=[1, 2])
    assert shrink.message.isr == (1, 2) and shrink.message.leader == -2
    image = apply(image, [shrink])
    grow = change(image, isr=[1, 2, 3])
    reg = replay(image, grow)
    assert (reg.leader, reg.isr, reg.leader_epoch, reg.partition_epoch) == (1, (1, 2, 3), 0, 2)


def test_leader_leaving_isr_elects_first_replica_in_assignment_order():
    image = topic_with((1, 2, 3))
    rec = change(image, isr=[3, 2])
    assert rec.message.leader == 2  # assignment order, not ISR order
    reg = replay(image, rec)
    assert (reg.leader, reg.isr, reg.leader_epoch, reg.partition_epoch) == (2, (3, 2), 1, 1)


def test_current_leader_kept_while_it_qualifies():
    image = topic_with((1, 2, 3))
    image = apply(image, [change(image, isr=[2, 3])])            # leader moves to 2
    rec = change(image, isr=[1, 2, 3])                            # 1 back in sync
    assert rec.message.leader == -2                               # 2 keeps leading
    assert replay(image, rec).leader == 2


def test_ineligible_replicas_are_skipped():
    image = topic_with((1, 2, 3))
    image = image.replay([shutting_down(image, 2)])
    rec = change(image, isr=[2, 3])
    assert rec.message.leader == 3


def test_preferred_election_moves_back_to_first_replica():
    image = topic_with((1, 2, 3))
    image = apply(image, [change(image, isr=[2, 3])])
    image = apply(image, [change(image, isr=[1, 2, 3])])
    assert image.topic("t").partitions[0].leader == 2
    rec = change(image, election=Election.PREFERRED)
    assert rec.message.leader == 1
    assert replay(image, rec).leader_epoch == 2


def test_preferred_election_without_preferred_keeps_current():
    image = topic_with((1, 2, 3))
    image = apply(image, [change(image, isr=[2, 3])])
    assert change(image, election=Election.PREFERRED) is None


def test_last_isr_member_leaving_empties_leadership_not_isr():
    image = topic_with((1,), brokers=(1, 2))
    reg = image.topic("t").partitions[0]
    rec = change(image, isr=[], acceptable=leader_acceptor(image, reg, removing=1))
    assert rec.message.isr is None and rec.message.leader == NO_LEADER
    after = replay(image.replay([fence(image, 1)]), rec)
    assert (after.leader, after.isr) == (NO_LEADER, (1,))
    assert after.leader_epoch == 1


@pytest.mark.parametrize("mv, recovering", [(V.LATEST_PRODUCTION, True), (2, False)])
def test_unclean_election_makes_new_leader_the_isr_and_recovering(mv, recovering):
    image = topic_with((1, 2, 3), mv=mv)
    image = apply(image, [change(image, isr=[1])])
    reg = image.topic("t").partitions[0]
    gone = leader_acceptor(image, reg, removing=1)
    assert change(image, isr=[], acceptable=gone).message.leader == NO_LEADER  # clean: none
    rec = change(image, isr=[], acceptable=gone, election=Election.UNCLEAN)
    assert rec.message.leader == 2 and rec.message.isr == (2,)
    after = replay(image.replay([fence(image, 1)]), rec)
    assert after.leader_recovery_state == (LeaderRecoveryState.RECOVERING if recovering
                                           else LeaderRecoveryState.RECOVERED)


def test_unclean_election_prefers_a_clean_leader():
    image = topic_with((1, 2, 3))
    rec = change(image, isr=[2, 3], election=Election.UNCLEAN)
    assert rec.message.leader == 2 and rec.message.isr == (2, 3)
    assert rec.message.leader_recovery_state == -1


@pytest.mark.parametrize("mv, bumped", [(V.IBP_3_6_IV0 - 1, True), (V.IBP_3_6_IV0, False)])
def test_isr_shrink_bumps_leader_epoch_only_before_3_6(mv, bumped):
    image = topic_with((1, 2, 3), mv=mv)
    rec = change(image, isr=[1, 2])
    assert (rec.message.leader == 1) is bumped
    after = replay(image, rec)
    assert after.leader_epoch == (1 if bumped else 0)
    grow = change(image.replay([rec]), isr=[1, 2, 3])
    assert grow.message.leader == -2  # expansions never bump


def test_replica_removal_bumps_leader_epoch():
    image = topic_with((1, 2, 3))
    rec = change(image, replicas=[1, 2], isr=[1, 2])
    assert rec.message.leader == 1 and rec.message.replicas == (1, 2)
    after = replay(image, rec)
    assert after.leader_epoch == 1 and after.partition_epoch == 1


def test_reassignment_completes_when_target_in_isr():
    image = topic_with((1, 2, 3))
    start = change(image, replicas=[3, 4, 5, 1, 2], removing=[1, 2], adding=[4, 5])
    assert start.message.leader == -2
    image = apply(image, [start])
    done = change(image, isr=[1, 2, 3, 4, 5])
    m = done.message
    assert (m.replicas, m.isr, m.leader, m.removing_replicas, m.adding_replicas) == \
        ((3, 4, 5), (3, 4, 5), 3, (), ())


def test_leader_recovery_state_change_alone():
    image = topic_with((1, 2, 3))
    image = apply(image, [change(image, isr=[1])])
    reg = image.topic("t").partitions[0]
    unclean = change(image, isr=[], acceptable=leader_acceptor(image, reg, removing=1),
                     election=Election.UNCLEAN)
    image = apply(image.replay([fence(image, 1)]), [unclean])
    rec = change(image, leader_recovery_state=LeaderRecoveryState.RECOVERED)
    assert rec.message.leader_recovery_state == 0 and rec.message.isr is None
    assert replay(image, rec).leader_recovery_state == LeaderRecoveryState.RECOVERED


def test_directories_written_from_3_7_iv2():
    d1, d2, d4 = (Uuid(bytes([9] * 15 + [i])) for i in (1, 2, 4))
    image = cluster((1, 2, 4), log_dirs={1: [d1], 2: [d2], 4: [d4]})
    image = _manual(image, (1, 2))
    assert image.topic("t").partitions[0].directories == (d1, d2)
    rec = change(image, replicas=[1, 2, 4], adding=[4])
    # 4.2-IV1 writes v2 (the ELR fields exist from 4.0-IV1); Directories came with v1
    assert rec.version == 2 and rec.message.directories == (d1, d2, d4)
    old = cluster((1, 2, 4), mv=V.IBP_3_7_IV2 - 1)
    old = _manual(old, (1, 2))
    rec = change(old, replicas=[1, 2, 4], adding=[4])
    assert rec.version == 0 and rec.message.directories is None
    assert old.replay([rec]).topic("t").partitions[0].directories[2] == DirectoryId.UNASSIGNED


def test_new_replica_without_default_dir_is_a_contract_error():
    image = topic_with((1, 2))
    reg = image.topic("t").partitions[0]
    with pytest.raises(PartitionChangeError):
        build_partition_change(reg, image.topic("t").id, 0,
                               acceptable_leader=leader_acceptor(image, reg),
                               metadata_version=V.LATEST_PRODUCTION, replicas=[1, 2, 4])


def test_offline_directory_cannot_lead():
    d1, d2 = Uuid(bytes([9] * 15 + [1])), Uuid(bytes([9] * 15 + [2]))
    image = cluster((1, 2), log_dirs={1: [d1], 2: [d2]})
    image = _manual(image, (1, 2))
    from kraft_testkit.protocol import messages as M
    # broker 1's only directory goes offline
    image = image.replay([M.BrokerRegistrationChangeRecord(
        broker_id=1, broker_epoch=image.cluster.brokers[1].epoch, log_dirs=[Uuid(b"\7" * 16)])])
    assert change(image, isr=[1, 2]).message.leader == 2
