"""Checks every Raft RPC shares, as Kafka's ``KafkaRaftClient`` makes them: the cluster id, the
voter-only and leader-only validations of a request, and ``maybeHandleCommonResponse`` for an
answer (an epoch or leader it did not know moves the replica first). A mixin of
:class:`~kraft_testkit.raft.replica.RaftReplica`; it holds no state of its own."""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc
from kraft_testkit.raft.replica_state import _NO_DIR, LEADER


class RequestChecks:
    """Methods of RaftReplica (see the module docstring)."""

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


