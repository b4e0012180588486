"""ReplicationControlManagerTest (Kafka 4.2.1): topic creation, deletion, partition creation,
ISR changes, elections and broker state changes, driven through the kit's controller commands
on a replayed image (rcm_context.RcmContext is the test's ReplicationControlTestContext)."""

from __future__ import annotations

import pytest
from rcm_context import RcmContext, creatable, registration

from kraft_testkit.controller import replication as R
from kraft_testkit.controller.topics import MAX_PARTITIONS_PER_BATCH, total_partitions
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E

kafka = pytest.mark.kafka
TOO_MANY = "Excessively large number of partitions per request."


def answer(result, name: str):
    topic = next(t for t in result.response.topics if t.name == name)
    return topic.error_code, topic.error_message


@kafka("ReplicationControlManagerTest#testExcessiveNumberOfTopicsCannotBeCreated")
def test_excessive_number_of_topics_cannot_be_created():
    ctx = RcmContext()
    result = ctx.create_topics(creatable("foo", 5000, 1), creatable("bar", 5000, 1),
                               creatable("baz", 1, 1))
    assert [(t.name, t.error_code, t.error_message) for t in result.response.topics] == [
        (n, E.POLICY_VIOLATION, TOO_MANY) for n in ("foo", "bar", "baz")]
    assert result.records == ()


@kafka("ReplicationControlManagerTest#testExcessiveNumberOfTopicsCannotBeCreatedWithAssignments")
def test_excessive_number_of_topics_cannot_be_created_with_assignments():
    topics = [creatable("foo", -1, 1), creatable("baz", assignments=[[], []])]
    assert total_partitions(topics, 9999) == 10_001 > MAX_PARTITIONS_PER_BATCH


@kafka("ReplicationControlManagerTest#testCreateTopics",
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


@kafka("ReplicationControlManagerTest#testInvalidCreateTopicsWithValidateOnlyFlag")
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


@kafka("ReplicationControlManagerTest#testCreateTopicsWithValidateOnlyFlag")
def test_create_topics_with_validate_only_flag():
    ctx = RcmContext()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    result = ctx.create_topics(creatable("foo", 1, 3), validate_only=True)
    assert result.records == ()
    assert answer(result, "foo") == (E.NONE, None)
    top = result.response.topics[0]
    assert (top.num_partitions, top.replication_factor) == (1, 3)


@kafka("ReplicationControlManagerTest#testCreateTopicWithCollisionChars")
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


@kafka("ReplicationControlManagerTest#testValidateNewTopicNames")
def test_validate_new_topic_names():
    assert R.topic_name_error("") == "Topic name is invalid: the empty string is not allowed"
    assert R.topic_name_error("woo") is None
    assert R.topic_name_error(".") == "Topic name is invalid: '.' is not allowed"


@kafka("ReplicationControlManagerTest#testTopicNameCollision")
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
