"""Moving between roles, as Kafka's ``QuorumState`` does: which epoch, leader and vote each
role holds, what is persisted (``quorum-state``, synced before any message of the step leaves),
and which timer each role runs and how it is drawn (election timeout + a jitter in
[0, election timeout) from the replica's seeded random stream; the fetch timeout for followers).
A mixin of :class:`~kraft_testkit.raft.replica.RaftReplica`; it holds no state of its own."""

from __future__ import annotations

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import encode_control
from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import reconfig, rpc
from kraft_testkit.raft.log import QUORUM_STATE
from kraft_testkit.raft.replica_state import (
    _NO_DIR,
    CANDIDATE,
    FOLLOWER,
    LEADER,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    VOTED,
    _Leadership,
)
from kraft_testkit.raft.state import ElectionState, encode_quorum_state
from kraft_testkit.sim.node import NEVER, Replace


class Transitions:
    """Methods of RaftReplica (see the module docstring)."""

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
                if role in (FOLLOWER, RESIGNED):  # Kafka's onBecomeFollower and
                    # transitionToResigned: fetchPurgatory.completeAllExceptionally
                    self._respond(parked.src, parked.cid, rpc.fetch_response(
                        E.NOT_LEADER_OR_FOLLOWER, epoch, self._leader_or_nil()))
                else:
                    self._answer_fetch(parked.src, parked.cid, parked.replica_id,
                                       parked.partition, 0, may_park=False)

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
