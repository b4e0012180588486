"""Elections on the wire (KIP-595, KIP-996): Vote (and pre-vote), BeginQuorumEpoch and
EndQuorumEpoch, asked and answered. A mixin of :class:`~kraft_testkit.raft.replica.RaftReplica`,
kept apart so the replica's module stays readable; it holds no state of its own."""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc

from kraft_testkit.raft.replica_state import (
    UNATTACHED,
    VOTED,
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
            error = self._voter_only_error(cand, cepoch, p.candidate_directory_id,
                                           p.voter_directory_id)
        granted = False
        if error == E.NONE:
            if cepoch > self.epoch:
                self._to_unattached(cepoch, now)
            if pre_vote:
                granted = self._grants_pre_vote(p)
            elif self.role == PROSPECTIVE and cepoch == self.epoch and self.leader_id is None:
                granted = self.voted_id == cand if self.voted_id is not None else \
                    self._log_up_to_date(p)
                if granted and self.voted_id is None:
                    self._to_voted(cand, now)
            elif self.role == UNATTACHED:
                granted = (p.last_offset_epoch, p.last_offset) >= (self.log.last_epoch,
                                                                   self.log.end_offset)
                if granted:
                    self._to_voted(cand, now)  # persisted (and synced) before the answer leaves
            elif self.role == VOTED:
                granted = self.voted_id == cand
        self._respond(src, cid, rpc.vote_response(error, self.epoch, self._leader_or_nil(), granted))

    def _log_up_to_date(self, p: Any) -> bool:
        return (p.last_offset_epoch, p.last_offset) >= (self.log.last_epoch, self.log.end_offset)

    def _grants_pre_vote(self, p: Any) -> bool:
        """KIP-996: grant when the log is up to date, unless this replica leads, has resigned,
        or follows a leader it has fetched from in this epoch (the leader is alive)."""
        if self.role in (LEADER, RESIGNED):
            return False
        if self.role == FOLLOWER and self._fetched_from_leader:
            return False
        return self._log_up_to_date(p)

    def _on_begin_epoch_request(self, src: int, cid: int, req: Any, now: int) -> None:
        if not self._cluster_ok(req.cluster_id):
            return self._respond(src, cid, M.BeginQuorumEpochResponse(
                error_code=E.INCONSISTENT_CLUSTER_ID))
        p = rpc.vote_partition(req)
        if p is None:
            return self._respond(src, cid, M.BeginQuorumEpochResponse(error_code=E.INVALID_REQUEST))
        error = self._voter_only_error(p.leader_id, p.leader_epoch, my_dir=p.voter_directory_id)
        if error == E.NONE:
            self._maybe_transition(p.leader_id, p.leader_epoch, now)
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
                self._deadline = min(self._deadline, now + backoff)
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
            lost = len(self._rejected) > len(self.voters) - self.majority
            if lost and self._backoff_until is None:
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
