"""Partition reassignment: KIP-631's [1, 2, 3] -> [3, 4, 5] walk-through record by record, its
cancellation, immediate completions, errors, and ListPartitionReassignments."""

from __future__ import annotations

import pytest
from replication_helpers import (
    alter_isr,
    apply,
    cluster,
    create_topic,
    ctx,
    fence,
    partition_records,
    reassign,
)

from kraft_testkit.controller.reassignment import (
    alter_partition_reassignments,
    list_partition_reassignments,
)
from kraft_testkit.controller.replication import alter_partition, handle_broker_fenced
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E


def start(replicas=(1, 2, 3), brokers=(1, 2, 3, 4, 5)):
    return create_topic(ctx(cluster(brokers)), "t", -1, -1, assignments={0: list(replicas)})


def part(image):
    return image.topic("t").partitions[0]


def alter(image, target, **config):
    return alter_partition_reassignments(ctx(image, **config), reassign("t", 0, target))


def errors(result):
    return [(p.error_code, p.error_message) for t in result.response.responses
            for p in t.partitions]


def isr_change(image, isr):
    result = alter_partition(ctx(image), alter_isr(image, "t", 0, isr))
    return result, apply(image, result)


def test_kip_631_example_step_by_step():
    image = start()
    # 1. the target [3, 4, 5]: replicas become target + removing, adding/removing set
    result = alter(image, [3, 4, 5])
    assert errors(result) == [(E.NONE, None)] and result.atomic
    (rec,) = partition_records(result)
    assert (rec.replicas, rec.adding_replicas, rec.removing_replicas, rec.leader, rec.isr) == \
        ((3, 4, 5, 1, 2), (4, 5), (1, 2), -2, None)
    image = apply(image, result)
    reg = part(image)
    assert (reg.replicas, reg.isr, reg.leader, reg.leader_epoch, reg.partition_epoch) == \
        ((3, 4, 5, 1, 2), (1, 2, 3), 1, 0, 1)

    # 2. the leader adds 4: an ordinary ISR expansion, the reassignment still runs
    result, image = isr_change(image, [1, 2, 3, 4])
    (rec,) = partition_records(result)
    assert (rec.isr, rec.replicas, rec.leader) == ((1, 2, 3, 4), None, -2)
    p = result.response.topics[0].partitions[0]
    assert (p.error_code, p.isr, p.partition_epoch) == (E.NONE, (1, 2, 3, 4), 2)
    assert part(image).adding_replicas == (4, 5)

    # 3. the leader adds 5: every target replica is in sync, so the reassignment completes;
    # the ISR the controller writes is not the one asked for, and 1 loses leadership
    result, image = isr_change(image, [1, 2, 3, 4, 5])
    (rec,) = partition_records(result)
    assert (rec.replicas, rec.isr, rec.leader, rec.adding_replicas, rec.removing_replicas) == \
        ((3, 4, 5), (3, 4, 5), 3, (), ())
    assert result.response.topics[0].partitions[0].error_code == E.NEW_LEADER_ELECTED
    reg = part(image)
    assert (reg.replicas, reg.isr, reg.leader, reg.leader_epoch, reg.partition_epoch) == \
        ((3, 4, 5), (3, 4, 5), 3, 1, 3)
    listing = list_partition_reassignments(image, M.ListPartitionReassignmentsRequest())
    assert listing.topics == ()


def test_old_alter_partition_versions_get_fenced_leader_epoch_on_completion():
    image = apply(start(), alter(start(), [3, 4, 5]))
    request = alter_isr(image, "t", 0, [1, 2, 3, 4, 5], version=1)
    result = alter_partition(ctx(image), request, version=1)
    assert result.response.topics[0].partitions[0].error_code == E.FENCED_LEADER_EPOCH
    assert part(apply(image, result)).leader == 3


def test_cancel_midway_reverts():
    image = apply(start(), alter(start(), [3, 4, 5]))
    _, image = isr_change(image, [1, 2, 3, 4])
    result = alter(image, None)
    assert errors(result) == [(E.NONE, None)]
    (rec,) = partition_records(result)
    # Kafka's revert keeps the current order minus the added replicas
    assert (rec.replicas, rec.isr, rec.adding_replicas, rec.removing_replicas, rec.leader) == \
        ((3, 1, 2), (1, 2, 3), (), (), 1)
    image = apply(image, result)
    reg = part(image)
    assert (reg.replicas, reg.isr, reg.leader, reg.leader_epoch) == ((3, 1, 2), (1, 2, 3), 1, 1)
    assert errors(alter(image, None)) == [(E.NO_REASSIGNMENT_IN_PROGRESS, None)]


def test_cancel_that_needs_an_unclean_election():
    """Only added replicas are in sync: reverting is refused unless unclean election is on.
    [1, 2] -> [1, 2, 3, 4]; 3 catches up; 2 then 1 are fenced, so 3 leads alone."""
    image = start((1, 2), brokers=(1, 2, 3, 4))
    image = apply(image, alter(image, [1, 2, 3, 4]))
    _, image = isr_change(image, [1, 2, 3])
    image = apply(image, [*handle_broker_fenced(ctx(image), 2), fence(image, 2)])
    _, image = isr_change(image, [1, 3])
    image = apply(image, [*handle_broker_fenced(ctx(image), 1), fence(image, 1)])
    reg = part(image)
    assert reg.isr == (3,) and reg.leader == 3 and reg.adding_replicas == (3, 4)
    refused = alter(image, None)
    assert errors(refused) == [(E.INVALID_REPLICA_ASSIGNMENT, ("Unable to revert partition "
                                "assignment for t:0 because it would require an unclean leader "
                                "election."))]
    assert refused.records == ()
    allowed = alter(image, None, **{"unclean.leader.election.enable": "true"})
    (rec,) = partition_records(allowed)
    assert (rec.replicas, rec.isr, rec.leader) == ((1, 2), (1,), -1)
    reg = part(apply(image, allowed))
    assert (reg.replicas, reg.isr, reg.leader, reg.adding_replicas) == ((1, 2), (1,), -1, ())


def test_shrinking_to_in_sync_replicas_completes_at_once():
    image = start()
    result = alter(image, [2, 3])
    (rec,) = partition_records(result)
    assert (rec.replicas, rec.isr, rec.leader, rec.adding_replicas, rec.removing_replicas) == \
        ((2, 3), (2, 3), 2, None, None)
    reg = part(apply(image, result))
    assert (reg.replicas, reg.isr, reg.leader, reg.leader_epoch) == ((2, 3), (2, 3), 2, 1)


def test_reordering_replicas_completes_at_once_without_leader_change():
    image = start()
    (rec,) = partition_records(alter(image, [3, 2, 1]))
    assert (rec.replicas, rec.leader, rec.isr) == ((3, 2, 1), -2, None)


def test_same_target_is_a_no_op():
    result = alter(start(), [1, 2, 3])
    assert errors(result) == [(E.NONE, None)] and result.records == ()


def test_changing_target_midway():
    image = apply(start(), alter(start(), [3, 4, 5]))
    (rec,) = partition_records(alter(image, [1, 2, 3]))
    # current replicas [3,4,5,1,2] -> [1,2,3]: 4 and 5 go, and since 1,2,3 are in sync it is done
    assert (rec.replicas, rec.isr, rec.adding_replicas, rec.removing_replicas) == \
        ((1, 2, 3), None, (), ())


def test_completion_needs_only_the_target_replicas_in_sync():
    image = apply(start(), alter(start(), [3, 4, 5]))
    _, image = isr_change(image, [1, 3, 4, 5])  # 2 dropped out while 4 and 5 caught up
    reg = part(image)
    assert (reg.replicas, reg.isr, reg.leader) == ((3, 4, 5), (3, 4, 5), 3)
    assert reg.adding_replicas == () == reg.removing_replicas


@pytest.mark.parametrize("target, code, message", [
    ([], E.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes an empty replica list."),
    ([1, 9], E.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 9, but no such broker is registered."),
    ([1, 1], E.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes the broker 1 more than once."),
])
def test_invalid_targets(target, code, message):
    result = alter(start(), target)
    assert errors(result) == [(code, message)] and result.records == ()


def test_unknown_topics_and_partitions():
    R = M.AlterPartitionReassignmentsRequest
    request = R(topics=[
        R.ReassignableTopic(name="nope", partitions=[R.ReassignablePartition(
            partition_index=0, replicas=[1])]),
        R.ReassignableTopic(name="t", partitions=[
            R.ReassignablePartition(partition_index=5, replicas=[1]),
            R.ReassignablePartition(partition_index=0, replicas=[2, 3, 4])])])
    result = alter_partition_reassignments(ctx(start()), request)
    assert errors(result) == [
        (E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope."),
        (E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:5."),
        (E.NONE, None)]
    assert len(result.records) == 1 and result.response.error_code == E.NONE


def test_list_reassignments():
    image = create_topic(ctx(cluster((1, 2, 3, 4, 5))), "t", -1, -1,
                         assignments={0: [1, 2], 1: [2, 3], 2: [3, 4]})
    R = M.AlterPartitionReassignmentsRequest
    image = apply(image, alter_partition_reassignments(ctx(image), R(topics=[
        R.ReassignableTopic(name="t", partitions=[
            R.ReassignablePartition(partition_index=0, replicas=[4, 5]),
            R.ReassignablePartition(partition_index=2, replicas=[3, 5])])])))
    everything = list_partition_reassignments(image, M.ListPartitionReassignmentsRequest())
    (topic,) = everything.topics
    assert [(p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas)
            for p in topic.partitions] == [(0, (4, 5, 1, 2), (4, 5), (1, 2)),
                                           (2, (3, 5, 4), (5,), (4,))]
    L = M.ListPartitionReassignmentsRequest
    some = list_partition_reassignments(image, L(topics=[
        L.ListPartitionReassignmentsTopics(name="t", partition_indexes=[2, 1, 9]),
        L.ListPartitionReassignmentsTopics(name="ghost", partition_indexes=[0])]))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in some.topics] == \
        [("t", [2])]
    assert some.error_code == E.NONE and some.error_message is None
