"""IncrementalAlterConfigs and DescribeConfigs against Kafka's controller behaviour."""

from __future__ import annotations

import dataclasses

import pytest
from admin_helpers import (
    APPEND,
    BROKER,
    BROKER_LOGGER,
    DELETE,
    NODE_ID,
    SET,
    SUBTRACT,
    TOPIC,
    alter_configs,
    apply,
    base_image,
    context,
    describe,
    messages,
    op,
    resource,
    roundtrip,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import config_schema as S
from kraft_testkit.controller.configs import (
    ConfigSource,
    describe_configs,
    incremental_alter_configs,
)
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode as E


def run(*resources, image=None, validate_only=False, **kw):
    ctx = context(image)
    result = incremental_alter_configs(ctx, alter_configs(*resources, validate_only=validate_only),
                                       **kw)
    return ctx.image, result


def codes(result) -> list[tuple[int, str, int]]:
    return [(r.resource_type, r.resource_name, r.error_code) for r in result.response.responses]


# ================================================================ alter: operations and records


def test_set_writes_a_config_record_and_replay_applies_it():
    image, result = run(resource(TOPIC, "orders", op("retention.ms", SET, "1000"),
                                 op("cleanup.policy", SET, "compact")))
    assert codes(result) == [(TOPIC, "orders", E.NONE)]
    assert messages(result) == [
        M.ConfigRecord(resource_type=TOPIC, resource_name="orders", name="retention.ms",
                       value="1000"),
        M.ConfigRecord(resource_type=TOPIC, resource_name="orders", name="cleanup.policy",
                       value="compact")]
    after = apply(image, result)
    assert dict(after.configs.topic("orders")) == {"retention.ms": "1000",
                                                  "cleanup.policy": "compact"}


def test_unchanged_topic_value_writes_nothing_but_broker_value_is_rewritten():
    image = apply(base_image(), run(resource(TOPIC, "orders", op("retention.ms", SET, "5")),
                                    resource(BROKER, "", op("log.retention.ms", SET, "9")))[1])
    _, again = run(resource(TOPIC, "orders", op("retention.ms", SET, "5")),
                   resource(BROKER, "", op("log.retention.ms", SET, "9")), image=image)
    assert codes(again) == [(TOPIC, "orders", 0), (BROKER, "", 0)]
    # KAFKA-14136: brokers reload on every broker config record, so Kafka writes it anyway
    assert messages(again) == [M.ConfigRecord(resource_type=BROKER, resource_name="",
                                               name="log.retention.ms", value="9")]
    _, absent = run(resource(BROKER, "2", op("log.roll.ms", DELETE)), image=image)
    assert messages(absent) == [M.ConfigRecord(resource_type=BROKER, resource_name="2",
                                               name="log.roll.ms", value=None)]
    assert apply(image, absent).configs.broker(2) == {}


@pytest.mark.parametrize("operation", [
    op("retention.ms", DELETE), op("retention.ms", SET, None)], ids=["delete", "set-null"])
def test_delete_and_null_value_remove_the_key(operation):
    image = apply(base_image(), run(resource(TOPIC, "orders", op("retention.ms", SET, "5"),
                                             op("segment.ms", SET, "60000")))[1])
    _, result = run(resource(TOPIC, "orders", operation), image=image)
    assert messages(result) == [M.ConfigRecord(resource_type=TOPIC, resource_name="orders",
                                               name="retention.ms", value=None)]
    assert dict(apply(image, result).configs.topic("orders")) == {"segment.ms": "60000"}


def test_delete_of_an_absent_topic_key_writes_nothing():
    _, result = run(resource(TOPIC, "orders", op("retention.ms", DELETE)))
    assert codes(result) == [(TOPIC, "orders", 0)] and result.records == ()


def test_append_starts_from_the_default_and_subtract_removes():
    image, result = run(resource(TOPIC, "orders", op("cleanup.policy", APPEND, "compact")))
    assert messages(result)[0].value == "delete,compact"  # default "delete" kept
    image = apply(image, result)
    _, again = run(resource(TOPIC, "orders", op("cleanup.policy", APPEND, "compact,delete")),
                   image=image)
    assert again.records == ()  # nothing new to append
    _, sub = run(resource(TOPIC, "orders", op("cleanup.policy", SUBTRACT, "delete")), image=image)
    assert messages(sub)[0].value == "compact"
    assert dict(apply(image, sub).configs.topic("orders")) == {"cleanup.policy": "compact"}


def test_append_on_broker_list_key():
    _, result = run(resource(BROKER, "", op("sasl.enabled.mechanisms", APPEND, "PLAIN")))
    assert messages(result)[0].value == "GSSAPI,PLAIN"


@pytest.mark.parametrize("rtype,name,key", [
    (TOPIC, "orders", "retention.ms"), (TOPIC, "orders", "no.such.key"),
    (BROKER, "", "num.io.threads")])
def test_append_or_subtract_on_a_non_list_key_is_invalid_config(rtype, name, key):
    for operation in (APPEND, SUBTRACT):
        _, result = run(resource(rtype, name, op("retention.bytes", SET, "10"),
                                 op(key, operation, "x")))
        assert codes(result) == [(rtype, name, E.INVALID_CONFIG)]
        assert "because its type is not LIST" in result.response.responses[0].error_message
        assert result.records == ()  # the resource is all or nothing


def test_append_to_a_throttled_replica_list_is_validated():
    _, ok = run(resource(TOPIC, "orders",
                         op("leader.replication.throttled.replicas", APPEND, "0:1,0:2")))
    assert messages(ok)[0].value == "0:1,0:2"
    _, bad = run(resource(TOPIC, "orders",
                          op("leader.replication.throttled.replicas", APPEND, "zero")))
    assert codes(bad)[0][2] == E.INVALID_CONFIG


# ================================================================ alter: validation


@pytest.mark.parametrize("key,value", [
    ("no.such.config", "1"),                 # unknown topic key
    ("retention.ms", "soon"),                # not a LONG
    ("retention.ms", "-2"),                  # below -1
    ("min.insync.replicas", "0"),            # below 1
    ("segment.bytes", "99999999999"),        # not an INT
    ("min.cleanable.dirty.ratio", "1.5"),    # outside [0, 1]
    ("cleanup.policy", "compact,shred"),     # not in the list
    ("compression.type", "brotli"),          # not a codec
    ("message.timestamp.type", "createtime"),  # choices are case sensitive
    ("preallocate", "yes"),                  # not a boolean
    ("remote.storage.enable", "true"),       # tiered storage is off in the kit
])
def test_invalid_topic_configs_are_invalid_config(key, value):
    _, result = run(resource(TOPIC, "orders", op(key, SET, value)))
    assert codes(result) == [(TOPIC, "orders", E.INVALID_CONFIG)]
    assert result.records == ()


def test_valid_values_are_accepted_with_kafka_parsing():
    _, result = run(resource(TOPIC, "orders", op("preallocate", SET, " TRUE "),
                             op("retention.ms", SET, "-1"), op("cleanup.policy", SET, ""),
                             op("min.cleanable.dirty.ratio", SET, "0.75")))
    assert codes(result) == [(TOPIC, "orders", 0)] and len(result.records) == 4


def test_cross_key_rule_uses_the_values_already_set():
    image = apply(base_image(), run(resource(TOPIC, "orders",
                                             op("max.compaction.lag.ms", SET, "100")))[1])
    _, result = run(resource(TOPIC, "orders", op("min.compaction.lag.ms", SET, "200")),
                    image=image)
    assert codes(result)[0][2] == E.INVALID_CONFIG
    assert "min.compaction.lag.ms" in result.response.responses[0].error_message


def test_topic_name_and_existence_checks_in_kafka_order():
    _, result = run(resource(TOPIC, "missing", op("retention.ms", SET, "1")),
                    resource(TOPIC, "missing2", op("retention.ms", SET, "nope")),
                    resource(TOPIC, "", op("retention.ms", SET, "1")),
                    resource(TOPIC, "bad/name", op("retention.ms", SET, "1")),
                    resource(TOPIC, "missing3", op("retention.ms", APPEND, "1")))
    assert codes(result) == [(TOPIC, "missing", E.UNKNOWN_TOPIC_OR_PARTITION),
                             (TOPIC, "missing2", E.INVALID_CONFIG),   # values before existence
                             (TOPIC, "", E.INVALID_REQUEST),
                             (TOPIC, "bad/name", E.INVALID_TOPIC_EXCEPTION),
                             (TOPIC, "missing3", E.INVALID_CONFIG)]  # operation first
    assert result.records == ()


@pytest.mark.parametrize("name,code", [
    ("", E.NONE), ("1", E.NONE), ("3", E.NONE), ("+2", E.NONE), ("9", E.BROKER_ID_NOT_REGISTERED),
    ("abc", E.INVALID_REQUEST), ("-1", E.INVALID_REQUEST), (" 1", E.INVALID_REQUEST)])
def test_broker_resource_names(name, code):
    _, result = run(resource(BROKER, name, op("log.retention.ms", SET, "5")))
    assert codes(result) == [(BROKER, name, code)]
    assert len(result.records) == (1 if code == E.NONE else 0)


def test_broker_values_are_not_checked_by_the_controller():
    _, result = run(resource(BROKER, "2", op("made.up.key", SET, "anything")))
    assert codes(result) == [(BROKER, "2", 0)]
    image = apply(base_image(), result)
    assert dict(image.configs.broker(2)) == {"made.up.key": "anything"}


def test_controller_ids_count_as_nodes():
    ctx = context(controller_ids=[3000])
    result = incremental_alter_configs(
        ctx, alter_configs(resource(BROKER, "3000", op("log.retention.ms", SET, "1"))))
    assert result.response.responses[0].error_code == 0


def test_duplicate_resources_and_unknown_types():
    _, result = run(resource(TOPIC, "orders", op("retention.ms", SET, "1")),
                    resource(TOPIC, "payments", op("retention.ms", SET, "2")),
                    resource(TOPIC, "orders", op("retention.ms", SET, "3")),
                    resource(TOPIC, "orders", op("retention.ms", SET, "4")),
                    resource(3, "x", op("a", SET, "b")),
                    resource(16, "subscription", op("interval.ms", SET, "1000")))
    assert codes(result) == [(TOPIC, "orders", E.INVALID_REQUEST),
                             (TOPIC, "payments", 0),
                             (3, "x", E.UNSUPPORTED_VERSION),
                             (16, "subscription", E.INVALID_REQUEST)]
    assert [m.resource_name for m in messages(result)] == ["payments"]


def test_last_operation_on_a_key_wins():
    _, result = run(resource(TOPIC, "orders", op("retention.ms", SET, "1"),
                             op("retention.ms", SET, "2")))
    assert [m.value for m in messages(result)] == ["2"]


def test_unknown_operation_fails_the_resource():
    _, result = run(resource(TOPIC, "orders", op("retention.ms", 9, "1")))
    assert codes(result) == [(TOPIC, "orders", E.INVALID_REQUEST)]


def test_validate_only_answers_without_records():
    _, result = run(resource(TOPIC, "orders", op("retention.ms", SET, "1")),
                    resource(TOPIC, "orders2", op("retention.ms", SET, "1")), validate_only=True)
    assert codes(result) == [(TOPIC, "orders", 0), (TOPIC, "orders2", E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert result.records == ()


def test_the_image_is_not_mutated():
    image, result = run(resource(TOPIC, "orders", op("retention.ms", SET, "1")))
    assert image.configs.topic("orders") == {}
    assert result.atomic


@pytest.mark.parametrize("ops,code", [
    ([op("root", SET, "DEBUG"), op("kafka.server", SET, "TRACE")], E.NONE),
    ([op("kafka.server", DELETE)], E.NONE),
    ([op("root", SET, "LOUD")], E.INVALID_CONFIG),
    ([op("com.example", SET, "INFO")], E.INVALID_CONFIG),
    ([op("root", DELETE)], E.INVALID_REQUEST),
    ([op("root", APPEND, "INFO")], E.INVALID_REQUEST),
    ([op("root", SUBTRACT, "INFO")], E.INVALID_REQUEST),
    ([op("root", 7, "INFO")], E.INVALID_REQUEST),
])
def test_broker_logger_changes_are_checked_never_written(ops, code):
    _, result = run(resource(BROKER_LOGGER, str(NODE_ID), *ops))
    assert codes(result) == [(BROKER_LOGGER, str(NODE_ID), code)]
    assert result.records == ()


@pytest.mark.parametrize("name", ["2", "", "x"])
def test_broker_logger_must_name_this_node(name):
    _, result = run(resource(BROKER_LOGGER, name, op("root", SET, "INFO")))
    assert codes(result) == [(BROKER_LOGGER, name, E.INVALID_REQUEST)]


def test_custom_logger_registry():
    _, result = run(resource(BROKER_LOGGER, str(NODE_ID), op("com.example", SET, "INFO")),
                    logger_exists=lambda name: True)
    assert codes(result)[0][2] == 0


@pytest.mark.parametrize("version", [0, 1])
def test_responses_encode(version):
    _, result = run(resource(TOPIC, "orders", op("retention.ms", SET, "1")),
                    resource(TOPIC, "", op("retention.ms", SET, "1")))
    assert roundtrip(result.response, version) == result.response


ITEMS = st.sampled_from(["0:1", "0:2", "1:1", "1:3", "2:2", "*"])


@settings(max_examples=60, deadline=None)
@given(start=st.lists(ITEMS, unique=True, max_size=4), add=st.lists(ITEMS, min_size=1, max_size=4),
       remove=st.lists(ITEMS, min_size=1, max_size=4))
def test_append_then_subtract_properties(start, add, remove):
    key = "follower.replication.throttled.replicas"
    base = base_image()
    if start:
        base = base.replay([M.ConfigRecord(resource_type=TOPIC, resource_name="orders", name=key,
                                           value=",".join(start))])
    _, appended = run(resource(TOPIC, "orders", op(key, APPEND, ",".join(add))), image=base)
    expected = list(start) + [i for i in dict.fromkeys(add) if i not in start]
    valid = expected == ["*"] or "*" not in expected
    if not valid:
        assert appended.response.responses[0].error_code == E.INVALID_CONFIG
        return
    image = apply(base, appended)
    value = image.configs.topic("orders").get(key, "")
    assert (value.split(",") if value else []) == expected
    assert len(set(expected)) == len(expected)  # APPEND never duplicates
    _, subtracted = run(resource(TOPIC, "orders", op(key, SUBTRACT, ",".join(remove))),
                        image=image)
    after = apply(image, subtracted).configs.topic("orders").get(key, "")
    left = [i for i in expected if i not in remove]
    assert (after.split(",") if after else []) == left


# ================================================================ describe


def entries(response, index: int = 0) -> dict[str, object]:
    return {e.name: e for e in response.results[index].configs}


def test_describe_topic_defaults():
    response = describe_configs(base_image(), describe(TOPIC, "orders", synonyms=True),
                                node_id=NODE_ID)
    result = response.results[0]
    assert result.error_code == 0
    got = entries(response)
    assert set(got) == set(S.TOPIC_CONFIGS)
    retention = got["retention.ms"]
    assert (retention.value, retention.config_source) == ("604800000", ConfigSource.DEFAULT_CONFIG)
    assert retention.synonyms == ()  # Kafka drops log.retention.hours: it is not the primary
    segment = got["segment.bytes"]
    assert [(s.name, s.value, s.source) for s in segment.synonyms] == [
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)]
    assert got["cleanup.policy"].config_type == S.ConfigType.LIST
    assert got["min.cleanable.dirty.ratio"].value == "0.5"
    assert got["follower.replication.throttled.replicas"].synonyms == ()
    assert all(not e.read_only and not e.is_sensitive for e in got.values())


def test_describe_topic_sources_follow_kafka_precedence():
    image = base_image().replay([
        M.ConfigRecord(resource_type=TOPIC, resource_name="orders", name="cleanup.policy",
                       value="compact, delete"),
        M.ConfigRecord(resource_type=BROKER, resource_name="", name="log.retention.ms",
                       value="3600000"),
        M.ConfigRecord(resource_type=BROKER, resource_name="", name="log.segment.bytes",
                       value="2000000"),
        M.ConfigRecord(resource_type=BROKER, resource_name=str(NODE_ID), name="log.segment.bytes",
                       value="3000000"),
        M.ConfigRecord(resource_type=BROKER, resource_name="", name="log.roll.hours", value="2"),
    ])
    got = entries(describe_configs(image, describe(TOPIC, "orders", synonyms=True),
                                   node_id=NODE_ID))
    policy = got["cleanup.policy"]
    assert (policy.value, policy.config_source) == ("compact,delete", ConfigSource.TOPIC_CONFIG)
    assert [(s.name, s.source) for s in policy.synonyms] == [
        ("cleanup.policy", ConfigSource.TOPIC_CONFIG),
        ("log.cleanup.policy", ConfigSource.DEFAULT_CONFIG)]
    retention = got["retention.ms"]
    assert (retention.value, retention.config_source) == (
        "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [s.name for s in retention.synonyms] == ["log.retention.ms", "log.retention.hours"]
    segment = got["segment.bytes"]
    assert (segment.value, segment.config_source) == ("3000000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert [s.source for s in segment.synonyms] == [
        ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG]
    # a non-primary synonym sets the value but, as in Kafka, leaves no synonym and no source
    roll = got["segment.ms"]
    assert (roll.value, roll.config_source, roll.synonyms) == (
        "7200000", ConfigSource.DEFAULT_CONFIG, ())


def test_describe_static_config_and_key_filter_and_docs():
    config = dataclasses.replace(NodeConfig(), unclean_leader_election_enable=True,
                                 num_partitions=3)
    response = describe_configs(base_image(), describe(
        TOPIC, "orders", ["unclean.leader.election.enable", "nope"], docs=True),
        node_id=NODE_ID, config=config)
    got = entries(response)
    assert list(got) == ["unclean.leader.election.enable"]
    entry = got["unclean.leader.election.enable"]
    assert (entry.value, entry.config_source) == ("true", ConfigSource.STATIC_BROKER_CONFIG)
    assert entry.synonyms == () and entry.documentation
    broker = entries(describe_configs(base_image(), describe(BROKER, str(NODE_ID)),
                                      node_id=NODE_ID, config=config))
    assert (broker["num.partitions"].value, broker["num.partitions"].config_source,
            broker["num.partitions"].read_only) == ("3", ConfigSource.STATIC_BROKER_CONFIG, True)


def test_describe_brokers():
    image = base_image().replay([
        M.ConfigRecord(resource_type=BROKER, resource_name="", name="log.retention.ms",
                       value="100"),
        M.ConfigRecord(resource_type=BROKER, resource_name="", name="made.up", value="x"),
        M.ConfigRecord(resource_type=BROKER, resource_name=str(NODE_ID), name="log.retention.ms",
                       value="200")])
    cluster = entries(describe_configs(image, describe(BROKER, "", synonyms=True),
                                       node_id=NODE_ID))
    assert set(cluster) == {"log.retention.ms", "made.up"}
    assert (cluster["log.retention.ms"].value, cluster["log.retention.ms"].config_source) == (
        "100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [s.source for s in cluster["log.retention.ms"].synonyms] == [
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    assert cluster["made.up"].config_type == S.ConfigType.UNKNOWN
    mine = entries(describe_configs(image, describe(BROKER, str(NODE_ID), synonyms=True),
                                    node_id=NODE_ID))
    assert (mine["log.retention.ms"].value, mine["log.retention.ms"].config_source) == (
        "200", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert not mine["log.retention.ms"].read_only and mine["log.retention.hours"].read_only
    assert mine["log.retention.hours"].value == "168"
    assert mine["log.retention.minutes"].value is None


@pytest.mark.parametrize("rtype,name,code", [
    (TOPIC, "missing", E.UNKNOWN_TOPIC_OR_PARTITION), (TOPIC, "", E.INVALID_TOPIC_EXCEPTION),
    (TOPIC, "a" * 250, E.INVALID_TOPIC_EXCEPTION), (TOPIC, "..", E.INVALID_TOPIC_EXCEPTION),
    (BROKER, "2", E.INVALID_REQUEST), (BROKER, "one", E.INVALID_REQUEST),
    (BROKER_LOGGER, "", E.INVALID_REQUEST), (BROKER_LOGGER, "2", E.INVALID_REQUEST),
    (16, "subscription", E.INVALID_REQUEST)])
def test_describe_errors(rtype, name, code):
    response = describe_configs(base_image(), describe(rtype, name), node_id=NODE_ID)
    assert [(r.error_code, r.configs) for r in response.results] == [(code, ())]


def test_describe_unknown_type_fails_every_resource():
    request = M.DescribeConfigsRequest(resources=[
        M.DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC,
                                                         resource_name="orders"),
        M.DescribeConfigsRequest.DescribeConfigsResource(resource_type=99, resource_name="x")])
    response = describe_configs(base_image(), request, node_id=NODE_ID)
    assert [r.error_code for r in response.results] == [E.INVALID_REQUEST] * 2


def test_describe_broker_logger():
    got = entries(describe_configs(base_image(), describe(BROKER_LOGGER, str(NODE_ID)),
                                   node_id=NODE_ID))
    assert got["root"].config_source == ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG


@pytest.mark.parametrize("version", range(5))
def test_describe_response_encodes(version):
    image = base_image().replay([M.ConfigRecord(resource_type=TOPIC, resource_name="orders",
                                                name="retention.ms", value="1")])
    response = describe_configs(image, describe(TOPIC, "orders", synonyms=True, docs=True),
                                node_id=NODE_ID, version=version)
    decoded = roundtrip(response, version)
    assert [e.name for e in decoded.results[0].configs] == sorted(S.TOPIC_CONFIGS)
    defaults = {e.name for e in decoded.results[0].configs if e.is_default}
    assert defaults == (set(S.TOPIC_CONFIGS) - {"retention.ms"} if version == 0 else set())
