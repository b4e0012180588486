"""CreateTopics, DeleteTopics and CreatePartitions through real request messages; every accepted
change is replayed and the image must show what the response claims."""

from __future__ import annotations

import pytest
from replication_helpers import (
    apply,
    cluster,
    creatable,
    create_request,
    create_topic,
    ctx,
    fence,
    reassign,
    shutting_down,
    with_image,
)

from kraft_testkit.controller.reassignment import (
    alter_partition_reassignments,
    list_partition_reassignments,
)
from kraft_testkit.controller.topics import create_partitions, create_topics, delete_topics
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.uuid import Uuid

THREE = (0, 1, 2)


def create(image, *topics, seed=0, validate_only=False, **config):
    context = ctx(image, seed=seed, **config)
    return create_topics(context, create_request(*topics, validate_only=validate_only))


def codes(result):
    return {t.name: (t.error_code, t.error_message) for t in result.response.topics}


# ---------------------------------------------------------------- CreateTopics


def test_create_topic_records_and_response():
    image = cluster(THREE)
    result = create(image, creatable("orders", 4, 3, configs={"retention.ms": "1000"}))
    (topic,) = result.response.topics
    assert topic.error_code == E.NONE and topic.error_message is None
    assert topic.num_partitions == 4 and topic.replication_factor == 3
    kinds = [type(r.message).__name__ for r in result.records]
    assert kinds == ["TopicRecord", "ConfigRecord"] + ["PartitionRecord"] * 4
    assert result.atomic
    after = apply(image, result)
    t = after.topic("orders")
    assert t.id == topic.topic_id and len(t.partitions) == 4
    for reg in t.partitions.values():
        assert len(reg.replicas) == 3 and reg.isr == reg.replicas and reg.leader == reg.replicas[0]
        assert (reg.leader_epoch, reg.partition_epoch) == (0, 0)
    assert after.configs.topic("orders") == {"retention.ms": "1000"}
    configs = {c.name: c for c in topic.configs}
    assert configs["retention.ms"].value == "1000" and configs["retention.ms"].config_source == 1
    assert configs["cleanup.policy"].value == "delete" and configs["cleanup.policy"].config_source == 5
    assert list(configs) == sorted(configs)


def test_defaults_for_partitions_and_replication_factor():
    image = cluster(THREE)
    result = create(image, creatable("t"), **{"num.partitions": 5,
                                              "default.replication.factor": 2})
    (topic,) = result.response.topics
    assert (topic.num_partitions, topic.replication_factor) == (5, 2)
    assert all(len(r.replicas) == 2 for r in apply(image, result).topic("t").partitions.values())


def test_topic_ids_come_from_the_seeded_rng():
    image = cluster(THREE)
    a = create(image, creatable("t", 1, 1), seed=4).response.topics[0].topic_id
    b = create(image, creatable("t", 1, 1), seed=4).response.topics[0].topic_id
    c = create(image, creatable("t", 1, 1), seed=5).response.topics[0].topic_id
    assert a == b != c and a != Uuid.ZERO


def test_validate_only_answers_without_records():
    image = cluster(THREE)
    result = create(image, creatable("t", 2, 3), creatable("bad!", 1, 1), validate_only=True)
    assert result.records == ()
    assert codes(result)["t"] == (E.NONE, None)
    assert codes(result)["bad!"][0] == E.INVALID_TOPIC_EXCEPTION


def test_config_sources_follow_dynamic_broker_defaults():
    image = cluster(THREE).replay([
        M.ConfigRecord(resource_type=4, resource_name="", name="log.retention.hours", value="2"),
        M.ConfigRecord(resource_type=4, resource_name="3000", name="log.segment.bytes",
                       value="1048576")])
    result = create(image, creatable("t", 1, 1), **{"unclean.leader.election.enable": "true"})
    configs = {c.name: (c.value, c.config_source) for c in result.response.topics[0].configs}
    assert configs["retention.ms"] == ("7200000", 3)
    assert configs["segment.bytes"] == ("1048576", 2)
    assert configs["unclean.leader.election.enable"] == ("true", 4)


@pytest.mark.parametrize("name, problem", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("a" * 250, "is longer than the max allowed length 249"),
    ("has space", "contains one or more characters other than ASCII alphanumerics"),
    ("ünï", "contains one or more characters other than ASCII alphanumerics"),
])
def test_invalid_topic_names(name, problem):
    result = create(cluster(THREE), creatable(name, 1, 1))
    code, message = codes(result)[name]
    assert code == E.INVALID_TOPIC_EXCEPTION and problem in message
    assert result.records == ()


def test_249_characters_is_fine():
    assert codes(create(cluster(THREE), creatable("a" * 249, 1, 1)))["a" * 249][0] == E.NONE


def test_existing_topic_and_colliding_names():
    image = create_topic(ctx(cluster(THREE)), "a.b", 1, 1)
    result = create(image, creatable("a.b", 1, 1), creatable("a_b", 1, 1), creatable("ab", 1, 1))
    assert codes(result)["a.b"] == (E.TOPIC_ALREADY_EXISTS, "Topic 'a.b' already exists.")
    assert codes(result)["a_b"] == (E.INVALID_TOPIC_EXCEPTION,
                                    "Topic 'a_b' collides with existing topic: a.b")
    assert codes(result)["ab"][0] == E.NONE
    assert [r.message.name for r in result.records if isinstance(r.message, M.TopicRecord)] == \
        ["ab"]


def test_duplicate_names_and_the_metadata_topic():
    result = create(cluster(THREE), creatable("x", 1, 1), creatable("d", 1, 1),
                    creatable("d", 1, 1), creatable("__cluster_metadata", 1, 1))
    assert [t.name for t in result.response.topics] == ["x", "d", "__cluster_metadata"]
    assert codes(result)["d"] == (E.INVALID_REQUEST, "Duplicate topic name.")
    # ControllerApis#createTopics (4.2.1) prohibits the metadata topic by name
    assert codes(result)["__cluster_metadata"] == (
        E.INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited.")
    assert {r.message.name for r in result.records if isinstance(r.message, M.TopicRecord)} == \
        {"x"}


@pytest.mark.parametrize("partitions, rf, code", [
    (1, 0, E.INVALID_REPLICATION_FACTOR),
    (1, -2, E.INVALID_REPLICATION_FACTOR),
    (0, 1, E.INVALID_PARTITIONS),
    (-5, 1, E.INVALID_PARTITIONS),
    (1, 4, E.INVALID_REPLICATION_FACTOR),
])
def test_bad_counts(partitions, rf, code):
    result = create(cluster(THREE), creatable("t", partitions, rf))
    assert codes(result)["t"][0] == code and result.records == ()


def test_replication_factor_message_names_the_registered_brokers():
    message = codes(create(cluster(THREE), creatable("t", 1, 4)))["t"][1]
    assert message == ("Unable to replicate the partition 4 time(s): The target replication "
                       "factor of 4 cannot be reached because only 3 broker(s) are registered.")


def test_all_fenced_is_invalid_replication_factor():
    result = create(cluster(THREE, fenced=THREE), creatable("t", 1, 1))
    assert codes(result)["t"] == (E.INVALID_REPLICATION_FACTOR, ("Unable to replicate the "
                                  "partition 1 time(s): All brokers are currently fenced."))


def test_fenced_broker_may_be_a_replica_but_not_in_isr():
    image = cluster(THREE, fenced=(2,))
    result = create(image, creatable("t", 6, 3))
    for reg in apply(image, result).topic("t").partitions.values():
        assert 2 in reg.replicas and 2 not in reg.isr and reg.leader != 2


def test_shutting_down_brokers_get_no_new_replicas():
    image = cluster((0, 1, 2, 3))
    image = image.replay([shutting_down(image, 3)])
    result = create(image, creatable("t", 8, 3))
    assert all(3 not in r.replicas for r in apply(image, result).topic("t").partitions.values())
    assert codes(create(image, creatable("u", 1, 4)))["u"][0] == E.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize("configs, fragment", [
    ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
    ({"retention.ms": "soon"}, "Invalid value soon for configuration retention.ms"),
    ({"cleanup.policy": "shred"}, "cleanup.policy"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict topic config"),
    ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
])
def test_invalid_configs(configs, fragment):
    result = create(cluster(THREE), creatable("t", 1, 1, configs=configs), creatable("ok", 1, 1))
    code, message = codes(result)["t"]
    assert code == E.INVALID_CONFIG and fragment in message
    assert codes(result)["ok"][0] == E.NONE
    assert all(getattr(r.message, "name", None) != "t" for r in result.records)


# ---------------------------------------------------------------- manual assignments


def test_manual_assignment():
    image = cluster((0, 1, 2, 3), fenced=(3,))
    result = create(image, creatable("t", assignments={0: [3, 1], 1: [2, 0]}))
    assert codes(result)["t"][0] == E.NONE
    parts = apply(image, result).topic("t").partitions
    assert parts[0].replicas == (3, 1) and parts[0].isr == (1,) and parts[0].leader == 1
    assert parts[1].replicas == (2, 0) and parts[1].leader == 2


@pytest.mark.parametrize("topic, code, fragment", [
    (creatable("t", -1, 2, assignments={0: [0, 1]}), E.INVALID_REQUEST,
     "replication factor was not set to -1"),
    (creatable("t", 1, -1, assignments={0: [0, 1]}), E.INVALID_REQUEST,
     "numPartitions was not set to -1"),
    (creatable("t", assignments={0: []}), E.INVALID_REPLICA_ASSIGNMENT, "empty replica list"),
    (creatable("t", assignments={0: [0, 9]}), E.INVALID_REPLICA_ASSIGNMENT,
     "includes broker 9, but no such broker is registered"),
    (creatable("t", assignments={0: [1, 1]}), E.INVALID_REPLICA_ASSIGNMENT,
     "includes the broker 1 more than once"),
    (creatable("t", assignments={0: [0, 1], 1: [2]}), E.INVALID_REPLICA_ASSIGNMENT,
     ("includes a partition with 1 replica(s), but this is not consistent with previous "
     "partitions, which have 2 replica(s)")),
    (creatable("t", assignments={0: [0], 2: [1]}), E.INVALID_REPLICA_ASSIGNMENT,
     "consecutive 0-based integer sequence"),
    (creatable("t", assignments={0: [3]}), E.INVALID_REPLICA_ASSIGNMENT,
     "are fenced or in controlled shutdown"),
])
def test_manual_assignment_errors(topic, code, fragment):
    result = create(cluster((0, 1, 2, 3), fenced=(3,)), topic)
    got_code, message = codes(result)["t"]
    assert got_code == code and fragment in message and result.records == ()


def test_duplicate_partition_in_manual_assignment():
    CT = M.CreateTopicsRequest
    topic = CT.CreatableTopic(name="t", num_partitions=-1, replication_factor=-1, assignments=[
        CT.CreatableReplicaAssignment(partition_index=0, broker_ids=[0]),
        CT.CreatableReplicaAssignment(partition_index=0, broker_ids=[1])])
    assert codes(create(cluster(THREE), topic))["t"] == (
        E.INVALID_REPLICA_ASSIGNMENT, "Found multiple manual partition assignments for partition 0")


# ---------------------------------------------------------------- DeleteTopics


def two_topics():
    context = ctx(cluster(THREE))
    image = create_topic(context, "a", 2, 3, configs={"retention.ms": "5"})
    return create_topic(with_image(context, image), "b", 1, 3)


def results(result):
    return [(r.name, r.topic_id, r.error_code, r.error_message) for r in result.response.responses]


def test_delete_by_name_v5_and_by_id_v6():
    image = two_topics()
    a, b = image.topic("a").id, image.topic("b").id
    by_name = delete_topics(ctx(image), M.DeleteTopicsRequest(topic_names=["a"]))
    assert results(by_name) == [("a", a, E.NONE, None)]
    after = apply(image, by_name)
    assert after.topic("a") is None and after.topic("b") is not None
    assert after.configs.topic("a") == {}  # configs go with the topic
    by_id = delete_topics(ctx(image), M.DeleteTopicsRequest(
        topics=[M.DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=b)]))
    assert results(by_id) == [("b", b, E.NONE, None)]
    assert by_id.atomic and [type(r.message) for r in by_id.records] == [M.RemoveTopicRecord]


def test_delete_unknown_names_and_ids():
    image = two_topics()
    ghost = Uuid(b"\5" * 16)
    result = delete_topics(ctx(image), M.DeleteTopicsRequest(
        topic_names=["nope"],
        topics=[M.DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=ghost)]))
    assert sorted(results(result), key=str) == sorted([
        ("nope", Uuid.ZERO, E.UNKNOWN_TOPIC_OR_PARTITION, None),
        (None, ghost, E.UNKNOWN_TOPIC_ID, None)], key=str)
    assert result.records == ()


def test_delete_invalid_entries():
    image = two_topics()
    a = image.topic("a").id
    S = M.DeleteTopicsRequest.DeleteTopicState
    result = delete_topics(ctx(image), M.DeleteTopicsRequest(topics=[
        S(name=None, topic_id=Uuid.ZERO), S(name="a", topic_id=a), S(name="b"), S(name="b"),
        S(name=None, topic_id=a), S(name=None, topic_id=a)]))
    got = {(r[0], r[3]) for r in results(result)}
    assert got == {(None, "Neither topic name nor id were specified."),
                   ("a", "You may not specify both topic name and topic id."),
                   ("b", "Duplicate topic name."), (None, "Duplicate topic id.")}
    assert all(r[2] == E.INVALID_REQUEST for r in results(result)) and result.records == ()


def test_name_mapping_to_an_id_already_given():
    image = two_topics()
    a = image.topic("a").id
    result = delete_topics(ctx(image), M.DeleteTopicsRequest(topics=[
        M.DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=a),
        M.DeleteTopicsRequest.DeleteTopicState(name="a")]))
    assert results(result) == [("a", a, E.INVALID_REQUEST,
                                "The provided topic name maps to an ID that was already supplied.")]
    assert result.records == ()


def test_deleting_a_topic_ends_its_reassignment():
    image = create_topic(ctx(cluster((0, 1, 2, 3))), "t", -1, -1, assignments={0: [0, 1]})
    image = apply(image, alter_partition_reassignments(ctx(image), reassign("t", 0, [2, 3])))
    listing = list_partition_reassignments(image, M.ListPartitionReassignmentsRequest())
    assert [t.name for t in listing.topics] == ["t"]
    image = apply(image, delete_topics(ctx(image), M.DeleteTopicsRequest(topic_names=["t"])))
    assert list_partition_reassignments(image, M.ListPartitionReassignmentsRequest()).topics == ()
    recreated = create_topic(ctx(image), "t", 1, 2)
    reg = recreated.topic("t").partitions[0]
    assert reg.adding_replicas == () and reg.removing_replicas == ()


# ---------------------------------------------------------------- CreatePartitions


def grow(image, *topics, validate_only=False, seed=0):
    CP = M.CreatePartitionsRequest
    return create_partitions(ctx(image, seed=seed), CP(topics=[
        CP.CreatePartitionsTopic(name=n, count=c, assignments=None if a is None else [
            CP.CreatePartitionsAssignment(broker_ids=list(b)) for b in a])
        for n, c, a in topics], validate_only=validate_only))


def cp_codes(result):
    return {r.name: (r.error_code, r.error_message) for r in result.response.results}


def test_create_partitions_places_new_partitions():
    image = two_topics()
    result = grow(image, ("a", 5, None))
    assert cp_codes(result) == {"a": (E.NONE, None)}
    after = apply(image, result)
    parts = after.topic("a").partitions
    assert sorted(parts) == [0, 1, 2, 3, 4]
    assert all(len(parts[p].replicas) == 3 and parts[p].isr == parts[p].replicas for p in (2, 3, 4))
    assert [r.message.partition_id for r in result.records] == [2, 3, 4]


def test_create_partitions_manual_and_validate_only():
    image = cluster((0, 1, 2, 3), fenced=(3,))
    image = create_topic(ctx(image), "t", 1, 2)
    result = grow(image, ("t", 3, [[3, 0], [1, 2]]))
    parts = apply(image, result).topic("t").partitions
    assert parts[1].replicas == (3, 0) and parts[1].isr == (0,) and parts[1].leader == 0
    assert parts[2].replicas == (1, 2)
    assert grow(image, ("t", 3, [[3, 0], [1, 2]]), validate_only=True).records == ()


@pytest.mark.parametrize("spec, code, message", [
    (("zzz", 3, None), E.UNKNOWN_TOPIC_OR_PARTITION, None),
    (("a", 2, None), E.INVALID_PARTITIONS, "Topic already has 2 partition(s)."),
    (("a", 1, None), E.INVALID_PARTITIONS,
     "The topic a currently has 2 partition(s); 1 would not be an increase."),
    (("a", 4, [[0, 1, 2]]), E.INVALID_REPLICA_ASSIGNMENT,
     "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
    (("a", 3, [[0, 1]]), E.INVALID_REPLICA_ASSIGNMENT,
     ("The manual partition assignment includes a partition with 2 replica(s), but this is not "
     "consistent with previous partitions, which have 3 replica(s).")),
    (("a", 3, [[0, 1, 7]]), E.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 7, but no such broker is registered."),
])
def test_create_partitions_errors(spec, code, message):
    result = grow(two_topics(), spec)
    assert cp_codes(result)[spec[0]] == (code, message) and result.records == ()


def test_create_partitions_needs_enough_brokers_and_an_active_one():
    image = two_topics()
    fenced = image.replay([fence(image, b) for b in THREE])
    assert cp_codes(grow(fenced, ("b", 2, None)))["b"] == (
        E.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.")
    assert cp_codes(grow(fenced, ("b", 2, [[0, 1, 2]])))["b"][0] == E.INVALID_REPLICA_ASSIGNMENT


def test_create_partitions_duplicate_names():
    result = grow(two_topics(), ("b", 2, None), ("b", 3, None), ("a", 3, None))
    assert [(r.name, r.error_code) for r in result.response.results] == [
        ("b", E.INVALID_REQUEST), ("a", E.NONE)]
