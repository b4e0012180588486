"""Kafka 4.2.1's ``GroupMetadataManagerTest`` consumer group scenarios, ported: the
ConsumerGroupHeartbeat paths of ``GroupMetadataManager`` (``gateway/groups/consumer/manager.py``),
with Kafka's MockPartitionAssignor answering prepared target assignments."""

from __future__ import annotations

import pytest
from consumer_group_context import DEFAULT_CLIENT_ADDRESS, DEFAULT_CLIENT_ID, Context, Image

from kraft_testkit.gateway.groups.consumer import records as R
from kraft_testkit.gateway.groups.consumer.group import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    Member,
)
from kraft_testkit.gateway.groups.consumer.manager import HeartbeatError
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.uuid import Uuid

kafka = pytest.mark.kafka
GROUP = "fooup"
# ids in distinct HashMap buckets (Kafka's tests draw random ids; ids in one bucket would
# iterate in insertion order)
FOO = Uuid("n0G9W8uw8de9puyHB9d3xg")
BAR = Uuid("8T-mDeYoHF943j9hixqSPw")
ZAR = Uuid("nnEgIQD43wE1xjf1-yrfKg")
M1, M2, M3 = "member-1-id", "member-2-id", "member-3-id"


def member(member_id, state=STABLE, epoch=10, previous=9, topics=("foo", "bar"),
           assigned=None, pending=None, **kw) -> Member:
    fields = dict(member_epoch=epoch, previous_member_epoch=previous, state=state,
                  client_id=DEFAULT_CLIENT_ID, client_host=DEFAULT_CLIENT_ADDRESS,
                  rebalance_timeout_ms=5000, subscribed_topic_names=tuple(topics),
                  server_assignor="range",
                  assigned={t: frozenset(p) for t, p in (assigned or {}).items()},
                  pending_revocation={t: frozenset(p) for t, p in (pending or {}).items()})
    fields.update(kw)
    return Member(member_id, **fields)


def error_of(fn) -> int:
    with pytest.raises(HeartbeatError) as e:
        fn()
    return e.value.code


@kafka("GroupMetadataManagerTest#testMemberJoinsEmptyConsumerGroup")
def test_member_joins_empty_consumer_group():
    image = Image({"foo": (FOO, 6), "bar": (BAR, 3)})
    ctx = Context(image)
    ctx.assignor.prepare({M1: {FOO: {0, 1, 2, 3, 4, 5}, BAR: {0, 1, 2}}})
    answer, records = ctx.heartbeat(group_id=GROUP, member_id=M1, member_epoch=0,
                                    server_assignor="range", rebalance_timeout_ms=5000,
                                    subscribed_topic_names=("foo", "bar"), topic_partitions=())
    assert answer == {"member_id": M1, "member_epoch": 1, "heartbeat_interval_ms": 5000,
                      "assignment": {FOO: {0, 1, 2, 3, 4, 5}, BAR: {0, 1, 2}}}
    expected = member(M1, epoch=1, previous=0,
                      assigned={FOO: {0, 1, 2, 3, 4, 5}, BAR: {0, 1, 2}})
    assert records == [
        R.member_record(GROUP, expected),
        R.epoch_record(GROUP, 1, image.hash_of("foo", "bar")),
        R.target_member_record(GROUP, M1, {FOO: {0, 1, 2, 3, 4, 5}, BAR: {0, 1, 2}}),
        R.target_epoch_record(GROUP, 1),
        R.current_assignment_record(GROUP, expected)]


@kafka("GroupMetadataManagerTest#testUnknownGroupId")
def test_unknown_group_id():
    ctx = Context()
    assert error_of(lambda: ctx.heartbeat(
        group_id=GROUP, member_id=M1, member_epoch=100, rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"), topic_partitions=())) == E.GROUP_ID_NOT_FOUND


@kafka("GroupMetadataManagerTest#testUnknownMemberIdJoinsConsumerGroup")
def test_unknown_member_id_joins_consumer_group():
    ctx = Context()
    ctx.heartbeat(group_id=GROUP, member_id=M1, member_epoch=0, server_assignor="range",
                  rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                  topic_partitions=())
    assert error_of(lambda: ctx.heartbeat(
        group_id=GROUP, member_id=M2, member_epoch=1, rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"), topic_partitions=())) == E.UNKNOWN_MEMBER_ID


@kafka("GroupMetadataManagerTest#testConsumerGroupMemberEpochValidation")
def test_member_epoch_validation():
    ctx = Context()
    m = member(M1, epoch=100, previous=99, assigned={FOO: {1, 2, 3}})
    ctx.replay(R.member_record(GROUP, m), R.epoch_record(GROUP, 100, 0),
               R.target_member_record(GROUP, M1, {FOO: {1, 2, 3}}),
               R.target_epoch_record(GROUP, 100), R.current_assignment_record(GROUP, m))

    def beat(epoch, owned=None):
        fields = dict(group_id=GROUP, member_id=M1, member_epoch=epoch,
                      rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
        if owned is not None:
            fields["topic_partitions"] = owned
        return ctx.heartbeat(**fields)
    assert error_of(lambda: beat(200)) == E.FENCED_MEMBER_EPOCH
    assert error_of(lambda: beat(50)) == E.FENCED_MEMBER_EPOCH
    assert error_of(lambda: beat(99)) == E.FENCED_MEMBER_EPOCH
    from kraft_testkit.protocol import messages as M
    tp = M.ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=FOO, partitions=(1, 2))
    answer, _ = beat(99, (tp,))
    assert answer["member_epoch"] == 100


def _two_member_group(ctx, image):
    ctx.with_group(GROUP, 10, [
        member(M1, assigned={FOO: {0, 1, 2}, BAR: {0, 1}}),
        member(M2, assigned={FOO: {3, 4, 5}, BAR: {2}})],
        {M1: {FOO: {0, 1, 2}, BAR: {0, 1}}, M2: {FOO: {3, 4, 5}, BAR: {2}}}, 10,
        image.hash_of("foo", "bar"))


@kafka("GroupMetadataManagerTest#testReconciliationProcess")
def test_reconciliation_process():
    from kraft_testkit.protocol import messages as M
    TP = M.ConsumerGroupHeartbeatRequest.TopicPartitions
    image = Image({"foo": (FOO, 6), "bar": (BAR, 3)})
    ctx = Context(image)
    _two_member_group(ctx, image)
    ctx.assignor.prepare({M1: {FOO: {0, 1}, BAR: {0}}, M2: {FOO: {2, 3}, BAR: {2}},
                          M3: {FOO: {4, 5}, BAR: {1}}})
    assert ctx.group(GROUP).state == "Stable"

    def beat(member_id, epoch, owned=None, **kw):
        fields = dict(group_id=GROUP, member_id=member_id, member_epoch=epoch, **kw)
        if owned is not None:
            fields["topic_partitions"] = tuple(TP(topic_id=t, partitions=tuple(p))
                                               for t, p in owned)
        return ctx.heartbeat(**fields)

    answer, records = beat(M3, 0, rebalance_timeout_ms=5000, server_assignor="range",
                           subscribed_topic_names=("foo", "bar"), topic_partitions=())
    assert (answer["member_epoch"], answer["assignment"]) == (11, {})
    assert records[-1] == R.current_assignment_record(
        GROUP, Member(M3, member_epoch=11, previous_member_epoch=0, state=UNRELEASED_PARTITIONS))
    assert ctx.group(GROUP).members[M3].state == UNRELEASED_PARTITIONS
    assert ctx.group(GROUP).state == "Reconciling"

    answer, records = beat(M1, 10)
    assert (answer["member_epoch"], answer["assignment"]) == (10, {FOO: {0, 1}, BAR: {0}})
    assert records == [R.current_assignment_record(GROUP, Member(
        M1, member_epoch=10, previous_member_epoch=10, state=UNREVOKED_PARTITIONS,
        assigned={FOO: frozenset({0, 1}), BAR: frozenset({0})},
        pending_revocation={FOO: frozenset({2}), BAR: frozenset({1})}))]

    answer, records = beat(M2, 10)
    assert (answer["member_epoch"], answer["assignment"]) == (10, {FOO: {3}, BAR: {2}})
    assert records == [R.current_assignment_record(GROUP, Member(
        M2, member_epoch=10, previous_member_epoch=10, state=UNREVOKED_PARTITIONS,
        assigned={FOO: frozenset({3}), BAR: frozenset({2})},
        pending_revocation={FOO: frozenset({4, 5})}))]

    answer, records = beat(M3, 11)
    assert (answer["member_epoch"], answer["assignment"]) == (11, None)
    assert records == [R.current_assignment_record(GROUP, Member(
        M3, member_epoch=11, previous_member_epoch=11, state=UNRELEASED_PARTITIONS))]

    answer, records = beat(M1, 10, [(FOO, [0, 1]), (BAR, [0])])
    assert (answer["member_epoch"], answer["assignment"]) == (11, None)
    assert records == [R.current_assignment_record(GROUP, Member(
        M1, member_epoch=11, previous_member_epoch=10, state=STABLE,
        assigned={FOO: frozenset({0, 1}), BAR: frozenset({0})}))]

    answer, records = beat(M2, 10)
    assert (answer["member_epoch"], records) == (10, [])
    assert ctx.group(GROUP).members[M2].state == UNREVOKED_PARTITIONS

    answer, records = beat(M3, 11)
    assert (answer["member_epoch"], answer["assignment"]) == (11, {BAR: {1}})
    assert records == [R.current_assignment_record(GROUP, Member(
        M3, member_epoch=11, previous_member_epoch=11, state=UNRELEASED_PARTITIONS,
        assigned={BAR: frozenset({1})}))]

    answer, records = beat(M3, 11)
    assert (answer["assignment"], records) == (None, [])

    answer, records = beat(M2, 10, [(FOO, [3]), (BAR, [2])])
    assert (answer["member_epoch"], answer["assignment"]) == (11, {FOO: {2, 3}, BAR: {2}})
    assert records == [R.current_assignment_record(GROUP, Member(
        M2, member_epoch=11, previous_member_epoch=10, state=STABLE,
        assigned={FOO: frozenset({2, 3}), BAR: frozenset({2})}))]
    assert ctx.group(GROUP).state == "Reconciling"

    answer, records = beat(M3, 11, [(BAR, [1])])
    assert (answer["member_epoch"], answer["assignment"]) == (11, {FOO: {4, 5}, BAR: {1}})
    assert records == [R.current_assignment_record(GROUP, Member(
        M3, member_epoch=11, previous_member_epoch=11, state=STABLE,
        assigned={FOO: frozenset({4, 5}), BAR: frozenset({1})}))]
    assert ctx.group(GROUP).state == "Stable"


@kafka("GroupMetadataManagerTest#testLeavingMemberBumpsGroupEpoch")
def test_leaving_member_bumps_group_epoch():
    image = Image({"foo": (FOO, 6), "bar": (BAR, 3), "zar": (ZAR, 1)})
    ctx = Context(image)
    ctx.with_group(GROUP, 10, [
        member(M1, assigned={FOO: {0, 1, 2}, BAR: {0, 1}}),
        member(M2, topics=("foo", "bar", "zar"), assigned={FOO: {3, 4, 5}, BAR: {2}})],
        {M1: {FOO: {0, 1, 2}, BAR: {0, 1}}, M2: {FOO: {3, 4, 5}, BAR: {2}}}, 10,
        image.hash_of("foo", "bar", "zar"))
    answer, records = ctx.heartbeat(group_id=GROUP, member_id=M2, member_epoch=-1,
                                    subscribed_topic_names=("foo", "bar"), topic_partitions=())
    assert (answer["member_id"], answer["member_epoch"], answer["heartbeat_interval_ms"]) == \
        (M2, -1, 0)
    assert records == R.member_tombstones(GROUP, M2) + [
        R.epoch_record(GROUP, 11, image.hash_of("foo", "bar"))]


def _static_group(ctx, image):
    ctx.with_group(GROUP, 10, [
        member(M1, instance_id="instance-id-1", assigned={FOO: {0, 1, 2}, BAR: {0, 1}}),
        member(M2, instance_id="instance-id-2", assigned={FOO: {3, 4, 5}, BAR: {2}})],
        {M1: {FOO: {0, 1, 2}, BAR: {0, 1}}, M2: {FOO: {3, 4, 5}, BAR: {2}}}, 10,
        image.hash_of("foo", "bar"))


@kafka("GroupMetadataManagerTest#"
       "testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId")
def test_a_new_member_with_an_instance_id_in_use_is_refused():
    image = Image({"foo": (FOO, 6), "bar": (BAR, 3)})
    ctx = Context(image)
    _static_group(ctx, image)
    assert error_of(lambda: ctx.heartbeat(
        group_id=GROUP, member_id="member-3-id", instance_id="instance-id-1", member_epoch=0,
        rebalance_timeout_ms=5000, server_assignor="range",
        subscribed_topic_names=("foo", "bar"), topic_partitions=())) == E.UNRELEASED_INSTANCE_ID


@kafka("GroupMetadataManagerTest#"
       "testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins")
def test_an_unknown_static_member_is_refused():
    image = Image({"foo": (FOO, 6), "bar": (BAR, 3)})
    ctx = Context(image)
    _static_group(ctx, image)
    assert error_of(lambda: ctx.heartbeat(
        group_id=GROUP, member_id="unknown-member-id", instance_id="unknown-instance-id",
        member_epoch=11, rebalance_timeout_ms=5000, server_assignor="range",
        subscribed_topic_names=("foo", "bar"), topic_partitions=())) == E.UNKNOWN_MEMBER_ID


@kafka("GroupMetadataManagerTest#"
       "testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins")
def test_a_static_member_with_another_member_id_is_fenced():
    image = Image({"foo": (FOO, 6), "bar": (BAR, 3)})
    ctx = Context(image)
    _static_group(ctx, image)
    assert error_of(lambda: ctx.heartbeat(
        group_id=GROUP, member_id="unknown-member-id", instance_id="instance-id-1",
        member_epoch=11, rebalance_timeout_ms=5000, server_assignor="range",
        subscribed_topic_names=("foo", "bar"), topic_partitions=())) == E.FENCED_INSTANCE_ID


@kafka("GroupMetadataManagerTest#testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves")
def test_no_group_epoch_bump_when_a_static_member_leaves_temporarily():
    image = Image({"foo": (FOO, 6), "bar": (BAR, 3)})
    ctx = Context(image)
    _static_group(ctx, image)
    answer, records = ctx.heartbeat(group_id=GROUP, member_id=M1, instance_id="instance-id-1",
                                    member_epoch=-2, rebalance_timeout_ms=5000,
                                    server_assignor="range",
                                    subscribed_topic_names=("foo", "bar"), topic_partitions=())
    assert (answer["member_epoch"], answer["heartbeat_interval_ms"]) == (-2, 0)
    assert records == [R.current_assignment_record(GROUP, member(
        M1, epoch=-2, instance_id="instance-id-1", assigned={FOO: {0, 1, 2}, BAR: {0, 1}}))]
    assert ctx.group(GROUP).group_epoch == 10


@kafka("GroupMetadataManagerTest#testSessionTimeoutExpiration")
def test_session_timeout_expiration():
    image = Image({"foo": (FOO, 6)})
    ctx = Context(image)
    ctx.assignor.prepare({M1: {FOO: {0, 1, 2, 3, 4, 5}}})
    answer, _ = ctx.heartbeat(group_id=GROUP, member_id=M1, member_epoch=0,
                              rebalance_timeout_ms=90_000, subscribed_topic_names=("foo",),
                              topic_partitions=())
    assert answer["member_epoch"] == 1
    assert ctx.group(GROUP).session_deadlines == {M1: 45_000}
    ctx.now += 45_000 + 1
    records = ctx.manager.expired(ctx.shard, ctx.now)
    assert records == R.member_tombstones(GROUP, M1) + [R.epoch_record(GROUP, 2, 0)]
    assert ctx.group(GROUP).session_deadlines == {}
    assert ctx.group(GROUP).rebalance_deadlines == {}
