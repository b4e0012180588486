"""Kafka's dynamic configuration keys that the controller knows: types, defaults, checks.

Released Kafka validates topic configs against ``LogConfig`` (every key must be a known topic key,
every value must parse as the key's type and pass its range or choice check) and knows broker
configs from ``KafkaConfig``. This module carries the same facts for the keys the kit needs: all
topic keys of Kafka 3.7 and the broker keys they fall back to, plus a few common broker settings.
Values are parsed the way Kafka's ``ConfigDef`` parses strings (trimmed; lists split on commas),
and printed back the way ``ConfigDef.convertToString`` prints them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from ..metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class ConfigType(IntEnum):
    """DescribeConfigs' ConfigType ids (Kafka's ``DescribeConfigsResponse.ConfigType``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class InvalidConfigValue(ValueError):
    """A value that does not parse or fails its check (the caller answers INVALID_CONFIG)."""


# ---------------------------------------------------------------- checks

Check = Callable[[Any], "str | None"]  # returns why the parsed value is refused, or None


def at_least(low: int) -> Check:
    return lambda v: None if v >= low else f"Value must be at least {low}"


def between(low: float, high: float) -> Check:
    return lambda v: None if low <= v <= high else f"Value must be between {low} and {high}"


def one_of(*choices: str) -> Check:
    allowed = ", ".join(choices)
    return lambda v: None if v in choices else f"String must be one of: {allowed}"


def each_one_of(*choices: str) -> Check:
    allowed = ", ".join(choices)

    def check(items: list[str]) -> str | None:
        bad = [i for i in items if i not in choices]
        return f"Each element must be one of: {allowed}" if bad else None
    return check


_REPLICA = re.compile(r"[0-9]+:[0-9]+")


def throttled_replicas(items: list[str]) -> str | None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` alone, or partition:broker pairs."""
    if items == ["*"] or all(_REPLICA.fullmatch(i) for i in items):
        return None
    return "must be the literal '*' or a list of replicas as partitionId:brokerId pairs"


_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?")


def message_format_version(value: str) -> str | None:
    return None if _VERSION.fullmatch(value) else "not a Kafka version such as 3.0-IV1"


# ---------------------------------------------------------------- parsing


def parse_value(name: str, type_: ConfigType, raw: str) -> Any:
    """A config string as Kafka's ``ConfigDef.parseType`` reads it (raises InvalidConfigValue)."""
    text = raw.strip()
    if type_ is ConfigType.BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise _invalid(name, raw, "Expected value to be either true or false")
    if type_ in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        low, high = (LONG_MIN, LONG_MAX) if type_ is ConfigType.LONG else (INT_MIN, INT_MAX)
        if type_ is ConfigType.SHORT:
            low, high = -(2**15), 2**15 - 1
        if re.fullmatch(r"[+-]?[0-9]+", text) and low <= int(text) <= high:
            return int(text)
        raise _invalid(name, raw, f"Not a number of type {type_.name}")
    if type_ is ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            raise _invalid(name, raw, "Not a number of type DOUBLE") from None
    if type_ is ConfigType.LIST:
        return [] if not text else [part.strip() for part in text.split(",")]
    return text


def to_string(type_: ConfigType, value: Any) -> str:
    """A parsed value printed back (Kafka's ``ConfigDef.convertToString``)."""
    if type_ is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if type_ is ConfigType.LIST:
        return ",".join(value)
    if type_ is ConfigType.DOUBLE:
        return repr(float(value))
    return str(value)


def _invalid(name: str, raw: str, why: str) -> InvalidConfigValue:
    return InvalidConfigValue(f"Invalid value {raw} for configuration {name}: {why}")


# ---------------------------------------------------------------- keys


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker key a topic key falls back to; ``scale`` turns its unit into the topic key's
    (``log.retention.hours`` counts hours, ``retention.ms`` milliseconds)."""

    name: str
    scale: int = 1


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One key: its type, Kafka's default (as a string, None when Kafka has none), the check of
    its parsed value, and for topic keys the broker synonyms in Kafka's order of precedence.
    ``dynamic`` (broker keys) says whether Kafka lets it change at run time (not read-only)."""

    name: str
    type: ConfigType
    default: str | None
    check: Check | None = None
    synonyms: tuple[Synonym, ...] = ()
    dynamic: bool = True
    doc: str = ""

    def parse(self, raw: str) -> Any:
        value = parse_value(self.name, self.type, raw)
        why = self.check(value) if self.check is not None else None
        if why is not None:
            raise _invalid(self.name, raw, why)
        return value


def _topic(name: str, type_: ConfigType, default: str | None, check: Check | None,
           *synonyms: str | Synonym, doc: str) -> ConfigKey:
    syn = tuple(s if isinstance(s, Synonym) else Synonym(s) for s in synonyms)
    return ConfigKey(name, type_, default, check, syn, True, doc)


T = ConfigType
_MAX = str(LONG_MAX)
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

#: Every topic-level key of Kafka 3.7 (``TopicConfig``), with LogConfig's default and check.
TOPIC_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in (
    _topic("cleanup.policy", T.LIST, "delete", each_one_of("compact", "delete"),
           "log.cleanup.policy", doc="Whether old segments are deleted, compacted, or both."),
    _topic("compression.type", T.STRING, "producer", one_of(*_COMPRESSION), "compression.type",
           doc="Codec of stored batches; 'producer' keeps what the producer sent."),
    _topic("delete.retention.ms", T.LONG, "86400000", at_least(0),
           "log.cleaner.delete.retention.ms", doc="How long tombstones survive compaction."),
    _topic("file.delete.delay.ms", T.LONG, "60000", at_least(0), "log.segment.delete.delay.ms",
           doc="Wait before a deleted segment's files are removed."),
    _topic("flush.messages", T.LONG, _MAX, at_least(1), "log.flush.interval.messages",
           doc="Messages between forced fsyncs."),
    _topic("flush.ms", T.LONG, _MAX, at_least(0), "log.flush.interval.ms",
           "log.flush.scheduler.interval.ms", doc="Time between forced fsyncs."),
    _topic("follower.replication.throttled.replicas", T.LIST, "", throttled_replicas,
           doc="Replicas whose follower fetches are throttled."),
    _topic("index.interval.bytes", T.INT, "4096", at_least(0), "log.index.interval.bytes",
           doc="Bytes between offset index entries."),
    _topic("leader.replication.throttled.replicas", T.LIST, "", throttled_replicas,
           doc="Replicas whose leader-side replication is throttled."),
    _topic("local.retention.bytes", T.LONG, "-2", at_least(-2), "log.local.retention.bytes",
           doc="Local bytes kept when tiered storage is on (-2: follow retention.bytes)."),
    _topic("local.retention.ms", T.LONG, "-2", at_least(-2), "log.local.retention.ms",
           doc="Local time kept when tiered storage is on (-2: follow retention.ms)."),
    _topic("max.compaction.lag.ms", T.LONG, _MAX, at_least(1),
           "log.cleaner.max.compaction.lag.ms", doc="Longest a message stays uncompacted."),
    _topic("max.message.bytes", T.INT, "1048588", at_least(0), "message.max.bytes",
           doc="Largest record batch the topic accepts."),
    _topic("message.downconversion.enable", T.BOOLEAN, "true", None,
           "log.message.downconversion.enable", doc="Whether old consumers get converted batches."),
    _topic("message.format.version", T.STRING, "3.0-IV1", message_format_version,
           "log.message.format.version", doc="Deprecated; ignored from 3.0-IV1 on."),
    _topic("message.timestamp.after.max.ms", T.LONG, _MAX, at_least(0),
           "log.message.timestamp.after.max.ms", doc="How far ahead a record timestamp may be."),
    _topic("message.timestamp.before.max.ms", T.LONG, _MAX, at_least(0),
           "log.message.timestamp.before.max.ms", doc="How far behind a record timestamp may be."),
    _topic("message.timestamp.difference.max.ms", T.LONG, _MAX, at_least(0),
           "log.message.timestamp.difference.max.ms", doc="Deprecated timestamp skew bound."),
    _topic("message.timestamp.type", T.STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
           "log.message.timestamp.type", doc="Which time a record's timestamp means."),
    _topic("min.cleanable.dirty.ratio", T.DOUBLE, "0.5", between(0, 1),
           "log.cleaner.min.cleanable.ratio", doc="Dirty share that makes a log worth cleaning."),
    _topic("min.compaction.lag.ms", T.LONG, "0", at_least(0), "log.cleaner.min.compaction.lag.ms",
           doc="Shortest a message stays uncompacted."),
    _topic("min.insync.replicas", T.INT, "1", at_least(1), "min.insync.replicas",
           doc="In-sync replicas an acks=all write needs."),
    _topic("preallocate", T.BOOLEAN, "false", None, "log.preallocate",
           doc="Whether segment files are preallocated."),
    _topic("remote.storage.enable", T.BOOLEAN, "false", None,
           doc="Whether the topic uses tiered storage."),
    _topic("retention.bytes", T.LONG, "-1", None, "log.retention.bytes",
           doc="Bytes kept per partition before old segments go (-1: no limit)."),
    _topic("retention.ms", T.LONG, "604800000", at_least(-1), "log.retention.ms",
           Synonym("log.retention.minutes", 60_000), Synonym("log.retention.hours", 3_600_000),
           doc="Time a segment is kept (-1: forever)."),
    _topic("segment.bytes", T.INT, "1073741824", at_least(14), "log.segment.bytes",
           doc="Size at which a segment rolls."),
    _topic("segment.index.bytes", T.INT, "10485760", at_least(4), "log.index.size.max.bytes",
           doc="Size of a segment's offset index."),
    _topic("segment.jitter.ms", T.LONG, "0", at_least(0), "log.roll.jitter.ms",
           Synonym("log.roll.jitter.hours", 3_600_000), doc="Random jitter on segment rolls."),
    _topic("segment.ms", T.LONG, "604800000", at_least(1), "log.roll.ms",
           Synonym("log.roll.hours", 3_600_000), doc="Time after which a segment rolls."),
    _topic("unclean.leader.election.enable", T.BOOLEAN, "false", None,
           "unclean.leader.election.enable", doc="Whether an out-of-sync replica may lead."),
)}


def _broker(name: str, type_: ConfigType, default: str | None, check: Check | None = None, *,
            dynamic: bool = True, doc: str = "") -> ConfigKey:
    return ConfigKey(name, type_, default, check, (), dynamic, doc)


#: Broker keys: the topic keys' synonyms (dynamic cluster-wide, as Kafka's DynamicLogConfig,
#: except the minutes/hours variants and the message format) and some common settings.
BROKER_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in (
    _broker("auto.create.topics.enable", T.BOOLEAN, "true", dynamic=False),
    _broker("background.threads", T.INT, "10", at_least(1)),
    _broker("compression.type", T.STRING, "producer", one_of(*_COMPRESSION)),
    _broker("default.replication.factor", T.INT, "1", dynamic=False),
    _broker("delete.topic.enable", T.BOOLEAN, "true", dynamic=False),
    _broker("log.cleaner.delete.retention.ms", T.LONG, "86400000", at_least(0)),
    _broker("log.cleaner.max.compaction.lag.ms", T.LONG, _MAX, at_least(1)),
    _broker("log.cleaner.min.cleanable.ratio", T.DOUBLE, "0.5", between(0, 1)),
    _broker("log.cleaner.min.compaction.lag.ms", T.LONG, "0", at_least(0)),
    _broker("log.cleaner.threads", T.INT, "1", at_least(0)),
    _broker("log.cleanup.policy", T.LIST, "delete", each_one_of("compact", "delete")),
    _broker("log.flush.interval.messages", T.LONG, _MAX, at_least(1)),
    _broker("log.flush.interval.ms", T.LONG, None),
    _broker("log.flush.scheduler.interval.ms", T.LONG, _MAX, dynamic=False),
    _broker("log.index.interval.bytes", T.INT, "4096", at_least(0)),
    _broker("log.index.size.max.bytes", T.INT, "10485760", at_least(4)),
    _broker("log.local.retention.bytes", T.LONG, "-2", at_least(-2)),
    _broker("log.local.retention.ms", T.LONG, "-2", at_least(-2)),
    _broker("log.message.downconversion.enable", T.BOOLEAN, "true"),
    _broker("log.message.format.version", T.STRING, "3.0-IV1", message_format_version,
            dynamic=False),
    _broker("log.message.timestamp.after.max.ms", T.LONG, _MAX, at_least(0)),
    _broker("log.message.timestamp.before.max.ms", T.LONG, _MAX, at_least(0)),
    _broker("log.message.timestamp.difference.max.ms", T.LONG, _MAX, at_least(0)),
    _broker("log.message.timestamp.type", T.STRING, "CreateTime",
            one_of("CreateTime", "LogAppendTime")),
    _broker("log.preallocate", T.BOOLEAN, "false"),
    _broker("log.retention.bytes", T.LONG, "-1"),
    _broker("log.retention.hours", T.INT, "168", dynamic=False),
    _broker("log.retention.minutes", T.INT, None, dynamic=False),
    _broker("log.retention.ms", T.LONG, None),
    _broker("log.roll.hours", T.INT, "168", at_least(1), dynamic=False),
    _broker("log.roll.jitter.hours", T.INT, "0", at_least(0), dynamic=False),
    _broker("log.roll.jitter.ms", T.LONG, None),
    _broker("log.roll.ms", T.LONG, None),
    _broker("log.segment.bytes", T.INT, "1073741824", at_least(14)),
    _broker("log.segment.delete.delay.ms", T.LONG, "60000", at_least(0)),
    _broker("message.max.bytes", T.INT, "1048588", at_least(0)),
    _broker("min.insync.replicas", T.INT, "1", at_least(1)),
    _broker("num.io.threads", T.INT, "8", at_least(1)),
    _broker("num.network.threads", T.INT, "3", at_least(1)),
    _broker("num.partitions", T.INT, "1", at_least(1), dynamic=False),
    _broker("sasl.enabled.mechanisms", T.LIST, "GSSAPI"),
    _broker("unclean.leader.election.enable", T.BOOLEAN, "false"),
)}

#: Broker keys that name the same setting in other units (Kafka's ``brokerConfigSynonyms``).
BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_synonyms(name: str) -> tuple[str, ...]:
    for group in BROKER_SYNONYM_GROUPS:
        if name in group:
            return group
    return (name,)


def schema_for(resource_type: int) -> Mapping[str, ConfigKey]:
    if resource_type == TOPIC_RESOURCE:
        return TOPIC_CONFIGS
    if resource_type == BROKER_RESOURCE:
        return BROKER_CONFIGS
    return {}


def is_list(resource_type: int, name: str) -> bool:
    """Whether APPEND / SUBTRACT apply (Kafka's ``KafkaConfigSchema.isSplittable``)."""
    key = schema_for(resource_type).get(name)
    return key is not None and key.type is ConfigType.LIST


def default_of(resource_type: int, name: str) -> str | None:
    key = schema_for(resource_type).get(name)
    return None if key is None else key.default


# ---------------------------------------------------------------- topic validation


def validate_topic_configs(configs: Mapping[str, str], *, remote_storage: bool = False) -> None:
    """Kafka's ``LogConfig.validate`` for the configs a topic would have after a change:
    unknown names, unparsable or out-of-range values, then the cross-key rules. Raises
    InvalidConfigValue with Kafka's kind of message."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigValue(f"Unknown topic config name: {name}")
    parsed = {name: TOPIC_CONFIGS[name].parse(raw) for name, raw in configs.items()}
    min_lag = parsed.get("min.compaction.lag.ms", 0)
    max_lag = parsed.get("max.compaction.lag.ms", LONG_MAX)
    if min_lag > max_lag:
        raise InvalidConfigValue(
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
            f"max.compaction.lag.ms ({max_lag})")
    if parsed.get("remote.storage.enable") and not remote_storage:
        raise InvalidConfigValue(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
            "with remote log storage.")


_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME = 249


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, or None: 4.2.1 ``Topic#validate`` (its
    ``detectInvalidTopic`` reasons, lengths in UTF-16 units as Java counts them)."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name.encode("utf-16-le")) // 2 > MAX_TOPIC_NAME:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME}"
    elif not _LEGAL_TOPIC.fullmatch(name):
        reason = (f"'{name}' contains one or more characters other than ASCII alphanumerics, "
                  "'.', '_' and '-'")
    return None if reason is None else f"Topic name is invalid: {reason}"


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_java_int(text: str) -> int | None:
    """``Integer.parseInt``: an optional sign and digits, within int32; None otherwise."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if INT_MIN <= value <= INT_MAX else None
