"""The Raft replica of KIP-595 and KIP-630 as a pure state machine.

It follows the shape of Kafka's ``KafkaRaftClient``: every event (a message, the timer, an API
call) changes the state, then a *poll* does whatever is due for the current role and says when
it next needs to run. Nothing here reads a clock or a random source of its own: ``now_ms`` comes
in, the election jitter comes from the ``random.Random`` handed in, and what to persist, send and
when to wake up goes out as :class:`~kraft_testkit.sim.node.Effects`. Writes are synced before any
message of the same step leaves.

Roles (Kafka's ``EpochState`` classes): ``unattached`` (no leader, no vote), ``voted``,
``prospective``, ``candidate``, ``leader``, ``follower`` and ``resigned`` (a leader stepping down,
gracefully or by check-quorum). Observers (replicas outside the voter set, such as brokers) are
unattached or followers only: they fetch, never vote or stand.

Pre-vote (KIP-996, Kafka 4.0+; ``testkit.raft.pre.vote.enable``): a voter whose election or fetch
timeout runs out first becomes *prospective* in the same epoch and asks the voters whether they
would vote for it (VoteRequest v2 with PreVote, nothing persisted). Only with a majority of
grants does it stand as a candidate in the next epoch. A follower that has fetched from its leader
in this epoch refuses pre-votes, so a voter cut off by a partition cannot disrupt a stable leader
by bumping the epoch when it returns. A prospective that loses goes back to following the leader
it knew (or to unattached or voted).

Voters are identified by id and directory id, as KIP-853 does: a voter whose disk was wiped comes
back formatted with a new directory id, so it is no longer the voter the others know. It acts as
an observer (it catches up, never votes, never stands) until voter changes exist; it must not,
because it forgot the votes it cast before the wipe.

KIP-853 (``kraft.version`` 1): the voter set is the latest VotersRecord in the log or the
snapshot, uncommitted ones included (:mod:`kraft_testkit.raft.voters`); majority, high watermark,
elections and check-quorum follow it as it changes (:mod:`kraft_testkit.raft.voter_state`).
The leader's handling of AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter lives in
:mod:`kraft_testkit.raft.reconfig`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import encode_control
from kraft_testkit.protocol.records import RecordBatch, encode_batch
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import reconfig, rpc
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.election_rpcs import ElectionRpcs
from kraft_testkit.raft.errors import InvalidResign, NotLeader
from kraft_testkit.raft.listener import RaftListener
from kraft_testkit.raft.log_recovery import recover_log
from kraft_testkit.raft.log import (
    LEADER_EPOCH_CHECKPOINT,
    QUORUM_STATE,
    decode_epoch_checkpoint,
    encode_epoch_checkpoint,
)
from kraft_testkit.raft.replica_state import (
    UNATTACHED,
    VOTED,
    CANDIDATE,
    LEADER,
    FOLLOWER,
    RESIGNED,
    PROSPECTIVE,
    _ELECTION_BACKOFF_BASE_MS,
    _NO_DIR,
    _Conn,
    _Leadership,
    _Download,
)
from kraft_testkit.raft.replication import Replication
from kraft_testkit.raft.snapshot import encode_snapshot
from kraft_testkit.raft.voter_state import VoterSetState
from kraft_testkit.raft.voters import VoterHistory, VoterSet, control_values, default_endpoints
from kraft_testkit.raft.state import (
    META_PROPERTIES,
    PARTITION_METADATA,
    ElectionState,
    decode_quorum_state,
    encode_meta_properties,
    read_meta_properties,
    encode_partition_metadata,
    encode_quorum_state,
)
from kraft_testkit.sim.node import NEVER, DiskOp, Effects, Replace

if TYPE_CHECKING:
    from random import Random  # handed in by the simulator: the replica draws from no other


class RaftReplica(ElectionRpcs, Replication, VoterSetState):
    """One replica of ``__cluster_metadata-0``: a simulator node (``on_start``/``on_message``/
    ``on_timer``) plus the API the layer above uses (``append``, ``resign``, ``describe_quorum``).

    ``voters`` maps every voter's id to its directory id. ``disk`` is what the node's disk held
    when it started; ``incarnation`` 1 means a freshly formatted disk, and a later incarnation
    that finds no ``meta.properties`` means the disk was wiped.

    ``kraft_version`` 1 (KIP-853): ``voters`` are the bootstrap voters instead, written as the
    bootstrap checkpoint (``--initial-controllers``) when a replica among them is formatted
    (``bootstrap`` False: formatted with neither flag, an observer until added); from then on
    the log decides. ``voters`` also serve as ``controller.quorum.bootstrap.servers``: where an
    observer that knows no voter asks for the leader, unless ``bootstrap_servers`` names others.
    """

    def __init__(self, node_id: int, *, voters: Mapping[int, Uuid], rng: Random,
                 disk: Mapping[str, bytes] | None = None, config: RaftConfig | None = None,
                 cluster_id: str = "", incarnation: int = 1,
                 listener: RaftListener | None = None, directory_id: Uuid | None = None,
                 kraft_version: int = 0, bootstrap: bool | None = None,
                 endpoints: tuple | None = None, can_become_voter: bool = True,
                 bootstrap_servers: Sequence[int] | None = None) -> None:
        self.id = node_id
        self.config = config or RaftConfig()
        self.cluster_id = cluster_id
        self.voters = dict(voters)
        self.static_voters = dict(voters)  # controller.quorum.voters (kraft.version 0)
        # controller.quorum.bootstrap.servers: whom an observer that knows no voter asks
        self.bootstrap_servers = tuple(sorted(bootstrap_servers if bootstrap_servers is not None
                                              else voters))
        self.endpoints = tuple(endpoints or default_endpoints(node_id))  # its own listeners
        self.can_become_voter = can_become_voter  # a controller (auto-join); not a broker
        self.member_request_at = 0  # the next UpdateRaftVoter / auto-join request
        self.majority = len(self.voters) // 2 + 1
        self.listener = listener
        self.incarnation = incarnation
        self._rng = rng
        disk = disk or {}
        self._writes: list[DiskOp] = []
        self._sync = False
        self._sends: list[tuple[int, object]] = []
        self._timer_at: int | None = None
        self.anomalies: list[str] = []  # protocol breaches seen (invariants fail on any)

        meta = disk.get(META_PROPERTIES)
        self.formatted = meta is None
        self.wiped = meta is None and incarnation > 1
        if meta is not None:
            props = read_meta_properties(meta, node_id=node_id, cluster_id=cluster_id or None)
            self.dir = props.directory_id if props.directory_id is not None else _NO_DIR
        elif self.wiped or directory_id is None and node_id not in self.voters:
            self.dir = Uuid.random(rng)
        else:
            self.dir = directory_id if directory_id is not None else self.voters[node_id]
        self.is_voter = self.voters.get(node_id) == self.dir

        self.log, ops = recover_log(disk, self.config.log_config())
        self._writes += ops
        self.history = VoterHistory()
        if self.formatted and kraft_version >= 1 and self.log.snapshot is None and \
                (bootstrap if bootstrap is not None else self.is_voter and not self.wiped):
            self._writes += self.log.install_snapshot(encode_snapshot(
                0, 0, (), self.config.log_time_base_ms,
                control_values(VoterSet.static(voters), kraft_version)))
        self._load_history()
        self.formatted_dynamic = kraft_version >= 1
        self.dynamic = self.formatted_dynamic or self.history.latest is not None
        self._refresh_voters()
        raw_epochs = disk.get(LEADER_EPOCH_CHECKPOINT)
        self._epoch_file = tuple(decode_epoch_checkpoint(raw_epochs)) if raw_epochs else None
        self._epoch_sig: tuple | None = None
        raw_state = disk.get(QUORUM_STATE)
        self._stored = decode_quorum_state(raw_state, QUORUM_STATE) if raw_state \
            else ElectionState()
        self._forgotten_epoch = -1  # see on_start
        self.epoch = self._stored.epoch
        self.role = UNATTACHED
        self.leader_id: int | None = None
        self.voted_id: int | None = None
        latest = self.log.snapshot  # what is known committed (a snapshot always is)
        self.hw = max(self.log.start_offset, latest.end_offset if latest else 0)
        self._clean_at = NEVER  # Kafka's snapshot cleaner runs once a minute from the start
        self.acknowledged = 0  # the largest log end this replica told anyone it holds
        self._next = 0  # the next offset to hand to the listener
        self._fired: tuple[int | None, int] | None = None
        self._conns: dict[int, _Conn] = {}
        self._cid = (incarnation << 22) & 0x7FFFFFFF
        self._deadline = NEVER  # election timeout, fetch timeout or resignation timeout
        self._granted: set[int] = set()
        self._rejected: set[int] = set()
        self._fetched_from_leader = False  # Kafka's FollowerState.hasFetchedFromLeader
        self.elections = {"pre_vote_rounds": 0, "pre_votes_lost": 0, "candidacies": 0}
        self._retries = 0
        self._backoff_until: int | None = None
        self._lead: _Leadership | None = None
        self._unacked: set[int] = set()
        self._successors: list[int] = []
        self._download: _Download | None = None
        self._any_voter_at = 0  # an observer's next question to a random voter
        self._fetch_cache: tuple[tuple[int, int, int, int], object] | None = None
        self._empty_fetch: tuple[tuple[int, int, int], object] | None = None
        self._records_fetch: tuple[tuple[int, ...], object] | None = None

    # ================================================================== simulator contract

    def on_start(self, now_ms: int) -> Effects | None:
        if self.formatted:
            self._writes += [
                Replace(META_PROPERTIES, encode_meta_properties(self.id, self.cluster_id, self.dir)),
                Replace(PARTITION_METADATA, encode_partition_metadata())]
        self._sync = True
        self._clean_at = now_ms + self.config.log_clean_interval_ms
        s = self._stored
        # Kafka's QuorumState#initialize (a durable transition to the initial state), then
        # KafkaRaftClient#initialize
        if self.log.last_epoch > s.epoch:
            # its election state is older than its log (a lost quorum-state): it may have led
            # or voted in that epoch and cannot know; Kafka starts it unattached there
            self._forgotten_epoch = self.log.last_epoch
            self._to_unattached(self.log.last_epoch, now_ms)
        elif not self.is_voter:
            self.voted_id = s.voted_id if s.voted_id >= 0 else None  # kept in its epoch
            if s.leader_id >= 0 and s.leader_id != self.id:
                self._to_follower(s.epoch, s.leader_id, now_ms)
            else:
                self._to_unattached(s.epoch, now_ms)
        elif s.leader_id == self.id:
            self._to_resigned([], now_ms)
            self._persist()  # Kafka's initialize writes every initial state
        elif s.voted_id == self.id:
            self._start_candidacy(now_ms, new_epoch=False)
        else:
            self.voted_id = s.voted_id if s.voted_id >= 0 else None  # kept in its epoch
            if s.leader_id >= 0:
                self._to_follower(s.epoch, s.leader_id, now_ms)
            else:
                self._to_unattached(s.epoch, now_ms)
        if self.is_voter and self.majority == 1 and self.role not in (LEADER, CANDIDATE):
            self._start_candidacy(now_ms)
        return self.poll(now_ms)

    def on_message(self, src: int, msg: object, now_ms: int) -> Effects | None:
        handler = _HANDLERS.get(type(getattr(msg, "body", None)))
        if handler is not None:
            if isinstance(msg, rpc.Request):
                handler(self, src, msg.correlation_id, msg.body, now_ms)
            else:
                conn = self._conns.get(src)
                if conn is None or conn.cid != msg.correlation_id:  # type: ignore[attr-defined]
                    return None  # no longer expected: a duplicate, or answers a stale request
                ok = handler(self, src, None, msg.body, now_ms)  # type: ignore[attr-defined]
                conn = self._conns.get(src)  # a transition may have reset the connections
                if conn is not None and conn.cid == msg.correlation_id:  # type: ignore[attr-defined]
                    conn.cid = None
                    if not ok:
                        conn.backoff_until = now_ms + self.config.retry_backoff_ms
        return self.poll(now_ms)

    def on_timer(self, now_ms: int) -> Effects | None:
        self._timer_at = None
        return self.poll(now_ms)

    def poll(self, now_ms: int) -> Effects | None:
        """Do what is due, hand committed data to the listener, and collect the effects.

        The simulator's hooks call this; API callers call it after ``append`` or ``resign``.
        """
        wake = _POLLS[self.role](self, now_ms)
        if wake <= now_ms:  # a transition asks for another look at once (up to 16 more)
            for _ in range(16):
                wake = _POLLS[self.role](self, now_ms)
                if wake > now_ms:
                    break
        if self._next < self.hw or self._fired is None or self._fired[1] != self.epoch or \
                self._fired[0] != self.leader_id:
            self._deliver(now_ms)
        if now_ms >= self._clean_at:  # Kafka's RaftMetadataLogCleanerManager
            self._clean_at = now_ms + self.config.log_clean_interval_ms
            ops = self.log.maybe_clean(now_ms + self.config.log_time_base_ms)
            if ops:
                self._writes += ops
                self._sync = True
        if wake > self._clean_at:
            wake = self._clean_at
        timer = None
        if wake != self._timer_at:
            timer = self._timer_at = wake
        if self._writes:  # Kafka's leader-epoch-checkpoint follows the log's epoch runs
            ops = self.epoch_checkpoint_ops()
            if ops:
                self._writes += ops
                self._sync = True
        if not self._writes and not self._sends and timer is None:
            return None
        effects = Effects(self._writes, self._sync, self._sends, timer)
        self._writes, self._sends, self._sync = [], [], False
        return effects

    def epoch_checkpoint_ops(self) -> list[DiskOp]:
        """The ``leader-epoch-checkpoint`` rewrite due after the log changed (none when its
        epoch runs did not): what :meth:`poll` adds to a step's writes, and what a bulk
        append (``fastforward/noop_run.py``) adds to its own."""
        log = self.log
        epochs = log.epochs
        sig = (log.start_epoch, log.start_offset, len(epochs), epochs[-1] if epochs else None)
        if sig == self._epoch_sig:  # cheap on the hot path: appends rarely start a run
            return []
        self._epoch_sig = sig
        entries = log.epoch_entries()
        if entries == self._epoch_file:
            return []
        self._epoch_file = entries
        return [Replace(LEADER_EPOCH_CHECKPOINT, encode_epoch_checkpoint(entries))]

    # ================================================================== public API

    @property
    def is_leader(self) -> bool:
        return self.role == LEADER

    @property
    def log_end_offset(self) -> int:
        return self.log.end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.start_offset

    @property
    def is_observer(self) -> bool:
        return not self.is_voter

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Queue records for the next batch; returns the offset the last one will have.

        Raises :class:`NotLeader` unless this replica leads. The records are written after
        ``controller.quorum.append.linger.ms``, all in one batch (an atomic append); call
        :meth:`poll` to collect the effects.
        """
        if self.role != LEADER or self._lead is None:
            raise NotLeader(self.id, self.leader_id, self.epoch)
        values = [bytes(v) for v in values]
        if not values:
            raise ValueError("append needs at least one record")
        lead = self._lead
        if not lead.pending:
            lead.drain_at = now_ms + self.config.append_linger_ms
        lead.pending.extend(values)
        return self.log.end_offset + len(lead.pending) - 1

    def resign(self, now_ms: int) -> None:
        """Step down gracefully (Kafka's shutdown of a leader): EndQuorumEpoch to the voters,
        naming successors by how far their logs are."""
        if self.role == LEADER and self._lead is not None:
            order = sorted((p for v, p in self._lead.voters.items() if v != self.id),
                           key=lambda p: (-p.end_offset, p.replica_id))
            self._to_resigned([p.replica_id for p in order], now_ms)

    def resign_epoch(self, epoch: int, now_ms: int) -> None:
        """Kafka's ``RaftClient#resign(epoch)``: step down from ``epoch`` if it is the current
        one and this replica leads it; an older epoch is ignored (the caller has not heard of
        a change yet). Raises :class:`InvalidResign` for a negative or future epoch, or the
        current one led by another replica (or by none). Call :meth:`poll` after it."""
        if type(epoch) is not int or epoch < 0:
            raise InvalidResign(f"epoch must be a non-negative integer, got {epoch!r}")
        if epoch > self.epoch:
            raise InvalidResign(f"cannot resign from epoch {epoch}: larger than the current "
                                f"epoch {self.epoch}")
        if epoch < self.epoch:
            return
        if self.leader_id != self.id or not self.is_voter and self.role != LEADER:
            raise InvalidResign(f"cannot resign from epoch {epoch}: node {self.id} is not its "
                                f"leader (the leader is {self._leader_or_nil()})")
        self.resign(now_ms)

    def describe_quorum(self) -> Any:
        """A DescribeQuorumResponse as this replica would answer it."""
        return self._describe_quorum()

    # ---- for the idle warp (kraft_testkit/fastforward/warp.py): what it materializes with

    def fetch_handler(self, src: int, request: Any, now_ms: int) -> None:
        """Only the Fetch request handler of :meth:`on_message` (no poll after it)."""
        self._on_fetch_request(src, request.correlation_id, request.body, now_ms)

    def take_sends(self) -> list:
        """The messages queued since the last poll (taken: the next poll will not send them)."""
        sends, self._sends = self._sends, []
        return sends

    @property
    def timer_at(self) -> int | None:
        """The wake-up the last poll reported (None after a timer fired)."""
        return self._timer_at

    @timer_at.setter
    def timer_at(self, at: int | None) -> None:
        self._timer_at = at

    def metrics(self) -> dict[str, int | str]:
        """Kafka's ``raft-metrics`` gauges for this replica (``current-state`` is one of leader,
        candidate, prospective, voted, follower, observer, unattached, resigned), plus this kit's
        election counters under ``testkit-`` names: pre-vote rounds, lost pre-votes and
        candidacies (each bumps the epoch)."""
        state = self.role
        if not self.is_voter and state in (FOLLOWER, UNATTACHED):
            state = "observer"
        return {
            "current-state": state,
            "current-leader": self.leader_id if self.leader_id is not None else -1,
            "current-vote": self.voted_id if self.voted_id is not None else -1,
            "current-epoch": self.epoch,
            "high-watermark": self.hw,
            "log-end-offset": self.log.end_offset,
            "log-end-epoch": self.log.last_epoch,
            "number-of-voters": len(self.voters),
            "testkit-pre-vote-rounds": self.elections["pre_vote_rounds"],
            "testkit-pre-votes-lost": self.elections["pre_votes_lost"],
            "testkit-candidacies": self.elections["candidacies"],
        }

    # ================================================================== transitions

    def _election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self._rng.randrange(t)

    def _persist(self) -> None:
        leader = self.leader_id if self.leader_id is not None else -1
        voted = self.voted_id if self.voted_id is not None else -1
        version = 1 if self.dynamic else 0  # Kafka: data_version follows kraft.version
        voted_dir = self.voters.get(voted, _NO_DIR) if voted >= 0 else _NO_DIR
        self._writes.append(Replace(QUORUM_STATE, encode_quorum_state(
            ElectionState(self.epoch, leader, voted), self.voters, version, voted_dir)))
        self._sync = True

    def _set(self, role: str, epoch: int, leader: int | None, voted: int | None,
             persist: bool = True) -> None:
        lead = self._lead
        self.role, self.epoch, self.leader_id, self.voted_id = role, epoch, leader, voted
        self._conns.clear()
        self._download = None
        if persist:
            self._persist()
        if lead is not None and role != LEADER:
            self._lead = None
            reconfig.abandon(self, lead)
            for parked in lead.parked:  # answered with the error a non-leader gives
                self._answer_fetch(parked.src, parked.cid, parked.replica_id, parked.partition,
                                   0, may_park=False)

    def _to_unattached(self, epoch: int, now: int, persist: bool = True) -> None:
        """Kafka's QuorumState#transitionToUnattached: the vote survives only within the epoch
        (a prospective falling back), and a voter keeps what is left of the election timeout it
        was already running (candidate, unattached, resigned, a prospective not yet outvoted),
        so candidates with stale logs standing again and again cannot keep resetting the timer
        of the one voter that could win; anything else draws a fresh timeout. An observer has
        none."""
        keep = self._deadline < NEVER and (
            self.role in (UNATTACHED, VOTED, CANDIDATE, RESIGNED)
            or self.role == PROSPECTIVE and not self._outvoted())
        voted = self.voted_id if epoch == self.epoch else None
        self._set(VOTED if voted is not None else UNATTACHED, epoch, None, voted, persist)
        if not self.is_voter:
            self._deadline = NEVER
        elif not keep:
            self._deadline = now + self._election_timeout()

    def _to_voted(self, candidate: int, now: int) -> None:
        """Granting a vote (Kafka's unattachedAddVotedState / prospectiveAddVotedState): the vote
        is persisted, the election timeout drawn again; a prospective stays one, its pre-vote
        round begun afresh."""
        if self.role == PROSPECTIVE:
            self.voted_id = candidate
            self._persist()
            self._granted, self._rejected = {self.id}, set()
        else:
            self._set(VOTED, self.epoch, None, candidate)
        self._deadline = now + self._election_timeout()

    def _to_follower(self, epoch: int, leader: int, now: int) -> None:
        voted = self.voted_id if epoch == self.epoch else None  # Kafka's FollowerState keeps it
        self._set(FOLLOWER, epoch, leader, voted)
        self._fetched_from_leader = False
        self._deadline = now + self.config.fetch_timeout_ms

    def _stand(self, now: int) -> None:
        """An election or fetch timeout ran out: Kafka 4.x always asks first (KIP-996); with
        pre-vote off (Kafka 3.x elections) the voter stands at once."""
        if self.config.pre_vote and self.majority > 1:
            self._to_prospective(now)
        else:
            self._start_candidacy(now)

    def _to_prospective(self, now: int) -> None:
        # Same epoch, same leader and vote as before: nothing to persist (Kafka's ProspectiveState
        # keeps them, and falls back to them when the pre-vote is lost).
        self._set(PROSPECTIVE, self.epoch, self.leader_id, self.voted_id, persist=False)
        self._granted, self._rejected = {self.id}, set()
        self._deadline = now + self._election_timeout()
        self.elections["pre_vote_rounds"] += 1

    def _outvoted(self) -> bool:
        """Kafka's EpochElection#isVoteRejected: too many refusals to win this round."""
        return len(self._rejected) > len(self.voters) - self.majority

    def _lose_pre_vote(self, now: int) -> None:
        """Kafka's prospectiveTransitionAfterElectionLoss: back to the leader it followed, else
        unattached in the same epoch with its vote (QuorumState keeps the rest of the election
        timeout unless the voters refused: then a fresh one)."""
        self.elections["pre_votes_lost"] += 1
        leader = self.leader_id
        if leader is not None and leader != self.id:
            self._to_follower(self.epoch, leader, now)
            return
        self._to_unattached(self.epoch, now)

    def _start_candidacy(self, now: int, new_epoch: bool = True) -> None:
        self.elections["candidacies"] += 1
        self._retries = self._retries + 1 if self.role in (CANDIDATE, PROSPECTIVE) else 1
        epoch = self.epoch + 1 if new_epoch else self.epoch
        self._set(CANDIDATE, epoch, None, self.id)
        self._granted, self._rejected = {self.id}, set()
        self._backoff_until = None
        self._deadline = now + self._election_timeout()
        if len(self._granted) >= self.majority:
            self._to_leader(now)

    def _to_leader(self, now: int) -> None:
        granting = sorted(self._granted)
        self._set(LEADER, self.epoch, self.id, None)
        lead = self._lead = _Leadership(self.log.end_offset, self.voters,
                                        now + self.config.fetch_timeout_ms * 3 // 2)
        lead.acked.add(self.id)
        self._own_progress().directory_id = self.dir
        change = M.LeaderChangeMessage(
            version=0, leader_id=self.id,
            voters=tuple(M.LeaderChangeMessage.Voter(voter_id=v) for v in sorted(self.voters)),
            granting_voters=tuple(M.LeaderChangeMessage.Voter(voter_id=v) for v in granting))
        pairs = [encode_control(change, 0), *self._epoch_start_controls()]  # KIP-853
        self._append_batch(RecordBatch.build(self.log.end_offset, [v for _, v in pairs],
                                             keys=[k for k, _ in pairs], control=True,
                                             timestamp_ms=now + self.config.log_time_base_ms,
                                             leader_epoch=self.epoch))

    def _to_resigned(self, successors: list[int], now: int) -> None:
        self._set(RESIGNED, self.epoch, self.id, None, persist=False)
        self._unacked = {v for v in self.voters if v != self.id}
        self._successors = successors
        self._deadline = now + self._election_timeout()

    def _maybe_transition(self, leader: int | None, epoch: int, now: int) -> None:
        """Follow what a request or response says about the epoch and its leader."""
        if leader is not None and leader == self.id:
            if not self.is_voter:
                # news of this node id before its disk was wiped: the epoch is real, the
                # leader is gone
                if epoch > self.epoch:
                    self._to_unattached(epoch, now)
                return
            if epoch == self._forgotten_epoch == self.epoch:
                # others still follow its leadership of the epoch its lost quorum-state held
                # (Kafka's transitionToFollower throws on this and the node halts); it leads
                # no more, and their fetch timeout elects a new leader
                return
            if epoch > self.epoch or epoch == self.epoch and self.role not in (LEADER, RESIGNED):
                self.anomalies.append(f"told that it leads epoch {epoch} while {self.role} "
                                      f"in epoch {self.epoch}")
            return
        if epoch == self.epoch and leader is not None and self.leader_id is not None \
                and leader != self.leader_id:
            self.anomalies.append(f"two leaders in epoch {epoch}: {self.leader_id} and {leader}")
            return
        if epoch > self.epoch:
            if leader is not None:
                self._to_follower(epoch, leader, now)
            else:
                self._to_unattached(epoch, now)
        elif epoch == self.epoch and leader is not None and self.leader_id is None:
            self._to_follower(epoch, leader, now)

    # ================================================================== polling, by role

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

    def _send_any_voter(self, build: Any, now: int) -> int:
        """An observer looking for the leader asks one random voter at a time, no more often
        than every ``controller.quorum.retry.backoff.ms``."""
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
        if not ready or now < self._any_voter_at:
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
        build = self._fetch_snapshot_request if self._download else self._fetch_request
        assert self.leader_id is not None
        wake = min(self._deadline, self._send(self.leader_id, build, now))
        if self.dynamic:  # KIP-853: UpdateRaftVoter, auto-join
            wake = min(wake, reconfig.follower_requests(self, now))
        return wake

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

    # ================================================================== log and commit

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

    # ================================================================== request handlers

    def _respond(self, dst: int, cid: int, body: Any) -> None:
        self._sends.append((dst, rpc.response(cid, body)))

    def _leader_or_nil(self) -> int:
        return self.leader_id if self.leader_id is not None else -1

    def _cluster_ok(self, cluster_id: str | None) -> bool:
        return cluster_id is None or cluster_id == self.cluster_id

    def _voter_only_error(self, remote: int, epoch: int) -> int:
        """Kafka's validateVoterOnlyRequest: the epoch and the sender's id only. Membership is
        not checked (voter sets differ while a change replicates; a nominee counts only its
        own voters' grants), with one exception of the kit's: a replica whose disk was wiped
        under a static voter set refuses (it forgot the votes it cast before the wipe)."""
        if epoch < self.epoch:
            return E.FENCED_LEADER_EPOCH
        if remote < 0:
            return E.INVALID_REQUEST
        if not self.dynamic and self.wiped and self.id in self.voters and not self.is_voter:
            return E.INCONSISTENT_VOTER_SET
        return E.NONE

    def _valid_voter_key(self, voter_id: int, voter_dir: Uuid) -> bool:
        """Kafka's isValidVoterKey: a Vote or BeginQuorumEpoch naming a voter must name this
        replica (its id, and its directory id when one is given)."""
        if voter_id < 0:
            return True
        return voter_id == self.id and voter_dir in (_NO_DIR, self.dir)

    def _leader_only_error(self, epoch: int) -> int:
        if epoch < self.epoch:
            return E.FENCED_LEADER_EPOCH
        if epoch > self.epoch:
            return E.UNKNOWN_LEADER_EPOCH
        if self.role != LEADER:
            return E.NOT_LEADER_OR_FOLLOWER
        return E.NONE


    # ================================================================== response handlers

    def _common(self, error: int, leader_id: int, epoch: int, now: int) -> bool | None:
        """Kafka's maybeHandleCommonResponse: None lets the API's own handler continue."""
        leader = leader_id if leader_id >= 0 else None
        if epoch < self.epoch or error == E.UNKNOWN_LEADER_EPOCH:
            return True
        if epoch > self.epoch or error in (E.FENCED_LEADER_EPOCH, E.NOT_LEADER_OR_FOLLOWER):
            self._maybe_transition(leader, epoch, now)
            return True
        if leader is not None and self.leader_id is None:
            self._maybe_transition(leader, epoch, now)
            return None if error == E.NONE else True
        if error == E.BROKER_NOT_AVAILABLE:
            return False
        return None

    # A voter-only request answered INCONSISTENT_VOTER_SET went to a replica that is not the
    # voter we know (a wiped disk, KIP-853): asking again cannot help, so it counts as answered.

    def _leader_answer(self, resp: Any, p: Any, now: int) -> bool | None:
        """What Fetch and FetchSnapshot answers have in common: None to go on with partition
        ``p``, else the outcome for the connection (an unusable answer, or one about epochs)."""
        if resp.error_code != E.NONE or p is None:
            return False
        leader = p.current_leader
        return self._common(p.error_code, leader.leader_id, leader.leader_epoch, now)


    # ================================================================== request builders

    def __repr__(self) -> str:
        kind = "voter" if self.is_voter else "observer"
        return (f"RaftReplica({self.id} {kind} {self.role} epoch={self.epoch} "
                f"leader={self.leader_id} log=[{self.log.start_offset}, {self.log.end_offset}) "
                f"hw={self.hw})")


_HANDLERS = {
    M.VoteRequest: RaftReplica._on_vote_request,
    M.VoteResponse: RaftReplica._on_vote_response,
    M.BeginQuorumEpochRequest: RaftReplica._on_begin_epoch_request,
    M.BeginQuorumEpochResponse: RaftReplica._on_begin_epoch_response,
    M.EndQuorumEpochRequest: RaftReplica._on_end_epoch_request,
    M.EndQuorumEpochResponse: RaftReplica._on_end_epoch_response,
    M.FetchRequest: RaftReplica._on_fetch_request,
    M.FetchResponse: RaftReplica._on_fetch_response,
    M.FetchSnapshotRequest: RaftReplica._on_fetch_snapshot_request,
    M.FetchSnapshotResponse: RaftReplica._on_fetch_snapshot_response,
    M.DescribeQuorumRequest: RaftReplica._on_describe_quorum_request,
    M.AddRaftVoterRequest: reconfig.on_add_voter,
    M.RemoveRaftVoterRequest: reconfig.on_remove_voter,
    M.UpdateRaftVoterRequest: reconfig.on_update_voter,
}

_POLLS = {
    LEADER: RaftReplica._poll_leader,
    CANDIDATE: RaftReplica._poll_candidate,
    FOLLOWER: RaftReplica._poll_follower,
    UNATTACHED: RaftReplica._poll_unattached,
    VOTED: RaftReplica._poll_unattached,
    RESIGNED: RaftReplica._poll_resigned,
    PROSPECTIVE: RaftReplica._poll_prospective,
}
