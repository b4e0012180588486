"""Shared helpers of the cluster scenario tests (tests/cluster): build clusters, read the dumped
metadata log, spy on controller RPCs, and a per-node broker-epoch invariant.

Everything goes through the public facade (:class:`kraft_testkit.cluster.Cluster`); the only
internals read are the active controller's lease soft state (to get exact timing bounds) and a
broker's lifecycle contact time, both documented attributes.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.cluster import Cluster
from kraft_testkit.controller.cluster import SOFT_STATE_KEY
from kraft_testkit.invariants import ClusterInvariants, _is_broker
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.log import read_log
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc

SESSION_MS = 9000          # broker.session.timeout.ms, Kafka's default
HEARTBEAT_MS = 2000        # broker.heartbeat.interval.ms
SELF_FENCE_MS = 18000      # broker.heartbeat.timeout.ms (KIP-343), 2 x session by default
#: appending, lingering (25 ms) and committing a batch takes far less than this
COMMIT_SLACK_MS = 200
#: QuorumController#maybeFenceStaleBrokerPeriodNs: the lease check runs every session/8, so a
#: broker is fenced by the first check after contact + session (9-10.125 s after it)
FENCE_CHECK_MS = SESSION_MS // 8
#: a heartbeat's round trip and jitter
RTT_SLACK_MS = 50

GOLDEN_DIR = os.path.join(os.path.dirname(__file__), "..", "golden", "apache-kafka-pr15553-023aafc")
GOLDEN_DIR = os.path.normpath(os.environ.get("KRAFT_GOLDEN_DIR", GOLDEN_DIR))


def name(code: int) -> str:
    return ErrorCode.name_of(code)


# ------------------------------------------------------------------ clusters


def boot(cluster: Cluster, timeout_ms: int = 60_000) -> Cluster:
    cluster.run_until(lambda c: c.all_brokers_running(), timeout_ms)
    return cluster


def cluster_with_epoch_invariant(controllers: int = 3, brokers: int = 3, **kwargs: Any) -> Cluster:
    """A booted cluster with the built-in invariants (broker epochs are checked per node
    incarnation there: a lagging or restarted node replays older registrations)."""
    return boot(Cluster(controllers, brokers, boot=False, **kwargs))


# ------------------------------------------------------------------ looking


def heartbeat_manager(c: Cluster) -> Any:
    """The active controller's lease soft state (BrokerHeartbeatManager)."""
    active = c.active_controller
    assert active is not None, "no active controller"
    return c.controller_node(active).controller.soft[SOFT_STATE_KEY]


def controller_contact_ms(c: Cluster, broker: int) -> int | None:
    """When the active controller last heard from ``broker``'s registered incarnation (its
    BrokerHeartbeatTracker entry; None once the lease check took the entry out)."""
    registration = c.metadata.cluster.broker(broker)
    if registration is None:
        return None
    return heartbeat_manager(c).contact_ms(broker, registration.epoch)


def fence_watch(c: Cluster, broker: int, timeout_ms: int = 30_000) -> tuple[int, int]:
    """Run until ``broker`` is fenced in the committed image: (when, the active controller's
    last contact time of it before the check that fenced it took the entry out)."""
    seen = [controller_contact_ms(c, broker)]

    def fenced(c: Cluster) -> bool:
        active = c.active_controller
        registration = c.metadata.cluster.broker(broker)
        if active is not None and registration is not None:
            manager = c.controller_node(active).controller.soft.get(SOFT_STATE_KEY)
            t = None if manager is None else manager.contact_ms(broker, registration.epoch)
            if t is not None:
                seen[0] = t
        return c.broker_state(broker).fenced

    c.run_until(fenced, timeout_ms)
    assert seen[0] is not None, f"the controller never heard from broker {broker}"
    return c.now_ms, seen[0]


def partitions(image: Any) -> list[tuple[str, int, Any]]:
    return [(t.name, pid, p) for t in image.topics for pid, p in sorted(t.partitions.items())]


def led_by(image: Any, broker: int) -> list[tuple[str, int]]:
    return [(t, pid) for t, pid, p in partitions(image) if p.leader == broker]


def fenced_at(c: Cluster, broker: int, timeout_ms: int = 30_000) -> int:
    """Run until ``broker`` is fenced in the committed image; the virtual time it happened."""
    c.run_until(lambda c: c.broker_state(broker).fenced, timeout_ms)
    return c.now_ms


# ------------------------------------------------------------------ the metadata log


@dataclass(frozen=True)
class Rec:
    offset: int
    batch: int          # base offset of the batch holding it
    timestamp: int
    type: str           # message class name: RegisterBrokerRecord, LeaderChangeMessage, ...
    version: int
    msg: Any
    control: bool


def log_records(c: Cluster, path: str | os.PathLike) -> list[Rec]:
    """Dump the committed metadata log with the facade and read it back with ``read_log``."""
    c.dump_log(path)
    return read_records(path)


def read_records(path: str | os.PathLike) -> list[Rec]:
    out = []
    for batch in read_log(path):
        for r in batch.records:
            p = r.payload
            if p is None:
                continue
            msg = p.message
            out.append(Rec(r.offset, batch.base_offset, r.timestamp, type(msg).__name__,
                           getattr(p, "version", 0), msg, batch.batch.is_control))
    return out


def of_type(records: Iterable[Rec], *types: str) -> list[Rec]:
    return [r for r in records if r.type in types]


def fence_records(records: Iterable[Rec], broker: int | None = None) -> list[Rec]:
    """BrokerRegistrationChangeRecord(fenced=1) or FenceBrokerRecord, optionally for one broker."""
    out = []
    for r in records:
        if r.type == "BrokerRegistrationChangeRecord" and r.msg.fenced == 1:
            bid = r.msg.broker_id
        elif r.type == "FenceBrokerRecord":
            bid = r.msg.id
        else:
            continue
        if broker is None or bid == broker:
            out.append(r)
    return out


def unfence_records(records: Iterable[Rec], broker: int | None = None) -> list[Rec]:
    out = []
    for r in records:
        if r.type == "BrokerRegistrationChangeRecord" and r.msg.fenced == -1:
            bid = r.msg.broker_id
        elif r.type == "UnfenceBrokerRecord":
            bid = r.msg.id
        else:
            continue
        if broker is None or bid == broker:
            out.append(r)
    return out


# ------------------------------------------------------------------ crafted requests


def registration(c: Cluster, broker_id: int, incarnation: Uuid, *, cluster_id: str | None = None,
                 mv: tuple[int, int] = (1, 29), log_dirs: list[Uuid] | None = None) -> Any:
    """A BrokerRegistration announcing Kafka 4.2's features (metadata.version ``mv``)."""
    from kraft_testkit.metadata.feature_versions import supported_ranges

    R = M.BrokerRegistrationRequest
    rng = random.Random(broker_id * 7919 + 1)
    others = [R.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
              for n, (lo, hi) in supported_ranges().items() if n != "metadata.version"]
    return R(broker_id=broker_id, cluster_id=c.cluster_id if cluster_id is None else cluster_id,
             incarnation_id=incarnation,
             listeners=[R.Listener(name="PLAINTEXT", host=f"fake-{broker_id}", port=9092,
                                   security_protocol=0)],
             features=[R.Feature(name="metadata.version", min_supported_version=mv[0],
                                 max_supported_version=mv[1]), *others],
             rack=None, is_migrating_zk_broker=False,
             log_dirs=log_dirs if log_dirs is not None else [Uuid.random(rng)],
             previous_broker_epoch=-1)


def heartbeat(broker_id: int, epoch: int, offset: int, *, want_fence: bool = False,
              want_shut_down: bool = False) -> Any:
    return M.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch,
                                    current_metadata_offset=offset, want_fence=want_fence,
                                    want_shut_down=want_shut_down)


def alter_partition(c: Cluster, topic: str, partition: int, *, broker: int | None = None,
                    broker_epoch: int | None = None, leader_epoch: int | None = None,
                    partition_epoch: int | None = None, isr: Iterable[int] | None = None,
                    isr_epochs: dict[int, int] | None = None) -> Any:
    """An AlterPartitionRequest (v3 shape) built from the committed image, fields overridable."""
    R = M.AlterPartitionRequest
    img = c.metadata
    t = img.topic(topic)
    p = t.partitions[partition]
    broker = p.leader if broker is None else broker
    isr = list(p.isr) if isr is None else list(isr)
    epochs = isr_epochs or {}

    def epoch_of(b: int) -> int:
        if b in epochs:
            return epochs[b]
        reg = img.cluster.broker(b)
        return reg.epoch if reg is not None else -1

    body = R(broker_id=broker,
             broker_epoch=epoch_of(broker) if broker_epoch is None else broker_epoch,
             topics=[R.TopicData(topic_name=topic, topic_id=t.id, partitions=[R.PartitionData(
                 partition_index=partition,
                 leader_epoch=p.leader_epoch if leader_epoch is None else leader_epoch,
                 new_isr=[], new_isr_with_epochs=[R.BrokerState(broker_id=b, broker_epoch=epoch_of(b))
                                                  for b in isr],
                 leader_recovery_state=0,
                 partition_epoch=p.partition_epoch if partition_epoch is None else partition_epoch)])])
    return body


def alter_partition_codes(c: Cluster, body: Any, **kw: Any) -> tuple[str, list[str]]:
    r = c.request(body, **kw)
    return name(r.error_code), [name(p.error_code) for t in r.topics for p in t.partitions]


# ------------------------------------------------------------------ spying on the wire


@dataclass
class Spy:
    """Every controller RPC request and response delivered, with the time it arrived."""

    cluster: Cluster
    requests: list[tuple[int, int, int, int, Any]] = field(default_factory=list)
    responses: list[tuple[int, int, int, int, Any]] = field(default_factory=list)
    on_response: Any = None

    def __post_init__(self) -> None:
        self.cluster.sim.network.on_deliver(self._hook)

    def _hook(self, src: int, dst: int, msg: object) -> None:
        now = self.cluster.now_ms
        if isinstance(msg, rpc.Request):
            self.requests.append((now, src, dst, msg.correlation_id, msg.body))
        elif isinstance(msg, rpc.Response):
            self.responses.append((now, src, dst, msg.correlation_id, msg.body))
            if self.on_response is not None:
                self.on_response(src, dst, msg.body)

    def heartbeats(self, broker: int) -> list[tuple[int, int, int, Any]]:
        """(time, controller, correlation id, request) of the broker's heartbeats."""
        return [(t, d, cid, b) for t, s, d, cid, b in self.requests
                if s == broker and isinstance(b, M.BrokerHeartbeatRequest)]

    def heartbeat_answers(self, broker: int) -> list[tuple[int, int, int, Any]]:
        """(time, controller, correlation id, response) of the answers the broker received."""
        return [(t, s, cid, b) for t, s, d, cid, b in self.responses
                if d == broker and isinstance(b, M.BrokerHeartbeatResponse)]

    def delivered(self, body_type: type, *, src: int | None = None,
                  dst: int | None = None) -> list[tuple[int, int, int, Any]]:
        return [(t, s, d, b) for t, s, d, cid, b in self.requests
                if isinstance(b, body_type) and (src is None or s == src)
                and (dst is None or d == dst)]
