"""Pre-vote (KIP-996, Kafka 4.0+): a voter asks before it stands, and a voter that was cut off
cannot disrupt a stable leader when it comes back. The expected answers follow Kafka's
KafkaRaftClientPreVoteTest: a follower grants a pre-vote only until it has fetched from its
leader; unattached, voted and candidate replicas grant one to an up-to-date log without changing
state; a pre-vote with a higher epoch moves the receiver to that epoch, unattached."""

from __future__ import annotations

import pytest
from raft_helpers import CLUSTER, DIRS, Harness, fetch, part

from kraft_testkit.errors import KraftError
from kraft_testkit.protocol import messages as M
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft import rpc
from kraft_testkit.raft.config import RaftConfig

PRE_VOTE = RaftConfig()  # the default: pre-vote on, as Kafka 4.x


def pre_vote(epoch: int, candidate: int = 2, last_epoch: int = 0, last_offset: int = 0,
             voter: int = 1):
    return rpc.vote_request(CLUSTER, epoch, candidate, DIRS[candidate], voter, DIRS[voter],
                            last_epoch, last_offset, pre_vote=True)


def granted(resp) -> bool:
    p = part(resp)
    assert p.error_code == 0, p
    return p.vote_granted


def test_the_default_is_pre_vote_and_vote_request_v2_carries_it():
    assert RaftConfig().pre_vote is True
    body = pre_vote(3)
    assert rpc.vote_partition(body).pre_vote is True
    raw = body.encode(2)
    assert type(body).decode(raw, 2) == body
    with pytest.raises(KraftError, match="PreVote"):  # Kafka 3.x peers cannot be asked
        body.encode(1)
    real = rpc.vote_request(CLUSTER, 3, 2, DIRS[2], 1, DIRS[1], 0, 0)
    assert rpc.vote_partition(type(real).decode(real.encode(1), 1)).pre_vote is False


def test_a_follower_grants_a_pre_vote_only_until_it_has_fetched_from_its_leader():
    h = Harness(config=PRE_VOTE)
    h.follow(leader=3, epoch=2)
    assert granted(h.request(2, pre_vote(2, last_epoch=0)))  # leader may be gone: grant
    h.reply(3, M.FetchRequest, rpc.fetch_response(0, 2, 3, 0, 0))  # its first fetch answered
    assert not granted(h.request(2, pre_vote(2)))  # the leader is alive: refuse
    assert (h.r.role, h.r.epoch, h.r.leader_id) == ("follower", 2, 3)  # nothing changed
    # a pre-vote from a later epoch moves it to that epoch, unattached, and is granted
    assert granted(h.request(2, pre_vote(3)))
    assert (h.r.role, h.r.epoch, h.r.voted_id) == ("unattached", 3, None)


def test_unattached_voted_and_candidate_grant_up_to_date_pre_votes_without_changing():
    h = Harness(config=RaftConfig(pre_vote=False))
    h.tick()  # candidate in epoch 1 (no pre-vote in this harness), voted for itself
    assert h.r.role == "candidate"
    h.r.config = PRE_VOTE
    assert granted(h.request(2, pre_vote(1)))
    assert (h.r.role, h.r.voted_id) == ("candidate", 1)
    h2 = Harness(config=PRE_VOTE)
    assert granted(h2.request(2, pre_vote(0)))
    assert granted(h2.request(3, pre_vote(0)))  # any number of them: nothing is promised
    assert (h2.r.role, h2.r.voted_id) == ("unattached", None)
    h2.request(2, rpc.vote_request(CLUSTER, 1, 2, DIRS[2], 1, DIRS[1], 0, 0))  # a real vote
    assert (h2.r.role, h2.r.voted_id) == ("voted", 2)
    assert granted(h2.request(3, pre_vote(1)))
    assert (h2.r.role, h2.r.voted_id) == ("voted", 2)


def test_a_stale_log_gets_no_pre_vote_and_a_leader_grants_none():
    h = Harness(config=RaftConfig(pre_vote=False))
    leader = h.elect()  # epoch 1, a LeaderChange record at offset 0
    assert not granted(h.request(2, pre_vote(1, last_epoch=1, last_offset=5)))
    assert leader.role == "leader"
    h2 = Harness(config=PRE_VOTE)
    assert granted(h2.request(2, pre_vote(0)))  # equal (empty) logs are up to date


def test_a_timed_out_voter_asks_first_and_stands_only_with_a_majority():
    h = Harness(config=PRE_VOTE)
    h.follow(leader=3, epoch=2)
    h.sent.clear()
    h.tick(h.now + 10_000)  # the fetch timeout runs out
    assert (h.r.role, h.r.epoch, h.r.leader_id) == ("prospective", 2, 3)
    asks = h.sends(M.VoteRequest)
    assert sorted(d for d, _ in asks) == [2, 3]
    assert all(rpc.vote_partition(m.body).pre_vote and rpc.vote_partition(m.body).candidate_epoch
               == 2 for _, m in asks)
    assert h.disk.view()  # nothing about the election was persisted for the pre-vote
    h.reply(2, M.VoteRequest, rpc.vote_response(0, 2, 3, True))
    assert (h.r.role, h.r.epoch) == ("candidate", 3)  # now it bumps the epoch and votes
    real = [m for d, m in h.sends(M.VoteRequest) if not rpc.vote_partition(m.body).pre_vote]
    assert {rpc.vote_partition(m.body).candidate_epoch for m in real} == {3}


def test_a_lost_pre_vote_goes_back_to_the_leader_it_knew():
    h = Harness(config=PRE_VOTE)
    h.follow(leader=3, epoch=2)
    h.tick(h.now + 10_000)
    assert h.r.role == "prospective"
    h.reply(2, M.VoteRequest, rpc.vote_response(0, 2, 3, False))
    h.reply(3, M.VoteRequest, rpc.vote_response(0, 2, 3, False))
    h.tick(h.now)
    assert (h.r.role, h.r.epoch, h.r.leader_id) == ("follower", 2, 3)
    m = h.r.metrics()
    assert (m["testkit-pre-votes-lost"], m["testkit-candidacies"], m["current-epoch"]) == (1, 0, 2)


def test_metrics_report_the_prospective_state():
    h = Harness(config=PRE_VOTE)
    h.follow(leader=3, epoch=2)
    h.tick(h.now + 10_000)
    m = h.r.metrics()
    assert (m["current-state"], m["current-leader"], m["current-epoch"]) == ("prospective", 3, 2)
    assert m["testkit-pre-vote-rounds"] == 1 and m["number-of-voters"] == 3


@pytest.mark.parametrize("seed", range(4))
def test_a_voter_cut_off_one_way_does_not_disrupt_a_stable_leader(seed):
    """The leader's messages to one follower are lost (it still reaches the others): with pre-vote
    the follower times out but the other follower, which hears from the leader, refuses it, so the
    leader and epoch stay. Without pre-vote (Kafka 3.x) it stands in a new epoch and its vote
    requests depose the leader."""
    outcomes = {}
    for pre in (True, False):
        q = Quorum(3, seed=seed, config={"testkit.raft.pre.vote.enable": pre})
        q.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
        q.append([b"x"])
        leader, epoch = q.active_controller, q.epoch
        cut = next(n for n in q.nodes if n != leader and n <= 3)
        q.network.one_way(leader, cut)
        q.run_for(30_000)
        q.network.heal()
        q.run_for(10_000)
        outcomes[pre] = (q.active_controller == leader and q.epoch == epoch)
        if pre:
            assert q.replica(cut).elections["pre_vote_rounds"] > 0
            assert q.replica(cut).elections["candidacies"] == 0
    assert outcomes == {True: True, False: False}


def test_same_seed_same_run_with_pre_vote():
    digests = []
    for _ in range(2):
        q = Quorum(3, seed=11)
        q.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
        q.faults.kill(q.active_controller)
        q.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
        digests.append(q.trace.digest())
    assert digests[0] == digests[1]
