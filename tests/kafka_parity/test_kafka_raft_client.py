"""KafkaRaftClientTest (Kafka 4.2.1), ported: elections, epochs and voter-only requests.

Kafka runs most of these with and without the KIP-853 RPC versions against static voters; the
kit's RPCs are the newest, so each runs once, at kraft.version 0 with static voters. Node 1 is the
local replica. Kafka's ``mockNextInt(DEFAULT_ELECTION_TIMEOUT_MS, 0)`` is ``jitter=0``.

One difference of observation (not of behaviour) recurs: Kafka's ``client.poll()`` runs one
state's poll, so its tests see a state whose timer is already spent (an unattached replica with
no election time left) between two polls; the kit's poll goes on until nothing is due, as
Kafka's poll loop does right after. Those ports check the spent state by its trace (the
election counters) and the state that follows it.
"""

from __future__ import annotations

import pytest
from raft_context import (
    FENCED_LEADER_EPOCH,
    INCONSISTENT_CLUSTER_ID,
    INVALID_REQUEST,
    INVALID_VOTER_KEY,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_LEADER_EPOCH,
    RaftContext,
)

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import decode_control
from kraft_testkit.protocol.records import RecordBatch, encode_batch, iter_batches
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc
from kraft_testkit.raft.errors import NotLeader

ELECTION = 10_000


def _leader_change(batch):
    record = batch.records[0]
    return decode_control(record.key, record.value).message


def _vote_sent(ctx: RaftContext, epoch: int, last_epoch: int, last_offset: int,
               n: int) -> list:
    asked = [(d, m) for d, m in ctx.requests(M.VoteRequest)
             if not rpc.vote_partition(m.body).pre_vote]
    assert len(asked) == n, asked
    for _, m in asked:
        p = rpc.vote_partition(m.body)
        assert (p.candidate_epoch, p.last_offset_epoch, p.last_offset) == \
            (epoch, last_epoch, last_offset), p
    return asked


# ------------------------------------------------------------------ initialization


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeSingleMemberQuorum")
def test_initialize_single_member_quorum():
    ctx = RaftContext(1, (1,))
    ctx.assert_elected_leader(1, 1)
    assert ctx.r.log_end_offset == ctx.r.log.end_offset == 1  # the LeaderChange, after a poll


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsLeaderFromStateStoreSingleMemberQuorum")
def test_initialize_as_leader_from_state_store_single_member_quorum():
    ctx = RaftContext(1, (1,), elected=(2, 1))
    assert ctx.r.log.end_offset == 1
    assert ctx.r.log.last_epoch == 3
    ctx.assert_elected_leader(3, 1)


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsOnlyVoterWithEmptyElectionState")
def test_initialize_as_only_voter_with_empty_election_state():
    ctx = RaftContext(1, (1,))
    ctx.assert_elected_leader(1, 1)
    assert ctx.role == "leader"


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsFollowerAndOnlyVoter")
def test_initialize_as_follower_and_only_voter():
    ctx = RaftContext(1, (1,), elected=(2, 2))
    ctx.assert_elected_leader(3, 1)
    assert ctx.role == "leader"


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsCandidateAndOnlyVoter")
def test_initialize_as_candidate_and_only_voter():
    ctx = RaftContext(1, (1,), voted=(2, 1))
    ctx.assert_elected_leader(2, 1)
    assert ctx.role == "leader"


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsResignedAndOnlyVoter")
def test_initialize_as_resigned_and_only_voter():
    ctx = RaftContext(1, (1,), elected=(2, 1))
    ctx.assert_elected_leader(3, 1)
    assert ctx.role == "leader"


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsCandidateFromStateStore")
def test_initialize_as_candidate_from_state_store():
    ctx = RaftContext(1, (1, 2, 3), voted=(2, 1))
    ctx.assert_voted_candidate(2, 1)
    assert ctx.r.log.end_offset == 0
    assert [d for d, _ in _vote_sent(ctx, 2, 0, 0, 2)] == [2, 3]


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsUnattachedAndBecomeLeader")
def test_initialize_as_unattached_and_become_leader():
    ctx = RaftContext(1, (1, 2))
    ctx.assert_unknown_leader_no_vote(0)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    p = rpc.fetch_partition(fetch.body)
    assert (dst, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 0, 0, 0)
    assert ctx.role == "unattached" and ctx.r.is_voter
    ctx.now += ELECTION // 2
    ctx.respond(dst, fetch, rpc.fetch_response(NOT_LEADER_OR_FOLLOWER, 0, -1))
    assert ctx.role == "unattached" and ctx.r.is_voter
    ctx.drain()
    ctx.sleep(2 * ELECTION)
    assert ctx.role == "prospective"
    ctx._grant_all(0, pre_vote=True)  # noqa: SLF001
    ctx.assert_voted_candidate(1, 1)
    ((dst, vote),) = _vote_sent(ctx, 1, 0, 0, 1)
    ctx.respond(dst, vote, rpc.vote_response(NONE, 1, -1, True))
    ctx.assert_elected_leader(1, 1)
    elected_at = ctx.now
    assert ctx.r.log.end_offset == 1
    ctx.poll()
    assert [d for d, _ in ctx.requests(M.BeginQuorumEpochRequest)] == [2]
    (batch,) = ctx.r.log.batches_between(0, 1)
    assert batch.is_control and batch.max_timestamp == elected_at
    change = _leader_change(batch)
    assert change.leader_id == 1
    assert [v.voter_id for v in change.voters] == [1, 2]
    assert sorted(v.voter_id for v in change.granting_voters) == [1, 2]


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsCandidateAndBecomeLeaderQuorumOfThree")
def test_initialize_as_candidate_and_become_leader_quorum_of_three():
    ctx = RaftContext(1, (1, 2, 3), voted=(2, 1))
    assert ctx.role == "candidate"
    ctx.assert_voted_candidate(2, 1)
    asked = _vote_sent(ctx, 2, 0, 0, 2)
    dst, vote = asked[0]
    assert vote.body.voter_id == dst != 1
    ctx.respond(dst, vote, rpc.vote_response(NONE, 2, -1, True))
    ctx.assert_elected_leader(2, 1)
    assert ctx.r.log.end_offset == 1
    ctx.poll()
    assert sorted(d for d, _ in ctx.requests(M.BeginQuorumEpochRequest)) == [2, 3]
    (batch,) = ctx.r.log.batches_between(0, 1)
    change = _leader_change(batch)
    assert [v.voter_id for v in change.voters] == [1, 2, 3]
    assert sorted(v.voter_id for v in change.granting_voters) == sorted([dst, 1])


# ------------------------------------------------------------------ resigned


@pytest.mark.kafka("KafkaRaftClientTest#testRejectVotesFromSameEpochAfterResigningLeadership")
def test_reject_votes_from_same_epoch_after_resigning_leadership():
    ctx = RaftContext(1, (1, 2), elected=(2, 1), jitter=0)
    assert ctx.r.log.end_offset == 0
    ctx.assert_elected_leader(2, 1)
    resp = ctx.deliver(2, ctx.vote_request(2, 2, 0, 0))
    ctx.assert_vote_response(resp, NONE, 2, 1, False)


@pytest.mark.kafka("KafkaRaftClientTest#testRejectVotesFromSameEpochAfterResigningCandidacy")
def test_reject_votes_from_same_epoch_after_resigning_candidacy():
    ctx = RaftContext(1, (1, 2), voted=(2, 1), jitter=0)
    assert ctx.r.log.end_offset == 0
    ctx.assert_voted_candidate(2, 1)
    resp = ctx.deliver(2, ctx.vote_request(2, 2, 0, 0))
    ctx.assert_vote_response(resp, NONE, 2, -1, False)


@pytest.mark.kafka("KafkaRaftClientTest#testGrantVotesFromHigherEpochAfterResigningLeadership")
def test_grant_votes_from_higher_epoch_after_resigning_leadership():
    ctx = RaftContext(1, (1, 2), elected=(2, 1), jitter=0)
    assert ctx.role == "resigned"
    ctx.assert_elected_leader(2, 1)
    resp = ctx.deliver(2, ctx.vote_request(3, 2, 0, 0))
    assert (ctx.role, ctx.r.voted_id) == ("voted", 2)  # Kafka: unattached and voted
    ctx.assert_voted_candidate(3, 2)
    ctx.assert_vote_response(resp, NONE, 3, -1, True)


@pytest.mark.kafka("KafkaRaftClientTest#testGrantVotesFromHigherEpochAfterResigningCandidacy")
def test_grant_votes_from_higher_epoch_after_resigning_candidacy():
    ctx = RaftContext(1, (1, 2), voted=(2, 1), jitter=0)
    assert ctx.role == "candidate"
    ctx.assert_voted_candidate(2, 1)
    resp = ctx.deliver(2, ctx.vote_request(3, 2, 0, 0))
    assert (ctx.role, ctx.r.voted_id) == ("voted", 2)
    ctx.assert_voted_candidate(3, 2)
    ctx.assert_vote_response(resp, NONE, 3, -1, True)


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsResignedAndUnableToContactQuorum")
def test_initialize_as_resigned_and_unable_to_contact_quorum():
    ctx = RaftContext(1, (1, 2), elected=(2, 1), jitter=0)
    assert ctx.role == "resigned"
    ctx.assert_elected_leader(2, 1)
    ctx.sleep(ELECTION)
    # unattached in epoch 3 with its election timeout spent, then prospective at once
    assert ctx.stored().epoch == 3 and ctx.stored().leader_id == -1
    assert (ctx.role, ctx.epoch) == ("prospective", 3)
    rounds = ctx.r.elections["pre_votes_lost"]
    ctx.sleep(2 * ELECTION)  # the pre-vote round times out: unattached again, in epoch 3
    assert ctx.r.elections["pre_votes_lost"] == rounds + 1
    assert ctx.epoch == 3


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsResignedLeaderFromStateStore")
def test_initialize_as_resigned_leader_from_state_store():
    ctx = RaftContext(1, (1, 2), elected=(2, 1), jitter=0)
    assert ctx.r.log.end_offset == 0
    ctx.assert_elected_leader(2, 1)
    ctx.poll()
    with pytest.raises(NotLeader):
        ctx.r.append([b"a", b"b"], ctx.now)
    ((dst, end),) = ctx.requests(M.EndQuorumEpochRequest)
    p = rpc.vote_partition(end.body)
    assert (dst, p.leader_epoch, p.leader_id) == (2, 2, 1)
    ctx.respond(dst, end, rpc.end_epoch_response(NONE, 2, 1))
    ctx.sleep(ELECTION)
    assert ctx.epoch == 3 and ctx.stored() == type(ctx.stored())(3, -1, -1)
    assert ctx.role == "prospective"  # its unattached state had no election time left


@pytest.mark.kafka("KafkaRaftClientTest#testEndQuorumEpochRetriesWhileResigned")
def test_end_quorum_epoch_retries_while_resigned():
    ctx = RaftContext(1, (1, 2, 3), elected=(19, 1))
    asked = ctx.requests(M.EndQuorumEpochRequest)
    assert sorted(d for d, _ in asked) == [2, 3]
    dst, req = asked[0]
    ctx.drain()
    ctx.respond(dst, req, rpc.end_epoch_response(NONE, 19, 1))
    ctx.poll()
    assert ctx.sent == []
    ctx.sleep(6000)
    assert [d for d, _ in ctx.requests(M.EndQuorumEpochRequest)] == [asked[1][0]]


@pytest.mark.kafka("KafkaRaftClientTest#testResignInOlderEpochIgnored")
def test_resign_in_older_epoch_ignored():
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    ctx.r.resign_epoch(epoch - 1, ctx.now)
    ctx.poll()
    ctx.sleep(2 * ELECTION)  # still the leader after its election timeout
    ctx.assert_elected_leader(epoch, 1)
    assert ctx.role == "leader"


@pytest.mark.kafka("KafkaRaftClientTest#testHandleBeginQuorumEpochAfterUserInitiatedResign")
def test_handle_begin_quorum_epoch_after_user_initiated_resign():
    ctx = RaftContext(1, (1, 2, 3))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    ctx.r.resign_epoch(epoch, ctx.now)
    ctx.poll()
    assert ctx.role == "resigned"
    resp = ctx.deliver(2, ctx.begin_epoch_request(epoch + 1, 2))
    ctx.assert_epoch_response(resp, NONE, epoch + 1, 2)
    ctx.assert_elected_leader(epoch + 1, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testElectionTimeoutAfterUserInitiatedResign")
def test_election_timeout_after_user_initiated_resign():
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    ctx.drain()
    ctx.r.resign_epoch(epoch, ctx.now)
    ctx.poll()
    assert ctx.role == "resigned"
    ((dst, end),) = ctx.requests(M.EndQuorumEpochRequest)
    assert rpc.vote_partition(end.body).leader_epoch == epoch and dst == 2
    ctx.respond(dst, end, rpc.end_epoch_response(NONE, epoch, 1))
    ctx.drain()
    ctx.sleep(50)  # retry backoff: nothing is sent again once acknowledged
    assert not [m for _, m in ctx.sent if isinstance(m, rpc.Request)]
    resp = ctx.deliver(5, ctx.fetch_request(1, 5, 0, 0))
    p = rpc.fetch_response_partition(resp)
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NOT_LEADER_OR_FOLLOWER, epoch, 1)
    lost = ctx.r.elections["pre_vote_rounds"]
    ctx.sleep(2 * ELECTION)
    assert ctx.epoch == epoch + 1 and ctx.stored().leader_id == -1
    assert ctx.r.elections["pre_vote_rounds"] == lost + 1  # prospective right away
    assert ctx.role == "prospective"


@pytest.mark.kafka("KafkaRaftClientTest#testLeaderShouldResignLeadershipIfNotGetFetchRequestFromMajorityVoters")
def test_leader_should_resign_leadership_if_not_get_fetch_request_from_majority_voters():
    ctx = RaftContext(1, (1, 2, 3))
    check_quorum = ctx.config.fetch_timeout_ms * 3 // 2
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    ctx.sleep(check_quorum // 2)
    assert ctx.role == "leader"
    ctx.deliver(2, ctx.fetch_request(epoch, 2, 0, 0))
    ctx.sleep(check_quorum // 2)
    assert ctx.role == "leader"
    ctx.deliver(3, ctx.fetch_request(epoch, 3, 0, 0))
    ctx.sleep(check_quorum // 2)
    assert ctx.role == "leader"
    ctx.deliver(4, ctx.fetch_request(epoch, 4, 0, 0))  # an observer: no reset
    ctx.sleep(check_quorum // 2)
    assert ctx.role == "resigned"
    ctx.assert_elected_leader(epoch, 1)


@pytest.mark.kafka("KafkaRaftClientTest#testLeaderShouldNotResignLeadershipIfOnlyOneVoters")
def test_leader_should_not_resign_leadership_if_only_one_voters():
    ctx = RaftContext(1, (1,))
    assert ctx.r.leader_id == 1
    ctx.sleep(ctx.config.fetch_timeout_ms * 3 // 2)
    assert ctx.role == "leader"


@pytest.mark.kafka("KafkaRaftClientTest#testCannotResignWithLargerEpochThanCurrentEpoch")
def test_cannot_resign_with_larger_epoch_than_current_epoch():
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    with pytest.raises(ValueError):
        ctx.r.resign_epoch(ctx.epoch + 1, ctx.now)


@pytest.mark.kafka("KafkaRaftClientTest#testCannotResignIfNotLeader")
def test_cannot_resign_if_not_leader():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    ctx.assert_elected_leader(2, 2)
    with pytest.raises(ValueError):
        ctx.r.resign_epoch(2, ctx.now)


@pytest.mark.kafka("KafkaRaftClientTest#testCannotResignIfObserver")
def test_cannot_resign_if_observer():
    ctx = RaftContext(1, (2, 3))
    assert ctx.r.is_observer
    with pytest.raises(ValueError):
        ctx.r.resign_epoch(ctx.epoch, ctx.now)


# ------------------------------------------------------------------ BeginQuorumEpoch, EndQuorumEpoch


@pytest.mark.kafka("KafkaRaftClientTest#testHandleBeginQuorumRequest")
def test_handle_begin_quorum_request():
    ctx = RaftContext(1, (1, 2), voted=(2, 2))
    resp = ctx.deliver(2, ctx.begin_epoch_request(2, 2))
    ctx.assert_elected_leader(2, 2)
    assert ctx.r.voted_id == 2 and ctx.stored().voted_id == 2  # the vote is kept
    ctx.assert_epoch_response(resp, NONE, 2, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleBeginQuorumResponse")
def test_handle_begin_quorum_response():
    ctx = RaftContext(1, (1, 2), elected=(2, 1))
    ctx.deliver(2, ctx.begin_epoch_request(3, 2))
    ctx.assert_elected_leader(3, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testEndQuorumIgnoredAsCandidateIfOlderEpoch")
def test_end_quorum_ignored_as_candidate_if_older_epoch():
    jitter = 85
    ctx = RaftContext(1, (1, 2), unknown_leader=4, jitter=jitter)
    ctx.unattached_to_candidate()
    ctx.assert_voted_candidate(5, 1)
    started = ctx.now
    resp = ctx.deliver(2, ctx.end_epoch_request(3, 2, [1]))
    ctx.assert_epoch_response(resp, FENCED_LEADER_EPOCH, 5, -1)
    ctx.sleep(ELECTION + jitter - 1 - (ctx.now - started))
    ctx.assert_voted_candidate(5, 1)
    ctx.sleep(1)
    assert ctx.role == "prospective"


@pytest.mark.kafka("KafkaRaftClientTest#testEndQuorumIgnoredAsLeaderIfOlderEpoch")
def test_end_quorum_ignored_as_leader_if_older_epoch():
    ctx = RaftContext(1, (1, 2, 3), unknown_leader=6)
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    resp = ctx.deliver(2, ctx.end_epoch_request(epoch - 2, 2, [1, 3]))
    ctx.assert_epoch_response(resp, FENCED_LEADER_EPOCH, epoch, 1)
    ctx.sleep(ctx.config.fetch_timeout_ms - 1)
    ctx.assert_elected_leader(epoch, 1)


@pytest.mark.kafka("KafkaRaftClientTest#testEndQuorumStartsNewElectionImmediatelyIfFollowerUnattached")
def test_end_quorum_starts_new_election_immediately_if_follower_unattached():
    ctx = RaftContext(1, (1, 2, 3), unknown_leader=2)
    resp = ctx.deliver(2, ctx.end_epoch_request(2, 2, [1, 3]))
    ctx.assert_epoch_response(resp, NONE, 2, 2)
    assert ctx.role == "prospective"


@pytest.mark.kafka("KafkaRaftClientTest#testHandleEndQuorumRequest")
def test_handle_end_quorum_request():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    resp = ctx.deliver(2, ctx.end_epoch_request(2, 2, [1]))
    ctx.assert_epoch_response(resp, NONE, 2, 2)
    assert ctx.role == "prospective"
    ctx.assert_elected_leader(2, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleEndQuorumRequestWithLowerPriorityToBecomeLeader")
def test_handle_end_quorum_request_with_lower_priority_to_become_leader():
    ctx = RaftContext(1, (1, 2, 3), elected=(2, 2))
    resp = ctx.deliver(2, ctx.end_epoch_request(2, 2, [3, 1]))
    ctx.assert_epoch_response(resp, NONE, 2, 2)
    ctx.sleep(1)  # second of two successors: it waits 50 ms, fetching from its leader
    assert ctx.role == "follower" and ctx.requests(M.FetchRequest, dst=2)
    ctx.drain()
    ctx.sleep(ctx.config.election_backoff_max_ms)
    assert ctx.role == "prospective" and ctx.epoch == 2
    assert ctx.vote_requests_sent(2, pre_vote=True) == [2, 3]


# ------------------------------------------------------------------ Vote


@pytest.mark.kafka("KafkaRaftClientTest#testVoteRequestTimeout")
def test_vote_request_timeout():
    ctx = RaftContext(1, (1, 2))
    ctx.assert_unknown_leader_no_vote(0)
    ctx.unattached_to_candidate()
    ctx.assert_voted_candidate(1, 1)
    ((dst, first),) = _vote_sent(ctx, 1, 0, 0, 1)
    ctx.drain()
    ctx.sleep(ctx.config.request_timeout_ms)
    ((_, retry),) = _vote_sent(ctx, 1, 0, 0, 1)
    ctx.respond(dst, first, rpc.vote_response(NONE, 1, -1, True))  # late: ignored
    ctx.assert_voted_candidate(1, 1)
    ctx.respond(dst, retry, rpc.vote_response(NONE, 1, -1, True))
    ctx.assert_elected_leader(1, 1)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleValidVoteRequestAsFollower")
def test_handle_valid_vote_request_as_follower():
    ctx = RaftContext(1, (1, 2), unknown_leader=2)
    resp = ctx.deliver(2, ctx.vote_request(2, 2, 1, 1))
    ctx.assert_vote_response(resp, NONE, 2, -1, True)
    ctx.assert_voted_candidate(2, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleVoteRequestAsFollowerWithElectedLeader")
def test_handle_vote_request_as_follower_with_elected_leader():
    ctx = RaftContext(1, (1, 2, 3), elected=(2, 3))
    resp = ctx.deliver(2, ctx.vote_request(2, 2, 1, 1))
    ctx.assert_vote_response(resp, NONE, 2, 3, False)
    ctx.assert_elected_leader(2, 3)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleVoteRequestAsFollowerWithVotedCandidate")
def test_handle_vote_request_as_follower_with_voted_candidate():
    ctx = RaftContext(1, (1, 2, 3), voted=(2, 3))
    resp = ctx.deliver(2, ctx.vote_request(2, 2, 1, 1))
    ctx.assert_vote_response(resp, NONE, 2, -1, False)
    ctx.assert_voted_candidate(2, 3)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleVoteRequestAsProspective")
def test_handle_vote_request_as_prospective():
    ctx = RaftContext(1, (1, 2, 3), elected=(2, 3))
    ctx.sleep(ctx.config.fetch_timeout_ms)
    assert ctx.role == "prospective"
    resp = ctx.deliver(2, ctx.vote_request(3, 2, 2, 1))
    ctx.assert_vote_response(resp, NONE, 3, -1, True)
    assert (ctx.role, ctx.r.voted_id) == ("voted", 2)
    assert ctx.epoch == 3 and ctx.r.leader_id is None


@pytest.mark.kafka("KafkaRaftClientTest#testHandleVoteRequestAsProspectiveWithVotedCandidate")
def test_handle_vote_request_as_prospective_with_voted_candidate():
    ctx = RaftContext(1, (1, 2, 3), voted=(2, 3))
    ctx.sleep(2 * ELECTION)
    assert (ctx.role, ctx.r.voted_id) == ("prospective", 3)
    ctx.assert_voted_candidate(2, 3)
    resp = ctx.deliver(2, ctx.vote_request(3, 2, 2, 1))
    ctx.assert_vote_response(resp, NONE, 3, -1, True)
    ctx.assert_voted_candidate(3, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleInvalidVoteRequestWithOlderEpoch")
def test_handle_invalid_vote_request_with_older_epoch():
    ctx = RaftContext(1, (1, 2), unknown_leader=2)
    resp = ctx.deliver(2, ctx.vote_request(1, 2, 0, 1))
    ctx.assert_vote_response(resp, FENCED_LEADER_EPOCH, 2, -1, False)
    ctx.assert_unknown_leader_no_vote(2)


@pytest.mark.kafka("KafkaRaftClientTest#testHandleVoteRequestAsObserver")
def test_handle_vote_request_as_observer():
    ctx = RaftContext(1, (2, 3), unknown_leader=2)
    resp = ctx.deliver(2, ctx.vote_request(3, 2, 2, 1))
    ctx.assert_vote_response(resp, NONE, 3, -1, True)
    ctx.assert_voted_candidate(3, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testLeaderIgnoreVoteRequestOnSameEpoch")
def test_leader_ignore_vote_request_on_same_epoch():
    ctx = RaftContext(1, (1, 2), unknown_leader=2)
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    resp = ctx.deliver(2, ctx.vote_request(epoch, 2, epoch - 1, 1))
    ctx.assert_vote_response(resp, NONE, epoch, 1, False)
    ctx.assert_elected_leader(epoch, 1)


@pytest.mark.kafka("KafkaRaftClientTest#testCandidateIgnoreVoteRequestOnSameEpoch")
def test_candidate_ignore_vote_request_on_same_epoch():
    ctx = RaftContext(1, (1, 2, 3), unknown_leader=2)
    ctx.unattached_to_candidate()
    epoch = ctx.epoch
    resp = ctx.deliver(2, ctx.vote_request(epoch, 2, epoch - 1, 1))
    ctx.assert_vote_response(resp, NONE, epoch, -1, False)
    ctx.assert_voted_candidate(epoch, 1)


@pytest.mark.kafka("KafkaRaftClientTest#testCandidateWaitsRestOfElectionTimeoutAfterElectionLoss")
def test_candidate_waits_rest_of_election_timeout_after_election_loss():
    jitter = 85
    ctx = RaftContext(1, (1, 2), jitter=jitter)
    ctx.assert_unknown_leader_no_vote(0)
    ctx.unattached_to_candidate()
    ctx.assert_voted_candidate(1, 1)
    assert ctx.r._deadline - ctx.now == ELECTION + jitter  # noqa: SLF001 remainingElectionTimeMs
    ((dst, vote),) = _vote_sent(ctx, 1, 0, 0, 1)
    ctx.drain()
    ctx.respond(dst, vote, rpc.vote_response(NONE, 1, -1, False))
    ctx.poll()
    assert ctx.r._outvoted()  # noqa: SLF001 isVoteRejected
    ctx.assert_voted_candidate(1, 1)
    assert not ctx.requests(M.VoteRequest)  # it asks no more
    ctx.sleep(ELECTION + jitter - 1)
    ctx.assert_voted_candidate(1, 1)
    assert ctx.role == "candidate"
    ctx.sleep(1)  # its election timeout spent: prospective, no backoff
    assert (ctx.role, ctx.epoch) == ("prospective", 1)
    assert ctx.vote_requests_sent(1, pre_vote=True) == [2]
    assert ctx.r._deadline - ctx.now == ELECTION + jitter  # noqa: SLF001


@pytest.mark.kafka("KafkaRaftClientTest#testCandidateElectionTimeout")
def test_candidate_election_timeout():
    jitter = 100
    ctx = RaftContext(1, (1, 2), jitter=jitter)
    ctx.assert_unknown_leader_no_vote(0)
    ctx.unattached_to_candidate()
    ctx.assert_voted_candidate(1, 1)
    _vote_sent(ctx, 1, 0, 0, 1)
    remaining = ctx.r._deadline - ctx.now  # noqa: SLF001
    assert remaining == ELECTION + jitter and not ctx.r._outvoted()  # noqa: SLF001
    ctx.drain()
    ctx.sleep(remaining)
    assert ctx.role == "prospective" and ctx.epoch == 1
    assert ctx.vote_requests_sent(1, pre_vote=True) == [2]
    assert ctx.r._deadline - ctx.now == ELECTION + jitter  # noqa: SLF001


@pytest.mark.kafka("KafkaRaftClientTest#testInvalidVoteRequest")
def test_invalid_vote_request():
    ctx = RaftContext(1, (1, 2), elected=(5, 2))
    ctx.assert_elected_leader(5, 2)
    for last_epoch, last_offset in ((0, -5), (-1, 0), (6, 0)):
        resp = ctx.deliver(2, ctx.vote_request(6, 2, last_epoch, last_offset))
        ctx.assert_vote_response(resp, INVALID_REQUEST, 5, 2, False)
        ctx.assert_elected_leader(5, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testVoteRequestClusterIdValidation")
def test_vote_request_cluster_id_validation():
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    body = ctx.vote_request(epoch, 2, epoch - 1, 1)  # an already elected epoch: not granted
    ctx.assert_vote_response(ctx.deliver(2, body), NONE, epoch, 1, False)
    ctx.assert_vote_response(ctx.deliver(2, body.replace(cluster_id=None)), NONE, epoch, 1,
                             False)
    for bad in ("", "invalid-uuid"):
        assert ctx.deliver(2, body.replace(cluster_id=bad)).error_code == \
            INCONSISTENT_CLUSTER_ID


def _voter_key(body, voter_id: int, directory: Uuid):
    topic = body.topics[0]
    part = topic.partitions[0].replace(voter_directory_id=directory)
    return body.replace(voter_id=voter_id, topics=(topic.replace(partitions=(part,)),))


@pytest.mark.kafka("KafkaRaftClientTest#testInvalidVoterReplicaVoteRequest")
def test_invalid_voter_replica_vote_request():
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    body = _voter_key(ctx.vote_request(epoch + 1, 2, epoch, 100), 10, Uuid(b"\x7f" * 16))
    ctx.assert_vote_response(ctx.deliver(2, body), INVALID_VOTER_KEY, epoch + 1, -1, False)
    body = _voter_key(ctx.vote_request(epoch + 2, 2, epoch, 100), 1, Uuid(b"\x7e" * 16))
    ctx.assert_vote_response(ctx.deliver(2, body), INVALID_VOTER_KEY, epoch + 2, -1, False)


@pytest.mark.kafka("KafkaRaftClientTest#testInvalidVoterReplicaBeginQuorumEpochRequest")
def test_invalid_voter_replica_begin_quorum_epoch_request():
    ctx = RaftContext(1, (1, 2, 3))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    body = _voter_key(ctx.begin_epoch_request(epoch + 1, 2), 10, Uuid(b"\x7f" * 16))
    ctx.assert_epoch_response(ctx.deliver(2, body), INVALID_VOTER_KEY, epoch + 1, 2)
    ctx.assert_elected_leader(epoch + 1, 2)
    body = _voter_key(ctx.begin_epoch_request(epoch + 2, 3), 1, Uuid(b"\x7e" * 16))
    ctx.assert_epoch_response(ctx.deliver(3, body), INVALID_VOTER_KEY, epoch + 2, 3)
    ctx.assert_elected_leader(epoch + 2, 3)


@pytest.mark.kafka("KafkaRaftClientTest#testBeginQuorumEpochRequestClusterIdValidation")
def test_begin_quorum_epoch_request_cluster_id_validation():
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    body = ctx.begin_epoch_request(epoch, 1)
    ctx.assert_epoch_response(ctx.deliver(2, body), NONE, epoch, 1)
    ctx.assert_epoch_response(ctx.deliver(2, body.replace(cluster_id=None)), NONE, epoch, 1)
    for bad in ("", "invalid-uuid"):
        assert ctx.deliver(2, body.replace(cluster_id=bad)).error_code == \
            INCONSISTENT_CLUSTER_ID


@pytest.mark.kafka("KafkaRaftClientTest#testEndQuorumEpochRequestClusterIdValidation")
def test_end_quorum_epoch_request_cluster_id_validation():
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    body = ctx.end_epoch_request(epoch, 1, [])
    ctx.assert_epoch_response(ctx.deliver(2, body), NONE, epoch, 1)
    ctx.assert_epoch_response(ctx.deliver(2, body.replace(cluster_id=None)), NONE, epoch, 1)
    for bad in ("", "invalid-uuid"):
        assert ctx.deliver(2, body.replace(cluster_id=bad)).error_code == \
            INCONSISTENT_CLUSTER_ID


@pytest.mark.kafka("KafkaRaftClientTest#testLeaderAcceptVoteFromObserver")
def test_leader_accept_vote_from_observer():
    ctx = RaftContext(1, (1, 2), unknown_leader=4)
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    resp = ctx.deliver(3, ctx.vote_request(epoch - 1, 3, 0, 0))
    ctx.assert_vote_response(resp, FENCED_LEADER_EPOCH, epoch, 1, False)
    resp = ctx.deliver(3, ctx.vote_request(epoch, 3, 0, 0))
    ctx.assert_vote_response(resp, NONE, epoch, 1, False)


@pytest.mark.kafka("KafkaRaftClientTest#testVoteResponseIgnoredAfterBecomingFollower")
def test_vote_response_ignored_after_becoming_follower():
    epoch = 5
    ctx = RaftContext(1, (1, 2, 3), unknown_leader=epoch - 1)
    ctx.assert_unknown_leader_no_vote(epoch - 1)
    ctx.unattached_to_candidate()
    asked = _vote_sent(ctx, epoch, 0, 0, 2)
    ctx.deliver(3, ctx.begin_epoch_request(epoch, 3))
    ctx.assert_elected_leader(epoch, 3)
    (d1, q1), (d2, q2) = asked
    ctx.respond(d1, q1, rpc.vote_response(NONE, epoch, -1, True))
    ctx.respond(d2, q2, rpc.vote_response(NONE, epoch, 3, True))
    ctx.poll()
    ctx.assert_elected_leader(epoch, 3)


# ------------------------------------------------------------------ fetch timeouts


@pytest.mark.kafka("KafkaRaftClientTest#testVoterBecomeProspectiveAfterFetchTimeout")
def test_voter_become_prospective_after_fetch_timeout():
    ctx = RaftContext(1, (1, 2), elected=(5, 2), log=[(3, 1)])
    ctx.assert_elected_leader(5, 2)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    p = rpc.fetch_partition(fetch.body)
    assert (dst, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 5, 1, 3)
    ctx.drain()
    ctx.sleep(ctx.config.fetch_timeout_ms)
    assert ctx.role == "prospective"
    ((_, pre),) = ctx.requests(M.VoteRequest)
    p = rpc.vote_partition(pre.body)
    assert (p.pre_vote, p.candidate_epoch, p.last_offset_epoch, p.last_offset) == (True, 5, 3, 1)


@pytest.mark.kafka("KafkaRaftClientTest#testFollowerAsObserverDoesNotBecomeProspectiveAfterFetchTimeout")
def test_follower_as_observer_does_not_become_prospective_after_fetch_timeout():
    ctx = RaftContext(1, (2, 3), elected=(2, 2))
    assert ctx.role == "follower" and ctx.r.is_observer
    ctx.sleep(ctx.config.fetch_timeout_ms)
    assert ctx.role == "follower" and ctx.epoch == 2


@pytest.mark.kafka("KafkaRaftClientTest#testUnattachedAsObserverDoesNotBecomeProspectiveAfterElectionTimeout")
def test_unattached_as_observer_does_not_become_prospective_after_election_timeout():
    ctx = RaftContext(1, (2, 3), unknown_leader=2)
    assert ctx.role == "unattached" and ctx.r.is_observer
    ctx.sleep(2 * ELECTION)
    assert ctx.role == "unattached" and ctx.epoch == 2


@pytest.mark.kafka("KafkaRaftClientTest#testUnattachedAsVoterCanBecomeFollowerAfterFindingLeader")
def test_unattached_as_voter_can_become_follower_after_finding_leader():
    ctx = RaftContext(1, (1, 2, 3), unknown_leader=5)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    p = rpc.fetch_partition(fetch.body)
    assert (p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (5, 0, 0)
    assert ctx.role == "unattached" and ctx.r.is_voter
    error = NOT_LEADER_OR_FOLLOWER if dst == 2 else NONE
    ctx.respond(dst, fetch, rpc.fetch_response(error, 5, 3, 0))
    assert ctx.role == "follower"
    ctx.assert_elected_leader(5, 3)


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsFollowerEmptyLog")
def test_initialize_as_follower_empty_log():
    ctx = RaftContext(1, (1, 2), elected=(5, 2))
    ctx.assert_elected_leader(5, 2)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    p = rpc.fetch_partition(fetch.body)
    assert (dst, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 5, 0, 0)


@pytest.mark.kafka("KafkaRaftClientTest#testInitializeAsFollowerNonEmptyLog")
def test_initialize_as_follower_non_empty_log():
    ctx = RaftContext(1, (1, 2), elected=(5, 2), log=[(4, 1)])
    ctx.assert_elected_leader(5, 2)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    p = rpc.fetch_partition(fetch.body)
    assert (dst, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 5, 1, 4)


# ------------------------------------------------------------------ Fetch, DescribeQuorum, shutdown


def _fetch_part(resp):
    return rpc.fetch_response_partition(resp)


@pytest.mark.kafka("KafkaRaftClientTest#testEndQuorumEpochSentBasedOnFetchOffset")
def test_end_quorum_epoch_sent_based_on_fetch_offset():
    ctx = RaftContext(1, (1, 2, 3))  # 3 is the close follower, 2 the lagging one
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    p = _fetch_part(ctx.deliver(2, ctx.fetch_request(epoch, 2, 1, epoch)))
    assert (p.high_watermark, p.current_leader.leader_epoch) == (1, epoch)
    ctx.r.append([b"foo", b"bar"], ctx.now)
    ctx.poll()
    p = _fetch_part(ctx.deliver(3, ctx.fetch_request(epoch, 3, 3, epoch)))
    assert (p.high_watermark, p.current_leader.leader_epoch) == (3, epoch)
    ctx.drain()
    ctx.r.resign(ctx.now)  # Kafka's shutdown of a leader
    ctx.poll()
    asked = ctx.requests(M.EndQuorumEpochRequest)
    assert sorted(d for d, _ in asked) == [2, 3]
    for _, req in asked:
        part = rpc.vote_partition(req.body)
        assert part.leader_epoch == epoch
        assert rpc.preferred_successors(part) == [3, 2]  # by descending fetch offset


@pytest.mark.kafka("KafkaRaftClientTest#testFetchRequestClusterIdValidation")
def test_fetch_request_cluster_id_validation():
    ctx = RaftContext(1, (1, 2), unknown_leader=4)
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    body = ctx.fetch_request(epoch, 2, 0, 0).replace(max_wait_ms=0)
    body = body.replace(topics=(body.topics[0].replace(partitions=(
        body.topics[0].partitions[0].replace(fetch_offset=-5),)),))
    for cluster in ("raft-parity-cluster", None):
        p = _fetch_part(ctx.deliver(2, body.replace(cluster_id=cluster)))
        assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
            (INVALID_REQUEST, epoch, 1)
    for bad in ("", "invalid-uuid"):
        assert ctx.deliver(2, body.replace(cluster_id=bad)).error_code == INCONSISTENT_CLUSTER_ID


@pytest.mark.kafka("KafkaRaftClientTest#testInvalidFetchRequest")
def test_invalid_fetch_request():
    ctx = RaftContext(1, (1, 2), unknown_leader=4)
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    cases = [((epoch, -5, 0, 0), INVALID_REQUEST), ((epoch, 0, -1, 0), INVALID_REQUEST),
             ((epoch, 0, epoch + 1, 0), INVALID_REQUEST),
             ((epoch + 1, 0, 0, 0), UNKNOWN_LEADER_EPOCH), ((epoch, 0, 0, -1), INVALID_REQUEST)]
    for (req_epoch, offset, last_epoch, max_wait), error in cases:
        body = ctx.fetch_request(req_epoch, 2, 0, 0).replace(max_wait_ms=max_wait)
        part = body.topics[0].partitions[0].replace(fetch_offset=offset,
                                                    last_fetched_epoch=last_epoch)
        body = body.replace(topics=(body.topics[0].replace(partitions=(part,)),))
        p = _fetch_part(ctx.deliver(2, body))
        assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
            (error, epoch, 1), (req_epoch, offset, last_epoch, max_wait)


@pytest.mark.kafka("KafkaRaftClientTest#testFetchResponseIgnoredAfterBecomingProspective")
def test_fetch_response_ignored_after_becoming_prospective():
    ctx = RaftContext(1, (1, 2), elected=(5, 2))
    ctx.assert_elected_leader(5, 2)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    ctx.sleep(ctx.config.fetch_timeout_ms)
    assert ctx.role == "prospective"
    data = encode_batch(RecordBatch.build(0, [b"a", b"b"], timestamp_ms=0, leader_epoch=3))
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 5, 2, 0, 0, data))
    ctx.poll()
    assert ctx.r.log.end_offset == 0
    assert ctx.vote_requests_sent(5, pre_vote=True) == [2]  # expectAndGrantPreVotes(epoch)
    ctx._grant_all(5, pre_vote=True)  # noqa: SLF001
    assert (ctx.role, ctx.epoch) == ("candidate", 6)


@pytest.mark.kafka("KafkaRaftClientTest#testFetchResponseIgnoredAfterBecomingFollowerOfDifferentLeader")
def test_fetch_response_ignored_after_becoming_follower_of_different_leader():
    ctx = RaftContext(1, (1, 2, 3), elected=(5, 2))
    ctx.assert_elected_leader(5, 2)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    ctx.deliver(3, ctx.begin_epoch_request(6, 3))
    ctx.assert_elected_leader(6, 3)
    data = encode_batch(RecordBatch.build(0, [b"a", b"b"], timestamp_ms=0, leader_epoch=3))
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 5, 2, 0, 0, data))
    ctx.poll()
    assert ctx.r.log.end_offset == 0
    ctx.assert_elected_leader(6, 3)


@pytest.mark.kafka("KafkaRaftClientTest#testDescribeQuorumNonLeader")
def test_describe_quorum_non_leader():
    ctx = RaftContext(1, (1, 2, 3), unknown_leader=2)
    resp = ctx.deliver(2, rpc.describe_quorum_request())
    assert resp.error_code == NONE
    (topic,) = resp.topics
    assert topic.topic_name == "__cluster_metadata"
    (part,) = topic.partitions
    assert (part.partition_index, part.error_code) == (0, NOT_LEADER_OR_FOLLOWER)
    assert part.error_message == (
        "For requests intended only for the leader, this error indicates that the broker is not "
        "the current leader. For requests intended for any replica, this error indicates that "
        "the broker is not a replica of the topic partition.")


@pytest.mark.kafka("KafkaRaftClientTest#testLeaderAppendSingleMemberQuorum")
def test_leader_append_single_member_quorum():
    ctx = RaftContext(1, (1,))
    ctx.assert_elected_leader(1, 1)
    assert ctx.r.hw == 1
    ctx.r.append([b"a", b"b", b"c"], ctx.now)
    ctx.poll()
    assert ctx.r.hw == 4
    batches, offset, last_epoch = [], 0, 0
    while True:
        p = _fetch_part(ctx.deliver(2, ctx.fetch_request(1, 2, offset, last_epoch)))
        assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
            (NONE, 1, 1)
        fetched = [b for _, b in iter_batches(bytes(p.records))]
        if not fetched:
            break
        batches += fetched
        offset, last_epoch = fetched[-1].last_offset + 1, fetched[-1].partition_leader_epoch
    assert len(batches) == 2
    change_batch, data = batches
    assert change_batch.is_control and len(change_batch.records) == 1
    assert change_batch.max_timestamp == 0  # elected at the start
    change = _leader_change(change_batch)
    assert change.leader_id == 1 and [v.voter_id for v in change.voters] == [1]
    assert [v.voter_id for v in change.granting_voters] == [1]
    assert data.partition_leader_epoch == 1
    assert [r.value for r in data.records] == [b"a", b"b", b"c"]


@pytest.mark.kafka("KafkaRaftClientTest#testObserverUnattachedSendFetchToBootstrapServers")
def test_observer_unattached_send_fetch_to_bootstrap_servers():
    ctx = RaftContext(1, (2, 3))
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    assert dst in (2, 3)
    p = rpc.fetch_partition(fetch.body)
    assert (p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (0, 0, 0)
    ctx.assert_unknown_leader_no_vote(0)
    ctx.respond(dst, fetch, rpc.fetch_response(FENCED_LEADER_EPOCH, 0, 2, 0))
    ctx.assert_elected_leader(0, 2)
