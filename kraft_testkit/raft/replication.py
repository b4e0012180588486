"""Replication on the wire (KIP-595, KIP-630): Fetch and FetchSnapshot asked and answered, the
leader's record of each replica, and DescribeQuorum. A mixin of
:class:`~kraft_testkit.raft.replica.RaftReplica`, kept apart so the replica's module stays
readable; it holds no state of its own."""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc
from kraft_testkit.raft.errors import LogError
from kraft_testkit.raft.snapshot import decode_snapshot

from kraft_testkit.raft.replica_state import (
    LEADER,
    FOLLOWER,
    _NO_DIR,
    Progress,
    _Parked,
    _Download,
)


class Replication:
    """Methods of RaftReplica (see the module docstring)."""

    def _on_fetch_request(self, src: int, cid: int, req: Any, now: int) -> None:
        if not self._cluster_ok(req.cluster_id):
            return self._respond(src, cid, M.FetchResponse(error_code=E.INCONSISTENT_CLUSTER_ID))
        p = rpc.fetch_partition(req)
        if p is None:
            return self._respond(src, cid, M.FetchResponse(error_code=E.INVALID_REQUEST))
        if req.max_wait_ms < 0 or p.fetch_offset < 0 or p.last_fetched_epoch < 0 \
                or p.last_fetched_epoch > p.current_leader_epoch:
            return self._respond(src, cid, rpc.fetch_response(
                E.INVALID_REQUEST, self.epoch, self._leader_or_nil()))
        replica = rpc.fetch_replica_id(req)
        deadline = now + req.max_wait_ms if req.max_wait_ms > 0 else 0
        self._answer_fetch(src, cid, replica, p, now, may_park=deadline > 0, deadline=deadline)

    def _answer_fetch(self, src: int, cid: int, replica: int, p: Any, now: int,
                      may_park: bool, deadline: int = 0) -> None:
        """Answer a fetch now, or park it (nothing new yet and the follower is willing to wait)."""
        error = self._leader_only_error(p.current_leader_epoch)
        if error != E.NONE:
            return self._respond(src, cid, rpc.fetch_response(error, self.epoch,
                                                              self._leader_or_nil()))
        log = self.log
        latest = log.snapshot
        if p.fetch_offset == 0 and latest is not None and latest.snapshot_id != (0, 0):
            # Kafka's tryCompleteFetchRequest: an empty follower is sent the latest snapshot's
            # id (not the bootstrap checkpoint's) rather than the log, even if it starts at 0
            kind, where = "snapshot", latest.snapshot_id
        else:
            kind, where = log.validate(p.fetch_offset, p.last_fetched_epoch)
        if kind == "valid":
            self._update_replica(replica, p.replica_directory_id, p.fetch_offset, now)
            if p.fetch_offset >= log.end_offset and may_park and \
                    p.high_watermark >= self._known_high_watermark():
                assert self._lead is not None
                self._lead.parked.append(_Parked(src, cid, replica, p, deadline))
                return
            max_bytes = min(p.partition_max_bytes, self.config.fetch_max_bytes)
            if p.fetch_offset < log.end_offset:
                # the followers fetch from the same offset after each append: one answer
                # serves them all while nothing it reads moved (a leader's log only grows)
                key = (self.epoch, self.hw, log.start_offset, log.end_offset, p.fetch_offset,
                       max_bytes)
                cached = self._records_fetch
                if cached is None or cached[0] != key:
                    cached = self._records_fetch = (key, rpc.fetch_response(
                        E.NONE, self.epoch, self.id, self.hw, log.start_offset,
                        log.read(p.fetch_offset, max_bytes)))
                body = cached[1]
            else:  # the common answer at steady state: build it once per state
                key = (self.epoch, self.hw, log.start_offset)
                cached = self._empty_fetch
                if cached is None or cached[0] != key:
                    cached = self._empty_fetch = (key, rpc.fetch_response(
                        E.NONE, self.epoch, self.id, self.hw, log.start_offset))
                body = cached[1]
        elif kind == "diverging":
            body = rpc.fetch_response(E.NONE, self.epoch, self.id, self.hw, log.start_offset,
                                      diverging=where)
        else:
            body = rpc.fetch_response(E.NONE, self.epoch, self.id, self.hw, log.start_offset,
                                      snapshot_id=where)
        self._respond(src, cid, body)

    def _known_high_watermark(self) -> int:
        """What Fetch v18 compares (Kafka's isHighWatermarkUpdated, KIP-1166): a fetcher that
        reports an older high watermark than this leader's is answered at once. A leader knows
        one only once this epoch's first record is committed (-1 before, as Kafka's Optional).
        The kit's replicas report none (Long.MAX_VALUE, "not supported"), so only other
        fetchers (the parity tests, a Kafka node) see a difference."""
        lead = self._lead
        return self.hw if lead is not None and self.hw > lead.epoch_start else -1

    def fetch_answer_as_sent(self, p: Any, end_offset: int, hw: int) -> Any:
        """The body :meth:`_answer_fetch` built for a valid fetch ``p`` when the log ended at
        ``end_offset`` and the high watermark was ``hw`` (the idle warp rebuilds the answers
        it computed for brokers that are still in flight when it stops)."""
        log = self.log
        if p.fetch_offset < end_offset:
            max_bytes = min(p.partition_max_bytes, self.config.fetch_max_bytes)
            return rpc.fetch_response(E.NONE, self.epoch, self.id, hw, log.start_offset,
                                      log.read(p.fetch_offset, max_bytes, end_offset))
        return rpc.fetch_response(E.NONE, self.epoch, self.id, hw, log.start_offset)

    def _update_replica(self, replica: int, directory: Uuid, offset: int, now: int) -> None:
        lead = self._lead
        assert lead is not None
        if replica < 0 or replica == self.id:
            return  # a client's fetch, or one claiming to be this leader: nothing to track
        progress = lead.voters.get(replica)
        is_voter = progress is not None and (directory == _NO_DIR or
                                             directory == self.voters[replica])
        if progress is not None and not is_voter:
            progress.end_offset = -1  # the voter's disk is gone: what it acknowledged went too
        if not is_voter:
            progress = lead.observers.get(replica)
            if progress is None:
                progress = lead.observers[replica] = Progress(replica, directory)
            progress.directory_id = directory
        assert progress is not None
        moved = progress.end_offset != offset
        progress.end_offset = offset
        progress.last_fetch_ms = now
        if offset >= self.log.end_offset:
            progress.caught_up_ms = now
        if is_voter:
            lead.acked.add(replica)
            self._check_quorum_fetch(replica, now)
            if moved:
                self._update_high_watermark()

    def _check_quorum_fetch(self, voter: int, now: int) -> None:
        lead = self._lead
        assert lead is not None
        lead.fetched.add(voter)
        if len(lead.fetched) + (self.id in self.voters) >= self.majority:
            lead.fetched.clear()
            lead.check_deadline = now + self.config.fetch_timeout_ms * 3 // 2

    def _on_fetch_snapshot_request(self, src: int, cid: int, req: Any, now: int) -> None:
        if not self._cluster_ok(req.cluster_id):
            return self._respond(src, cid, M.FetchSnapshotResponse(
                error_code=E.INCONSISTENT_CLUSTER_ID))
        if len(req.topics) != 1 or len(req.topics[0].partitions) != 1:
            return self._respond(src, cid, M.FetchSnapshotResponse(error_code=E.INVALID_REQUEST))
        p = rpc.snapshot_partition(req)
        epoch, leader = self.epoch, self._leader_or_nil()
        if p is None:
            return self._respond(src, cid, rpc.fetch_snapshot_response(
                E.UNKNOWN_TOPIC_OR_PARTITION, epoch, leader))
        error = self._leader_only_error(p.current_leader_epoch)
        if error != E.NONE:
            return self._respond(src, cid, rpc.fetch_snapshot_response(error, epoch, leader))
        sid = (p.snapshot_id.end_offset, p.snapshot_id.epoch)
        snapshot = self.log.snapshot
        # the bootstrap checkpoint (0, 0) is never served (Kafka's handleFetchSnapshotRequest)
        if snapshot is None or snapshot.snapshot_id != sid or sid == (0, 0):
            return self._respond(src, cid, rpc.fetch_snapshot_response(
                E.SNAPSHOT_NOT_FOUND, epoch, leader))
        size = len(snapshot.data)
        if not 0 <= p.position < size:
            return self._respond(src, cid, rpc.fetch_snapshot_response(
                E.POSITION_OUT_OF_RANGE, epoch, leader))
        if req.replica_id in self.voters and p.replica_directory_id in (
                _NO_DIR, self.voters[req.replica_id]):
            self._check_quorum_fetch(req.replica_id, now)
        chunk = min(max(req.max_bytes, 1), self.config.fetch_snapshot_max_bytes)
        data = snapshot.data[p.position:p.position + chunk]
        self._respond(src, cid, rpc.fetch_snapshot_response(E.NONE, epoch, leader, sid, size,
                                                            p.position, data))

    def _on_describe_quorum_request(self, src: int, cid: int, req: Any, now: int) -> None:
        if len(req.topics) != 1 or len(req.topics[0].partitions) != 1 \
                or req.topics[0].topic_name != rpc.TOPIC \
                or req.topics[0].partitions[0].partition_index != rpc.PARTITION:
            return self._respond(src, cid, rpc.describe_quorum_response(
                E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, [], []))
        self._respond(src, cid, self._describe_quorum())

    def _describe_quorum(self) -> Any:
        lead = self._lead
        if self.role != LEADER or lead is None:
            return rpc.describe_quorum_response(E.NOT_LEADER_OR_FOLLOWER, self._leader_or_nil(),
                                                self.epoch, -1, [], [])

        def state(p: Progress) -> Any:
            return rpc.replica_state(p.replica_id, p.directory_id, p.end_offset,
                                     p.last_fetch_ms, p.caught_up_ms)
        voters = [state(lead.voters[v]) for v in sorted(lead.voters)]
        observers = [state(lead.observers[o]) for o in sorted(lead.observers)]
        hw = self.hw if self.hw > lead.epoch_start else -1
        latest = self.history.latest if self.dynamic else None
        nodes = {v.id: v.endpoints for v in latest.voters.values()} if latest is not None else None
        return rpc.describe_quorum_response(E.NONE, self.id, self.epoch, hw, voters, observers,
                                            nodes)

    def _on_fetch_response(self, src: int, _: None, resp: Any, now: int) -> bool:
        p = rpc.fetch_response_partition(resp)
        handled = self._leader_answer(resp, p, now)
        if handled is not None:
            return handled
        if p.error_code != E.NONE:
            return False
        if self.role != FOLLOWER:  # Kafka's handleFetchResponse takes a leader's answer from
            return True            # any node it asked (a bootstrap server may be the leader)
        log = self.log
        diverging, snapshot_id = p.diverging_epoch, p.snapshot_id
        if diverging.epoch >= 0:
            cut = log.truncation_point(diverging.epoch, diverging.end_offset)
            if cut < self.hw:
                self.anomalies.append(f"asked to truncate to {cut}, below the high watermark "
                                      f"{self.hw}")
                return False
            self._writes += log.truncate_to(cut)
            self._sync = True
            self.acknowledged = min(self.acknowledged, log.end_offset)
            if self.dynamic and self.history.truncate(log.end_offset):
                self._refresh_voters()  # KIP-853: truncating a VotersRecord reverts it
        elif snapshot_id.epoch >= 0 or snapshot_id.end_offset >= 0:
            if snapshot_id.epoch < 0 or snapshot_id.end_offset < 0:
                return False
            self._download = _Download((snapshot_id.end_offset, snapshot_id.epoch))
        else:
            if p.records:
                self._append_fetched(p.records)
            if p.high_watermark >= 0:
                hw = min(p.high_watermark, log.end_offset)
                self.hw = max(self.hw, hw)
        self._deadline = now + self.config.fetch_timeout_ms
        self._fetched_from_leader = True
        return True

    def _append_fetched(self, records: bytes) -> None:
        """Append the whole batches that continue the log; stop at anything else."""
        log = self.log
        data = bytes(records)
        try:
            for pos, batch in iter_batches(data, allow_truncated_tail=True):
                if batch.base_offset != log.end_offset or not batch.crc_valid \
                        or batch.partition_leader_epoch > self.epoch \
                        or batch.partition_leader_epoch < log.last_epoch:
                    break
                end = pos + 12 + int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
                self._writes += log.append(batch, data[pos:end])
                self._sync = True
                if batch.is_control and self.history.add_batch(batch):
                    self.dynamic = True
                    self._refresh_voters()
        except DecodeError:
            pass

    def _on_fetch_snapshot_response(self, src: int, _: None, resp: Any, now: int) -> bool:
        p = rpc.snapshot_partition(resp)
        handled = self._leader_answer(resp, p, now)
        if handled is not None:
            return handled
        download = self._download
        if self.role != FOLLOWER or download is None:
            return True
        sid = (p.snapshot_id.end_offset, p.snapshot_id.epoch)
        if p.error_code == E.SNAPSHOT_NOT_FOUND or sid[0] < 0 or sid[1] < 0:
            self._download = None  # the leader moved on to a newer snapshot: fetch again
            self._deadline = now + self.config.fetch_timeout_ms
            return True
        if p.error_code != E.NONE or sid != download.snapshot_id \
                or p.position != len(download.data):
            return False
        download.data += p.unaligned_records
        if len(download.data) >= p.size:
            self._download = None
            try:
                snapshot = decode_snapshot(sid[0], sid[1], bytes(download.data))
            except LogError as e:
                self.anomalies.append(f"fetched snapshot is invalid: {e}")
                return False
            self._writes += self.log.install_fetched_snapshot(snapshot)
            self._sync = True
            self.acknowledged = min(self.acknowledged, self.log.end_offset)
            self.hw = max(self.hw, snapshot.end_offset)
            self._load_history()
            self.dynamic = self.dynamic or self.history.latest is not None
            self._refresh_voters()
        self._deadline = now + self.config.fetch_timeout_ms
        return True

    def _fetch_request(self, dst: int) -> Any:
        log = self.log
        key = (self.epoch, log.end_offset, log.last_epoch, self.config.fetch_max_wait_ms)
        cached = self._fetch_cache
        if cached is None or cached[0] != key:
            cached = self._fetch_cache = (key, self.fetch_request_body(log.end_offset,
                                                                       log.last_epoch))
        self.acknowledged = max(self.acknowledged, log.end_offset)
        return cached[1]

    def _fetch_snapshot_request(self, dst: int) -> Any:
        download = self._download
        assert download is not None
        return rpc.fetch_snapshot_request(self.cluster_id, self.id, self.epoch,
                                          download.snapshot_id, len(download.data),
                                          self.config.fetch_snapshot_max_bytes, self.dir)

    # ---- for the idle warp (fastforward/broker_runs.py): a run of fetch answers at once

    def fetch_request_body(self, end_offset: int, last_epoch: int) -> Any:
        """The Fetch body :meth:`_fetch_request` builds with the log ending at
        ``end_offset`` in ``last_epoch``."""
        return rpc.fetch_request(self.cluster_id, self.id, self.dir, self.epoch, end_offset,
                                 last_epoch, self.config.fetch_max_wait_ms,
                                 self.config.fetch_max_bytes)

    def after_fetch_answers(self, leader: int, at: int, cid: int, body: Any, end_offset: int,
                            last_epoch: int) -> int:
        """Where answers from ``leader`` (the last at ``at``), each followed by the next fetch
        (the last with request id ``cid`` and ``body``), leave the client, as
        :meth:`_on_fetch_response` and the poll after each would: deadline, connection,
        cached request, acknowledged offset; returns the Raft wake-up the poll reports."""
        self._deadline = at + self.config.fetch_timeout_ms
        self._fetched_from_leader = True
        conn = self._conns[leader]
        self._cid = conn.cid = cid
        conn.sent_at = at
        self._fetch_cache = ((self.epoch, end_offset, last_epoch, self.config.fetch_max_wait_ms),
                             body)
        self.acknowledged = max(self.acknowledged, end_offset)
        wake = min(self._deadline, at + self.config.request_timeout_ms, self._clean_at)
        self._timer_at = wake
        return wake
