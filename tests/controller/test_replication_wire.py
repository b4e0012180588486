"""Responses and records of the replication commands survive Kafka's wire format at every
version that can carry them (fields a version lacks are dropped, never an encoding error)."""

from __future__ import annotations

import pytest
from replication_helpers import (
    alter_isr,
    apply,
    cluster,
    creatable,
    create_request,
    create_topic,
    ctx,
    elect,
    reassign,
)

from kraft_testkit.controller import replication as R
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import MetadataRecord


def roundtrip(message, version):
    decoded = type(message).decode(message.encode(version), version)
    return decoded


@pytest.fixture(scope="module")
def image():
    return create_topic(ctx(cluster((0, 1, 2, 3))), "t", 3, 3)


@pytest.mark.parametrize("version", range(8))
def test_create_topics_response(image, version):
    result = R.create_topics(ctx(image), create_request(creatable("new", 2, 2),
                                                       creatable("t", 1, 1)))
    decoded = roundtrip(result.response, version)
    assert [t.error_code for t in decoded.topics] == [0, 36]
    if version >= 5:
        assert decoded.topics[0].num_partitions == 2 and decoded.topics[0].configs
    if version >= 7:
        assert decoded.topics[0].topic_id == result.response.topics[0].topic_id


@pytest.mark.parametrize("version", range(6))
def test_delete_topics_response_by_name(image, version):
    result = R.delete_topics(ctx(image), M.DeleteTopicsRequest(topic_names=["t", "nope"]))
    assert [r.error_code for r in roundtrip(result.response, version).responses] == [3, 0]


def test_delete_topics_response_by_id(image):
    result = R.delete_topics(ctx(image), M.DeleteTopicsRequest(
        topics=[M.DeleteTopicsRequest.DeleteTopicState(topic_id=image.topic("t").id)]))
    assert roundtrip(result.response, 6).responses[0].name == "t"


@pytest.mark.parametrize("version", range(4))
def test_create_partitions_response(image, version):
    CP = M.CreatePartitionsRequest
    result = R.create_partitions(ctx(image), CP(topics=[
        CP.CreatePartitionsTopic(name="t", count=5, assignments=None),
        CP.CreatePartitionsTopic(name="zz", count=5, assignments=None)]))
    # results in Java HashSet order of the names, as ControllerApis answers: "zz" before "t"
    assert [(r.name, r.error_code) for r in roundtrip(result.response, version).results] == \
        [("zz", 3), ("t", 0)]


@pytest.mark.parametrize("version", range(3))
def test_elect_leaders_response(image, version):
    result = R.elect_leaders(ctx(image), elect(R.ELECTION_PREFERRED, {"t": [0, 1]}))
    decoded = roundtrip(result.response, version)
    assert [p.error_code for p in decoded.replica_election_results[0].partition_result] == [84, 84]


def test_reassignment_responses(image):
    result = R.alter_partition_reassignments(ctx(image), reassign("t", 0, [3, 2, 1]))
    assert roundtrip(result.response, 0) == result.response
    after = apply(image, result)
    listing = R.list_partition_reassignments(after, M.ListPartitionReassignmentsRequest())
    assert roundtrip(listing, 0) == listing


def test_records_encode_at_their_versions(image):
    records: list[MetadataRecord] = []
    records += R.create_topics(ctx(image), create_request(
        creatable("x", 2, 3, configs={"retention.ms": "9"}))).records
    records += R.alter_partition(ctx(image), alter_isr(image, "t", 0, [
        image.topic("t").partitions[0].leader])).records
    records += R.handle_broker_fenced(ctx(image), 0)
    assert records
    for rec in records:
        assert roundtrip(rec.message, rec.version) == rec.message
