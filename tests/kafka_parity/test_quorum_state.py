"""QuorumStateTest (Kafka 4.2.1), ported: the election state each transition persists and the
timer it starts.

Kafka's test drives ``QuorumState`` alone; the kit's counterpart is the replica's transitions
(:mod:`kraft_testkit.raft.transitions`), driven here on a started replica through
:class:`raft_context.RaftContext` with QuorumStateTest's settings: local id 0, election timeout
5 s, fetch timeout 10 s, ``mockNextInt(electionTimeoutMs, 2500)`` as ``jitter=2500``. Kafka's
checks that an illegal transition throws have no counterpart: the kit's transitions are internal
and only reached through the legal paths.
"""

from __future__ import annotations

import pytest
from raft_context import RaftContext, kafka_config

from kraft_testkit.raft.state import ElectionState
from kraft_testkit.sim.node import NEVER

KRAFT = pytest.mark.parametrize("kraft_version", [0, 1])
ELECTION, FETCH, JITTER = 5_000, 10_000, 2_500


def _state(voters=(0, 1, 2), kraft_version: int = 0, **kw) -> RaftContext:
    return RaftContext(0, voters, kraft_version=kraft_version, jitter=JITTER,
                       config=kafka_config(election_timeout_ms=ELECTION, fetch_timeout_ms=FETCH),
                       **kw)


def _remaining(ctx: RaftContext) -> int:
    return ctx.r._deadline - ctx.now  # noqa: SLF001 - remainingElectionTimeMs / FetchTimeMs


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testInitializePrimordialEpoch")
def test_initialize_primordial_epoch(kraft_version):
    ctx = _state((0,), kraft_version)  # a standalone voter: prospective, candidate, leader
    assert ctx.stored().epoch == 1 and ctx.stored().leader_id == 0
    assert ctx.r.elections["candidacies"] == 1 and ctx.epoch == 1


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testInitializeAsUnattached")
def test_initialize_as_unattached(kraft_version):
    ctx = _state(kraft_version=kraft_version, unknown_leader=5)
    assert (ctx.role, ctx.r.voted_id, ctx.epoch) == ("unattached", None, 5)
    assert _remaining(ctx) == ELECTION + JITTER


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testInitializeAsFollower")
def test_initialize_as_follower(kraft_version):
    ctx = _state(kraft_version=kraft_version, elected=(5, 1))
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 5, 1)
    assert _remaining(ctx) == FETCH


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testInitializeAsVotedNoLeader")
def test_initialize_as_voted_no_leader(kraft_version):
    ctx = _state(kraft_version=kraft_version, voted=(5, 1))
    assert (ctx.role, ctx.epoch, ctx.r.voted_id) == ("voted", 5, 1)
    assert _remaining(ctx) == ELECTION + JITTER


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testInitializeAsResignedCandidate")
def test_initialize_as_resigned_candidate(kraft_version):
    ctx = _state(kraft_version=kraft_version, voted=(5, 0))
    assert (ctx.role, ctx.epoch, ctx.r.voted_id) == ("candidate", 5, 0)
    assert ctx.stored() == ElectionState(5, -1, 0)
    assert ctx.r._granted == {0} and ctx.r._rejected == set()  # noqa: SLF001
    assert _remaining(ctx) == ELECTION + JITTER


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testInitializeAsResignedLeader")
def test_initialize_as_resigned_leader(kraft_version):
    ctx = _state(kraft_version=kraft_version, elected=(5, 0))
    assert (ctx.role, ctx.epoch) == ("resigned", 5)
    assert ctx.stored() == ElectionState(5, 0, -1)
    assert ctx.r._unacked == {1, 2}  # noqa: SLF001 unackedVoters
    assert _remaining(ctx) == ELECTION + JITTER


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testInitializeVotedAndLeaderAreSame")
def test_initialize_voted_and_leader_are_same(kraft_version):
    ctx = _state(kraft_version=kraft_version, voted=(5, 1))
    ctx.deliver(1, ctx.begin_epoch_request(5, 1))  # leader and vote alike: 1
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 5, 1)
    assert _remaining(ctx) == FETCH
    assert ctx.stored() == ElectionState(5, 1, 1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testUnattachedToUnattachedVotedSameEpoch")
def test_unattached_to_unattached_voted_same_epoch(kraft_version):
    ctx = _state((0, 1), kraft_version)
    ctx.r._to_unattached(5, ctx.now)  # noqa: SLF001
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch, ctx.r.voted_id) == ("voted", 5, 1)
    ctx.poll()
    assert ctx.stored() == ElectionState(5, -1, 1)
    assert _remaining(ctx) == ELECTION + JITTER


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testUnattachedToFollowerSameEpoch")
def test_unattached_to_follower_same_epoch(kraft_version):
    ctx = _state((0, 1), kraft_version)
    ctx.r._to_unattached(5, ctx.now)  # noqa: SLF001
    ctx.r._to_follower(5, 1, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 5, 1)
    assert _remaining(ctx) == FETCH


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testUnattachedToProspective")
def test_unattached_to_prospective(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    assert ctx.role == "unattached" and ctx.epoch == 0
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    assert _remaining(ctx) == ELECTION + JITTER
    ctx.poll()
    assert ctx.stored() == ElectionState(0, -1, -1)  # nothing new persisted


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testFollowerToUnattachedHigherEpoch")
def test_follower_to_unattached_higher_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    ctx.r._to_follower(8, 2, ctx.now)  # noqa: SLF001
    ctx.r._to_unattached(9, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch) == ("unattached", 9)
    assert _remaining(ctx) == ELECTION + JITTER


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testFollowerToProspective")
def test_follower_to_prospective(kraft_version):
    ctx = _state(kraft_version=kraft_version, unknown_leader=0)
    ctx.r._to_follower(8, 2, ctx.now)  # noqa: SLF001
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch) == ("prospective", 8)
    assert _remaining(ctx) == ELECTION + JITTER
    ctx.poll()
    assert ctx.stored() == ElectionState(8, 2, -1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testProspectiveToCandidate")
def test_prospective_to_candidate(kraft_version):
    ctx = _state(kraft_version=kraft_version, unknown_leader=0)
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    assert ctx.r.leader_id is None and _remaining(ctx) == ELECTION + JITTER
    ctx.r._start_candidacy(ctx.now)  # noqa: SLF001
    assert _remaining(ctx) == ELECTION + JITTER
    ctx.poll()
    assert ctx.stored() == ElectionState(1, -1, 0)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testCandidateToProspective")
def test_candidate_to_prospective(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    ctx.r._start_candidacy(ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch) == ("candidate", 1)
    assert _remaining(ctx) == ELECTION + JITTER
    ctx.sleep(_remaining(ctx))  # the candidate's timeout runs out: prospective
    assert ctx.role == "prospective"
    assert _remaining(ctx) == ELECTION + JITTER
    assert ctx.stored() == ElectionState(1, -1, 0)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testCandidateToLeader")
def test_candidate_to_leader(kraft_version):
    ctx = _state((0,), kraft_version)
    assert (ctx.role, ctx.epoch) == ("leader", 1)
    assert ctx.r.hw == ctx.r.log.end_offset  # a single voter commits its first batch at once


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testLeaderToResigned")
def test_leader_to_resigned(kraft_version):
    ctx = _state((0,), kraft_version)
    ctx.r.resign(ctx.now)
    assert (ctx.role, ctx.epoch) == ("resigned", 1)
    ctx.poll()
    assert ctx.stored() == ElectionState(1, 0, -1)
    assert ctx.r._unacked == set()  # noqa: SLF001


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testResignedToUnattachedInHigherEpoch")
def test_resigned_to_unattached_in_higher_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version, elected=(5, 0))
    assert ctx.role == "resigned"
    ctx.r._to_unattached(6, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch) == ("unattached", 6)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testResignedToFollowerInSameEpoch")
def test_resigned_to_follower_in_same_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version, elected=(5, 0))
    assert ctx.role == "resigned"
    ctx.r._to_follower(5, 1, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 5, 1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testProspectiveToUnattachedInSameEpoch")
def test_prospective_to_unattached_in_same_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    ctx.r._to_unattached(ctx.epoch, ctx.now)  # noqa: SLF001
    ctx.poll()
    assert ctx.stored() == ElectionState(0, -1, -1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testProspectiveVotedToUnattachedInSameEpoch")
def test_prospective_voted_to_unattached_in_same_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version, unknown_leader=0)
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001 prospectiveAddVotedState
    assert (ctx.role, ctx.r.voted_id) == ("prospective", 1)
    ctx.r._to_unattached(0, ctx.now)  # noqa: SLF001
    ctx.poll()
    assert ctx.stored() == ElectionState(0, -1, 1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testFollowerVotedToFollowerSameEpoch")
def test_follower_voted_to_follower_same_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001
    ctx.r._to_follower(ctx.epoch, 2, ctx.now)  # noqa: SLF001
    ctx.poll()
    assert ctx.stored() == ElectionState(0, 2, 1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testFollowerVotedToFollowerHigherEpoch")
def test_follower_voted_to_follower_higher_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001
    ctx.r._to_follower(ctx.epoch, 2, ctx.now)  # noqa: SLF001
    ctx.r._to_follower(8, 1, ctx.now)  # noqa: SLF001
    assert _remaining(ctx) == FETCH
    ctx.poll()
    assert ctx.stored() == ElectionState(8, 1, -1)  # a new epoch forgets the vote


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testProspectiveVotedToAndFromFollowerSameEpoch")
def test_prospective_voted_to_and_from_follower_same_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001
    ctx.r._to_follower(ctx.epoch, 2, ctx.now)  # noqa: SLF001
    ctx.r._to_prospective(ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.r.leader_id, ctx.r.voted_id) == ("prospective", 2, 1)
    ctx.r._lose_pre_vote(ctx.now)  # noqa: SLF001 back to the leader it knew
    assert (ctx.role, ctx.r.leader_id, ctx.r.voted_id) == ("follower", 2, 1)
    ctx.poll()
    assert ctx.stored() == ElectionState(0, 2, 1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testUnattachedVotedToFollowerSameEpoch")
def test_unattached_voted_to_follower_same_epoch(kraft_version):
    ctx = _state(kraft_version=kraft_version)
    ctx.r._to_unattached(5, ctx.now)  # noqa: SLF001
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001
    ctx.r._to_follower(5, 2, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.r.leader_id) == ("follower", 2)
    assert _remaining(ctx) == FETCH
    ctx.poll()
    assert ctx.stored() == ElectionState(5, 2, 1)


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testUnattachedVotedToUnattachedHigherEpoch")
def test_unattached_voted_to_unattached_higher_epoch(kraft_version):
    ctx = _state((0, 1), kraft_version, log=[(5, 1)])  # the log ends in epoch 5
    assert (ctx.role, ctx.epoch) == ("unattached", 5)
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001
    assert _remaining(ctx) == ELECTION + JITTER
    ctx.now += 1000
    ctx.r._to_unattached(6, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch, ctx.r.voted_id) == ("unattached", 6, None)
    assert _remaining(ctx) == ELECTION + JITTER - 1000  # the rest of its election timeout


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testObserverUnattachedToFollower")
def test_observer_unattached_to_follower(kraft_version):
    ctx = _state((1, 2), kraft_version)
    assert ctx.r.is_observer and ctx.role == "unattached"
    ctx.r._to_follower(2, 1, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 2, 1)
    assert _remaining(ctx) == FETCH


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testObserverFollowerToUnattached")
def test_observer_follower_to_unattached(kraft_version):
    ctx = _state((1, 2), kraft_version)
    ctx.r._to_follower(2, 1, ctx.now)  # noqa: SLF001
    ctx.r._to_unattached(3, ctx.now)  # noqa: SLF001
    assert (ctx.role, ctx.epoch) == ("unattached", 3)
    assert ctx.r._deadline == NEVER  # noqa: SLF001 an observer has no election timeout


@KRAFT
@pytest.mark.kafka("QuorumStateTest#testObserverUnattachedToUnattachedVoted")
def test_observer_unattached_to_unattached_voted(kraft_version):
    ctx = _state((1,), kraft_version, log=[(5, 1)])
    assert ctx.r.is_observer and (ctx.role, ctx.epoch) == ("unattached", 5)
    ctx.r._to_voted(1, ctx.now)  # noqa: SLF001
    assert ctx.r.is_observer and (ctx.role, ctx.r.voted_id) == ("voted", 1)
    ctx.poll()
    assert ctx.stored() == ElectionState(5, -1, 1)
