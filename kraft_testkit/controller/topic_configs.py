"""The configs a topic sees: CreateTopics' validation, its v5+ config listing, and the per-topic
``unclean.leader.election.enable`` that elections read.

The key table and value checks are :mod:`.config_schema`'s (Kafka 3.7's LogConfig). A topic's
effective value resolves as Kafka's ``KafkaConfigSchema.resolveEffectiveTopicConfig``: the topic's
own config, else a broker synonym set dynamically for the controller node, else for the whole
cluster (broker resource ""), else the node's static config, else Kafka's default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..config import NodeConfig
from ..metadata import MetadataImage
from ..protocol.error_codes import ErrorCode, KafkaApiError
from . import config_schema as S


class ConfigSource:
    """DescribeConfigs' ConfigSource ids, as CreateTopics v5+ reports them."""

    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class InvalidConfig(KafkaApiError):
    """Topic configs Kafka would refuse (INVALID_CONFIG)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_CONFIG, message)


def validate_new_topic_configs(configs: Mapping[str, str]) -> None:
    """Raise InvalidConfig as Kafka's creation path would: ``incrementalAlterConfig``'s value
    size bound (in request order, as its records), then LogConfig validation."""
    for value in configs.values():
        if len(value.encode("utf-16-le")) // 2 > 32767:
            raise InvalidConfig("The configuration value cannot be added because it exceeds the "
                                "maximum value size of 32767 bytes.")
    try:
        S.validate_topic_configs(configs)
    except S.InvalidConfigValue as e:
        raise InvalidConfig(str(e)) from None


@dataclass(frozen=True, slots=True)
class EffectiveConfig:
    name: str
    value: str | None
    source: int
    read_only: bool = False
    sensitive: bool = False


def _static_node_config(config: NodeConfig) -> dict[str, str]:
    """Topic-config synonyms the kit's NodeConfig holds, as a server.properties would list them
    (only where they differ from Kafka's default: an unset key is not a static config)."""
    out = {"unclean.leader.election.enable": "true"} \
        if config.unclean_leader_election_enable else {}
    if config.min_insync_replicas != 1:
        out["min.insync.replicas"] = str(config.min_insync_replicas)
    return out


def _resolve(key: S.ConfigKey, topic: Mapping[str, str],
             layers: Iterable[tuple[Mapping[str, str], int]]) -> EffectiveConfig:
    if key.name in topic:
        return EffectiveConfig(key.name, topic[key.name], ConfigSource.TOPIC_CONFIG)
    for configs, source in layers:
        for synonym in key.synonyms:
            raw = configs.get(synonym.name)
            if raw is not None:
                value = S.parse_java_int(raw.strip()) if synonym.scale != 1 else None
                return EffectiveConfig(key.name, raw if value is None
                                       else str(value * synonym.scale), source)
    return EffectiveConfig(key.name, key.default, ConfigSource.DEFAULT_CONFIG)


def _layers(image: MetadataImage, config: NodeConfig, node_id: int
            ) -> tuple[tuple[Mapping[str, str], int], ...]:
    return ((image.configs.broker(node_id), ConfigSource.DYNAMIC_BROKER_CONFIG),
            (image.configs.broker(""), ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (_static_node_config(config), ConfigSource.STATIC_BROKER_CONFIG))


def effective_topic_configs(image: MetadataImage, config: NodeConfig, node_id: int,
                            topic_configs: Mapping[str, str]) -> list[EffectiveConfig]:
    """Every topic config key, by name, with the value a topic holding ``topic_configs`` sees."""
    layers = _layers(image, config, node_id)
    return [_resolve(S.TOPIC_CONFIGS[name], topic_configs, layers)
            for name in sorted(S.TOPIC_CONFIGS)]


def topic_config(image: MetadataImage, config: NodeConfig, node_id: int, topic: str,
                 name: str) -> str | None:
    """The effective value of one config of an existing topic."""
    return _resolve(S.TOPIC_CONFIGS[name], image.configs.topic(topic),
                    _layers(image, config, node_id)).value


def unclean_leader_election_enabled(image: MetadataImage, config: NodeConfig, node_id: int,
                                    topic: str) -> bool:
    """Kafka's ``uncleanLeaderElectionEnabledForTopic``."""
    value = topic_config(image, config, node_id, topic, "unclean.leader.election.enable")
    return value is not None and value.strip().lower() == "true"


def min_insync_replicas(image: MetadataImage, config: NodeConfig, node_id: int, topic: str) -> int:
    """The effective min.insync.replicas of a topic (Kafka's ``getTopicConfig``), which ELR
    compares the ISR with."""
    value = topic_config(image, config, node_id, topic, "min.insync.replicas")
    try:
        return max(1, int(value)) if value is not None else 1
    except ValueError:
        return 1
