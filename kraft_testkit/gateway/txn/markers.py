"""Transaction markers: what Kafka's ``TransactionMarkerChannelManager`` sends as
WriteTxnMarkers to each partition leader, done inside the gateway: the coordinator appends the
marker (a control batch, :func:`.records.marker_batch`) to the leader's log at the leader's
epoch, as the leader's ``ReplicaManager#appendRecords`` would, and waits until the partition's
high watermark covers it (WriteTxnMarkers appends with acks=all). A partition without a live
leader waits for one; when leadership moves before the marker is covered, the new leader gets
it, unless its log has it already (the marker was replicated). Once every partition has its
marker, the transaction moves to Complete*.

A marker on a ``__consumer_offsets`` partition also tells that partition's group coordinator
to make the transaction's offsets visible (commit) or drop them (abort), as Kafka's group
coordinator replays an end-transaction marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import autojump
from . import records
from .state import PREPARE_COMMIT


@dataclass
class MarkerJob:
    shard: Any
    meta: Any
    commit: bool
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    todo: set[tuple[str, int]] = field(default_factory=set)
    #: partition -> (leader, leader epoch, offset past the marker)
    written: dict[tuple[str, int], tuple[int, int, int]] = field(default_factory=dict)


class MarkerWriter:
    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator
        self.cluster = coordinator.cluster
        self.plane = coordinator.plane
        self.jobs: list[MarkerJob] = []
        self.markers_written = 0

    def start(self, shard: Any, meta: Any) -> None:
        job = MarkerJob(shard, meta, meta.state == PREPARE_COMMIT, meta.producer_id,
                        meta.producer_epoch, shard.leader_epoch, set(meta.partitions))
        meta.markers = job
        self.jobs.append(job)
        self._advance(job)

    def forget(self, shard: Any) -> None:
        self.jobs = [j for j in self.jobs if j.shard is not shard]

    def busy(self) -> bool:
        return bool(self.jobs)

    def tick(self) -> None:
        for job in list(self.jobs):
            if not self.coordinator.is_current(job.shard):
                self.jobs.remove(job)
                continue
            self._advance(job)

    def _advance(self, job: MarkerJob) -> None:
        for tp in sorted(job.todo):
            self._step(job, tp)
        if not job.todo and job in self.jobs:
            self.jobs.remove(job)
            job.meta.markers = None
            self.coordinator.complete(job.shard, job.meta)

    def _leader(self, topic: str, partition: int) -> tuple[Any, int, Any]:
        """(topic image, leader, its LocalReplica) as the controller's committed metadata names
        them; leader -1 when there is none that serves."""
        image = self.cluster.metadata
        t = image.topic(topic)
        if t is None or partition not in t.partitions:
            return None, -1, None
        leader = t.partitions[partition].leader
        if leader < 0 or autojump.down(self.cluster, leader):
            return t, -1, None
        rep = self.plane.leader_replica(leader, t.id, partition)
        machine = self.cluster.broker(leader)
        if rep is None or rep.leader != leader or machine is None or \
                not machine.logic.replicas.leader_serving:
            return t, -1, None
        return t, leader, rep

    def _step(self, job: MarkerJob, tp: tuple[str, int]) -> None:
        topic, leader, rep = self._leader(*tp)
        if topic is None:            # deleted: nothing to mark (Kafka drops the marker)
            job.todo.discard(tp)
            return
        if leader < 0:
            return
        log = self.plane.log(leader, topic.id, tp[1])
        done = job.written.get(tp)
        if done is not None and (done[0], done[1]) != (leader, rep.leader_epoch):
            done = None              # leadership moved before it was covered
        if done is None:
            end = self._marker_end(log, job)
            if end is None:
                now = self.cluster.now_ms
                log.append([records.marker_batch(job.producer_id, job.producer_epoch,
                                                 job.commit, job.coordinator_epoch, now)],
                           rep.leader_epoch, now)
                end = log.log_end_offset
                self.plane.appended(leader, topic.id, tp[1])  # KIP-227 answers carry it
                self.markers_written += 1
                self._tell_groups(leader, topic, tp[1], job)
            done = job.written[tp] = (leader, rep.leader_epoch, end)
        if self.plane.advance_high_watermark(leader, topic.id, tp[1]) >= done[2]:
            job.todo.discard(tp)

    @staticmethod
    def _marker_end(log: Any, job: MarkerJob) -> int | None:
        """The offset past this transaction's marker when the log has it already."""
        for b in reversed(log.batches):
            if b.producer_id == job.producer_id:
                if b.is_control and b.producer_epoch == job.producer_epoch:
                    return b.last_offset + 1
                return None
        return None

    def _tell_groups(self, leader: int, topic: Any, partition: int, job: MarkerJob) -> None:
        from ..groups.coordinator import OFFSETS_TOPIC
        groups = self.coordinator.gateway.groups
        if topic.name == OFFSETS_TOPIC and groups is not None:
            groups.end_transaction(leader, partition, job.producer_id, job.commit)
