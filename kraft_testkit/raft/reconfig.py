"""KIP-853 at the leader: AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter.

After Kafka 4.x's ``AddVoterHandler``, ``RemoveVoterHandler`` and ``UpdateVoterHandler`` (and
the checks in ``KafkaRaftClient`` before them):

* a wrong cluster id is INCONSISTENT_CLUSTER_ID; a replica that does not lead answers
  NOT_LEADER_OR_FOLLOWER; a voter key without a directory id, or listeners without the
  controller listener, is INVALID_REQUEST;
* one change at a time: while one is pending, or the latest VotersRecord is not committed, or
  the leader has not committed an offset of its own epoch yet, the answer is REQUEST_TIMED_OUT;
* kraft.version 0 cannot change voters: UNSUPPORTED_VERSION;
* adding an id that already votes is DUPLICATE_VOTER; the new voter must be an observer with that
  directory id that has caught up with the leader (Kafka: fetched up to the log end at least
  once, and fetched in the last hour), else REQUEST_TIMED_OUT;
* removing a (id, directory id) that is not a voter is VOTER_NOT_FOUND;
* the leader appends the new VotersRecord (it takes effect at once: majority, high watermark and
  check-quorum count the new set) and answers NONE once it commits (AddRaftVoter v1 with
  AckWhenCommitted false, as auto-join sends it: once appended); a leader that removed
  itself then resigns. A change not committed within the request timeout answers
  REQUEST_TIMED_OUT, and losing leadership answers NOT_LEADER_OR_FOLLOWER.

Difference from Kafka: its leader asks the new voter for ApiVersions to learn its supported
kraft.version range before adding it; every replica of the kit supports 0..1, so the leader
adds it at once with that range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E
from kraft_testkit.raft.voters import LISTENER, SUPPORTED_KRAFT_VERSIONS, Voter

_HOUR_MS = 3_600_000
ADD, REMOVE, UPDATE = "add", "remove", "update"
_RESPONSES = {ADD: M.AddRaftVoterResponse, REMOVE: M.RemoveRaftVoterResponse}


@dataclass(slots=True)
class PendingChange:
    """A voter change the leader appended and answers once its VotersRecord commits."""

    kind: str
    src: int
    cid: int
    offset: int  # of the VotersRecord
    deadline: int
    answered: bool = False  # AddRaftVoter v1 with AckWhenCommitted=false: answered on append


def _answer(replica: Any, kind: str, src: int, cid: int, error: int,
            message: str | None = None) -> None:
    if kind == UPDATE:
        body = M.UpdateRaftVoterResponse(
            error_code=error,
            current_leader=M.UpdateRaftVoterResponse.CurrentLeader(
                leader_id=replica.leader_id if replica.leader_id is not None else -1,
                leader_epoch=replica.epoch, host="", port=0))
    else:
        body = _RESPONSES[kind](error_code=error, error_message=message)
    replica._respond(src, cid, body)  # noqa: SLF001 (the replica's own helper)


def _common_error(replica: Any, cluster_id: str | None, directory_id: Uuid,
                  listeners: Any = None) -> tuple[int, str | None]:
    if not replica._cluster_ok(cluster_id):  # noqa: SLF001
        return E.INCONSISTENT_CLUSTER_ID, None
    if replica.role != "leader" or replica._lead is None:  # noqa: SLF001
        return E.NOT_LEADER_OR_FOLLOWER, None
    if directory_id == Uuid.ZERO:
        return E.INVALID_REQUEST, "the voter key needs a directory id"
    if listeners is not None and not any(li.name == LISTENER for li in listeners):
        return E.INVALID_REQUEST, f"the listeners do not include {LISTENER}"
    return E.NONE, None


def _change_error(replica: Any, now: int) -> tuple[int, str | None]:
    """Kafka's checks every change shares: one at a time, an established high watermark,
    the latest voter set committed, kraft.version 1."""
    lead = replica._lead  # noqa: SLF001
    if lead.change is not None:
        expire(replica, now)
    if lead.change is not None:
        return E.REQUEST_TIMED_OUT, ("Request timed out waiting for leader to handle previous "
                                     "voter change request")
    if replica.hw <= lead.epoch_start:
        return E.REQUEST_TIMED_OUT, ("Request timed out waiting for leader to establish HWM and "
                                     "fence previous voter changes")
    history = replica.history
    if history.kraft_version < 1:
        return E.UNSUPPORTED_VERSION, (f"Cluster doesn't support changing voters because the "
                                       f"kraft.version feature is {history.kraft_version}")
    offset = history.latest_offset
    if offset is None or offset >= replica.hw:
        return E.REQUEST_TIMED_OUT, (f"Request timed out waiting for voters to commit the latest "
                                     f"voter change at {offset} with HWM {replica.hw}")
    return E.NONE, None


def on_add_voter(replica: Any, src: int, cid: int, req: Any, now: int) -> None:
    error, message = _common_error(replica, req.cluster_id, req.voter_directory_id,
                                   req.listeners)
    if error == E.NONE:
        error, message = _change_error(replica, now)
    if error == E.NONE:
        voters = replica.history.latest
        if req.voter_id in voters:
            error, message = E.DUPLICATE_VOTER, (f"The voter id for {req.voter_id} is already "
                                                 f"part of the set of voters {voters}.")
        else:
            progress = replica._lead.observers.get(req.voter_id)  # noqa: SLF001
            caught_up = (progress is not None and progress.directory_id == req.voter_directory_id
                         and progress.caught_up_ms > 0 and progress.last_fetch_ms > 0
                         and progress.last_fetch_ms > now - _HOUR_MS)
            if not caught_up:
                error, message = E.REQUEST_TIMED_OUT, (
                    f"Aborted add voter operation for {req.voter_id} since it is lagging behind")
    if error != E.NONE:
        return _answer(replica, ADD, src, cid, error, message)
    endpoints = tuple((li.name, li.host, li.port) for li in req.listeners)
    new = voters.add(Voter(req.voter_id, req.voter_directory_id, endpoints,
                           SUPPORTED_KRAFT_VERSIONS))
    _append(replica, ADD, src, cid, new, now, req.timeout_ms, req.ack_when_committed)


def on_remove_voter(replica: Any, src: int, cid: int, req: Any, now: int) -> None:
    error, message = _common_error(replica, req.cluster_id, req.voter_directory_id)
    if error == E.NONE:
        error, message = _change_error(replica, now)
    if error == E.NONE:
        new = replica.history.latest.remove(req.voter_id, req.voter_directory_id)
        if new is None:
            error, message = E.VOTER_NOT_FOUND, (
                f"Cannot remove voter ({req.voter_id}, {req.voter_directory_id}) from the set of "
                f"voters {replica.history.latest}")
    if error != E.NONE:
        return _answer(replica, REMOVE, src, cid, error, message)
    _append(replica, REMOVE, src, cid, new, now, 0)


def on_update_voter(replica: Any, src: int, cid: int, req: Any, now: int) -> None:
    """A voter whose endpoints or kraft.version range differ from the leader's record sends
    this (Kafka's UpdateVoterHandler); the leader writes the new record and answers at once
    with itself as the current leader."""
    error, _ = _common_error(replica, req.cluster_id, req.voter_directory_id, req.listeners)
    if error == E.NONE and req.current_leader_epoch != replica.epoch:
        error = E.FENCED_LEADER_EPOCH if req.current_leader_epoch < replica.epoch \
            else E.UNKNOWN_LEADER_EPOCH
    if error == E.NONE:
        feature = req.k_raft_version_feature
        if feature.min_supported_version < 0 or \
                feature.max_supported_version < feature.min_supported_version:
            error = E.INVALID_REQUEST
    if error == E.NONE:
        error, _ = _change_error(replica, now)
    if error == E.NONE:
        voters = replica.history.latest
        voter = Voter(req.voter_id, req.voter_directory_id,
                      tuple((li.name, li.host, li.port) for li in req.listeners),
                      (req.k_raft_version_feature.min_supported_version,
                       req.k_raft_version_feature.max_supported_version))
        new = voters.update(voter)
        if new is None:
            error = E.VOTER_NOT_FOUND
        elif new == voters:
            return _answer(replica, UPDATE, src, cid, E.NONE)
        elif not voter.kraft_versions[0] <= replica.history.kraft_version \
                <= voter.kraft_versions[1]:
            error = E.INVALID_REQUEST
    if error != E.NONE:
        return _answer(replica, UPDATE, src, cid, error)
    replica.append_voters(new, now)
    _answer(replica, UPDATE, src, cid, E.NONE)


def _append(replica: Any, kind: str, src: int, cid: int, voters: Any, now: int,
            timeout_ms: int, ack_when_committed: bool = True) -> None:
    """Append the new VotersRecord; the change stays pending (no other one starts) until it
    commits. The answer waits for the commit, unless AddRaftVoter v1 said AckWhenCommitted
    false (Kafka 4.2 ``AddVoterHandler``: answered NONE once the leader has written it)."""
    offset = replica.append_voters(voters, now)
    timeout = timeout_ms if timeout_ms > 0 else replica.config.request_timeout_ms
    change = PendingChange(kind, src, cid, offset, now + timeout)
    replica._lead.change = change  # noqa: SLF001
    if not ack_when_committed:
        change.answered = True
        _answer(replica, kind, src, cid, E.NONE)
    committed(replica, now)


def committed(replica: Any, now: int) -> None:
    """The high watermark moved: answer the pending change once its record is committed, and
    resign if the leader is no longer a voter."""
    lead = replica._lead  # noqa: SLF001
    change = lead.change if lead is not None else None
    if change is None or replica.hw <= change.offset:
        return
    lead.change = None
    if not change.answered:
        _answer(replica, change.kind, change.src, change.cid, E.NONE)
    if not replica.is_voter:
        replica.resign_removed(now)


def expire(replica: Any, now: int) -> int | None:
    """Answer REQUEST_TIMED_OUT for a change past its deadline; else the deadline (or None)."""
    lead = replica._lead  # noqa: SLF001
    change = lead.change if lead is not None else None
    if change is None:
        return None
    if now < change.deadline:
        return change.deadline
    lead.change = None
    if not change.answered:
        _answer(replica, change.kind, change.src, change.cid, E.REQUEST_TIMED_OUT,
                "Request timed out waiting for the voter change to commit")
    return None


def abandon(replica: Any, lead: Any) -> None:
    """Leadership ended: a pending change answers NOT_LEADER_OR_FOLLOWER (Kafka's
    ``LeaderState.close``)."""
    change = lead.change
    if change is not None:
        lead.change = None
        if not change.answered:
            _answer(replica, change.kind, change.src, change.cid, E.NOT_LEADER_OR_FOLLOWER)


# ---------------------------------------------------------------------- the follower's side

def follower_requests(replica: Any, now: int) -> int:
    """What a follower of an established leader sends about itself (Kafka 4.x
    ``pollFollowerAsVoter`` / ``pollFollowerAsObserver``), at most once per fetch timeout;
    returns when to look again. Answers are not awaited: the log shows the outcome.

    * a voter whose endpoints or supported kraft.version range differ from its entry in the
      voter set sends UpdateRaftVoter;
    * with ``controller.quorum.auto.join.enable``, a controller that observes (not a voter)
      sends AddRaftVoter for itself, or first RemoveRaftVoter for the entry with its id and an
      older directory id (a replaced disk).
    """
    from kraft_testkit.raft import rpc  # the replica module imports this one

    voters = replica.history.latest
    leader = replica.leader_id
    if voters is None or leader is None or replica.history.kraft_version < 1 \
            or not replica._fetched_from_leader:  # noqa: SLF001
        return NEVER_WAKE
    if now < replica.member_request_at:
        return replica.member_request_at
    body = None
    mine = voters.voters.get(replica.id)
    local = Voter(replica.id, replica.dir, replica.endpoints, SUPPORTED_KRAFT_VERSIONS)
    if replica.is_voter:
        if mine != local:
            body = M.UpdateRaftVoterRequest(
                cluster_id=replica.cluster_id, current_leader_epoch=replica.epoch,
                voter_id=replica.id, voter_directory_id=replica.dir,
                listeners=tuple(M.UpdateRaftVoterRequest.Listener(name=n, host=h, port=p)
                                for n, h, p in replica.endpoints),
                k_raft_version_feature=M.UpdateRaftVoterRequest.KRaftVersionFeature(
                    min_supported_version=SUPPORTED_KRAFT_VERSIONS[0],
                    max_supported_version=SUPPORTED_KRAFT_VERSIONS[1]))
    elif replica.config.auto_join and replica.can_become_voter:
        if mine is not None:
            body = M.RemoveRaftVoterRequest(cluster_id=replica.cluster_id, voter_id=replica.id,
                                            voter_directory_id=mine.directory_id)
        else:
            body = M.AddRaftVoterRequest(
                cluster_id=replica.cluster_id, timeout_ms=replica.config.request_timeout_ms,
                voter_id=replica.id, voter_directory_id=replica.dir,
                listeners=tuple(M.AddRaftVoterRequest.Listener(name=n, host=h, port=p)
                                for n, h, p in replica.endpoints),
                ack_when_committed=False)  # as Kafka 4.2's buildAddVoterRequest
    if body is None:
        return NEVER_WAKE
    replica.member_request_at = now + replica.config.fetch_timeout_ms
    replica._cid = cid = (replica._cid + 1) & 0x7FFFFFFF  # noqa: SLF001
    replica._sends.append((leader, rpc.request(cid, body)))  # noqa: SLF001
    return replica.member_request_at


NEVER_WAKE = 1 << 62
