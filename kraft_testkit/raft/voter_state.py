"""The replica's side of KIP-853: the voter set in effect, kept as the log changes.

A mixin of :class:`~kraft_testkit.raft.replica.RaftReplica` (kept apart so replica.py stays
about elections and replication): it rebuilds the voter history from the snapshot header and
the log's control batches, takes the newest set into effect (voters, majority, whether this
replica votes, the leader's replica states), and appends the leader's VotersRecords.
"""

from __future__ import annotations


from typing import Any

from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.raft.errors import NotLeader
from kraft_testkit.raft.voters import (
    SUPPORTED_KRAFT_VERSIONS,
    Voter,
    VoterSet,
    control_values,
    default_endpoints,
    snapshot_voters,
)


class VoterSetState:
    """KIP-853 methods of a replica (attributes: ``history``, ``dynamic``, ``voters``,
    ``majority``, ``is_voter``, ``endpoints`` and the replica's own)."""

    def _load_history(self: Any) -> None:
        """Rebuild the voter history from the snapshot's header and the log's control batches."""
        snapshot = self.log.snapshot
        version, voters = snapshot_voters(snapshot.data) if snapshot is not None else (None, None)
        self.history.reset(version, voters)
        # Batches below the snapshot are in its header already (and may be settled: bytes only),
        # so the log is read from the snapshot on, as Kafka's VoterSetHistory is.
        log = self.log
        start = snapshot.end_offset if snapshot is not None else log.start_offset
        for batch in log.batches_and_data(log.index_left(start), len(log))[0]:
            if batch.is_control:
                self.history.add_batch(batch)

    def _refresh_voters(self: Any) -> None:
        """Take the latest voter set (kraft.version 1; static voters never change) into effect:
        who votes, the majority, whether this replica votes, the leader's replica states."""
        from kraft_testkit.raft.replica_state import Progress

        if self.dynamic and self.history.latest is None and not self.formatted_dynamic:
            self.dynamic = False  # the upgrade to kraft.version 1 was truncated away
            self.voters = dict(self.static_voters)
        elif self.dynamic:
            latest = self.history.latest
            keys = latest.keys if latest is not None else {}
            if keys == self.voters and self.majority == len(keys) // 2 + 1:
                return
            self.voters = dict(keys)
        self.majority = len(self.voters) // 2 + 1
        self.is_voter = self.voters.get(self.id) == self.dir
        lead = getattr(self, "_lead", None)
        if lead is None:
            return
        old, new = lead.voters, {}
        for v, d in self.voters.items():
            p = old.get(v)
            if p is None or p.directory_id != d and v != self.id:
                seen = lead.observers.pop(v, None)
                p = seen if seen is not None and seen.directory_id == d else Progress(v, d)
            new[v] = p
        for v, p in old.items():
            if v not in new:
                lead.observers.setdefault(v, p)
        lead.voters = new
        lead.fetched &= set(new)
        self._update_high_watermark()

    def _own_progress(self: Any) -> Any:
        """The leader's own replica state: among the voters, or the observers once removed."""
        lead = self._lead
        p = lead.voters.get(self.id) or lead.observers.get(self.id)
        if p is None:
            from kraft_testkit.raft.replica_state import Progress

            p = lead.observers[self.id] = Progress(self.id, self.dir, self.log.end_offset)
        return p

    def _epoch_start_controls(self: Any) -> list[tuple[bytes, bytes]]:
        """Kafka's appendStartOfEpochControlRecords: a voter set known only from the bootstrap
        checkpoint goes into the new leader's first batch (so that observers replicate it), and
        so does one whose entry for this leader names other endpoints than it listens on."""
        history = self.history
        voters = history.latest
        if not self.dynamic or history.kraft_version < 1 or voters is None:
            return []
        local = Voter(self.id, self.dir, self.endpoints, SUPPORTED_KRAFT_VERSIONS)
        mine = voters.voters.get(self.id)
        if mine is not None and mine != local:
            voters = voters.update(local) or voters
        if history.latest_offset == -1 or voters is not history.latest:
            return control_values(voters, history.kraft_version)
        return []

    def append_voters(self: Any, voters: VoterSet, now_ms: int) -> int:
        """The leader appends a VotersRecord (with the current kraft.version) at once; it takes
        effect now. Returns its offset."""
        if self.role != "leader" or self._lead is None:
            raise NotLeader(self.id, self.leader_id, self.epoch)
        pairs = control_values(voters, self.history.kraft_version)[1:]
        offset = self.log.end_offset
        self._append_batch(RecordBatch.build(offset, [v for _, v in pairs],
                                             keys=[k for k, _ in pairs], control=True,
                                             timestamp_ms=now_ms + self.config.log_time_base_ms,
                                             leader_epoch=self.epoch))
        return offset

    def upgrade_kraft_version(self: Any, level: int, now_ms: int) -> None:
        """The leader upgrades kraft.version 0 -> 1 (Kafka 4.1+ ``upgradeKRaftVersion``): one
        control batch with the KRaftVersionRecord and the VotersRecord of the static voters
        (their directory ids and endpoints); from then on the voters live in the log."""
        if self.role != "leader" or self._lead is None:
            raise NotLeader(self.id, self.leader_id, self.epoch)
        if level <= self.history.kraft_version:
            return
        # Its own listeners it knows; the others' entries are fixed by their UpdateRaftVoter
        # once they see the dynamic set (a leader sends none, so its own must be right here).
        voters = VoterSet(Voter(v, d, self.endpoints if v == self.id else default_endpoints(v),
                                SUPPORTED_KRAFT_VERSIONS)
                          for v, d in self.voters.items())
        pairs = control_values(voters, level)
        self._append_batch(RecordBatch.build(self.log.end_offset, [v for _, v in pairs],
                                             keys=[k for k, _ in pairs], control=True,
                                             timestamp_ms=now_ms + self.config.log_time_base_ms,
                                             leader_epoch=self.epoch))

    def resign_removed(self: Any, now_ms: int) -> None:
        """A leader whose removal committed steps down (Kafka's requestResign)."""
        if self.role == "leader" and self._lead is not None:
            order = sorted((p for v, p in self._lead.voters.items() if v != self.id),
                           key=lambda p: (-p.end_offset, p.replica_id))
            self._to_resigned([p.replica_id for p in order], now_ms)
