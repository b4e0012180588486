"""The real-Kafka twin: scenario runner and comparison (in-process on both sides here), and the
real side when a Docker engine (or KRAFT_TWIN_BOOTSTRAP) is there."""

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError
from kraft_testkit.twin import (AlterTopicConfig, CreateTopic, DeleteTopic, Describe,
                                InProcessBackend, RealKafkaUnavailable, compare, run_scenario,
                                start_real_kafka)

SCENARIO = [
    CreateTopic("orders", 3, 1),
    CreateTopic("orders", 3, 1),                     # TOPIC_ALREADY_EXISTS
    CreateTopic("empty", 0, 1),                      # INVALID_PARTITIONS
    CreateTopic("wide", 1, 3),                       # INVALID_REPLICATION_FACTOR on one broker
    AlterTopicConfig("orders", "retention.ms", "60000"),
    AlterTopicConfig("ghost", "retention.ms", "1"),  # UNKNOWN_TOPIC_OR_PARTITION
    AlterTopicConfig("orders", "no.such.key", "1"),  # INVALID_CONFIG
    CreateTopic("compacted", 2, 1, {"cleanup.policy": "compact"}),
    Describe(),
    DeleteTopic("orders"),
    DeleteTopic("orders"),                           # UNKNOWN_TOPIC_OR_PARTITION
    Describe(),
]


def _outcomes(obs):
    return [o for _, o in obs.outcomes]


def test_two_faithful_clusters_look_the_same_to_a_client():
    combined = run_scenario(InProcessBackend(Cluster(1, 1, combined=True, seed=1)), SCENARIO)
    separate = run_scenario(InProcessBackend(Cluster(3, 1, seed=2), "3 controllers + 1 broker"),
                            SCENARIO)
    assert compare(combined, separate) == []
    got = _outcomes(combined)
    assert got[:8] == ["NONE", "TOPIC_ALREADY_EXISTS", "INVALID_PARTITIONS",
                       "INVALID_REPLICATION_FACTOR", "NONE", "UNKNOWN_TOPIC_OR_PARTITION",
                       "INVALID_CONFIG", "NONE"]
    assert got[8] == {"brokers": 1,
                      "topics": {"compacted": {"partitions": 2, "replication_factor": [1],
                                               "leaders_live": True, "isr_full": True},
                                 "orders": {"partitions": 3, "replication_factor": [1],
                                            "leaders_live": True, "isr_full": True}},
                      "configs": {"compacted": {"cleanup.policy": "compact"},
                                  "orders": {"retention.ms": "60000"}}}
    assert got[9:11] == ["NONE", "UNKNOWN_TOPIC_OR_PARTITION"]
    assert set(got[11]["topics"]) == {"compacted"}


def test_compare_names_every_difference_a_client_would_see():
    one = run_scenario(InProcessBackend(Cluster(1, 1, combined=True, seed=1), "one"), SCENARIO)
    three = run_scenario(InProcessBackend(Cluster(1, 3, seed=1), "three"), SCENARIO)
    diffs = compare(one, three)
    assert "step 4 CreateTopic(name='wide', partitions=1, replication_factor=3, configs={}): " \
           "one 'INVALID_REPLICATION_FACTOR', three 'NONE'" in diffs
    assert "step 9 Describe().brokers: one 1, three 3" in diffs
    assert any(d.startswith("step 9 Describe().topics.wide: one '<absent>'") for d in diffs)
    assert len(diffs) == 5


def test_confluent_kafka_errors_map_to_kafka_names():
    confluent = pytest.importorskip("confluent_kafka")
    from kraft_testkit.twin import error_name

    assert error_name(confluent.KafkaError(36)) == "TOPIC_ALREADY_EXISTS"
    assert error_name(confluent.KafkaError(37)) == "INVALID_PARTITIONS"
    assert error_name(confluent.KafkaError(-195)) == "CLIENT__TRANSPORT"


def test_a_bad_step_is_a_config_error():
    with pytest.raises(ConfigError, match="a scenario step is CreateTopic"):
        run_scenario(InProcessBackend(Cluster(1, 1, combined=True, seed=1)), ["create orders"])


def test_without_an_engine_the_reason_is_one_line(monkeypatch):
    monkeypatch.delenv("KRAFT_TWIN_BOOTSTRAP", raising=False)
    try:
        kafka = start_real_kafka()
    except RealKafkaUnavailable as why:
        assert "\n" not in str(why) and ("Docker" in str(why) or "testcontainers" in str(why))
    else:  # an engine answered: that is the other test's business
        kafka.stop()
        pytest.skip("a Docker engine is present here")


def test_the_in_process_cluster_matches_a_real_kafka(real_kafka):
    ours = run_scenario(InProcessBackend(Cluster(1, 1, combined=True, seed=1)), SCENARIO)
    theirs = run_scenario(real_kafka.backend(), SCENARIO)
    assert compare(ours, theirs) == []
