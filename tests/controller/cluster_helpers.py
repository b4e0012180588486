"""A small driver for the cluster control tests: one active controller over virtual time.

:class:`Harness` does what the quorum controller does around a control module: it hands the
module a :class:`ControllerContext` (latest image, time, next offset, soft state), appends the
returned records at the next offsets and replays them into the image at once.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import cluster
from kraft_testkit.controller.bootstrap import BootstrapMetadata, activation_records
from kraft_testkit.controller.result import ControllerContext, ControllerResult, record
from kraft_testkit.metadata import DirectoryId, MetadataDelta, MetadataImage
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import MetadataRecord
from kraft_testkit.protocol.log import read_log
from kraft_testkit.protocol.uuid import Uuid

GOLDEN_C = (Path(__file__).resolve().parents[1] / "golden" / "apache-kafka-pr15553-023aafc" / "C_mv18_3brokers"
            / "__cluster_metadata-0" / "00000000000000000000.log")
CLUSTER_ID = "ljAoerGESXi5val3QKEeFQ"   # the golden cluster's id
CONTROLLER_ID = 1000
SESSION_MS = NodeConfig().broker_session_timeout_ms


def uid(n: int) -> Uuid:
    """A deterministic, non-reserved uuid."""
    return Uuid((1000 + n).to_bytes(16, "big"))


def types(records: Iterable[MetadataRecord]) -> list[str]:
    return [type(r.message).__name__ for r in records]


def golden_batches():
    if not GOLDEN_C.exists():
        pytest.skip(f"golden log not available: {GOLDEN_C}")
    return read_log(GOLDEN_C)


def as_kafka_4(golden: Sequence[tuple[int, MetadataRecord]]) -> list[tuple[int, MetadataRecord]]:
    """A history written by Kafka 3.4-3.9 (the golden logs are Kafka trunk builds of late 2023)
    as Kafka 4.x writes it: the bootstrap has no ZkMigrationStateRecord
    (``ActivationRecordsGenerator#recordsForEmptyLog``), so every later offset, and every broker
    epoch taken from one, is one lower. Nothing else changes."""
    out: list[tuple[int, MetadataRecord]] = []
    dropped: list[int] = []

    def shift(n: int) -> int:
        return n - sum(1 for d in dropped if d < n)

    for offset, rec in golden:
        msg = rec.message
        if isinstance(msg, M.ZkMigrationStateRecord):
            dropped.append(offset)
            continue
        if isinstance(msg, (M.RegisterBrokerRecord, M.BrokerRegistrationChangeRecord)):
            rec = MetadataRecord(msg.replace(broker_epoch=shift(msg.broker_epoch)), rec.version)
        out.append((shift(offset), rec))
    return out


# ---------------------------------------------------------------- request builders


def registration(broker_id: int, incarnation: Uuid | None = None, *,
                 mv_range: tuple[int, int] | None = (1, V.LATEST),
                 features: Sequence[tuple[str, int, int]] = (),
                 log_dirs: Sequence[Uuid] | None = None, cluster_id: str = CLUSTER_ID,
                 port: int | None = None, rack: str | None = None,
                 migrating: bool = False) -> M.BrokerRegistrationRequest:
    """A BrokerRegistrationRequest; by default one listener, metadata.version 1..latest and one
    log directory of its own."""
    cls = M.BrokerRegistrationRequest
    feats = [cls.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
             for n, lo, hi in features]
    if mv_range is not None:
        feats.insert(0, cls.Feature(name=V.FEATURE_NAME, min_supported_version=mv_range[0],
                                    max_supported_version=mv_range[1]))
    return cls(
        broker_id=broker_id, cluster_id=cluster_id,
        incarnation_id=incarnation if incarnation is not None else uid(100 + broker_id),
        listeners=(cls.Listener(name="PLAINTEXT", host="localhost",
                                port=port if port is not None else 9092 + broker_id,
                                security_protocol=0),),
        features=tuple(feats), rack=rack, is_migrating_zk_broker=migrating,
        log_dirs=tuple(log_dirs) if log_dirs is not None else (uid(500 + broker_id),))


def heartbeat(broker_id: int, epoch: int, offset: int, *, want_fence: bool = False,
              want_shut_down: bool = False) -> M.BrokerHeartbeatRequest:
    return M.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch,
                                    current_metadata_offset=offset, want_fence=want_fence,
                                    want_shut_down=want_shut_down)


def controller_registration(controller_id: int = CONTROLLER_ID, *, incarnation: Uuid | None = None,
                            mv_range: tuple[int, int] = (1, V.LATEST), port: int = 9093
                            ) -> M.ControllerRegistrationRequest:
    cls = M.ControllerRegistrationRequest
    return cls(controller_id=controller_id,
               incarnation_id=incarnation if incarnation is not None else uid(900 + controller_id),
               zk_migration_ready=False,
               listeners=(cls.Listener(name="CONTROLLER", host="localhost", port=port,
                                       security_protocol=0),),
               features=(cls.Feature(name=V.FEATURE_NAME, min_supported_version=mv_range[0],
                                     max_supported_version=mv_range[1]),))


# ---------------------------------------------------------------- the driver


class Harness:
    """One active controller: image, offsets, virtual time and the lease soft state."""

    def __init__(self, mv: int | None = 18, *, config: NodeConfig | None = None,
                 now_ms: int = 0, seed: int = 0, activate: bool = True) -> None:
        self.config = config or NodeConfig()
        self.image = MetadataImage.EMPTY
        self.now_ms = now_ms
        self.rng = random.Random(seed)
        self.extra: dict = {}
        self.next_offset = 1          # offset 0 holds the LeaderChange control record
        self.log: list[tuple[int, MetadataRecord]] = []
        if mv is not None:
            self.append(activation_records(self.image, BootstrapMetadata.from_version(mv)))
        if activate:
            cluster.on_become_active(self.ctx())

    # --- plumbing

    def ctx(self) -> ControllerContext:
        return ControllerContext(self.image, self.now_ms, self.rng, self.config, CLUSTER_ID,
                                 CONTROLLER_ID, self.next_offset, self.extra)

    def append(self, records: Iterable[MetadataRecord]) -> list[int]:
        """Append at the next offsets and replay at once (the active controller's image)."""
        offsets = []
        delta = MetadataDelta(self.image)
        for rec in records:
            delta.replay(rec, offset=self.next_offset)
            self.log.append((self.next_offset, rec))
            offsets.append(self.next_offset)
            self.next_offset += 1
        self.image = delta.apply()
        return offsets

    def run(self, result: ControllerResult):
        self.last_records = list(result.records)
        self.append(result.records)
        return result.response

    def advance(self, ms: int) -> None:
        self.now_ms += ms

    @property
    def end_offset(self) -> int:
        """The offset of the last record written."""
        return self.next_offset - 1

    @property
    def leases(self):
        return cluster.heartbeat_manager(self.ctx())

    # --- commands

    def register(self, broker_id: int, incarnation: Uuid | None = None, **kw
                 ) -> M.BrokerRegistrationResponse:
        return self.run(cluster.register_broker(self.ctx(), registration(broker_id, incarnation,
                                                                         **kw)))

    def heartbeat(self, broker_id: int, *, offset: int | None = None, epoch: int | None = None,
                  want_fence: bool = False, want_shut_down: bool = False
                  ) -> M.BrokerHeartbeatResponse:
        """A heartbeat; by default with the registered epoch and caught up with the log."""
        if epoch is None:
            epoch = self.image.cluster.brokers[broker_id].epoch
        return self.run(cluster.process_broker_heartbeat(self.ctx(), heartbeat(
            broker_id, epoch, self.end_offset if offset is None else offset,
            want_fence=want_fence, want_shut_down=want_shut_down)))

    def start_broker(self, broker_id: int, **kw) -> int:
        """Register and unfence a broker; returns its epoch."""
        response = self.register(broker_id, **kw)
        assert response.error_code == 0, response
        hb = self.heartbeat(broker_id)
        assert not hb.is_fenced, hb
        return response.broker_epoch

    def fence_stale(self) -> int | None:
        """One run of the fence check: the id of the broker it fenced (None: it fenced none;
        ``last_expired`` says whether it took out an expired contact entry at all)."""
        self.last_expired = self.run(cluster.maybe_fence_one_stale_broker(self.ctx()))
        for rec in self.last_records:
            msg = rec.message
            if isinstance(msg, (M.BrokerRegistrationChangeRecord, M.FenceBrokerRecord)):
                return getattr(msg, "broker_id", getattr(msg, "id", None))
        return None

    def add_topic(self, name: str, assignments: Sequence[Sequence[int]],
                  leaders: Sequence[int] | None = None) -> Uuid:
        """A topic replayed straight into the image: replicas, full ISR, leader = first replica
        (or ``leaders``)."""
        topic_id = Uuid.random(self.rng)
        mv = self.image.metadata_version or V.MINIMUM_KRAFT_VERSION
        records = [record(M.TopicRecord(name=name, topic_id=topic_id), 0)]
        for p, replicas in enumerate(assignments):
            leader = replicas[0] if leaders is None else leaders[p]
            records.append(record(M.PartitionRecord(
                partition_id=p, topic_id=topic_id, replicas=tuple(replicas),
                isr=tuple(replicas), leader=leader, leader_epoch=0, partition_epoch=0,
                directories=(DirectoryId.MIGRATING,) * len(replicas)
                if V.partition_record_version(mv) >= 1 else ()),
                V.partition_record_version(mv)))
        self.append(records)
        return topic_id
