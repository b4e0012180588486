"""Controller and broker settings under Kafka's configuration names, with Kafka's released defaults.

The seeds (KIP-631 drafts) used other defaults (broker.session.timeout.ms 18000,
broker.heartbeat.interval.ms 3000); ``NodeConfig.from_kafka(..., seed_defaults=True)`` gives those.
Broker self-fencing is the seed document's proposal (KIP-343), which released Kafka did not ship:
released brokers keep serving until the controller fences them and they learn it from the metadata
log. It is off by default and turned on by ``testkit.broker.self.fencing.enable`` (the
``Cluster(broker_self_fencing=True)`` keyword). ``broker.heartbeat.timeout.ms`` is its broker-side
timeout: a broker that cannot reach the active controller for that long fences itself. It must
exceed the controller's session timeout so a broker never fences itself before the controller
would; unless set, it is twice ``broker.session.timeout.ms``.
Raft settings (``controller.quorum.*``) live in :mod:`kraft_testkit.raft.config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from .errors import ConfigError

_INT_MAX = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """Everything a controller or broker reads, by attribute; build with :meth:`from_kafka`."""

    # controller side
    broker_session_timeout_ms: int = 9000
    metadata_max_idle_interval_ms: int = 500
    snapshot_max_new_record_bytes: int = 20 * 1024 * 1024
    snapshot_max_interval_ms: int = 60 * 60 * 1000
    num_partitions: int = 1
    default_replication_factor: int = 1
    unclean_leader_election_enable: bool = False
    unclean_leader_election_interval_ms: int = 300_000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    unstable_feature_versions_enable: bool = False
    min_insync_replicas: int = 1
    # broker side
    broker_heartbeat_interval_ms: int = 2000
    broker_heartbeat_timeout_ms: int = 18000
    initial_broker_registration_timeout_ms: int = 60000
    replica_lag_time_max_ms: int = 30000
    replica_fetch_backoff_ms: int = 1000
    controlled_shutdown_enable: bool = True
    broker_self_fencing: bool = False  # KIP-343, the seeds' proposal; not released Kafka
    broker_reregister_on_stale_epoch: bool = False
    # the lowest metadata.version a node announces: Kafka 4.x's MINIMUM_VERSION (3.3-IV3); a
    # Cluster formatted below it (the kit's 3.x emulation) lowers it to 3.0-IV1
    supported_metadata_version_min: int = 7
    # group coordinator (the gateway's): the __consumer_offsets topic it creates
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    # transaction coordinator (the gateway's): __transaction_state and the timeout bound
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_max_timeout_ms: int = 900_000
    # KIP-848 consumer groups (the gateway's group coordinator)
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_assignors: str = "uniform,range"

    @classmethod
    def from_kafka(cls, overrides: Mapping[str, object] | None = None, *,
                   seed_defaults: bool = False) -> "NodeConfig":
        """Defaults (released Kafka's, or the seeds') with ``overrides`` by Kafka name."""
        base = cls(broker_session_timeout_ms=18000, broker_heartbeat_interval_ms=3000,
                   broker_heartbeat_timeout_ms=36000) if seed_defaults else cls()
        values = {}
        for key, raw in (overrides or {}).items():
            spec = KEYS.get(key)
            if spec is None:
                raise ConfigError(f"unknown configuration key {key!r}; known keys: "
                                  f"{', '.join(sorted(KEYS))}")
            attr, kind, low = spec
            values[attr] = _bool(key, raw) if kind is bool else _str(key, raw) if kind is str \
                else _int(key, raw, low)
        if "broker_heartbeat_timeout_ms" in values and not values.get(
                "broker_self_fencing", base.broker_self_fencing):
            raise ConfigError(
                "broker.heartbeat.timeout.ms is the timeout of KIP-343 broker self-fencing, the "
                "seeds' proposal that released Kafka did not ship; it takes effect only with "
                "self-fencing on: Cluster(broker_self_fencing=True) or "
                "testkit.broker.self.fencing.enable=true")
        if "broker_heartbeat_timeout_ms" not in values:  # follows the session timeout unless set
            session = values.get("broker_session_timeout_ms", base.broker_session_timeout_ms)
            values["broker_heartbeat_timeout_ms"] = min(2 * session, _INT_MAX)
        config = replace(base, **values)
        config.validate()
        return config

    def validate(self) -> None:
        for key, (attr, kind, low) in KEYS.items():
            value = getattr(self, attr)
            _bool(key, value) if kind is bool else _str(key, value) if kind is str \
                else _int(key, value, low)
        if self.broker_heartbeat_timeout_ms <= self.broker_session_timeout_ms:
            raise ConfigError(
                f"broker.heartbeat.timeout.ms ({self.broker_heartbeat_timeout_ms}) must be greater "
                f"than broker.session.timeout.ms ({self.broker_session_timeout_ms}): a broker must "
                "not fence itself before the controller would (KIP-343)")
        if self.broker_heartbeat_interval_ms >= self.broker_session_timeout_ms:
            raise ConfigError(
                f"broker.heartbeat.interval.ms ({self.broker_heartbeat_interval_ms}) must be less "
                f"than broker.session.timeout.ms ({self.broker_session_timeout_ms})")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ConfigError(  # Kafka's GroupCoordinatorConfig requires the same
                "group.consumer.heartbeat.interval.ms must be less than "
                "group.consumer.session.timeout.ms")
        unknown = [n.strip() for n in self.group_consumer_assignors.split(",")
                   if n.strip() and n.strip() not in ("uniform", "range")]
        if unknown or not self.group_consumer_assignors.strip():
            raise ConfigError(f"group.consumer.assignors names the kit's server assignors "
                              f"(uniform, range), got {self.group_consumer_assignors!r}")

    def to_kafka(self) -> dict[str, object]:
        return {key: getattr(self, attr) for key, (attr, _, _) in KEYS.items()}


#: Kafka name -> (attribute, type, smallest allowed value)
KEYS: dict[str, tuple[str, type, int]] = {
    "broker.session.timeout.ms": ("broker_session_timeout_ms", int, 1),
    "metadata.max.idle.interval.ms": ("metadata_max_idle_interval_ms", int, 0),
    "metadata.log.max.record.bytes.between.snapshots": ("snapshot_max_new_record_bytes", int, 1),
    "metadata.log.max.snapshot.interval.ms": ("snapshot_max_interval_ms", int, 0),
    "num.partitions": ("num_partitions", int, 1),
    "default.replication.factor": ("default_replication_factor", int, 1),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", bool, 0),
    "unclean.leader.election.interval.ms": ("unclean_leader_election_interval_ms", int, 1),
    "auto.leader.rebalance.enable": ("auto_leader_rebalance_enable", bool, 0),
    "leader.imbalance.check.interval.seconds": ("leader_imbalance_check_interval_seconds", int, 1),
    "unstable.feature.versions.enable": ("unstable_feature_versions_enable", bool, 0),
    "min.insync.replicas": ("min_insync_replicas", int, 1),
    "broker.heartbeat.interval.ms": ("broker_heartbeat_interval_ms", int, 1),
    "broker.heartbeat.timeout.ms": ("broker_heartbeat_timeout_ms", int, 1),
    "initial.broker.registration.timeout.ms": ("initial_broker_registration_timeout_ms", int, 1),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", int, 1),
    "replica.fetch.backoff.ms": ("replica_fetch_backoff_ms", int, 0),
    "controlled.shutdown.enable": ("controlled_shutdown_enable", bool, 0),
    "testkit.broker.self.fencing.enable": ("broker_self_fencing", bool, 0),
    # the kit's own switch (not a Kafka key): re-register on STALE_BROKER_EPOCH
    "testkit.broker.reregister.on.stale.epoch": ("broker_reregister_on_stale_epoch", bool, 0),
    # the kit's own key (not Kafka's): the floor of the metadata.version range nodes announce
    "testkit.supported.metadata.version.min": ("supported_metadata_version_min", int, 1),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", int, 1),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", int, 1),
    "transaction.state.log.num.partitions": ("transaction_state_log_num_partitions", int, 1),
    "transaction.state.log.replication.factor": ("transaction_state_log_replication_factor",
                                                 int, 1),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", int, 1),
    "group.consumer.session.timeout.ms": ("group_consumer_session_timeout_ms", int, 1),
    "group.consumer.heartbeat.interval.ms": ("group_consumer_heartbeat_interval_ms", int, 1),
    "group.consumer.assignors": ("group_consumer_assignors", str, 0),
}
assert {a for a, _, _ in KEYS.values()} == {f.name for f in fields(NodeConfig)}


def _int(key: str, raw: object, low: int) -> int:
    value = raw
    if type(raw) is str and raw.strip().lstrip("-").isdigit():
        value = int(raw)
    if type(value) is not int or not low <= value <= _INT_MAX:
        raise ConfigError(f"{key} must be an integer in [{low}, {_INT_MAX}], got {raw!r}")
    return value


def _str(key: str, raw: object) -> str:
    if isinstance(raw, (list, tuple)):
        raw = ",".join(str(v) for v in raw)
    if not isinstance(raw, str):
        raise ConfigError(f"{key} must be a string, got {raw!r}")
    return raw


def _bool(key: str, raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise ConfigError(f"{key} must be true or false, got {raw!r}")
