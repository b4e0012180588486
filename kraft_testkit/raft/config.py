"""The replica's settings, under Kafka's configuration names, with Kafka's released defaults.

Kafka's Raft client hard-codes a few values that tests want to turn; those take a name here too:
``replica.fetch.wait.max.ms`` (Kafka's broker key whose default, 500, equals the Raft client's fixed
fetch wait) and two ``testkit.raft.*`` keys for fetch sizes, so snapshots can be sent in small
chunks. ``testkit.raft.pre.vote.enable`` (default true, as Kafka 4.0+ runs KIP-996 pre-vote) set
to false gives the elections of Kafka 3.x, where a voter that times out stands at once.
``controller.quorum.auto.join.enable`` (Kafka 4.2, default false): with kraft.version 1 a
controller that observes the log asks the leader to add it as a voter (docs/kip-853.md).
The metadata log's files follow Kafka's ``metadata.log.segment.bytes`` (at least 8 MiB, as 4.2's
``MetadataLogConfig`` validates it; the internal ``internal.metadata.log.segment.bytes``, "only for
testing" and unchecked, replaces it when set, as ``KafkaMetadataLog.apply`` does),
``metadata.log.segment.ms``, ``metadata.max.retention.bytes`` and ``.ms``; ``log.index.interval.bytes`` and ``log.index.size.max.bytes`` set the index interval
and size (Kafka's metadata log always runs with the topic defaults, 4096 and 10 MiB), and
``testkit.raft.log.clean.interval.ms`` how often retention runs (Kafka's Raft client: a minute).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from kraft_testkit.errors import ConfigError
from kraft_testkit.raft.segments import LogConfig

MiB = 1 << 20


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Timeouts in virtual milliseconds; sizes in bytes. Build with :meth:`from_kafka` to validate."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    append_linger_ms: int = 25
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 8 * MiB
    fetch_snapshot_max_bytes: int = 8 * MiB
    pre_vote: bool = True  # KIP-996 (Kafka 4.0+); off gives Kafka 3.x elections
    log_time_base_ms: int = 0  # batch timestamps = this + virtual time (Cluster: a real instant)
    auto_join: bool = False  # KIP-853, Kafka 4.2: an observing controller adds itself
    # the metadata log's files (Kafka's MetadataLogConfig; raft/segments.py, raft/log.py)
    segment_bytes: int = 1 << 30
    internal_segment_bytes: int | None = None  # Kafka 4.1+: replaces segment_bytes, for tests
    segment_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096
    index_max_bytes: int = 10 * MiB
    retention_bytes: int = 100 * MiB
    retention_ms: int = 7 * 24 * 3600 * 1000
    log_clean_interval_ms: int = 60_000

    @classmethod
    def from_kafka(cls, overrides: Mapping[str, object] | None = None) -> RaftConfig:
        """Defaults with ``overrides`` applied, by Kafka name; a bad key or value raises ConfigError."""
        values: dict[str, int] = {}
        for key, raw in (overrides or {}).items():
            spec = KEYS.get(key)
            if spec is None:
                raise ConfigError(f"unknown Raft configuration key {key!r}{removed_hint(key)}; "
                                  f"known keys: {', '.join(sorted(KEYS))}")
            attr, low = spec
            values[attr] = _bool(key, raw) if attr in BOOLS else _int_at_least(key, raw, low)
        config = cls(**values)
        return config

    def log_config(self) -> LogConfig:
        """What :class:`~kraft_testkit.raft.log.RaftLog` follows: the internal segment size wins
        when set (Kafka's ``KafkaMetadataLog.apply`` and ``LogConfig#segmentSize``)."""
        segment_bytes = (self.segment_bytes if self.internal_segment_bytes is None
                         else self.internal_segment_bytes)
        return LogConfig(segment_bytes, self.segment_ms, self.index_interval_bytes,
                         self.index_max_bytes, self.retention_bytes, self.retention_ms)

    def to_kafka(self) -> dict[str, int]:
        """Every set setting under its Kafka name (what :meth:`from_kafka` accepts)."""
        return {key: getattr(self, attr) for key, (attr, _) in KEYS.items()
                if getattr(self, attr) is not None}

    def __post_init__(self) -> None:
        for key, (attr, low) in KEYS.items():
            value = getattr(self, attr)
            if attr in BOOLS:
                _bool(key, value)
            elif value is not None or attr not in OPTIONAL:
                _int_at_least(key, value, low)


#: Kafka name -> (attribute, smallest allowed value)
KEYS: dict[str, tuple[str, int]] = {
    "controller.quorum.election.timeout.ms": ("election_timeout_ms", 1),
    "controller.quorum.fetch.timeout.ms": ("fetch_timeout_ms", 1),
    "controller.quorum.election.backoff.max.ms": ("election_backoff_max_ms", 1),
    "controller.quorum.request.timeout.ms": ("request_timeout_ms", 1),
    "controller.quorum.retry.backoff.ms": ("retry_backoff_ms", 0),
    "controller.quorum.append.linger.ms": ("append_linger_ms", 0),
    "replica.fetch.wait.max.ms": ("fetch_max_wait_ms", 0),
    "testkit.raft.fetch.max.bytes": ("fetch_max_bytes", 1),
    "testkit.raft.fetch.snapshot.max.bytes": ("fetch_snapshot_max_bytes", 1),
    "testkit.raft.pre.vote.enable": ("pre_vote", 0),
    "testkit.log.time.base.ms": ("log_time_base_ms", 0),
    "controller.quorum.auto.join.enable": ("auto_join", 0),
    "metadata.log.segment.bytes": ("segment_bytes", 8 * MiB),  # MetadataLogConfig: atLeast(8 MiB)
    "internal.metadata.log.segment.bytes": ("internal_segment_bytes", -(1 << 31)),  # no validator
    "metadata.log.segment.ms": ("segment_ms", 1),
    "log.index.interval.bytes": ("index_interval_bytes", 0),
    "log.index.size.max.bytes": ("index_max_bytes", 4),
    "metadata.max.retention.bytes": ("retention_bytes", -1),
    "metadata.max.retention.ms": ("retention_ms", -1),
    "testkit.raft.log.clean.interval.ms": ("log_clean_interval_ms", 1),
}
BOOLS = {"pre_vote", "auto_join"}
OPTIONAL = {"internal_segment_bytes"}  # Kafka: default null, unset unless given
#: keys Kafka once had and removed, with what replaces them (for the unknown-key error)
REMOVED = {"metadata.log.segment.min.bytes":
           "removed in Kafka 4.1 (KAFKA-19080): set internal.metadata.log.segment.bytes "
           "for small test segments"}


def removed_hint(key: str) -> str:
    """`` (why it is gone)`` for a key Kafka removed, else empty."""
    return f" ({REMOVED[key]})" if key in REMOVED else ""
assert {a for a, _ in KEYS.values()} == {f.name for f in fields(RaftConfig)}
_LONG_KEYS = frozenset({"testkit.log.time.base.ms", "metadata.log.segment.ms",
                        "metadata.max.retention.bytes", "metadata.max.retention.ms"})  # epoch milliseconds: a Java long
_LONG_MAX = (1 << 63) - 1


def _int_at_least(key: str, raw: object, low: int) -> int:
    high = _LONG_MAX if key in _LONG_KEYS else 0x7FFFFFFF
    value = raw
    if type(raw) is str and raw.strip().lstrip("-").isdigit():
        value = int(raw)
    if type(value) is not int or value < low or value > high:
        raise ConfigError(
            f"{key} must be an integer in [{low}, {high}], got {raw!r}")
    return value


def _bool(key: str, raw: object) -> bool:
    if type(raw) is bool:
        return raw
    if type(raw) is str and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise ConfigError(f"{key} must be true or false, got {raw!r}")
