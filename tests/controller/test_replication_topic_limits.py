"""Kafka 4.2.1's bounds on one topic request (ReplicationControlManager#
validateTotalNumberOfPartitions, QuorumController.MAX_RECORDS_PER_USER_OP) and the records a
topic created with min.insync.replicas writes (ConfigurationControlManager#incrementalAlterConfig
adds a ClearElrRecord)."""

from __future__ import annotations

import pytest
from replication_helpers import apply, cluster, creatable, create_request, ctx

from kraft_testkit.cluster import Cluster
from kraft_testkit.controller.topics import create_partitions, create_topics
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.error_codes import KafkaApiError

TOO_MANY = "Excessively large number of partitions per request."
TOO_LARGE_BATCH = "Unable to perform excessively large batch operation."


def answers(result):
    return [(t.name, t.error_code, t.error_message) for t in result.response.topics]


@pytest.mark.parametrize("validate_only", [False, True])
def test_over_ten_thousand_partitions_fail_every_topic(validate_only):
    image = cluster((0, 1, 2))
    result = create_topics(ctx(image), create_request(
        creatable("a", 5000, 1), creatable("b", 5000, 1), creatable("c", 1, 1),
        creatable("c", 1, 1), creatable("__cluster_metadata", 1, 1), creatable("e", 1, 1),
        validate_only=validate_only))
    assert result.records == ()
    assert answers(result) == [(n, E.POLICY_VIOLATION, TOO_MANY)
                               for n in ("a", "b", "c", "c", "__cluster_metadata", "e")]


def test_duplicates_and_the_metadata_topic_do_not_count():
    image = cluster((0, 1, 2))
    result = create_topics(ctx(image), create_request(
        creatable("a", 5000, 1), creatable("b", 4990, 1), creatable("c", 1, 1),
        creatable("c", 1, 1), creatable("__cluster_metadata", 1, 1), validate_only=True))
    assert [a[1] for a in answers(result)] == [E.NONE, E.NONE, E.INVALID_REQUEST,
                                               E.INVALID_REQUEST]


def test_exactly_ten_thousand_partitions_pass_the_count_check():
    """10,000 is allowed by the count; -1 counts num.partitions; a bad count counts nothing;
    manual assignments count by their number. The records' own bound (10,000 a request) then
    refuses this one: 1 TopicRecord + 10,000 PartitionRecords."""
    image = cluster((0,))
    ok = create_topics(ctx(image), create_request(creatable("a", 9_997, 1), creatable("b"),
                                                  creatable("c", -5, 1),
                                                  creatable("d", assignments={0: [0], 1: [0]})))
    assert answers(ok)[0][1] == E.POLICY_VIOLATION and answers(ok)[0][2] == TOO_LARGE_BATCH
    assert ok.records == ()
    small = create_topics(ctx(image), create_request(creatable("a", 9_999, 1)))
    assert small.response.topics[0].error_code == E.NONE
    assert len(small.records) == 10_000


def test_huge_partition_counts_are_refused_before_anything_is_placed():
    image = cluster((0, 1, 2))
    result = create_topics(ctx(image), create_request(creatable("a", 2**31 - 1, 3)))
    assert answers(result) == [("a", E.POLICY_VIOLATION, TOO_MANY)]


def test_create_partitions_past_the_record_bound_keeps_what_fit():
    """Kafka's bounded record list: the topic that passes 10,000 records answers
    UNKNOWN_SERVER_ERROR (no message) and the partitions written before it stay in the batch;
    a huge count is never placed in full."""
    image = cluster((0,))
    image = apply(image, create_topics(ctx(image), create_request(creatable("t", 1, 1))))
    CP = M.CreatePartitionsRequest
    result = create_partitions(ctx(image), CP(topics=[
        CP.CreatePartitionsTopic(name="t", count=2**31 - 1, assignments=None)]))
    assert [(r.name, r.error_code, r.error_message) for r in result.response.results] == \
        [("t", E.UNKNOWN_SERVER_ERROR, None)]
    assert len(result.records) == 10_000
    assert [r.message.partition_id for r in result.records[:2]] == [1, 2]


def test_from_the_python_api_the_error_is_typed():
    c = Cluster(1, 1, seed=3)
    with pytest.raises(KafkaApiError) as e:
        c.create_topic("huge", partitions=10**6, replication_factor=1)
    assert (e.value.name, e.value.message) == ("POLICY_VIOLATION", TOO_MANY)
    with pytest.raises(KafkaApiError) as e:
        c.create_topic("huge", partitions=2**31 - 1, replication_factor=1, validate_only=True)
    assert e.value.name == "POLICY_VIOLATION"
    assert c.metadata.topic("huge") is None
    c.create_topic("fine", partitions=3, replication_factor=1)
    assert len(c.metadata.topic("fine").partitions) == 3


def test_a_topic_with_min_insync_replicas_clears_its_elrs():
    """TopicRecord, its ConfigRecords (in the HashMap order of their names), a ClearElrRecord
    naming the topic, then the PartitionRecords; none without ELR."""
    image = cluster((0, 1, 2)).replay([M.FeatureLevelRecord(
        name="eligible.leader.replicas.version", feature_level=1)])
    configs = {"retention.ms": "1000", "min.insync.replicas": "2", "cleanup.policy": "compact"}
    result = create_topics(ctx(image), create_request(creatable("t", 2, 3, configs=configs)))
    kinds = [type(r.message).__name__ for r in result.records]
    assert kinds == ["TopicRecord", "ConfigRecord", "ConfigRecord", "ConfigRecord",
                     "ClearElrRecord", "PartitionRecord", "PartitionRecord"]
    # a JVM's HashMap of these three keys iterates them in this order
    assert [r.message.name for r in result.records[1:4]] == [
        "cleanup.policy", "min.insync.replicas", "retention.ms"]
    assert result.records[4].message.topic_name == "t"
    without_elr = cluster((0, 1, 2))  # eligible.leader.replicas.version 0
    result = create_topics(ctx(without_elr), create_request(creatable("t", 1, 3,
                                                                      configs=configs)))
    assert "ClearElrRecord" not in [type(r.message).__name__ for r in result.records]
