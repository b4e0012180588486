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
it knew (or to unattached, keeping its vote). As in Kafka 4.1+, a candidate that loses waits out
its election timeout and becomes prospective again, and a resigned leader becomes unattached in
the next epoch after one election timeout and must win a pre-vote like anyone.

Voters are identified by id and directory id, as KIP-853 does: a voter whose disk was wiped comes
back formatted with a new directory id, so it is no longer the voter the others know. It acts as
an observer (it catches up, never votes, never stands) until voter changes exist; it must not,
because it forgot the votes it cast before the wipe.

KIP-853 (``kraft.version`` 1): the voter set is the latest VotersRecord in the log or the
snapshot, uncommitted ones included (:mod:`kraft_testkit.raft.voters`); majority, high watermark,
elections and check-quorum follow it as it changes (:mod:`kraft_testkit.raft.voter_state`).
The leader's handling of AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter lives in
:mod:`kraft_testkit.raft.reconfig`.

The class is split by concern as Kafka splits its client: :mod:`.transitions` (QuorumState),
:mod:`.role_polls` (the poll of each role), :mod:`.election_rpcs` and :mod:`.replication` (the
RPCs), :mod:`.commit` (the log and the listener), :mod:`.request_checks` (shared validation);
this module keeps the state, the simulator contract and the public API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import reconfig, rpc
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.commit import CommitPath
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
    _NO_DIR,
    _Conn,
    _Leadership,
    _Download,
)
from kraft_testkit.raft.replication import Replication
from kraft_testkit.raft.request_checks import RequestChecks
from kraft_testkit.raft.role_polls import RolePolls
from kraft_testkit.raft.transitions import Transitions
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
)
from kraft_testkit.sim.node import NEVER, DiskOp, Effects, Replace

if TYPE_CHECKING:
    from random import Random  # handed in by the simulator: the replica draws from no other


class RaftReplica(Transitions, RolePolls, CommitPath, RequestChecks, ElectionRpcs, Replication,
                  VoterSetState):
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
