"""Elections on the wire (KIP-595, KIP-996): Vote (and pre-vote), BeginQuorumEpoch and
EndQuorumEpoch, asked and answered. A mixin of :class:`~kraft_testkit.raft.replica.RaftReplica`,
kept apart so the replica's module stays readable; it holds no state of its own."""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc

from kraft_testkit.raft.replica_state import (
    _NO_DIR,
    UNATTACHED,
    CANDIDATE,
    LEADER,
    FOLLOWER,
    RESIGNED,
    PROSPECTIVE,
)


class ElectionRpcs:
    """Methods of RaftReplica (see the module docstring)."""

    def _on_vote_request(self, src: int, cid: int, req: Any, now: int) -> None:
        if not self._cluster_ok(req.cluster_id):
            return self._respond(src, cid, M.VoteResponse(error_code=E.INCONSISTENT_CLUSTER_ID))
        p = rpc.vote_partition(req)
        if p is None:
            return self._respond(src, cid, M.VoteResponse(error_code=E.INVALID_REQUEST))
        cand, cepoch, pre_vote = p.candidate_id, p.candidate_epoch, p.pre_vote
        # a candidate bumped its epoch past its log's; a prospective asks in its own epoch
        if p.last_offset < 0 or p.last_offset_epoch < 0 or p.last_offset_epoch > cepoch or \
                not pre_vote and p.last_offset_epoch == cepoch:
            error = E.INVALID_REQUEST
        else:
            error = self._voter_only_error(cand, cepoch)
        granted = False
        if error == E.NONE:
            if cepoch > self.epoch:
                self._to_unattached(cepoch, now)
            if not self._valid_voter_key(req.voter_id, p.voter_directory_id):
                error = E.INVALID_VOTER_KEY  # meant for another replica
            else:
                granted = self._can_grant_vote(cand, p.candidate_directory_id,
                                               self._log_up_to_date(p), pre_vote)
                if granted and not pre_vote and self.voted_id is None and \
                        self.role in (UNATTACHED, PROSPECTIVE):
                    self._to_voted(cand, now)  # persisted (and synced) before the answer leaves
        self._respond(src, cid, rpc.vote_response(error, self.epoch, self._leader_or_nil(), granted))

    def _log_up_to_date(self, p: Any) -> bool:
        return (p.last_offset_epoch, p.last_offset) >= (self.log.last_epoch, self.log.end_offset)

    def _can_grant_vote(self, cand: int, cand_dir: Any, up_to_date: bool, pre_vote: bool) -> bool:
        """Kafka 4.2's EpochState#canGrantVote, by role. A pre-vote promises nothing, so anyone
        but the leader grants one to an up-to-date log, except a follower that has fetched
        from its leader in this epoch (the leader is alive); a resigned leader grants one too
        (ResignedState). A real vote: only once per epoch, never while a leader is known or by
        a candidate, leader or resigned replica."""
        if self.role == LEADER:
            return False
        if self.role in (RESIGNED, CANDIDATE):
            return pre_vote and up_to_date
        if self.role == FOLLOWER:
            return pre_vote and not self._fetched_from_leader and up_to_date
        if pre_vote:  # unattached (voted or not) and prospective
            return up_to_date
        if self.voted_id is not None:
            return self.voted_id == cand and (
                not self.dynamic or self.voters.get(cand, cand_dir) in (cand_dir, _NO_DIR)
                or cand_dir == _NO_DIR)
        if self.leader_id is not None:
            return False
        return up_to_date

    def _on_begin_epoch_request(self, src: int, cid: int, req: Any, now: int) -> None:
        if not self._cluster_ok(req.cluster_id):
            return self._respond(src, cid, M.BeginQuorumEpochResponse(
                error_code=E.INCONSISTENT_CLUSTER_ID))
        p = rpc.vote_partition(req)
        if p is None:
            return self._respond(src, cid, M.BeginQuorumEpochResponse(error_code=E.INVALID_REQUEST))
        error = self._voter_only_error(p.leader_id, p.leader_epoch)
        if error == E.NONE:
            self._maybe_transition(p.leader_id, p.leader_epoch, now)
            if not self._valid_voter_key(req.voter_id, p.voter_directory_id):
                error = E.INVALID_VOTER_KEY  # Kafka checks the key after following the leader
        self._respond(src, cid, rpc.begin_epoch_response(error, self.epoch, self._leader_or_nil()))

    def _on_end_epoch_request(self, src: int, cid: int, req: Any, now: int) -> None:
        if not self._cluster_ok(req.cluster_id):
            return self._respond(src, cid, M.EndQuorumEpochResponse(
                error_code=E.INCONSISTENT_CLUSTER_ID))
        p = rpc.vote_partition(req)
        if p is None:
            return self._respond(src, cid, M.EndQuorumEpochResponse(error_code=E.INVALID_REQUEST))
        error = self._voter_only_error(p.leader_id, p.leader_epoch)
        if error == E.NONE:
            self._maybe_transition(p.leader_id, p.leader_epoch, now)
            if self.role == FOLLOWER and self.leader_id == p.leader_id:
                backoff = self._successor_backoff(rpc.preferred_successors(p))
                self._deadline = now + backoff  # Kafka's overrideFetchTimeout: not a minimum
        self._respond(src, cid, rpc.end_epoch_response(error, self.epoch, self._leader_or_nil()))

    def _on_vote_response(self, src: int, _: None, resp: Any, now: int) -> bool:
        p = rpc.vote_partition(resp)
        if resp.error_code != E.NONE or p is None:
            return False
        if src not in self.voters:
            return True  # not a voter (any more): its answer does not count
        not_voter = p.error_code in (E.INCONSISTENT_VOTER_SET, E.INVALID_VOTER_KEY)
        if not not_voter:
            handled = self._common(p.error_code, p.leader_id, p.leader_epoch, now)
            if handled is not None:
                return handled
        if self.role == PROSPECTIVE:
            if p.error_code == E.NONE and p.vote_granted:
                self._granted.add(src)
                if len(self._granted) >= self.majority:
                    self._start_candidacy(now)
            elif p.error_code == E.NONE or not_voter:
                self._rejected.add(src)  # the poll falls back once the pre-vote is lost
            else:
                return False
            return True
        if self.role != CANDIDATE:
            return True
        if p.error_code == E.NONE and p.vote_granted:
            self._granted.add(src)
            if len(self._granted) >= self.majority:
                self._to_leader(now)
            return True
        if p.error_code == E.NONE or not_voter:
            self._rejected.add(src)
            # Kafka 4.1+ waits out the election timeout; 3.x (pre-vote off) backs off
            if not self.config.pre_vote and self._outvoted() and self._backoff_until is None:
                self._backoff_until = now + self._election_backoff()
            return True
        return False

    def _epoch_answer(self, resp: Any, now: int) -> bool | None:
        """What Begin/EndQuorumEpoch answers have in common: None when the voter acknowledged
        our epoch, else the outcome for the connection (True: handled, False: retry later)."""
        p = rpc.vote_partition(resp)
        if resp.error_code != E.NONE or p is None:
            return False
        if p.error_code not in (E.INCONSISTENT_VOTER_SET, E.INVALID_VOTER_KEY):
            handled = self._common(p.error_code, p.leader_id, p.leader_epoch, now)
            if handled is not None:
                return handled
            if p.error_code != E.NONE:
                return False
        return None

    def _on_begin_epoch_response(self, src: int, _: None, resp: Any, now: int) -> bool:
        outcome = self._epoch_answer(resp, now)
        if outcome is not None:
            return outcome
        if self._lead is not None:
            self._lead.acked.add(src)
        return True

    def _on_end_epoch_response(self, src: int, _: None, resp: Any, now: int) -> bool:
        outcome = self._epoch_answer(resp, now)
        if outcome is not None:
            return outcome
        self._unacked.discard(src)
        return True

    def _vote_request(self, dst: int) -> Any:
        return rpc.vote_request(self.cluster_id, self.epoch, self.id, self.dir, dst,
                                self.voters[dst], self.log.last_epoch, self.log.end_offset)

    def _pre_vote_request(self, dst: int) -> Any:
        return rpc.vote_request(self.cluster_id, self.epoch, self.id, self.dir, dst,
                                self.voters[dst], self.log.last_epoch, self.log.end_offset,
                                pre_vote=True)

    def _begin_epoch_request(self, dst: int) -> Any:
        return rpc.begin_epoch_request(self.cluster_id, self.epoch, self.id, dst, self.voters[dst])

    def _end_epoch_request(self, dst: int) -> Any:
        return rpc.end_epoch_request(self.cluster_id, self.epoch, self.id,
                                     [(s, self.voters[s]) for s in self._successors])
