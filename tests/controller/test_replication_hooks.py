"""The broker state hooks cluster control calls. Each hook returns only PartitionChangeRecords;
the test appends the registration record cluster control would write, replays both, and checks
the invariants (fenced brokers lead nothing, ISR within replicas, leader in ISR or -1)."""

from __future__ import annotations

from replication_helpers import (
    alter_isr,
    apply,
    cluster,
    create_topic,
    ctx,
    fence,
    partition_records,
    shutting_down,
    unfence,
    unregister,
)

from kraft_testkit.controller.replication import (
    alter_partition,
    handle_broker_fenced,
    handle_broker_in_controlled_shutdown,
    handle_broker_unfenced,
    handle_broker_unregistered,
    partitions_led_by,
)
from kraft_testkit.metadata import NO_LEADER
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M


def spread(mv=V.LATEST_PRODUCTION, **config):
    """Topic "t": p0 [1,2,3], p1 [2,3,1], p2 [3,1,2], p3 [1] (single replica); topic "u": p0 [4,1]."""
    context = ctx(cluster((1, 2, 3, 4), mv=mv), **config)
    image = create_topic(context, "t", -1, -1,
                         assignments={0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    image = create_topic(ctx(image), "one", -1, -1, assignments={0: [1]})
    return create_topic(ctx(image), "u", -1, -1, assignments={0: [4, 1]})


def parts(image, topic="t"):
    return image.topic(topic).partitions


def test_fencing_moves_leadership_and_shrinks_isrs():
    image = spread()
    assert partitions_led_by(image, 1) == 2
    records = handle_broker_fenced(ctx(image), 1)
    changes = {(r.topic_id, r.partition_id) for r in partition_records(records)}
    assert len(changes) == 5  # every partition with 1 in its ISR
    after = apply(image, [*records, fence(image, 1)])
    t = parts(after)
    assert (t[0].leader, t[0].isr) == (2, (2, 3))
    assert (t[1].leader, t[1].isr) == (2, (2, 3))
    assert (t[2].leader, t[2].isr) == (3, (3, 2))
    assert t[0].leader_epoch == 1 and t[1].leader_epoch == 0  # only a leader change bumps it
    assert parts(after, "u")[0].isr == (4,)
    assert partitions_led_by(after, 1) == 0


def test_fencing_the_last_isr_member_keeps_it_in_the_isr():
    image = spread()
    after = apply(image, [*handle_broker_fenced(ctx(image), 1), fence(image, 1)])
    one = parts(after, "one")[0]
    assert (one.leader, one.isr, one.leader_epoch, one.partition_epoch) == (NO_LEADER, (1,), 1, 1)


def test_unclean_fencing_elects_out_of_sync_replica():
    context = ctx(cluster((1, 2)), **{"unclean.leader.election.enable": "true"})
    image = create_topic(context, "t", -1, -1, assignments={0: [1, 2]})
    image = apply(image, alter_partition(ctx(image), alter_isr(image, "t", 0, [1])))
    context = ctx(image, **{"unclean.leader.election.enable": "true"})
    after = apply(image, [*handle_broker_fenced(context, 1), fence(image, 1)])
    reg = parts(after)[0]
    assert (reg.leader, reg.isr, reg.leader_recovery_state) == (2, (2,), 1)
    # the topic's own config wins over the node's
    off = image.replay([M.ConfigRecord(resource_type=2, resource_name="t",
                                       name="unclean.leader.election.enable", value="false")])
    context = ctx(off, **{"unclean.leader.election.enable": "true"})
    reg = parts(apply(off, [*handle_broker_fenced(context, 1), fence(off, 1)]))[0]
    assert reg.leader == NO_LEADER


def test_unfencing_elects_leaderless_partitions_only():
    image = spread()
    image = apply(image, [*handle_broker_fenced(ctx(image), 1), fence(image, 1)])
    records = handle_broker_unfenced(ctx(image), 1)  # the image still shows 1 fenced
    assert [(r.partition_id, r.leader) for r in partition_records(records)] == [(0, 1)]
    after = apply(image, [*records, unfence(image, 1)])
    one = parts(after, "one")[0]
    assert (one.leader, one.isr, one.leader_epoch) == (1, (1,), 2)
    assert parts(after)[0].leader == 2  # preferred leadership is not moved back here


def test_unfencing_does_nothing_for_partitions_it_cannot_lead():
    image = spread()
    image = apply(image, [*handle_broker_fenced(ctx(image), 1), fence(image, 1)])
    assert handle_broker_unfenced(ctx(image), 2) == []


def test_controlled_shutdown_moves_leaders_and_isrs():
    image = spread()
    records = handle_broker_in_controlled_shutdown(ctx(image), 2)
    after = apply(image, [*records, shutting_down(image, 2)])
    assert partitions_led_by(after, 2) == 0
    for reg in parts(after).values():
        assert 2 not in reg.isr
    assert parts(after)[1].leader == 3


def test_controlled_shutdown_of_last_isr_member():
    image = spread()
    after = apply(image, [*handle_broker_in_controlled_shutdown(ctx(image), 1),
                          shutting_down(image, 1)])
    one = parts(after, "one")[0]
    assert (one.leader, one.isr) == (NO_LEADER, (1,))
    assert partitions_led_by(after, 1) == 0


def test_unregistering_leaves_replica_lists():
    image = spread()
    image = apply(image, [*handle_broker_fenced(ctx(image), 4), fence(image, 4)])
    after = apply(image, [*handle_broker_unregistered(ctx(image), 4), unregister(image, 4)])
    u = parts(after, "u")[0]
    assert u.replicas == (4, 1) and u.isr == (1,) and u.leader == 1
    assert 4 not in after.cluster.brokers


def test_hooks_are_no_ops_when_nothing_depends_on_the_broker():
    image = cluster((1, 2, 3))
    context = ctx(image)
    assert handle_broker_fenced(context, 1) == handle_broker_unfenced(context, 1) == []
    assert handle_broker_in_controlled_shutdown(context, 1) == []
    assert handle_broker_unregistered(context, 9) == []


def test_before_3_6_isr_shrinks_bump_leader_epochs():
    image = spread(mv=V.IBP_3_6_IV0 - 1)
    after = apply(image, [*handle_broker_fenced(ctx(image), 3), fence(image, 3)])
    t = parts(after)
    assert t[1].leader == 2 and t[1].leader_epoch == 1  # shrink alone bumped it
    assert [r.version for r in handle_broker_fenced(ctx(image), 3)] == [0, 0, 0]


def test_cluster_wide_dynamic_unclean_setting_applies():
    image = create_topic(ctx(cluster((1, 2))), "t", -1, -1, assignments={0: [1, 2]})
    image = apply(image, alter_partition(ctx(image), alter_isr(image, "t", 0, [1])))
    image = image.replay([M.ConfigRecord(resource_type=4, resource_name="",
                                         name="unclean.leader.election.enable", value="true")])
    reg = parts(apply(image, [*handle_broker_fenced(ctx(image), 1), fence(image, 1)]))[0]
    assert (reg.leader, reg.isr) == (2, (2,))
