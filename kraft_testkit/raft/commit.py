"""The log's side of a replica: appending batches (a leader's high watermark moves with its
voters' fetch offsets), handing what became committed to the listener (the latest snapshot
first, then batches, then any leadership change once the listener has caught up), and taking
the snapshots the listener asks for. A mixin of :class:`~kraft_testkit.raft.replica.RaftReplica`;
it holds no state of its own."""

from __future__ import annotations

from collections.abc import Sequence

from kraft_testkit.protocol.records import RecordBatch, encode_batch
from kraft_testkit.raft.replica_state import LEADER
from kraft_testkit.raft.snapshot import encode_snapshot
from kraft_testkit.raft.voters import control_values


class CommitPath:
    """Methods of RaftReplica (see the module docstring)."""

    def _append_batch(self, batch: RecordBatch) -> None:
        data = encode_batch(batch)
        self._writes += self.log.append(batch, data)
        self._sync = True
        if batch.is_control and self.history.add_batch(batch):
            self.dynamic = True  # formatted so, or upgraded to kraft.version 1
            self._refresh_voters()
        lead = self._lead
        if lead is not None:
            self._own_progress().end_offset = self.log.end_offset
            self.acknowledged = self.log.end_offset
            lead.wake_parked = True
            self._update_high_watermark()

    def _update_high_watermark(self) -> None:
        lead = self._lead
        assert lead is not None
        offsets = sorted((p.end_offset for p in lead.voters.values()), reverse=True)
        hw = offsets[self.majority - 1]
        if hw > lead.epoch_start and hw > self.hw:  # only once this epoch's first record is in
            self.hw = hw
            lead.wake_parked = True

    def _deliver(self, now: int) -> None:
        """Hand the listener what became committed, then any leadership change it must see."""
        listener = self.listener
        while self._next < self.hw:
            snapshot = self.log.snapshot
            if self._next < self.log.start_offset or (  # at start: the latest snapshot first
                    self._next == 0 and snapshot is not None and snapshot.end_offset > 0):
                assert snapshot is not None
                if listener is not None:
                    listener.handle_load_snapshot(snapshot)
                self._next = snapshot.end_offset
                continue
            batches = self.log.batches_between(self._next, self.hw)
            if not batches:
                break
            last = batches[-1]
            self._next = last.last_offset + 1
            if listener is not None:
                records = listener.handle_commit(batches)
                if records is not None:
                    self._take_snapshot(self._next, last.partition_leader_epoch, records,
                                        last.max_timestamp)
        target = (self.leader_id, self.epoch)
        if target != self._fired:
            if self.role == LEADER and self._lead is not None and self._next < self._lead.epoch_start:
                return  # the new leader's listener must first see every earlier record
            self._fired = target
            if listener is not None:
                listener.handle_leader_change(*target)

    def _take_snapshot(self, end_offset: int, epoch: int, records: Sequence[bytes],
                       timestamp_ms: int) -> None:
        current = self.log.snapshot
        if current is not None and end_offset <= current.end_offset:
            return
        controls = ()
        if self.dynamic and (voters := self.history.at(end_offset - 1)) is not None:
            controls = control_values(voters, self.history.version_at(end_offset - 1))
        snapshot = encode_snapshot(end_offset, epoch, records, timestamp_ms, controls)
        self._writes += self.log.install_snapshot(snapshot)
        self._sync = True
