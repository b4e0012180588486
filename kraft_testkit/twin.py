"""A real Kafka twin: run one scripted scenario on the in-process cluster and on a real Kafka,
and compare what a client can see (brokers, topics, partitions, leaders, configs, error codes).

    scenario = [CreateTopic("orders", 3, 1), CreateTopic("orders", 3, 1),   # the 2nd must fail
                AlterTopicConfig("orders", "retention.ms", "60000"), Describe()]
    ours = run_scenario(InProcessBackend(Cluster(1, 1, combined=True)), scenario)
    theirs = run_scenario(KafkaAdminBackend(real_kafka.bootstrap), scenario)
    assert compare(ours, theirs) == []

What is compared is what a client sees, normalised so that two faithful clusters agree: error
code *names* (not messages), broker counts (not ids: Kafka's image numbers its node 1, ours 0),
per-topic partition counts and replication factors, whether every partition has a live leader in
its replica set and a full ISR, and the values of the configs the scenario touched.

The real side speaks to Kafka through confluent-kafka's AdminClient. :func:`start_real_kafka`
starts the ``apache/kafka`` image (KRaft, one combined node) through testcontainers, or uses
``KRAFT_TWIN_BOOTSTRAP=host:port``; without either it raises :class:`RealKafkaUnavailable` with
one line saying why (the ``real_kafka`` fixture turns that into a skip). Everything heavy is
imported lazily (``pip install 'kraft-testkit[twin]'``).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import ConfigError, KraftError
from .protocol.error_codes import ErrorCode, KafkaApiError

DEFAULT_IMAGE = "apache/kafka:4.1.0"
SETTLE_MS = 10_000  # how long a describe waits for leaders and ISRs to settle


class RealKafkaUnavailable(KraftError):
    """No real Kafka can be had here (no Docker engine, no testcontainers...): says which."""


# ------------------------------------------------------------------------------ scenario steps

@dataclass(frozen=True)
class CreateTopic:
    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DeleteTopic:
    name: str


@dataclass(frozen=True)
class AlterTopicConfig:
    name: str
    key: str
    value: str


@dataclass(frozen=True)
class Describe:
    """What a client sees now: brokers, topics (all but internal ones), touched configs."""


Step = CreateTopic | DeleteTopic | AlterTopicConfig | Describe


class Backend(Protocol):
    """One side of the twin: the operations a scenario uses, answered as a client sees them."""

    name: str

    def create_topic(self, step: CreateTopic) -> str: ...          # error code name or NONE
    def delete_topic(self, step: DeleteTopic) -> str: ...
    def alter_topic_config(self, step: AlterTopicConfig) -> str: ...
    def describe(self, config_keys: dict[str, set[str]],
                 expected: set[str]) -> dict[str, Any]: ...


@dataclass
class Observation:
    """``(step, outcome)`` for each step of a run, from one backend."""

    backend: str
    outcomes: list[tuple[str, Any]] = field(default_factory=list)


def run_scenario(backend: Backend, scenario: Sequence[Step]) -> Observation:
    """Run ``scenario`` on ``backend``; every step's outcome is recorded, errors included."""
    touched: dict[str, set[str]] = {}
    expected: set[str] = set()  # topics the scenario made (describe waits for them to settle)
    obs = Observation(backend.name)
    for n, step in enumerate(scenario, 1):
        label = f"step {n} {step!r}"
        if isinstance(step, CreateTopic):
            outcome: Any = backend.create_topic(step)
            if outcome == "NONE":
                expected.add(step.name)
                if step.configs:
                    touched.setdefault(step.name, set()).update(step.configs)
        elif isinstance(step, DeleteTopic):
            outcome = backend.delete_topic(step)
            if outcome == "NONE":
                touched.pop(step.name, None)
                expected.discard(step.name)
        elif isinstance(step, AlterTopicConfig):
            outcome = backend.alter_topic_config(step)
            if outcome == "NONE":
                touched.setdefault(step.name, set()).add(step.key)
        elif isinstance(step, Describe):
            outcome = backend.describe({t: set(k) for t, k in touched.items()}, set(expected))
        else:
            raise ConfigError(f"{label}: a scenario step is CreateTopic, DeleteTopic, "
                              f"AlterTopicConfig or Describe, got {type(step).__name__}")
        obs.outcomes.append((label, outcome))
    return obs


def compare(ours: Observation, theirs: Observation) -> list[str]:
    """Every place the two runs differ, one line each (empty when a client could not tell)."""
    diffs = []
    if len(ours.outcomes) != len(theirs.outcomes):
        diffs.append(f"{ours.backend} ran {len(ours.outcomes)} steps, {theirs.backend} "
                     f"{len(theirs.outcomes)}")
    for (label, a), (_, b) in zip(ours.outcomes, theirs.outcomes):
        for path, x, y in _differences(a, b, ""):
            diffs.append(f"{label}{path}: {ours.backend} {x!r}, {theirs.backend} {y!r}")
    return diffs


def _differences(a: Any, b: Any, path: str):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                yield f"{path}.{key}", a.get(key, "<absent>"), b.get(key, "<absent>")
            else:
                yield from _differences(a[key], b[key], f"{path}.{key}")
    elif a != b:
        yield path, a, b


def summarise(brokers: int, topics: dict[str, list[tuple[int, Sequence[int], Sequence[int]]]],
              live: set[int], configs: dict[str, dict[str, str | None]]) -> dict[str, Any]:
    """The normalised view: ``topics`` maps a name to ``(leader, replicas, isr)`` per partition."""
    view: dict[str, Any] = {"brokers": brokers, "topics": {}}
    for name, parts in sorted(topics.items()):
        view["topics"][name] = {
            "partitions": len(parts),
            "replication_factor": sorted({len(r) for _, r, _ in parts}),
            "leaders_live": all(leader in live and leader in replicas
                                for leader, replicas, _ in parts),
            "isr_full": all(set(isr) == set(replicas) for _, replicas, isr in parts),
        }
    if configs:
        view["configs"] = {t: dict(sorted(c.items())) for t, c in sorted(configs.items())}
    return view


def _settled(view: dict[str, Any], expected: set[str]) -> bool:
    """Metadata propagates to brokers a little later in both worlds: wait until the topics the
    scenario expects (and only those) are listed with live leaders and full ISRs."""
    return set(view["topics"]) == expected and all(
        t["leaders_live"] and t["isr_full"] for t in view["topics"].values())


# ------------------------------------------------------------------------------ in-process side

class InProcessBackend:
    """The scenario on a :class:`~kraft_testkit.cluster.Cluster`, through its admin client and
    a broker's MetadataResponse (what a Kafka client reads)."""

    def __init__(self, cluster: Any, name: str = "in-process") -> None:
        self.cluster = cluster
        self.name = name

    def _call(self, fn: Any) -> str:
        try:
            fn()
        except KafkaApiError as e:
            return e.name
        return "NONE"

    def create_topic(self, step: CreateTopic) -> str:
        return self._call(lambda: self.cluster.create_topic(
            step.name, step.partitions, step.replication_factor, configs=step.configs or None))

    def delete_topic(self, step: DeleteTopic) -> str:
        return self._call(lambda: self.cluster.delete_topic(step.name))

    def alter_topic_config(self, step: AlterTopicConfig) -> str:
        return self._call(lambda: self.cluster.alter_configs(topic=step.name,
                                                             set={step.key: step.value}))

    def _view(self, config_keys: dict[str, set[str]]) -> dict[str, Any]:
        c = self.cluster
        live = [b for b in c.broker_ids if c.broker(b) is not None]
        if not live:  # what a client sees when no broker answers: nothing
            return summarise(0, {}, set(), {})
        md = c.broker_metadata(live[0])
        topics = {t.name: [(p.leader_id, p.replica_nodes, p.isr_nodes) for p in t.partitions]
                  for t in md.topics if not t.is_internal and not t.name.startswith("__")}
        configs = {}
        for topic, keys in config_keys.items():
            described = c.describe_configs(topic=topic)
            configs[topic] = {k: described.get(k) for k in keys}
        return summarise(len(md.brokers), topics, {b.node_id for b in md.brokers}, configs)

    def describe(self, config_keys: dict[str, set[str]], expected: set[str]) -> dict[str, Any]:
        view = self._view(config_keys)
        deadline = self.cluster.now_ms + SETTLE_MS
        while not _settled(view, expected) and self.cluster.now_ms < deadline:
            self.cluster.run_for(100)
            view = self._view(config_keys)
        return view


# ------------------------------------------------------------------------------ real side

def error_name(error: Any) -> str:
    """A confluent-kafka ``KafkaError`` as Kafka's error code name (librdkafka's own negative
    codes keep librdkafka's name, prefixed ``CLIENT_``)."""
    code = error.code()
    if code >= 0:
        return ErrorCode.name_of(code)
    return f"CLIENT_{error.name()}"


class KafkaAdminBackend:
    """The scenario on a real Kafka through confluent-kafka's AdminClient."""

    def __init__(self, bootstrap: str, name: str = "real Kafka", timeout_s: float = 15.0) -> None:
        try:
            from confluent_kafka.admin import AdminClient
        except ImportError as e:
            raise RealKafkaUnavailable("the twin's real side needs confluent-kafka: "
                                       "pip install 'kraft-testkit[twin]'") from e
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.name = name
        self.timeout_s = timeout_s

    def _wait(self, futures: dict) -> str:
        from confluent_kafka import KafkaException

        for future in futures.values():
            try:
                future.result(timeout=self.timeout_s)
            except KafkaException as e:
                return error_name(e.args[0])
        return "NONE"

    def create_topic(self, step: CreateTopic) -> str:
        from confluent_kafka.admin import NewTopic

        topic = NewTopic(step.name, num_partitions=step.partitions,
                         replication_factor=step.replication_factor, config=dict(step.configs))
        return self._wait(self.admin.create_topics([topic], operation_timeout=self.timeout_s))

    def delete_topic(self, step: DeleteTopic) -> str:
        return self._wait(self.admin.delete_topics([step.name], operation_timeout=self.timeout_s))

    def alter_topic_config(self, step: AlterTopicConfig) -> str:
        from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                           ResourceType)

        entry = ConfigEntry(step.key, step.value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, step.name, incremental_configs=[entry])
        return self._wait(self.admin.incremental_alter_configs([resource]))

    def _view(self, config_keys: dict[str, set[str]]) -> dict[str, Any]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        md = self.admin.list_topics(timeout=self.timeout_s)
        topics = {name: [(p.leader, p.replicas, p.isrs) for p in t.partitions.values()]
                  for name, t in md.topics.items() if not name.startswith("__")}
        configs = {}
        for topic, keys in config_keys.items():
            futures = self.admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
            entries = next(iter(futures.values())).result(timeout=self.timeout_s)
            configs[topic] = {k: (entries[k].value if k in entries else None) for k in keys}
        return summarise(len(md.brokers), topics, set(md.brokers), configs)

    def describe(self, config_keys: dict[str, set[str]], expected: set[str]) -> dict[str, Any]:
        view = self._view(config_keys)
        deadline = time.monotonic() + SETTLE_MS / 1000
        while not _settled(view, expected) and time.monotonic() < deadline:
            time.sleep(0.2)
            view = self._view(config_keys)
        return view


@dataclass
class RealKafka:
    """A reachable real Kafka: ``bootstrap`` (host:port); ``stop()`` ends a container we
    started (a ``KRAFT_TWIN_BOOTSTRAP`` broker is left alone)."""

    bootstrap: str
    container: Any = None

    def backend(self) -> KafkaAdminBackend:
        return KafkaAdminBackend(self.bootstrap)

    def stop(self) -> None:
        if self.container is not None:
            self.container.stop()
            self.container = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_real_kafka(image: str = DEFAULT_IMAGE, *, timeout_s: float = 120.0) -> RealKafka:
    """A real single-node KRaft Kafka (broker and controller in one process, as
    ``Cluster(1, 1, combined=True)``). Raises :class:`RealKafkaUnavailable` saying why not."""
    bootstrap = os.environ.get("KRAFT_TWIN_BOOTSTRAP")
    if bootstrap:
        return RealKafka(bootstrap)
    try:
        import docker
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.waiting_utils import wait_for_logs
    except ImportError:
        raise RealKafkaUnavailable("the real-Kafka twin needs testcontainers: pip install "
                                   "'kraft-testkit[twin]' (or set KRAFT_TWIN_BOOTSTRAP)") from None
    try:
        docker.from_env(timeout=5).ping()
    except Exception as e:  # noqa: BLE001 - any failure to reach the engine means the same
        raise RealKafkaUnavailable(
            f"no Docker engine answers ({type(e).__name__}); the real-Kafka twin needs one, "
            f"or KRAFT_TWIN_BOOTSTRAP=host:port of a running Kafka") from None
    port = _free_port()
    # the image's documented single-node setup: when any KAFKA_ variable is set, all the
    # required ones must be; clients come in on HOST (published), the node talks to itself on
    # PLAINTEXT inside the container
    env = {
        "CLUSTER_ID": "4L6g3nShT-eMCtK--X86AQ",
        "KAFKA_NODE_ID": "1", "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:19092,CONTROLLER://:9093,HOST://:9092",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://localhost:19092,HOST://localhost:{port}",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",
    }
    container = DockerContainer(image).with_bind_ports(9092, port)
    for key, value in env.items():
        container = container.with_env(key, value)
    container.start()
    try:
        wait_for_logs(container, "Kafka Server started", timeout=timeout_s)
    except Exception:
        container.stop()
        raise
    return RealKafka(f"localhost:{port}", container)
