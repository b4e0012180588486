"""What each role does when polled, as Kafka's ``KafkaRaftClient#pollLeader``,
``pollCandidate``, ``pollProspective``, ``pollFollower``, ``pollUnattached`` and ``pollResigned``
do: send what is due (one request in flight per destination, Kafka's ``RequestManager``), move
on when a timer runs out, and say when to look again. A mixin of
:class:`~kraft_testkit.raft.replica.RaftReplica`; it holds no state of its own."""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.raft import reconfig, rpc
from kraft_testkit.raft.replica_state import _ELECTION_BACKOFF_BASE_MS, _Conn
from kraft_testkit.sim.node import NEVER


class RolePolls:
    """Methods of RaftReplica (see the module docstring)."""

    def _send(self, dst: int, build: Any, now: int) -> int:
        """Send a request if the connection to ``dst`` is ready; returns when to look again."""
        conn = self._conns.get(dst)
        if conn is None:
            conn = self._conns[dst] = _Conn()
        timeout = self.config.request_timeout_ms
        at = conn.ready_at(timeout)
        if now < at:
            return at
        self._cid = cid = (self._cid + 1) & 0x7FFFFFFF
        conn.cid, conn.sent_at = cid, now
        self._sends.append((dst, rpc.request(cid, build(dst))))
        return now + timeout

    def _send_any_voter(self, build: Any, now: int, paced: bool = True) -> int:
        """An observer looking for the leader asks one random voter at a time, no more often
        than every ``controller.quorum.retry.backoff.ms`` unless not ``paced`` (a follower
        whose leader stopped answering: Kafka's findReadyBootstrapServer, at once)."""
        timeout = self.config.request_timeout_ms
        ready, wake = [], max(self._any_voter_at, now + 1) if now < self._any_voter_at else NEVER
        for v in sorted(self.voters or self.bootstrap_servers):
            if v == self.id:
                continue
            conn = self._conns.get(v)
            if conn is not None and conn.cid is not None and now < conn.sent_at + timeout:
                return conn.sent_at + timeout  # one question at a time
            at = 0 if conn is None else conn.ready_at(timeout)
            if at <= now:
                ready.append(v)
            elif at < wake:
                wake = at
        if not ready or paced and now < self._any_voter_at:
            return wake
        self._any_voter_at = now + self.config.retry_backoff_ms
        return self._send(self._rng.choice(ready), build, now)

    def _poll_leader(self, now: int) -> int:
        lead = self._lead
        assert lead is not None
        if lead.change is not None:
            reconfig.committed(self, now)
            if self._lead is not lead:
                return now  # it removed itself and resigned
        if not self.is_voter and self.dynamic and (self.history.latest_offset or 0) < self.hw:
            self.resign_removed(now)  # outside the committed voter set, request answered or not
            return now
        if lead.pending and now >= lead.drain_at:
            values, lead.pending, lead.drain_at = lead.pending, [], NEVER
            self._append_batch(RecordBatch.build(self.log.end_offset, values,
                                                 timestamp_ms=now + self.config.log_time_base_ms,
                                                 leader_epoch=self.epoch))
        if lead.parked:
            wake_all, lead.wake_parked = lead.wake_parked, False
            still = []
            for p in lead.parked:
                if wake_all or p.deadline <= now:
                    self._answer_fetch(p.src, p.cid, p.replica_id, p.partition, now,
                                       may_park=False)
                else:
                    still.append(p)
            lead.parked = still
        else:
            lead.wake_parked = False
        if self.majority > 1 and now >= lead.check_deadline:
            self.resign(now)  # check-quorum: a majority stopped fetching
            return now
        wake = lead.drain_at
        if self.majority > 1 and lead.check_deadline < wake:
            wake = lead.check_deadline
        if lead.change is not None:
            wake = min(wake, reconfig.expire(self, now) or NEVER)
        for p in lead.parked:
            wake = min(wake, p.deadline)
        if not lead.acked.issuperset(self.voters):
            for v in self.voters:
                if v not in lead.acked:
                    wake = min(wake, self._send(v, self._begin_epoch_request, now))
        return wake

    def _poll_candidate(self, now: int) -> int:
        """Kafka 4.1+ (pollCandidate): a candidate asks until it wins, is outvoted or its
        election timeout runs out, then goes back to prospective, which must win a pre-vote
        before the epoch moves again. With pre-vote off (Kafka 3.x) a lost or timed-out
        election backs off exponentially and stands again."""
        if self._backoff_until is not None:
            if now >= self._backoff_until:
                self._stand(now)
                return now
            return self._backoff_until
        if now >= self._deadline:
            if self.config.pre_vote:
                self._to_prospective(now)
            else:
                self._backoff_until = now + self._election_backoff()
            return now
        wake = self._deadline
        if not self._outvoted():  # can still win
            for v in self.voters:
                if v not in self._granted and v not in self._rejected:
                    at = self._send(v, self._vote_request, now)
                    wake = min(wake, at)
        return wake

    def _poll_prospective(self, now: int) -> int:
        if self._outvoted() or now >= self._deadline:
            self._lose_pre_vote(now)
            return now
        wake = self._deadline
        for v in self.voters:
            if v not in self._granted and v not in self._rejected:
                wake = min(wake, self._send(v, self._pre_vote_request, now))
        return wake

    def _poll_follower(self, now: int) -> int:
        if now >= self._deadline:
            if self.is_voter:
                self._stand(now)
                return now
            # an observer looks around; its leader is not evidently alive any more, so it no
            # longer refuses pre-votes for it (KIP-853: it may be a voter that has not fetched
            # the VotersRecord naming it yet)
            self._fetched_from_leader = False
            return self._send_any_voter(self._fetch_request, now)
        wake = min(self._deadline, self._fetch_from_best_node(now))
        if self.dynamic:  # KIP-853: UpdateRaftVoter, auto-join
            wake = min(wake, reconfig.follower_requests(self, now))
        return wake

    def _fetch_from_best_node(self, now: int) -> int:
        """Kafka's maybeSendFetchToBestNode: Fetch (or FetchSnapshot) from the leader; once a
        request to it timed out (the connection is reset) or while it backs off after an
        error, a Fetch to any ready bootstrap server instead, to learn of a new leader; nothing
        while another request is in flight."""
        leader = self.leader_id
        assert leader is not None
        conn = self._conns.get(leader)
        timeout = self.config.request_timeout_ms
        if conn is not None:
            if conn.cid is not None and now >= conn.sent_at + timeout:
                del self._conns[leader]  # requestManager.reset(leader)
                return self._send_any_voter(self._fetch_request, now, paced=False)
            if conn.cid is None and now < conn.backoff_until:
                return self._send_any_voter(self._fetch_request, now, paced=False)
        busy = NEVER
        for dst, other in self._conns.items():
            if dst != leader and other.cid is not None and now < other.sent_at + timeout:
                busy = min(busy, other.sent_at + timeout)  # hasAnyInflightRequest
        if busy < NEVER:
            return busy
        build = self._fetch_snapshot_request if self._download else self._fetch_request
        return self._send(leader, build, now)

    def _poll_unattached(self, now: int) -> int:
        """Kafka's pollUnattached: voter or observer, it asks the bootstrap servers (the voters)
        for the leader; a voter stands when its election timeout runs out."""
        if self.is_voter:
            if now >= self._deadline:
                self._stand(now)
                return now
            return min(self._deadline, self._send_any_voter(self._fetch_request, now))
        return self._send_any_voter(self._fetch_request, now)

    def _poll_resigned(self, now: int) -> int:
        """Kafka's pollResigned: EndQuorumEpoch to the voters that have not acknowledged it,
        for one election timeout; then unattached in the next epoch (so no one takes it for
        the leader, nor it itself), with that timeout spent: a voter goes on to ask for
        pre-votes at once, like anyone. With pre-vote off (Kafka 3.x) it stands directly."""
        if now >= self._deadline:
            if self.is_voter and not self.config.pre_vote:
                self._start_candidacy(now)
            else:
                self._to_unattached(self.epoch + 1, now)
            return now
        wake = self._deadline
        for v in sorted(self._unacked):
            at = self._send(v, self._end_epoch_request, now)
            wake = min(wake, at)
        return wake

    def _election_backoff(self) -> int:
        """Kafka 3.x's binary exponential backoff after a lost or timed-out election (only with
        pre-vote off; Kafka 4.1+ has none)."""
        retries = max(self._retries, 1)
        ms = _ELECTION_BACKOFF_BASE_MS * self._rng.randrange(2 << min(20, retries - 1))
        return min(ms, self.config.election_backoff_max_ms)

    def _successor_backoff(self, successors: list[int]) -> int:
        """Kafka's endEpochElectionBackoff: how long a follower told of a resignation waits
        before it stands, by its rank among the preferred successors (the first at once; one
        not named waits ``controller.quorum.election.backoff.max.ms``)."""
        position = successors.index(self.id) if self.id in successors else len(successors)
        backoff_max = self.config.election_backoff_max_ms
        if position == 0:
            return 0
        if position >= len(successors):
            return backoff_max
        return min(backoff_max, (backoff_max >> (len(successors) - 1)) << (position - 1))
