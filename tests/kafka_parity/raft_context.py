"""The seam Kafka's Raft tests use, on the kit: one replica driven by hand.

Kafka's ``RaftClientTestContext`` builds one ``KafkaRaftClient`` over a mock network, a mock
clock and a quorum-state store holding a chosen starting state (``withElectedLeader``,
``withVotedCandidate``, ``withUnknownLeader``), then delivers crafted requests and responses and
checks what the client answers, its state, epoch and log. :class:`RaftContext` does the same to
one :class:`~kraft_testkit.raft.replica.RaftReplica`: the starting state is written as the
``quorum-state`` file it reads at start, the clock is ``now``, and every message it sends is
kept. Its defaults are the Kafka context's (election timeout 10 s, fetch timeout 50 s, election
backoff max 100 ms, request timeout 5 s, retry backoff 50 ms, no linger, no fetch wait).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.log import QUORUM_STATE
from kraft_testkit.raft.replica import RaftReplica
from kraft_testkit.raft.state import ElectionState, decode_quorum_state, encode_quorum_state
from kraft_testkit.sim import MemoryDisk
from kraft_testkit.sim.node import Replace

CLUSTER = "raft-parity-cluster"
DIRS = {n: Uuid(bytes([n + 16]) * 16) for n in range(0, 16)}
ELECTION_TIMEOUT_MS = 10_000
FETCH_TIMEOUT_MS = 50_000
ELECTION_BACKOFF_MAX_MS = 100
REQUEST_TIMEOUT_MS = 5_000
RETRY_BACKOFF_MS = 50

NONE, FENCED_LEADER_EPOCH, INVALID_REQUEST, INCONSISTENT_CLUSTER_ID = 0, 74, 42, 104
NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, INVALID_VOTER_KEY = 6, 75, 125


class FixedJitter(random.Random):
    """Kafka's ``MockableRandom.mockNextInt(bound, jitter)``: every election timeout drawn is
    the configured one plus ``jitter``; every other draw stays seeded."""

    def __init__(self, jitter: int, seed: int = 0) -> None:
        super().__init__(seed)
        self.jitter = jitter

    def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        return self.jitter


def kafka_config(**overrides: Any) -> RaftConfig:
    """RaftClientTestContext's quorum settings."""
    values = dict(election_timeout_ms=ELECTION_TIMEOUT_MS, fetch_timeout_ms=FETCH_TIMEOUT_MS,
                  election_backoff_max_ms=ELECTION_BACKOFF_MAX_MS,
                  request_timeout_ms=REQUEST_TIMEOUT_MS, retry_backoff_ms=RETRY_BACKOFF_MS,
                  append_linger_ms=0, fetch_max_wait_ms=0)
    values.update(overrides)
    return RaftConfig(**values)


class RaftContext:
    """One replica (``local``) of a quorum whose voters are ``voters``, at ``kraft_version``.

    The starting election state is at most one of ``elected=(epoch, leader)``,
    ``voted=(epoch, candidate)`` or ``unknown_leader=epoch``; ``log`` is a list of
    ``(epoch, n_records)`` batches appended before the replica starts (Kafka's
    ``appendToLog``)."""

    def __init__(self, local: int = 1, voters: Iterable[int] = (1, 2, 3), *,
                 kraft_version: int = 0, elected: tuple[int, int] | None = None,
                 voted: tuple[int, int] | None = None, unknown_leader: int | None = None,
                 log: Sequence[tuple[int, int]] = (), config: RaftConfig | None = None,
                 seed: int = 0, jitter: int | None = None, local_dir: Uuid | None = None,
                 can_become_voter: bool = True, start: bool = True) -> None:
        self.local = local
        self.voters = {v: DIRS[v] for v in voters}
        self.kraft_version = kraft_version
        self.config = config or kafka_config()
        self.disk = MemoryDisk()
        state = ElectionState()
        if elected is not None:
            state = ElectionState(elected[0], elected[1], -1)
        elif voted is not None:
            state = ElectionState(voted[0], -1, voted[1])
        elif unknown_leader is not None:
            state = ElectionState(unknown_leader, -1, -1)
        voted_dir = DIRS[state.voted_id] if state.voted_id >= 0 else Uuid.ZERO
        self.disk.apply(Replace(QUORUM_STATE, encode_quorum_state(
            state, self.voters, kraft_version, voted_dir)))
        self.now = 0
        self.sent: list[tuple[int, Any]] = []
        self.timer: int | None = None
        self._cid = 7000
        rng = random.Random(seed) if jitter is None else FixedJitter(jitter, seed)
        self.r = RaftReplica(local, voters=self.voters, rng=rng,
                             disk=self.disk.view(), config=self.config, cluster_id=CLUSTER,
                             directory_id=DIRS[local] if local_dir is None else local_dir,
                             kraft_version=kraft_version,
                             bootstrap=True if kraft_version else None,
                             can_become_voter=can_become_voter)
        for epoch, n in log:
            self.append_to_log(epoch, n)
        if start:
            self._apply(self.r.on_start(self.now))

    # ------------------------------------------------------------------ driving

    def append_to_log(self, epoch: int, n: int) -> None:
        """Kafka's ``appendToLog``: ``n`` records in one batch of ``epoch``, before the start."""
        values = [f"r{i}".encode() for i in range(n)]
        self.r._append_batch(RecordBatch.build(  # noqa: SLF001 - the log as Kafka's test seeds it
            self.r.log.end_offset, values, timestamp_ms=0, leader_epoch=epoch))

    def _apply(self, effects: Any) -> None:
        if effects is None:
            return
        for op in effects.writes:
            self.disk.apply(op)
        if effects.sync:
            self.disk.sync()
        self.sent.extend(effects.sends)
        if effects.timer_ms is not None:
            self.timer = effects.timer_ms

    def poll(self) -> None:
        self._apply(self.r.on_timer(self.now))

    def sleep(self, ms: int) -> None:
        """Kafka's ``time.sleep`` then ``client.poll``."""
        self.now += ms
        self.poll()

    def deliver(self, src: int, body: Any) -> Any:
        """Deliver a request and return the response body the replica sent back (or None)."""
        self._cid += 1
        cid = self._cid
        start = len(self.sent)
        self._apply(self.r.on_message(src, rpc.request(cid, body), self.now))
        for dst, msg in self.sent[start:]:
            if dst == src and isinstance(msg, rpc.Response) and msg.correlation_id == cid:
                return msg.body
        return None

    def requests(self, body_type: type, dst: int | None = None) -> list[tuple[int, rpc.Request]]:
        return [(d, m) for d, m in self.sent if isinstance(m, rpc.Request)
                and type(m.body) is body_type and (dst is None or d == dst)]

    def drain(self) -> None:
        """Forget what was sent so far (Kafka's tests assert on what is sent next)."""
        self.sent.clear()

    def respond(self, dst: int, request: rpc.Request, body: Any) -> None:
        """Answer ``request`` (sent to ``dst``) with ``body``."""
        self._apply(self.r.on_message(dst, rpc.response(request.correlation_id, body), self.now))

    # ------------------------------------------------------------------ messages

    def vote_request(self, epoch: int, candidate: int, last_epoch: int, last_offset: int,
                     pre_vote: bool = False) -> Any:
        return rpc.vote_request(CLUSTER, epoch, candidate, DIRS[candidate], self.local,
                                DIRS[self.local] if self.kraft_version else Uuid.ZERO,
                                last_epoch, last_offset, pre_vote=pre_vote)

    def pre_vote_request(self, epoch: int, candidate: int, last_epoch: int,
                         last_offset: int) -> Any:
        return self.vote_request(epoch, candidate, last_epoch, last_offset, pre_vote=True)

    def begin_epoch_request(self, epoch: int, leader: int) -> Any:
        return rpc.begin_epoch_request(CLUSTER, epoch, leader, self.local,
                                       DIRS[self.local] if self.kraft_version else Uuid.ZERO)

    def end_epoch_request(self, epoch: int, leader: int, successors: Sequence[int]) -> Any:
        return rpc.end_epoch_request(CLUSTER, epoch, leader, [(s, DIRS[s]) for s in successors])

    def fetch_request(self, epoch: int, replica: int, offset: int, last_epoch: int,
                      max_wait: int = 0, high_watermark: int = rpc.NO_HIGH_WATERMARK) -> Any:
        """Kafka's ``fetchRequest``: its high watermark is Long.MAX_VALUE unless given."""
        return rpc.fetch_request(CLUSTER, replica, DIRS[replica], epoch, offset, last_epoch,
                                 max_wait, 1 << 20, high_watermark)

    # ------------------------------------------------------------------ state

    @property
    def epoch(self) -> int:
        return self.r.epoch

    @property
    def role(self) -> str:
        return self.r.role

    def stored(self) -> ElectionState:
        """The election state in the ``quorum-state`` file now."""
        return decode_quorum_state(self.disk.view()[QUORUM_STATE])

    def assert_vote_response(self, body: Any, error: int, epoch: int, leader: int,
                             granted: bool) -> None:
        """Kafka's ``assertSentVoteResponse``: top-level NONE, then the partition's values."""
        assert body is not None, "no VoteResponse was sent"
        assert body.error_code == 0, body
        p = rpc.vote_partition(body)
        assert (p.error_code, p.leader_epoch, p.leader_id, p.vote_granted) == \
            (error, epoch, leader, granted), p

    def assert_epoch_response(self, body: Any, error: int, epoch: int, leader: int) -> None:
        """Kafka's ``assertSentBegin/EndQuorumEpochResponse``."""
        assert body is not None, "no response was sent"
        assert body.error_code == 0, body
        p = rpc.vote_partition(body)
        assert (p.error_code, p.leader_epoch, p.leader_id) == (error, epoch, leader), p

    def assert_elected_leader(self, epoch: int, leader: int) -> None:
        """Kafka's ``assertElectedLeader``: the leader known and persisted."""
        assert (self.r.epoch, self.r.leader_id) == (epoch, leader), self.r
        stored = self.stored()
        assert (stored.epoch, stored.leader_id) == (epoch, leader), stored

    def assert_voted_candidate(self, epoch: int, candidate: int) -> None:
        assert (self.r.epoch, self.r.voted_id) == (epoch, candidate), self.r
        stored = self.stored()
        assert (stored.epoch, stored.voted_id) == (epoch, candidate), stored

    def assert_unknown_leader_no_vote(self, epoch: int) -> None:
        """Kafka's ``assertUnknownLeaderAndNoVotedCandidate``."""
        assert (self.r.epoch, self.r.leader_id, self.r.voted_id) == (epoch, None, None), self.r
        stored = self.stored()
        assert (stored.epoch, stored.leader_id, stored.voted_id) == (epoch, -1, -1), stored

    def vote_requests_sent(self, epoch: int, pre_vote: bool) -> list[int]:
        """The voters asked since the last :meth:`drain`, each checked for ``epoch``/pre-vote."""
        asked = []
        for dst, req in self.requests(M.VoteRequest):
            p = rpc.vote_partition(req.body)
            assert (p.candidate_epoch, p.pre_vote) == (epoch, pre_vote), p
            asked.append(dst)
        return sorted(asked)

    # ------------------------------------------------------------------ getting to a role

    def _grant_all(self, epoch: int, pre_vote: bool) -> None:
        asked = [(d, m) for d, m in self.requests(M.VoteRequest)
                 if rpc.vote_partition(m.body).pre_vote == pre_vote
                 and rpc.vote_partition(m.body).candidate_epoch == epoch]
        assert asked, f"no {'pre-' if pre_vote else ''}vote requests in epoch {epoch}"
        self.drain()
        for dst, req in asked:
            self.respond(dst, req, rpc.vote_response(NONE, epoch, -1, True))

    def unattached_to_candidate(self) -> None:
        """Kafka's ``unattachedToCandidate``: time out, win the pre-vote."""
        epoch = self.epoch
        self.sleep(2 * self.config.election_timeout_ms)
        assert self.role == "prospective", self.r
        self._grant_all(epoch, pre_vote=True)
        assert (self.role, self.epoch) == ("candidate", epoch + 1), self.r

    def unattached_to_leader(self) -> None:
        """Kafka's ``unattachedToLeader``: then win the vote and send BeginQuorumEpoch."""
        self.unattached_to_candidate()
        epoch = self.epoch
        self._grant_all(epoch, pre_vote=False)
        self.assert_elected_leader(epoch, self.local)
        self.poll()
        assert self.requests(M.BeginQuorumEpochRequest), "no BeginQuorumEpoch sent"

    # ------------------------------------------------------------------ KIP-853 requests

    def deliver_later(self, src: int, body: Any) -> int:
        """Deliver a request whose answer may come later; returns its correlation id."""
        self._cid += 1
        self._apply(self.r.on_message(src, rpc.request(self._cid, body), self.now))
        return self._cid

    def response(self, dst: int, cid: int) -> Any:
        """The answer sent to ``dst`` for request ``cid`` (None if not yet)."""
        for d, msg in self.sent:
            if d == dst and isinstance(msg, rpc.Response) and msg.correlation_id == cid:
                return msg.body
        return None

    def add_voter_request(self, voter: int, cluster_id: str | None = CLUSTER,
                          listener: str = "CONTROLLER", directory: Uuid | None = None,
                          timeout_ms: int = 0x7FFFFFFF, ack_when_committed: bool = True) -> Any:
        return M.AddRaftVoterRequest(
            cluster_id=cluster_id, timeout_ms=timeout_ms, voter_id=voter,
            voter_directory_id=DIRS[voter] if directory is None else directory,
            listeners=(M.AddRaftVoterRequest.Listener(name=listener, host="localhost",
                                                      port=9990 + voter),),
            ack_when_committed=ack_when_committed)

    def remove_voter_request(self, voter: int, cluster_id: str | None = CLUSTER,
                             directory: Uuid | None = None) -> Any:
        return M.RemoveRaftVoterRequest(
            cluster_id=cluster_id, voter_id=voter,
            voter_directory_id=DIRS[voter] if directory is None else directory)

    def update_voter_request(self, voter: int, epoch: int, cluster_id: str | None = CLUSTER,
                             directory: Uuid | None = None, versions: tuple[int, int] = (0, 1),
                             listener: str = "CONTROLLER", port: int | None = None) -> Any:
        R = M.UpdateRaftVoterRequest
        return R(cluster_id=cluster_id, current_leader_epoch=epoch, voter_id=voter,
                 voter_directory_id=DIRS[voter] if directory is None else directory,
                 listeners=(R.Listener(name=listener, host="localhost",
                                       port=9990 + voter if port is None else port),),
                 k_raft_version_feature=R.KRaftVersionFeature(
                     min_supported_version=versions[0], max_supported_version=versions[1]))

    def fetch_at_end(self, replica: int) -> Any:
        """Kafka's ``fetchRequest(epoch, replica, log end, epoch, 0)``; checks the answer is
        NONE from this leader, and returns it."""
        resp = self.deliver(replica, self.fetch_request(self.epoch, replica,
                                                        self.r.log.end_offset, self.epoch))
        p = rpc.fetch_response_partition(resp)
        assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
            (NONE, self.epoch, self.local), p
        return resp

    def is_voter(self, node: int) -> bool:
        """Kafka's ``quorum().isVoter(key)``: in the latest voter set, with its directory id."""
        return self.r.voters.get(node) == DIRS[node]

    # ------------------------------------------------------------------ snapshots

    def fetch_snapshot_request(self, epoch: int, snapshot_id: tuple[int, int], position: int,
                               replica: int = 2, max_bytes: int = 0x7FFFFFFF,
                               cluster_id: str | None = CLUSTER) -> Any:
        """Kafka's ``fetchSnapshotRequest``; ``snapshot_id`` is (end offset, epoch)."""
        body = rpc.fetch_snapshot_request(cluster_id or "", replica, epoch, snapshot_id,
                                          position, max_bytes, DIRS[replica])
        return body.replace(cluster_id=cluster_id)

    def create_snapshot(self, end_offset: int, epoch: int, records: Sequence[bytes]) -> bytes:
        """Kafka's ``client.createSnapshot(id).append(records).freeze()``: a snapshot of the
        committed log, written as the replica writes its own; returns its bytes."""
        from kraft_testkit.raft.snapshot import encode_snapshot
        assert end_offset <= self.r.hw, "a snapshot covers committed records only"
        snapshot = encode_snapshot(end_offset, epoch, list(records), 0)
        self._apply_ops(self.r.log.install_snapshot(snapshot))
        return snapshot.data

    def _apply_ops(self, ops: Any) -> None:
        for op in ops:
            self.disk.apply(op)
        self.disk.sync()
