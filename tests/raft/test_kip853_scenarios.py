"""KIP-853's five scenarios on a bare quorum, through the public API, under the invariants.

Every run: the Raft invariants after every event (single leader per epoch, committed prefix,
committed majority over the voter set in effect, durability...), records appended before and
after each change all committed and held by every replica at the end, several seeds.
"""

from __future__ import annotations

import pytest

from kraft_testkit.protocol.error_codes import KafkaApiError
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft.replica import LEADER

SEEDS = [1, 2, 3]


def _boot(voters: int, seed: int) -> Quorum:
    q = Quorum(voters=voters, kraft_version=1, seed=seed)
    q.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
    return q


def _append(q: Quorum, tag: str, offsets: list[int]) -> None:
    offsets.append(q.append([tag.encode()], timeout_ms=20_000))


def _check_end(q: Quorum, offsets: list[int], voters: set[int]) -> None:
    """Converged: one leader, every replica holds every committed record, and the voter set is
    ``voters`` on every replica (the change reached the observers too)."""
    q.converge(timeout_ms=60_000)
    assert set(q.voter_set()) == voters
    leader = q.replica(q.leader_id)
    for r in q.replicas():
        assert r.hw > max(offsets)
        assert set(r.voters) == voters
        assert r.is_voter == (r.id in voters)
        assert r.listener.state() == leader.listener.state()
    epochs = {}
    for r in q.replicas():
        if r.role == LEADER:
            assert epochs.setdefault(r.epoch, r.id) == r.id


@pytest.mark.parametrize("seed", SEEDS)
def test_grow_one_voter_to_three_then_five(seed):
    q = _boot(1, seed)
    offsets: list[int] = []
    _append(q, "one", offsets)
    for size in (3, 5):
        while len(q.voter_set()) < size:
            node = q.add_controller()
            assert not q.replica(node).is_voter  # an observer until added
            _append(q, f"before-{node}", offsets)
            q.add_voter(node)
            _append(q, f"after-{node}", offsets)
        assert len(q.voter_set()) == size
    _check_end(q, offsets, {1, 2, 3, 4, 5})
    assert q.replica(q.leader_id).majority == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_shrink_five_to_three(seed):
    q = _boot(5, seed)
    offsets: list[int] = []
    _append(q, "five", offsets)
    for node in sorted(set(q.voter_set()) - {q.leader_id}, reverse=True)[:2]:
        q.remove_voter(node)
        _append(q, f"without-{node}", offsets)
    voters = set(q.voter_set())
    assert len(voters) == 3
    _check_end(q, offsets, voters)
    removed = set(q.nodes) - voters
    for n in removed:  # still running, as observers that follow the log
        assert q.replica(n).metrics()["current-state"] == "observer"


@pytest.mark.parametrize("seed", SEEDS)
def test_replace_a_failed_disk_on_a_voter(seed):
    q = _boot(3, seed)
    offsets: list[int] = []
    _append(q, "before", offsets)
    victim = next(n for n in q.voters if n != q.leader_id)
    old_dir = q.voter_set().keys[victim]
    q.faults.replace_disk(victim)
    q.run_for(3_000)
    new_dir = q.replica(victim).dir
    assert new_dir != old_dir and not q.replica(victim).is_voter
    with pytest.raises(KafkaApiError, match="DUPLICATE_VOTER"):
        q.add_voter(victim)  # the id still votes, with the old disk's directory id
    q.remove_voter(victim, old_dir)
    _append(q, "two-voters", offsets)
    q.add_voter(victim)
    _append(q, "after", offsets)
    assert q.voter_set().keys[victim] == new_dir
    _check_end(q, offsets, set(q.voters))


@pytest.mark.parametrize("seed", SEEDS)
def test_remove_the_leader_itself(seed):
    q = _boot(3, seed)
    offsets: list[int] = []
    _append(q, "before", offsets)
    old = q.leader_id
    old_epoch = q.epoch
    q.remove_voter(old)  # answered once committed; then the old leader resigns
    q.run_until(lambda q: q.active_controller not in (None, old), timeout_ms=20_000)
    assert q.epoch > old_epoch
    assert old not in q.voter_set()
    _append(q, "after", offsets)
    _check_end(q, offsets, set(q.voters) - {old})
    assert q.replica(old).metrics()["current-state"] == "observer"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_change_racing_a_leader_failover(seed):
    q = _boot(3, seed)
    offsets: list[int] = []
    _append(q, "before", offsets)
    node = q.add_controller()
    q.run_for(2_000)  # the observer catches up
    leader = q.replica(q.leader_id)
    # the leader appends the VotersRecord, then dies before (or as) it commits
    q._call(leader.id, lambda r, now: r.append_voters(
        r.history.latest.add(__import__("kraft_testkit.raft.voters", fromlist=["Voter"]).Voter(
            node, q.replica(node).dir)), now))
    q.faults.kill(leader.id)
    q.run_until(lambda q: q.active_controller not in (None, leader.id), timeout_ms=30_000)
    q.faults.start(leader.id)
    # the new leader either kept the change (it had fetched it) or truncated it away on all
    # replicas; adding again is then DUPLICATE_VOTER or succeeds
    try:
        q.add_voter(node)
    except KafkaApiError as e:
        assert e.name == "DUPLICATE_VOTER"
    _append(q, "after", offsets)
    _check_end(q, offsets, {1, 2, 3, node})


def test_add_voter_errors():
    q = _boot(1, 5)
    with pytest.raises(KafkaApiError, match="DUPLICATE_VOTER"):
        q.add_voter(1)
    with pytest.raises(KafkaApiError, match="VOTER_NOT_FOUND"):
        q.remove_voter(7, q.voter_set().keys[1])
    static = Quorum(voters=1, seed=5)
    static.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
    node = static.add_controller()
    static.run_for(1_000)
    with pytest.raises(KafkaApiError, match="UNSUPPORTED_VERSION"):
        static.add_voter(node)


def test_same_seed_same_digest():
    def run() -> str:
        q = _boot(1, 11)
        for _ in range(2):
            q.add_voter(q.add_controller())
        q.remove_voter(q.leader_id)
        q.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
        q.append([b"x"])
        return q.trace.digest()
    assert run() == run()


def test_planted_violation_majority_of_the_voter_set_in_effect():
    """A leader that counted the old (1-voter) majority after adding two voters commits alone:
    the committed-majority invariant, over the voter set in effect, catches it."""
    from kraft_testkit.sim import InvariantViolation

    q = _boot(1, 4)
    for _ in range(2):
        q.add_voter(q.add_controller())
    leader = q.replica(1)
    q.network.isolate(1)
    leader.majority = 1  # the bug: majority of the bootstrap set, not of the set in effect
    with pytest.raises(InvariantViolation, match="committed-majority"):
        q._call(1, lambda r, now: r.append([b"lost"], now))
        q.run_for(1_000)


def test_truncation_reverts_an_uncommitted_voter_set():
    """KIP-853: a VotersRecord takes effect when appended; cutting it off the log reverts it."""
    from kraft_testkit.raft.voters import Voter

    q = _boot(3, 6)
    node = q.add_controller()
    q.run_for(2_000)
    old = q.replica(q.leader_id)
    others = [n for n in q.voters if n != old.id]
    q.network.isolate(old.id)
    q._call(old.id, lambda r, now: r.append_voters(
        r.history.latest.add(Voter(node, q.replica(node).dir)), now))
    assert node in old.voters and old.majority == 3  # in effect at once, uncommitted
    q.run_until(lambda q: any(q.replica(n).role == LEADER for n in others), timeout_ms=30_000)
    q.network.heal()
    q.run_until(lambda q: q.replica(old.id).role != LEADER and
                q.replica(old.id).leader_id in others, timeout_ms=30_000)
    q.append([b"new-epoch"])
    q.converge()
    assert node not in q.replica(old.id).voters and q.replica(old.id).majority == 2


@pytest.mark.parametrize("seed", SEEDS)
def test_a_voter_that_missed_a_change_still_elects_the_new_voter(seed):
    """Kafka 4.x's rule: a voter grants a vote to a candidate its own (lagging) voter set does
    not know yet. Voters {1, 2}; 2 is cut off while 3 joins (1 and 3 commit the change); 1
    dies: 2 and 3 must elect 3, whose log holds the change, without 1."""
    q = _boot(2, seed)
    node = q.add_controller()
    q.run_for(2_000)
    leader = q.leader_id
    other = next(n for n in q.voters if n != leader)
    q.network.isolate(other)
    q.add_voter(node)
    offset = q.append([b"committed by the new majority"])
    q.faults.kill(leader)
    q.network.heal()
    q.run_until(lambda q: q.active_controller in (other, node), timeout_ms=30_000)
    assert q.high_watermark > offset
    assert node in q.replica(q.leader_id).voters


def test_a_removed_leader_resigns_even_after_its_request_timed_out():
    """Found by bench_kip853_sweep.py: the RemoveRaftVoter answer timed out before the record
    committed; once it commits the leader must still step down (else it leads its old epoch
    forever beside the new leader, since no voter talks to it any more)."""
    q = _boot(3, 8)
    old = q.leader_id
    followers = [n for n in q.voters if n != old]
    q.network.isolate(followers[0])  # the new set {followers} cannot commit without it
    with pytest.raises(KafkaApiError, match="REQUEST_TIMED_OUT"):
        q.remove_voter(old, timeout_ms=300)
    assert q.replica(old).role == LEADER and not q.replica(old).is_voter
    q.network.heal()
    q.run_until(lambda q: q.replica(old).role != LEADER and q.active_controller in followers,
                timeout_ms=30_000)
    q.converge()
    assert set(q.voter_set()) == set(followers)
