"""ReplicationControlManagerTest (Kafka 4.2.1): topic creation, deletion, partition creation,
ISR changes, elections and broker state changes, driven through the kit's controller commands
on a replayed image (rcm_context.RcmContext is the test's ReplicationControlTestContext)."""

from __future__ import annotations

import pytest
from rcm_context import RcmContext, broker_dir, creatable, registration

from kraft_testkit.controller import replication as R
from kraft_testkit.controller.topics import (MAX_PARTITIONS_PER_BATCH, RequestFailed,
                                            total_partitions, validate_manual_assignment)
from kraft_testkit.metadata import DirectoryId
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.protocol.error_codes import ErrorCode as E

CP = M.CreatePartitionsRequest
TOO_MANY = "Excessively large number of partitions per request."


def answer(result, name: str):
    topic = next(t for t in result.response.topics if t.name == name)
    return topic.error_code, topic.error_message


@pytest.mark.kafka("ReplicationControlManagerTest#testExcessiveNumberOfTopicsCannotBeCreated")
def test_excessive_number_of_topics_cannot_be_created():
    ctx = RcmContext()
    result = ctx.create_topics(creatable("foo", 5000, 1), creatable("bar", 5000, 1),
                               creatable("baz", 1, 1))
    assert [(t.name, t.error_code, t.error_message) for t in result.response.topics] == [
        (n, E.POLICY_VIOLATION, TOO_MANY) for n in ("foo", "bar", "baz")]
    assert result.records == ()


@pytest.mark.kafka("ReplicationControlManagerTest#testExcessiveNumberOfTopicsCannotBeCreatedWithAssignments")
def test_excessive_number_of_topics_cannot_be_created_with_assignments():
    topics = [creatable("foo", -1, 1), creatable("baz", assignments=[[], []])]
    assert total_partitions(topics, 9999) == 10_001 > MAX_PARTITIONS_PER_BATCH


@pytest.mark.kafka("ReplicationControlManagerTest#testCreateTopics",
       deliberate="placement leaves out a broker whose registration is in controlled shutdown; "
                  "Kafka's placer asks its heartbeat manager, which learns it from the broker's "
                  "heartbeat (this test replays the record alone). No switch")
def test_create_topics():
    ctx = RcmContext()
    foo = creatable("foo", -1, -1)
    assert answer(ctx.create_topics(foo), "foo") == (
        E.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 3 time(s): All brokers are currently fenced.")
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0)
    ctx.in_controlled_shutdown_brokers(0)
    # Kafka: "... All brokers are currently fenced or in controlled shutdown." (placed on the
    # shutting-down broker 0, then no ISR)
    assert answer(ctx.create_topics(foo), "foo") == (
        E.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 3 time(s): All brokers are currently fenced.")
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    result = ctx.create_topics(foo)
    ok = result.response.topics[0]
    assert (ok.name, ok.error_code, ok.error_message, ok.num_partitions,
            ok.replication_factor) == ("foo", E.NONE, None, 1, 3)
    ctx.replay(result.records)
    topic_id = result.records[0].message.topic_id
    assert ctx.partition(topic_id, 0) == registration([1, 2, 0], [1, 2, 0], 1)
    assert answer(ctx.create_topics(foo), "foo") == (E.TOPIC_ALREADY_EXISTS,
                                                    "Topic 'foo' already exists.")


@pytest.mark.kafka("ReplicationControlManagerTest#testInvalidCreateTopicsWithValidateOnlyFlag")
def test_invalid_create_topics_with_validate_only_flag():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    result = ctx.create_topics(creatable("foo", 1, 4), validate_only=True)
    assert result.records == ()
    assert answer(result, "foo") == (
        E.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 4 time(s): The target replication factor of 4 "
        "cannot be reached because only 3 broker(s) are registered.")


@pytest.mark.kafka("ReplicationControlManagerTest#testCreateTopicsWithValidateOnlyFlag")
def test_create_topics_with_validate_only_flag():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    result = ctx.create_topics(creatable("foo", 1, 3), validate_only=True)
    assert result.records == ()
    assert answer(result, "foo") == (E.NONE, None)
    top = result.response.topics[0]
    assert (top.num_partitions, top.replication_factor) == (1, 3)


@pytest.mark.kafka("ReplicationControlManagerTest#testCreateTopicWithCollisionChars")
def test_create_topic_with_collision_chars():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    first = ctx.create_test_topic("foo.bar", partitions=2, rf=2)
    assert len(ctx.image.topic("foo.bar").partitions) == 2
    removal = R.delete_topics(ctx.ctx(), M.DeleteTopicsRequest(topics=[
        M.DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=first.topic_id)]))
    assert [type(r.message) for r in removal.records] == [M.RemoveTopicRecord]
    ctx.replay(removal.records)
    again = ctx.create_test_topic("foo.bar", partitions=4, rf=2)
    assert again.topic_id != first.topic_id
    assert len(ctx.image.topic(again.topic_id).partitions) == 4


@pytest.mark.kafka("ReplicationControlManagerTest#testValidateNewTopicNames")
def test_validate_new_topic_names():
    assert R.topic_name_error("") == "Topic name is invalid: the empty string is not allowed"
    assert R.topic_name_error("woo") is None
    assert R.topic_name_error(".") == "Topic name is invalid: '.' is not allowed"


@pytest.mark.kafka("ReplicationControlManagerTest#testTopicNameCollision")
def test_topic_name_collision():
    """Kafka seeds the collision map directly; here the colliding topics exist."""
    ctx = RcmContext()
    ctx.register_brokers(0)
    ctx.unfence_brokers(0)
    ctx.replay(M.TopicRecord(name=name, topic_id=ctx.new_topic_id())
               for name in ("foo_bar", "woo.bar.foo", "woo_bar.foo"))
    result = ctx.create_topics(creatable("foo.bar", 1, 1), creatable("woo.bar_foo", 1, 1))
    assert answer(result, "foo.bar") == (E.INVALID_TOPIC_EXCEPTION,
                                         "Topic 'foo.bar' collides with existing topic: foo_bar")
    assert answer(result, "woo.bar_foo") == (
        E.INVALID_TOPIC_EXCEPTION, "Topic 'woo.bar_foo' collides with existing topic: woo.bar.foo")


@pytest.mark.kafka("ReplicationControlManagerTest#testCreatePartitions")
def test_create_partitions():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 3)
    ctx.register_dirs(0, [])
    ctx.register_dirs(1, [Uuid.parse("QMzamNQVQ7GnJK9DwQHG7Q"), Uuid.parse("loDxEBLETdedNnQGOKKENw")])
    ctx.register_dirs(3, [Uuid.parse("dxCDSgNjQvS4WuyqEKoCwA")])
    ctx.unfence_brokers(0, 1, 3)
    ctx.replay(ctx.create_topics(creatable("foo", 3, 2), creatable("bar", 4, 2),
                                 creatable("quux", 2, 2), creatable("foo2", 2, 2)).records)

    def grow(*topics):
        result = R.create_partitions(ctx.ctx(), CP(topics=[
            CP.CreatePartitionsTopic(name=n, count=c, assignments=None if a is None else
                                     [CP.CreatePartitionsAssignment(broker_ids=b) for b in a])
            for n, c, a in topics]))
        ctx.replay(result.records)
        return {r.name: (r.error_code, r.error_message) for r in result.response.results}

    assert grow(("foo", 5, None), ("bar", 3, None), ("baz", 3, None), ("quux", 2, None)) == {
        "foo": (E.NONE, None),
        "bar": (E.INVALID_PARTITIONS,
                "The topic bar currently has 4 partition(s); 3 would not be an increase."),
        "baz": (E.UNKNOWN_TOPIC_OR_PARTITION, None),
        "quux": (E.INVALID_PARTITIONS, "Topic already has 2 partition(s).")}
    assert grow(("foo", 6, [[1, 3]]), ("bar", 5, [[1]]), ("quux", 4, [[1, 0]]),
                ("foo2", 3, [[2, 0]])) == {
        "foo": (E.NONE, None),
        "bar": (E.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes a partition with 1 replica(s), but "
                "this is not consistent with previous partitions, which have 2 replica(s)."),
        "quux": (E.INVALID_REPLICA_ASSIGNMENT,
                 "Attempted to add 2 additional partition(s), but only 1 assignment(s) were "
                 "specified."),
        "foo2": (E.INVALID_REPLICA_ASSIGNMENT,
                 "The manual partition assignment includes broker 2, but no such broker is "
                 "registered.")}
    assert ctx.partition("foo", 5).directories == (DirectoryId.UNASSIGNED,
                                                    Uuid.parse("dxCDSgNjQvS4WuyqEKoCwA"))


@pytest.mark.kafka("ReplicationControlManagerTest#"
       "testCreatePartitionsFailsWhenAllBrokersAreFencedOrInControlledShutdown",
       deliberate="placement leaves out a broker whose registration is in controlled shutdown "
                  "(Kafka: its heartbeat manager's view); the error is the placer's. No switch")
def test_create_partitions_fails_when_all_brokers_fenced_or_shutting_down():
    ctx = RcmContext()
    ctx.register_brokers(0, 1)
    ctx.unfence_brokers(0, 1)
    ctx.replay(ctx.create_topics(creatable("foo", 1, 2)).records)
    ctx.register_brokers(0, 1)
    ctx.unfence_brokers(0)
    ctx.in_controlled_shutdown_brokers(0)
    result = R.create_partitions(ctx.ctx(), CP(topics=[
        CP.CreatePartitionsTopic(name="foo", count=2, assignments=None)]))
    # Kafka: "Unable to replicate the partition 2 time(s): All brokers are currently fenced or
    # in controlled shutdown." (placed on the shutting-down broker 0, then no ISR)
    assert [(r.error_code, r.error_message) for r in result.response.results] == [
        (E.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.")]


@pytest.mark.kafka("ReplicationControlManagerTest#testValidateGoodManualPartitionAssignments")
def test_validate_good_manual_partition_assignments():
    ctx = RcmContext()
    ctx.register_brokers(1, 2, 3)
    for replicas, rf in (([1], 1), ([1], None), ([1, 2, 3], 3), ([1, 2, 3], None)):
        validate_manual_assignment(ctx.image, replicas, rf)


@pytest.mark.kafka("ReplicationControlManagerTest#testValidateBadManualPartitionAssignments")
def test_validate_bad_manual_partition_assignments():
    ctx = RcmContext()
    ctx.register_brokers(1, 2)
    for replicas, rf, message in (
            ([], None, "The manual partition assignment includes an empty replica list."),
            ([1, 2, 3], None, "The manual partition assignment includes broker 3, but no such "
                              "broker is registered."),
            ([1, 2, 2], None, "The manual partition assignment includes the broker 2 more "
                              "than once."),
            ([1, 2], 3, "The manual partition assignment includes a partition with 2 "
                        "replica(s), but this is not consistent with previous partitions, "
                        "which have 3 replica(s).")):
        with pytest.raises(RequestFailed) as e:
            validate_manual_assignment(ctx.image, replicas, rf)
        assert (e.value.code, e.value.message) == (E.INVALID_REPLICA_ASSIGNMENT, message)


def consistent(ctx: RcmContext, topic: str, answer) -> None:
    """``assertConsistentAlterPartitionResponse``: the answer is the partition's new state."""
    reg = ctx.partition(topic, 0)
    assert answer.error_code == E.NONE
    assert (answer.leader_id, answer.leader_epoch, answer.partition_epoch, tuple(answer.isr)) == \
        (reg.leader, reg.leader_epoch, reg.partition_epoch, reg.isr)


def led_by(ctx: RcmContext, broker_id: int) -> set:
    return {(t.id, p) for t in ctx.image.topics for p, reg in t.partitions.items()
            if reg.leader == broker_id}


def isr_members(ctx: RcmContext, broker_id: int) -> set:
    return {(t.id, p) for t in ctx.image.topics for p, reg in t.partitions.items()
            if broker_id in reg.isr}


@pytest.mark.kafka("ReplicationControlManagerTest#testRemoveLeaderships")
def test_remove_leaderships():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(0, 1, 2, 3)
    foo = ctx.create_test_topic("foo", [[0, 1, 2], [1, 2, 3], [2, 3, 0], [0, 2, 1]])
    led = {(foo.topic_id, p) for p, reg in ctx.image.topic("foo").partitions.items()
           if reg.leader == 0}
    assert led == {(foo.topic_id, 0), (foo.topic_id, 3)}
    ctx.replay(R.handle_broker_fenced(ctx.ctx(), 0))
    assert {p for p, reg in ctx.image.topic("foo").partitions.items() if reg.leader == 0} == set()


@pytest.mark.kafka("ReplicationControlManagerTest#testShrinkAndExpandIsr")
def test_shrink_and_expand_isr():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    assert ctx.partition("foo", 0).leader == 0
    consistent(ctx, "foo", ctx.alter_partition("foo", 0, [0, 1]))
    consistent(ctx, "foo", ctx.alter_partition("foo", 0, [0, 1, 2]))


def elr_topic(brokers, min_isr: str) -> RcmContext:
    ctx = RcmContext(elr=True)
    ctx.register_brokers(*brokers)
    ctx.unfence_brokers(*brokers)
    ctx.create_test_topic("foo", [list(brokers)])
    assert ctx.partition("foo", 0).leader == 0
    ctx.alter_topic_config("foo", "min.insync.replicas", min_isr)
    return ctx


def elr_state(ctx: RcmContext):
    reg = ctx.partition("foo", 0)
    return reg.elr, reg.last_known_elr


@pytest.mark.kafka("ReplicationControlManagerTest#testEligibleLeaderReplicas_ShrinkAndExpandIsr")
def test_elr_shrink_and_expand_isr():
    ctx = elr_topic((0, 1, 2), "2")
    consistent(ctx, "foo", ctx.alter_partition("foo", 0, [0]))
    assert elr_state(ctx) == ((1, 2), ())
    consistent(ctx, "foo", ctx.alter_partition("foo", 0, [0, 1]))
    assert elr_state(ctx) == ((), ())


@pytest.mark.kafka("ReplicationControlManagerTest#testEligibleLeaderReplicas_ShrinkToEmptyIsr")
def test_elr_shrink_to_empty_isr():
    ctx = elr_topic((0, 1, 2), "3")
    ctx.fence_brokers(1, 2)
    assert elr_state(ctx) == ((1, 2), ())
    ctx.handle_brokers_shutdown(True, 0)
    assert elr_state(ctx) == ((0, 1, 2), (0,))
    assert ctx.partition("foo", 0).isr == ()


@pytest.mark.kafka("ReplicationControlManagerTest#testEligibleLeaderReplicas_BrokerFence")
def test_elr_broker_fence():
    ctx = elr_topic((0, 1, 2, 3), "3")
    ctx.fence_brokers(2, 3)
    assert elr_state(ctx) == ((3,), ())
    ctx.fence_brokers(1, 2, 3)
    assert elr_state(ctx) == ((1, 3), ())
    ctx.unfence_brokers(0, 1, 2, 3)
    assert elr_state(ctx) == ((1, 3), ())


@pytest.mark.kafka("ReplicationControlManagerTest#testEligibleLeaderReplicas_DeleteTopic")
def test_elr_delete_topic():
    ctx = elr_topic((0, 1, 2), "2")
    consistent(ctx, "foo", ctx.alter_partition("foo", 0, [0]))
    assert elr_state(ctx) == ((1, 2), ())
    topic_id = ctx.image.topic("foo").id
    removal = R.delete_topics(ctx.ctx(), M.DeleteTopicsRequest(topics=[
        M.DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=topic_id)]))
    ctx.replay(removal.records)
    assert not any(1 in reg.elr for t in ctx.image.topics for reg in t.partitions.values())
    assert isr_members(ctx, 0) == set()


@pytest.mark.kafka("ReplicationControlManagerTest#testEligibleLeaderReplicas_EffectiveMinIsr")
def test_elr_effective_min_isr():
    from kraft_testkit.controller.elr import effective_min_isr
    ctx = elr_topic((0, 1, 2), "5")
    assert effective_min_isr(ctx.ctx(), "foo") == 3


@pytest.mark.kafka("ReplicationControlManagerTest#testEligibleLeaderReplicas_CleanElection")
def test_elr_clean_election():
    ctx = elr_topic((0, 1, 2, 3), "3")
    ctx.fence_brokers(1, 2, 3)
    assert elr_state(ctx) == ((2, 3), ())
    ctx.unfence_brokers(2)
    ctx.fence_brokers(0, 1)
    reg = ctx.partition("foo", 0)
    assert (reg.elr, reg.isr, reg.leader, reg.last_known_elr) == ((0, 3), (2,), 2, ())


@pytest.mark.kafka("ReplicationControlManagerTest#testEligibleLeaderReplicas_UncleanShutdown")
def test_elr_unclean_shutdown():
    ctx = elr_topic((0, 1, 2, 3), "3")
    ctx.fence_brokers(1, 2, 3)
    assert elr_state(ctx) == ((2, 3), ())
    ctx.handle_brokers_shutdown(False, 3)
    assert elr_state(ctx) == ((2,), ())
    ctx.handle_brokers_shutdown(False, 0)
    assert elr_state(ctx) == ((2,), (0,))


@pytest.mark.kafka("ReplicationControlManagerTest#testCreateTopicsISRInvariants",
       deliberate="placement leaves out a broker whose registration is in controlled shutdown "
                  "(Kafka: its heartbeat manager's view). No switch")
def test_create_topics_isr_invariants():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1)
    ctx.in_controlled_shutdown_brokers(1)
    # Kafka places on [1, 0, 2] (broker 1 shutting down, 2 fenced), ISR [0], leader 0. The kit
    # does not offer broker 1, so three replicas cannot be placed on the two left
    assert answer(ctx.create_topics(creatable("foo", -1, -1)), "foo") == (
        E.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot "
        "be reached because only 2 broker(s) are registered.")


@pytest.mark.kafka("ReplicationControlManagerTest#testManualPartitionAssignmentOnAllFencedBrokers")
def test_manual_partition_assignment_on_all_fenced_brokers():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[0, 1, 2]], expected=E.INVALID_REPLICA_ASSIGNMENT)


@pytest.mark.kafka("ReplicationControlManagerTest#testCreatePartitionsFailsWithManualAssignmentWithAllFenced")
def test_create_partitions_fails_with_manual_assignment_with_all_fenced():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4, 5)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    ctx.create_partitions(2, "foo", [[3, 4, 5]], E.INVALID_REPLICA_ASSIGNMENT)
    ctx.create_partitions(2, "foo", [[2, 4, 5]], E.NONE)
    assert ctx.partition("foo", 1) == registration([2, 4, 5], [2], 2)


@pytest.mark.kafka("ReplicationControlManagerTest#testFenceMultipleBrokers")
def test_fence_multiple_brokers():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    ctx.fence_brokers(2, 3)
    p0, p1, p2 = (ctx.partition("foo", p) for p in range(3))
    assert (p0.replicas, p0.isr, p0.leader) == ((1, 2, 3), (1,), 1)
    assert (p1.replicas, p1.isr, p1.leader) == ((2, 3, 4), (4,), 4)
    assert (p2.replicas, p2.isr) == ((0, 2, 1), (0, 1)) and p2.leader != 2


@pytest.mark.kafka("ReplicationControlManagerTest#testElrsRemovedOnMinIsrUpdate")
@pytest.mark.parametrize("cluster_level", [False, True])
def test_elrs_removed_on_min_isr_update(cluster_level):
    """The IncrementalAlterConfigs half (Kafka also runs it through legacy AlterConfigs)."""
    from kraft_testkit.controller.configs import incremental_alter_configs
    ctx = RcmContext(elr=True, **{"min.insync.replicas": 2})
    ctx.register_brokers(1, 2, 3, 4)
    ctx.unfence_brokers(1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 4], [1, 3, 4]])
    ctx.create_test_topic("bar", [[1, 2, 4], [1, 3, 4]])
    ctx.fence_brokers(4)
    ctx.fence_brokers(1)
    assert ctx.partition("foo", 0).elr == (1,) and ctx.partition("bar", 0).elr == (1,)
    IAC = M.IncrementalAlterConfigsRequest
    rtype, name = (4, "") if cluster_level else (2, "foo")
    result = incremental_alter_configs(ctx.ctx(), IAC(resources=[IAC.AlterConfigsResource(
        resource_type=rtype, resource_name=name, configs=[IAC.AlterableConfig(
            name="min.insync.replicas", config_operation=0, value="1")])]))
    assert result.response.responses[0].error_code == E.NONE
    ctx.replay(result.records)
    assert ctx.partition("foo", 0).elr == ()
    assert ctx.partition("bar", 0).elr == (() if cluster_level else (1,))


@pytest.mark.kafka("ReplicationControlManagerTest#testElrsRemovedShouldNotBumpPartitionEpochIfNoChange")
def test_elrs_removed_should_not_bump_partition_epoch_if_no_change():
    ctx = RcmContext(elr=True, **{"min.insync.replicas": 2})
    ctx.register_brokers(1, 2, 3, 4)
    ctx.unfence_brokers(1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 4], [1, 3, 4]])
    epoch = ctx.partition("foo", 0).partition_epoch
    ctx.replay([M.ClearElrRecord()])
    assert ctx.partition("foo", 0).partition_epoch == epoch


NOT_NEEDED = (E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
NO_PREFERRED = (E.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available.")
NO_ELIGIBLE = (E.ELIGIBLE_LEADERS_NOT_AVAILABLE,
               "Eligible topic partition leaders are not available.")
ELECTED = (E.NONE, None)


def elect(ctx: RcmContext, election_type: int, partitions):
    EL = M.ElectLeadersRequest
    request = EL(election_type=election_type, topic_partitions=None if partitions is None else [
        EL.TopicPartitions(topic=t, partitions=list(p)) for t, p in partitions.items()])
    result = R.elect_leaders(ctx.ctx(), request)
    answers = {(t.topic, p.partition_id): (p.error_code, p.error_message)
               for t in result.response.replica_election_results for p in t.partition_result}
    return result, answers


def leader_and_isr(ctx: RcmContext, partition_id: int):
    reg = ctx.partition("foo", partition_id)
    return reg.leader, reg.isr


@pytest.mark.kafka("ReplicationControlManagerTest#testElectUncleanLeaders_WithoutElr")
@pytest.mark.parametrize("elect_all", [True, False])
def test_elect_unclean_leaders_without_elr(elect_all):
    from kraft_testkit.metadata import versions as V
    ctx = RcmContext(mv=V.IBP_3_6_IV1)
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    ctx.fence_brokers(2, 3)
    ctx.fence_brokers(1, 2, 3)
    assert [leader_and_isr(ctx, p) for p in range(3)] == [(-1, (1,)), (4, (4,)), (0, (0,))]
    which = None if elect_all else {"foo": [0, 1, 2]}
    result, answers = elect(ctx, R.ELECTION_UNCLEAN, which)
    assert result.records == ()
    expected = {("foo", 0): NO_ELIGIBLE, ("foo", 1): NOT_NEEDED, ("foo", 2): NOT_NEEDED}
    if elect_all:
        expected = {k: v for k, v in expected.items() if v != NOT_NEEDED}
    assert answers == expected
    ctx.unfence_brokers(2)
    ctx.alter_partition("foo", 1, [2, 4])
    result, answers = elect(ctx, R.ELECTION_UNCLEAN, which)
    assert [(r.message.partition_id, r.message.leader, r.message.isr) for r in result.records] \
        == [(0, 2, (2,))]
    ctx.replay(result.records)
    assert [leader_and_isr(ctx, p) for p in range(3)] == [(2, (2,)), (4, (2, 4)), (0, (0,))]
    expected = {("foo", 0): ELECTED, ("foo", 1): NOT_NEEDED, ("foo", 2): NOT_NEEDED}
    if elect_all:
        expected = {k: v for k, v in expected.items() if v != NOT_NEEDED}
    assert answers == expected


@pytest.mark.kafka("ReplicationControlManagerTest#testPreferredElectionDoesNotTriggerUncleanElection")
def test_preferred_election_does_not_trigger_unclean_election():
    ctx = RcmContext()
    ctx.register_brokers(1, 2, 3, 4)
    ctx.unfence_brokers(1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3]])
    ctx.fence_brokers(2, 3)
    ctx.fence_brokers(1, 2, 3)
    ctx.unfence_brokers(2)
    assert leader_and_isr(ctx, 0) == (-1, (1,))
    ctx.alter_topic_config("foo", "unclean.leader.election.enable", "true")
    result, answers = elect(ctx, R.ELECTION_PREFERRED, {"foo": [0]})
    assert result.records == ()
    assert answers == {("foo", 0): NO_PREFERRED}


@pytest.mark.kafka("ReplicationControlManagerTest#testElectPreferredLeaders")
def test_elect_preferred_leaders():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(1, 2, 3, 4)
    ctx.in_controlled_shutdown_brokers(1)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    which = {"foo": [0, 1, 2], "bar": [0, 1]}
    no_bar = (E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as bar")
    result, answers = elect(ctx, R.ELECTION_PREFERRED, which)
    assert answers == {("foo", 0): NO_PREFERRED, ("foo", 1): NOT_NEEDED,
                       ("foo", 2): NO_PREFERRED, ("bar", 0): no_bar, ("bar", 1): no_bar}
    assert result.records == ()
    ctx.register_brokers(1)  # registering again ends its controlled shutdown
    ctx.unfence_brokers(0, 1)
    for partition_id, isr in ((0, [1, 2, 3]), (2, [0, 2, 1])):
        answer_ = ctx.alter_partition("foo", partition_id, isr, leader=2)
        assert (answer_.error_code, answer_.leader_id, answer_.leader_epoch, tuple(answer_.isr),
                answer_.partition_epoch) == (E.NONE, 2, 0, tuple(isr), 1)
    result, answers = elect(ctx, R.ELECTION_PREFERRED, which)
    assert answers == {("foo", 0): ELECTED, ("foo", 1): NOT_NEEDED, ("foo", 2): ELECTED,
                       ("bar", 0): no_bar, ("bar", 1): no_bar}
    topic_id = ctx.image.topic("foo").id
    assert [r.message for r in result.records] == [
        M.PartitionChangeRecord(partition_id=0, topic_id=topic_id, leader=1),
        M.PartitionChangeRecord(partition_id=2, topic_id=topic_id, leader=0)]


@pytest.mark.kafka("ReplicationControlManagerTest#testAlterPartitionHandleUnknownTopicIdOrName")
@pytest.mark.parametrize("version", [2, 3])
def test_alter_partition_handle_unknown_topic_id_or_name(version):
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    topic_id = Uuid.parse("Ktv3YkMQRe-MId4VkkrMyw")
    AP = M.AlterPartitionRequest
    result = R.alter_partition(ctx.ctx(), AP(broker_id=0, broker_epoch=100, topics=[
        AP.TopicData(topic_id=topic_id, partitions=[AP.PartitionData(partition_index=0)])]),
        version=version)
    (topic,) = result.response.topics
    assert topic.topic_id == topic_id
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == \
        [(0, E.UNKNOWN_TOPIC_ID)]


@pytest.mark.kafka("ReplicationControlManagerTest#testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions")
@pytest.mark.parametrize("unclean", ["none", "static", "dynamic_cluster", "dynamic_node",
                                     "dynamic_topic"])
def test_maybe_trigger_unclean_election_for_leaderless_partitions(unclean):
    from kraft_testkit.controller.configs import incremental_alter_configs
    static = {"unclean.leader.election.enable": "true"} if unclean == "static" else {}
    ctx = RcmContext(**static)
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 4], [1, 3, 4], [0, 2, 4]])
    assert not R.leaderless_partitions(ctx.image)
    ctx.fence_brokers(0, 1, 2, 3, 4)
    assert R.leaderless_partitions(ctx.image)
    assert [leader_and_isr(ctx, p) for p in range(3)] == [(-1, (4,))] * 3
    ctx.unfence_brokers(2)
    after = [(2, (2,)), (-1, (4,)), (2, (2,))]
    if unclean == "static":
        assert [leader_and_isr(ctx, p) for p in range(3)] == after
    else:
        assert [leader_and_isr(ctx, p) for p in range(3)] == [(-1, (4,))] * 3
    resource = {"dynamic_cluster": (4, ""), "dynamic_node": (4, "0"),
                "dynamic_topic": (2, "foo")}.get(unclean)
    if resource is not None:
        IAC = M.IncrementalAlterConfigsRequest
        result = incremental_alter_configs(ctx.ctx(), IAC(resources=[IAC.AlterConfigsResource(
            resource_type=resource[0], resource_name=resource[1],
            configs=[IAC.AlterableConfig(name="unclean.leader.election.enable",
                                         config_operation=0, value="true")])]))
        ctx.replay(result.records)
    records, more = R.maybe_elect_unclean_leaders(ctx.ctx())
    assert not more
    if unclean in ("none", "static"):
        assert records == []
    else:
        assert records
        ctx.replay(records)
        assert [leader_and_isr(ctx, p) for p in range(3)] == after


@pytest.mark.kafka("ReplicationControlManagerTest#testDeleteTopics")
def test_delete_topics():
    ctx = RcmContext()
    configs = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"}
    ctx.register_brokers(0, 1)
    ctx.unfence_brokers(0, 1)
    created = ctx.create_topics(creatable("foo", 3, 2, configs=configs))
    top = created.response.topics[0]
    assert (top.error_code, top.num_partitions, top.replication_factor) == (E.NONE, 3, 2)
    assert ctx.image.topic("foo") is None and dict(ctx.image.configs.get(2, "foo")) == {}
    ctx.replay(created.records)
    foo = ctx.image.topic("foo")
    assert sorted(foo.partitions) == [0, 1, 2]
    assert dict(ctx.image.configs.get(2, "foo")) == configs
    invalid = Uuid(((int.from_bytes(bytes(foo.id), "big") + (1 << 64)) % (1 << 128))
                   .to_bytes(16, "big"))  # most significant bits + 1

    def delete(topic_id):
        return R.delete_topics(ctx.ctx(), M.DeleteTopicsRequest(topics=[
            M.DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=topic_id)]))

    bad = delete(invalid)
    assert bad.records == ()
    assert [(r.topic_id, r.error_code, r.error_message) for r in bad.response.responses] == [
        (invalid, E.UNKNOWN_TOPIC_ID, None)]
    good = delete(foo.id)
    assert good.atomic and len(good.records) == 1
    assert [(r.topic_id, r.error_code) for r in good.response.responses] == [(foo.id, E.NONE)]
    ctx.replay(good.records)
    assert ctx.image.topic(foo.id) is None and ctx.image.topic("foo") is None
    assert dict(ctx.image.configs.get(2, "foo")) == {}


@pytest.mark.kafka("ReplicationControlManagerTest#testInvalidAlterPartitionRequests")
def test_invalid_alter_partition_requests():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    assert ctx.partition("foo", 0).leader == 0
    epoch = ctx.image.cluster.brokers[0].epoch

    def code(isr, **kw):
        answer_ = ctx.alter_partition("foo", 0, isr, **kw)
        assert answer_.partition_index == 0
        return answer_.error_code

    assert code([0, 1], leader=1) == E.INVALID_REQUEST  # not the leader
    stale = ctx.alter_partition("foo", 0, [0, 1], broker_epoch=epoch - 1, whole=True)
    assert stale.error_code == E.STALE_BROKER_EPOCH
    assert code([0, 1], leader_epoch=500) == E.NOT_CONTROLLER
    assert code([0, 1], partition_epoch=500) == E.NOT_CONTROLLER
    assert code([0, 1, 3]) == E.INVALID_REQUEST  # 3 is not a replica
    assert code([1, 2]) == E.INVALID_REQUEST  # without the leader
    assert code([0, 1], lrs=1) == E.INVALID_REQUEST  # RECOVERING with more than the leader
    assert code([0], lrs=1) == E.INVALID_REQUEST  # RECOVERED -> RECOVERING


def four_replicas() -> RcmContext:
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3, 4]])
    return ctx


def rejected(answer_) -> tuple:
    return (answer_.partition_index, answer_.error_code)


@pytest.mark.kafka("ReplicationControlManagerTest#testAlterPartitionShouldRejectFencedBrokers")
@pytest.mark.parametrize("version", [2, 3])
def test_alter_partition_should_reject_fenced_brokers(version):
    ctx = four_replicas()
    ctx.replay(R.handle_broker_fenced(ctx.ctx(), 3))
    assert ctx.partition("foo", 0) == registration([1, 2, 3, 4], [1, 2, 4], 1, partition_epoch=1)
    ctx._change(3, fenced=1)
    answer_ = ctx.alter_partition("foo", 0, [1, 2, 3, 4], version=version)
    assert rejected(answer_) == (0, E.INELIGIBLE_REPLICA)
    ctx.unfence_brokers(3)
    answer_ = ctx.alter_partition("foo", 0, [1, 2, 3, 4], version=version)
    assert (answer_.error_code, answer_.leader_id, answer_.leader_epoch, tuple(answer_.isr),
            answer_.partition_epoch) == (E.NONE, 1, 0, (1, 2, 3, 4), 2)


@pytest.mark.kafka("ReplicationControlManagerTest#testAlterPartitionShouldRejectBrokersWithStaleEpoch")
@pytest.mark.parametrize("version", [2, 3])
def test_alter_partition_should_reject_brokers_with_stale_epoch(version):
    ctx = four_replicas()
    ctx.alter_partition("foo", 0, [1, 2, 3])
    # broker 4 failed silently and registers again with a new epoch, then is unfenced
    ctx.replay([M.RegisterBrokerRecord(
        broker_id=4, broker_epoch=100 + 4 + 1000, incarnation_id=Uuid(b"\x04" * 16),
        end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
            name="PLAINTEXT", host="localhost", port=9096, security_protocol=0)],
        fenced=True)])
    ctx.unfence_brokers(4)
    response = ctx.alter_partition("foo", 0, [1, 2, 3, 4], version=version, whole=True)
    if version >= 3:  # the ISR names broker 4 at its old epoch
        assert rejected(response.topics[0].partitions[0]) == (0, E.INELIGIBLE_REPLICA)
    else:
        assert response.error_code == E.NONE


@pytest.mark.kafka("ReplicationControlManagerTest#testAlterPartitionShouldRejectShuttingDownBrokers")
@pytest.mark.parametrize("version", [2, 3])
def test_alter_partition_should_reject_shutting_down_brokers(version):
    ctx = four_replicas()
    assert ctx.partition("foo", 0) == registration([1, 2, 3, 4], [1, 2, 3, 4], 1)
    ctx.in_controlled_shutdown_brokers(3)
    answer_ = ctx.alter_partition("foo", 0, [1, 2, 3, 4], version=version)
    assert rejected(answer_) == (0, E.INELIGIBLE_REPLICA)


ARR = M.AlterPartitionReassignmentsRequest
LPR = M.ListPartitionReassignmentsRequest


def reassign(ctx: RcmContext, targets):
    """``alterPartitionReassignments``: {topic: [(partition, replicas or None)]}."""
    result = R.alter_partition_reassignments(ctx.ctx(), ARR(topics=[
        ARR.ReassignableTopic(name=t, partitions=[
            ARR.ReassignablePartition(partition_index=p,
                                      replicas=None if r is None else list(r))
            for p, r in parts]) for t, parts in targets.items()]))
    answers = {(t.name, p.partition_index): (p.error_code, p.error_message)
               for t in result.response.responses for p in t.partitions}
    return result, answers


def reassigning(ctx: RcmContext, topics=None):
    response = R.list_partition_reassignments(ctx.image, LPR(topics=None if topics is None else [
        LPR.ListPartitionReassignmentsTopics(name=t, partition_indexes=list(p))
        for t, p in topics.items()]))
    return {(t.name, p.partition_index): (tuple(p.replicas), tuple(p.adding_replicas),
                                          tuple(p.removing_replicas))
            for t in response.topics for p in t.partitions}


@pytest.mark.kafka("ReplicationControlManagerTest#testReassignPartitions")
@pytest.mark.parametrize("version", [2, 3])
def test_reassign_partitions(version):
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[1, 2, 3], [3, 2, 1]])
    ctx.create_test_topic("bar", [[1, 2, 3]])
    foo_id = ctx.image.topic("foo").id
    assert reassigning(ctx) == {}
    result, answers = reassign(ctx, {"foo": [(0, [3, 2, 1]), (1, [0, 2, 1]), (2, [0, 2, 1])],
                                     "bar": []})
    assert answers == {("foo", 0): (E.NONE, None), ("foo", 1): (E.NONE, None),
                       ("foo", 2): (E.UNKNOWN_TOPIC_OR_PARTITION,
                                    "Unable to find partition foo:2.")}
    assert [t.name for t in result.response.responses] == ["foo", "bar"]
    ctx.replay(result.records)
    ongoing = {("foo", 1): ((0, 2, 1, 3), (0,), (3,))}
    assert reassigning(ctx) == ongoing
    assert reassigning(ctx, {"bar": [0, 1, 2]}) == {}
    assert reassigning(ctx, {"foo": [0, 1, 2]}) == ongoing
    cancel, answers = reassign(ctx, {"foo": [(0, None), (1, None), (2, None)],
                                     "bar": [(0, None)]})
    assert answers == {("foo", 0): (E.NO_REASSIGNMENT_IN_PROGRESS, None),
                       ("foo", 1): (E.NONE, None),
                       ("foo", 2): (E.UNKNOWN_TOPIC_OR_PARTITION,
                                    "Unable to find partition foo:2."),
                       ("bar", 0): (E.NO_REASSIGNMENT_IN_PROGRESS, None)}
    assert cancel.atomic
    assert [r.message for r in cancel.records] == [M.PartitionChangeRecord(
        topic_id=foo_id, partition_id=1, replicas=(2, 1, 3),
        directories=tuple(broker_dir(b) for b in (2, 1, 3)), leader=3, removing_replicas=(),
        adding_replicas=())]
    # the cancel is not replayed: the ISR grows to the target, which ends the reassignment
    # without the leader, 3
    answer_ = ctx.alter_partition("foo", 1, [3, 0, 2, 1], version=version)
    assert rejected(answer_) == (1, E.NEW_LEADER_ELECTED)
    assert reassigning(ctx) == {}


@pytest.mark.kafka("ReplicationControlManagerTest#testCancelReassignPartitions")
def test_cancel_reassign_partitions():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3, 4], [0, 1, 2, 3], [4, 3, 1, 0], [2, 3, 4, 1]])
    ctx.create_test_topic("bar", [[4, 3, 2]])
    assert reassigning(ctx) == {}
    ctx.replay(R.handle_broker_fenced(ctx.ctx(), 3))
    assert ctx.partition("foo", 0) == registration([1, 2, 3, 4], [1, 2, 4], 1, partition_epoch=1)
    result, answers = reassign(ctx, {
        "foo": [(0, [1, 2, 4]), (1, [1, 2, 3, 0]), (2, [5, 6, 7]), (3, [])],
        "bar": [(0, [1, 2, 3, 4, 0])]})
    assert answers == {
        ("foo", 0): (E.NONE, None), ("foo", 1): (E.NONE, None),
        ("foo", 2): (E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes "
                                                   "broker 5, but no such broker is registered."),
        ("foo", 3): (E.INVALID_REPLICA_ASSIGNMENT,
                     "The manual partition assignment includes an empty replica list."),
        ("bar", 0): (E.NONE, None)}
    ctx.replay(result.records)
    assert ctx.partition("foo", 0) == registration([1, 2, 4], [1, 2, 4], 1, leader_epoch=1,
                                                   partition_epoch=2)
    assert ctx.partition("foo", 1) == registration([1, 2, 3, 0], [0, 1, 2], 0, partition_epoch=2)
    bar = ctx.partition("bar", 0)
    assert bar == registration([1, 2, 3, 4, 0], [4, 2], 4, partition_epoch=2)._replace(
        adding_replicas=(0, 1))
    ongoing = {("bar", 0): ((1, 2, 3, 4, 0), (0, 1), ())}
    assert reassigning(ctx) == ongoing
    assert reassigning(ctx, {"foo": [0, 1, 2]}) == {}
    assert reassigning(ctx, {"bar": [0, 1, 2]}) == ongoing
    answer_ = ctx.alter_partition("bar", 0, [4, 1, 2, 0], replay=False)  # (not replayed)
    assert (answer_.error_code, answer_.leader_id, answer_.leader_epoch, tuple(answer_.isr),
            answer_.partition_epoch) == (E.NONE, 4, 0, (4, 1, 2, 0), 3)
    cancel, answers = reassign(ctx, {"foo": [(0, None)], "bar": [(0, None)]})
    assert answers == {("foo", 0): (E.NO_REASSIGNMENT_IN_PROGRESS, None),
                       ("bar", 0): (E.NONE, None)}
    bar_id = ctx.image.topic("bar").id
    assert cancel.atomic and [r.message for r in cancel.records] == [M.PartitionChangeRecord(
        topic_id=bar_id, partition_id=0, leader=4, replicas=(2, 3, 4),
        directories=tuple(broker_dir(b) for b in (2, 3, 4)), adding_replicas=())]
    ctx.replay(cancel.records)
    assert reassigning(ctx) == {}
    assert ctx.partition("bar", 0) == registration([2, 3, 4], [4, 2], 4, leader_epoch=1,
                                                   partition_epoch=3)


@pytest.mark.kafka("ReplicationControlManagerTest#"
       "testReassignPartitionsHandlesNewReassignmentThatRemovesPreviouslyAddingReplicas")
def test_new_reassignment_removing_previously_adding_replicas():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4, 5)
    ctx.unfence_brokers(0, 1, 2, 3, 4, 5)
    topic = "topic-1"
    ctx.create_test_topic(topic, [[0, 1]])
    assert reassigning(ctx) == {}
    result, answers = reassign(ctx, {topic: [(0, [2, 3])]})
    assert answers == {(topic, 0): (E.NONE, None)}
    ctx.replay(result.records)
    assert reassigning(ctx) == {(topic, 0): ((2, 3, 0, 1), (2, 3), (0, 1))}
    epoch = ctx.partition(topic, 0).partition_epoch
    answer_ = ctx.alter_partition(topic, 0, [0, 1, 2])
    assert (answer_.error_code, tuple(answer_.isr), answer_.partition_epoch, answer_.leader_id) \
        == (E.NONE, (0, 1, 2), epoch + 1, 0)
    election, answers = elect(ctx, R.ELECTION_PREFERRED, {topic: [0]})
    assert answers == {(topic, 0): ELECTED}
    ctx.replay(election.records)
    assert ctx.partition(topic, 0).leader == 2
    result, answers = reassign(ctx, {topic: [(0, [4, 5])]})
    assert answers == {(topic, 0): (E.NONE, None)}
    ctx.replay(result.records)
    assert reassigning(ctx) == {(topic, 0): ((4, 5, 0, 1, 2, 3), (4, 5), (0, 1, 2, 3))}
    partition = ctx.partition(topic, 0)
    assert partition.leader == 2 and partition.leader in partition.replicas
    answer_ = ctx.alter_partition(topic, 0, [0, 1, 2, 3, 4, 5])
    assert rejected(answer_) == (0, E.NEW_LEADER_ELECTED)
    assert ctx.partition(topic, 0).leader == 4
    assert reassigning(ctx) == {}


def imbalanced(ctx: RcmContext) -> bool:
    """``arePartitionLeadersImbalanced``: some partition not led by its first replica."""
    return any(reg.leader != reg.replicas[0]
               for t in ctx.image.topics for reg in t.partitions.values())


@pytest.mark.kafka("ReplicationControlManagerTest#testBalancePartitionLeaders")
def test_balance_partition_leaders():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    foo_id = ctx.image.topic("foo").id
    assert imbalanced(ctx)
    ctx.unfence_brokers(1)
    answer_ = ctx.alter_partition("foo", 0, [1, 2, 3], leader=2)
    assert (answer_.error_code, answer_.leader_id, answer_.leader_epoch, tuple(answer_.isr),
            answer_.partition_epoch) == (E.NONE, 2, 0, (1, 2, 3), 1)
    records, more = R.balance_partition_leaders(ctx.ctx())
    ctx.replay(records)
    assert [r.message for r in records] == [
        M.PartitionChangeRecord(partition_id=0, topic_id=foo_id, leader=1)]
    assert imbalanced(ctx) and not more
    ctx.unfence_brokers(0)
    answer_ = ctx.alter_partition("foo", 2, [0, 2, 1], leader=2)
    assert (answer_.error_code, answer_.leader_id, answer_.leader_epoch, tuple(answer_.isr),
            answer_.partition_epoch) == (E.NONE, 2, 0, (0, 2, 1), 1)
    records, more = R.balance_partition_leaders(ctx.ctx())
    ctx.replay(records)
    assert [r.message for r in records] == [
        M.PartitionChangeRecord(partition_id=2, topic_id=foo_id, leader=0)]
    assert not imbalanced(ctx) and not more


@pytest.mark.kafka("ReplicationControlManagerTest#testKRaftClusterDescriber")
def test_kraft_cluster_describer():
    from kraft_testkit.controller.eligibility import default_dir
    from kraft_testkit.controller.placement import UsableBroker, usable_brokers
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2, 3, 4)
    for broker_id, dirs in ((0, []), (1, []), (2, [Uuid.parse("ozwqsVMFSNiYQUPSJA3j0w")]),
                            (3, [Uuid.parse("SSDgCZ4BTyec5QojGT65qg"),
                                 Uuid.parse("K8KwMrviRcOUvgI8FPOJWg")]), (4, [])):
        ctx.register_dirs(broker_id, dirs)
    ctx.unfence_brokers(2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    ctx.create_test_topic("bar", [[2, 3, 4], [3, 4, 2]])
    assert set(usable_brokers(ctx.image)) == {
        UsableBroker(0, None, True), UsableBroker(1, None, True), UsableBroker(2, None, False),
        UsableBroker(3, None, False), UsableBroker(4, None, False)}
    assert default_dir(ctx.image, 1) == DirectoryId.MIGRATING
    assert default_dir(ctx.image, 2) == Uuid.parse("ozwqsVMFSNiYQUPSJA3j0w")
    assert default_dir(ctx.image, 3) == DirectoryId.UNASSIGNED


@pytest.mark.kafka("ReplicationControlManagerTest#testCreatePartitionsISRInvariants",
                   deliberate="placement leaves out a broker whose registration is in "
                              "controlled shutdown (Kafka: its heartbeat manager's view). "
                              "No switch")
def test_create_partitions_isr_invariants():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1)
    ctx.in_controlled_shutdown_brokers(1)
    # Kafka creates foo (placed on all three) and then partition 1 as [0, 1, 2], ISR [0],
    # leader 0. The kit offers only brokers 0 and 2, so three replicas cannot be placed
    assert ctx.create_topics(creatable("foo", 1, 3)).response.topics[0].error_code == \
        E.INVALID_REPLICATION_FACTOR


def assign_to_dirs(ctx: RcmContext, broker_id: int, assignment: dict, *, replay: bool = True):
    """``assignReplicasToDirs``: {(topic id, partition): directory} for one broker."""
    from kraft_testkit.controller.log_dirs import assign_replicas_to_dirs
    A = M.AssignReplicasToDirsRequest
    by_dir: dict = {}
    for (topic_id, partition), directory in assignment.items():
        by_dir.setdefault(directory, {}).setdefault(topic_id, []).append(partition)
    request = A(broker_id=broker_id, broker_epoch=100 + broker_id, directories=[
        A.DirectoryData(id=d, topics=[A.TopicData(topic_id=t, partitions=[
            A.PartitionData(partition_index=p) for p in ps]) for t, ps in topics.items()])
        for d, topics in by_dir.items()])
    result = assign_replicas_to_dirs(ctx.ctx(), request)
    assert result.response.error_code == E.NONE
    if replay:
        ctx.replay(result.records)
    return result


def sort_changes(records):
    return sorted((r.message for r in records), key=lambda m: (str(m.topic_id), m.partition_id,
                                                               m.isr is not None))


@pytest.mark.kafka("ReplicationControlManagerTest#testHandleAssignReplicasToDirsFailsOnOlderMv")
def test_handle_assign_replicas_to_dirs_fails_on_older_mv():
    from kraft_testkit.controller.log_dirs import assign_replicas_to_dirs
    from kraft_testkit.metadata import versions as V
    ctx = RcmContext(mv=V.IBP_3_7_IV2 - 1)  # 3.7-IV1
    result = assign_replicas_to_dirs(ctx.ctx(), M.AssignReplicasToDirsRequest())
    assert result.response.error_code == E.UNSUPPORTED_VERSION and result.records == ()


@pytest.mark.kafka("ReplicationControlManagerTest#testHandleAssignReplicasToDirs")
def test_handle_assign_replicas_to_dirs():
    dir1b1, dir2b1 = Uuid.parse("hO2YI5bgRUmByNPHiHxjNQ"), Uuid.parse("R3Gb1HLoTzuKMgAkH5Vtpw")
    dir1b2, offline = Uuid.parse("TBGa8UayQi6KguqF5nC0sw"), Uuid.parse("zvAf9BKZRyyrEWz4FX2nLA")
    unknown = Uuid.parse("nLU9hKNXSZuMe5PO2A4dVQ")
    ctx = RcmContext()
    ctx.register_brokers(1, 2)
    ctx.register_dirs(1, [dir1b1, dir2b1])
    ctx.register_dirs(2, [dir1b2])
    ctx.unfence_brokers(1, 2)
    a = ctx.create_test_topic("a", [[1, 2], [1, 2], [1, 2]]).topic_id
    b = ctx.create_test_topic("b", [[1, 2], [1, 2]]).topic_id
    c = ctx.create_test_topic("c", [[2]]).topic_id
    result = assign_to_dirs(ctx, 1, {
        (a, 0): dir1b1, (a, 1): dir2b1, (a, 2): offline, (b, 0): dir1b1,
        (b, 1): DirectoryId.LOST, (unknown, 1): dir2b1, (a, 137): dir1b1, (c, 0): dir1b1},
        replay=False)
    answers = {(d.id, t.topic_id, p.partition_index): p.error_code
               for d in result.response.directories for t in d.topics for p in t.partitions}
    assert answers == {
        (dir1b1, a, 0): E.NONE, (dir1b1, a, 137): E.UNKNOWN_TOPIC_OR_PARTITION,
        (dir1b1, b, 0): E.NONE, (dir1b1, c, 0): E.NOT_LEADER_OR_FOLLOWER,
        (dir2b1, a, 1): E.NONE, (dir2b1, unknown, 1): E.UNKNOWN_TOPIC_ID,
        (offline, a, 2): E.NONE, (DirectoryId.LOST, b, 1): E.NONE}
    P = M.PartitionChangeRecord
    assert sort_changes(result.records) == sort_changes([
        MetadataRecordOf(P(topic_id=a, partition_id=0, directories=(dir1b1, dir1b2))),
        MetadataRecordOf(P(topic_id=a, partition_id=1, directories=(dir2b1, dir1b2))),
        MetadataRecordOf(P(topic_id=a, partition_id=2, directories=(offline, dir1b2))),
        MetadataRecordOf(P(topic_id=b, partition_id=0, directories=(dir1b1, dir1b2))),
        MetadataRecordOf(P(topic_id=b, partition_id=1, directories=(DirectoryId.LOST, dir1b2))),
        # a-2 and b-1 went to directories that are not online: new leaders
        MetadataRecordOf(P(topic_id=a, partition_id=2, isr=(2,), leader=2)),
        MetadataRecordOf(P(topic_id=b, partition_id=1, isr=(2,), leader=2))])
    ctx.replay(result.records)
    # brokersToIsrs().iterator(broker, leadersOnly=true): the partitions each broker leads
    assert led_by(ctx, 1) == {(a, 0), (a, 1), (b, 0)}
    assert led_by(ctx, 2) == {(a, 2), (b, 1), (c, 0)}


class MetadataRecordOf:
    """A record stand-in for sort_changes: just the message."""

    def __init__(self, message) -> None:
        self.message = message


@pytest.mark.kafka("ReplicationControlManagerTest#testHandleDirectoriesOffline")
def test_handle_directories_offline():
    from kraft_testkit.controller.log_dirs import handle_directories_offline
    b1, b2 = 101, 102
    dir1b1, dir2b1 = Uuid.parse("suitdzfTTdqoWcy8VqmkUg"), Uuid.parse("yh3acnzGSeurSTj8aIhOjw")
    dir1b2, dir2b2 = Uuid.parse("OmpmJ8RjQliQlEFht56DwQ"), Uuid.parse("w05baLpsT5Oz0LvKTKXoDw")
    ctx = RcmContext()
    ctx.register_brokers(b1, b2)
    ctx.register_dirs(b1, [dir1b1, dir2b1])
    ctx.register_dirs(b2, [dir1b2, dir2b2])
    ctx.unfence_brokers(b1, b2)
    a = ctx.create_test_topic("a", [[b1, b2], [b1, b2]]).topic_id
    b = ctx.create_test_topic("b", [[b1, b2], [b1, b2]]).topic_id
    assign_to_dirs(ctx, b1, {(a, 0): dir1b1, (a, 1): dir2b1, (b, 0): dir1b1, (b, 1): dir2b1})
    assign_to_dirs(ctx, b2, {(a, 0): dir1b2, (a, 1): dir2b2, (b, 0): dir1b2, (b, 1): dir2b2})
    records = handle_directories_offline(ctx.ctx(), ctx.image.cluster.brokers[b1],
                                         [dir1b1, dir1b2])  # dir1b2 is not b1's
    changes = [r for r in records if isinstance(r.message, M.BrokerRegistrationChangeRecord)]
    assert [(r.message, r.version) for r in changes] == [(M.BrokerRegistrationChangeRecord(
        broker_id=b1, broker_epoch=100 + b1, log_dirs=(dir2b1,)), 2)]
    P = M.PartitionChangeRecord
    assert sort_changes([r for r in records if isinstance(r.message, P)]) == sort_changes([
        MetadataRecordOf(P(topic_id=a, partition_id=0, leader=b2, isr=(b2,))),
        MetadataRecordOf(P(topic_id=b, partition_id=0, leader=b2, isr=(b2,)))])
    assert len(records) == 3
    ctx.replay(records)
    assert ctx.image.cluster.brokers[b1].log_dirs == (dir2b1,)


@pytest.mark.kafka("ReplicationControlManagerTest#testCreateTopicsWithConfigs")
def test_create_topics_with_configs():
    """Kafka's test schema has a free key "foo"; the kit validates against LogConfig, so a real
    key stands in for it where the value must be accepted (the null case keeps "foo")."""
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    valid = {"cleanup.policy": "compact"}
    first = ctx.create_topics(creatable("foo", -1, -1, configs=valid))
    assert first.response.topics[0].error_code == E.NONE
    assert [type(r.message).__name__ for r in first.records] == [
        "TopicRecord", "ConfigRecord", "PartitionRecord"]
    ctx.replay(first.records)
    assert dict(ctx.image.configs.get(2, "foo")) == valid
    second = ctx.create_topics(creatable("bar", -1, -1, configs={"foo": None}))
    assert answer(second, "bar") == (E.INVALID_CONFIG,
                                     "Null value not supported for topic configs: foo")
    third = ctx.create_topics(creatable("baz", -1, -2, configs=valid))
    assert answer(third, "baz")[0] == E.INVALID_REPLICATION_FACTOR and third.records == ()
    batch = ctx.create_topics(creatable("batched-topic-1", -1, -1, configs=valid),
                              creatable("batched-topic2", -1, -2, configs=valid))
    assert answer(batch, "batched-topic-1")[0] == E.NONE
    assert answer(batch, "batched-topic2")[0] == E.INVALID_REPLICATION_FACTOR
    topic, config, partition = (r.message for r in batch.records)
    assert isinstance(topic, M.TopicRecord) and topic.name == "batched-topic-1"
    assert config == M.ConfigRecord(resource_name="batched-topic-1", resource_type=2,
                                    name="cleanup.policy", value="compact")
    assert isinstance(partition, M.PartitionRecord) and partition.topic_id == topic.topic_id
