"""Kafka's Raft simulation scenarios (RaftEventSimulationTest) as regression tests, many seeds each.

Every run has the safety invariants on (checked after each event) and wire mode on. The first
seeds run always; the long sweeps are marked slow.
"""

from __future__ import annotations

import random

import pytest

from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc

FAST = 6
SLOW = 60


def seeds(fast: int = FAST, slow: int = SLOW) -> list:
    return [pytest.param(s, id=f"seed{s}") for s in range(fast)] + [
        pytest.param(s, id=f"seed{s}", marks=pytest.mark.sweep) for s in range(fast, fast + slow)]


def elected(q: Quorum) -> bool:
    return q.active_controller is not None


def write(q: Quorum, n: int) -> int:
    """Append ``n`` records one by one (each waits for its commit); returns the next offset."""
    offset = 0
    for i in range(n):
        offset = q.append([b"r%d" % i])
    return offset + 1


def all_reached(q: Quorum, offset: int, nodes=None):
    def check(q: Quorum) -> bool:
        return all((r := q.replica(n)) is not None and r.hw >= offset
                   for n in (nodes if nodes is not None else q.nodes))
    check.__name__ = f"all replicas reached {offset}"
    return check


@pytest.mark.parametrize("seed", seeds())
def test_can_elect_initial_leader(seed):
    rng = random.Random(seed)
    q = Quorum(rng.randint(1, 5), seed=seed, observers=rng.randint(0, 2))
    q.run_until(elected, 10_000)
    end = write(q, 10)
    q.run_until(all_reached(q, end), 10_000)
    assert len({r.listener.state() for r in q.replicas()}) == 1


@pytest.mark.parametrize("graceful", [True, False], ids=["graceful", "hard"])
@pytest.mark.parametrize("seed", seeds())
def test_can_elect_new_leader_after_old_leader_failure(seed, graceful):
    rng = random.Random(seed)
    q = Quorum(rng.randint(3, 5), seed=seed, observers=rng.randint(0, 2))
    q.run_until(elected, 10_000)
    write(q, 10)
    old = q.active_controller
    if graceful:
        q.faults.stop(old)
    else:
        q.faults.kill(old)
    took = q.run_until(lambda q: q.active_controller not in (None, old), 15_000)
    if graceful:  # EndQuorumEpoch lets the first successor stand at once
        assert took < 1_000
    end = write(q, 10)
    q.faults.start(old)
    q.run_until(all_reached(q, end), 15_000)
    q.converge()


@pytest.mark.parametrize("seed", seeds())
def test_can_recover_after_all_nodes_killed(seed):
    rng = random.Random(seed)
    q = Quorum(rng.randint(1, 5), seed=seed, observers=rng.randint(0, 2))
    q.run_until(elected, 10_000)
    end = write(q, 10)
    for n in q.nodes:
        q.faults.kill(n)
    majority = q.voters[: len(q.voters) // 2 + 1]
    for n in majority:
        q.faults.start(n)
    q.run_until(elected, 20_000)
    end = write(q, 10)
    q.run_until(all_reached(q, end, majority), 15_000)
    q.converge()


@pytest.mark.parametrize("seed", seeds())
def test_can_elect_new_leader_after_old_leader_partitioned_away(seed):
    rng = random.Random(seed)
    q = Quorum(rng.randint(3, 5), seed=seed, observers=rng.randint(0, 2))
    q.run_until(elected, 10_000)
    write(q, 10)
    old = q.active_controller
    q.network.isolate(old)
    q.run_until(lambda q: q.active_controller not in (None, old), 15_000)
    end = write(q, 10)
    others = [n for n in q.nodes if n != old]
    q.run_until(all_reached(q, end, others), 10_000)
    # the isolated leader notices it lost the quorum (check-quorum) and steps down
    q.run_until(lambda q: q.replica(old).role != "leader", 10_000)
    q.converge()


@pytest.mark.parametrize("seed", seeds())
def test_can_make_progress_if_majority_is_reachable(seed):
    q = Quorum(5, seed=seed, observers=random.Random(seed).randint(0, 2))
    q.run_until(elected, 10_000)
    write(q, 10)
    q.network.partition({1, 2}, {3, 4, 5})
    q.run_until(lambda q: q.active_controller in (3, 4, 5), 15_000)
    end = write(q, 10)
    minority = max(q.replica(n).hw for n in (1, 2))
    majority = min(q.replica(n).hw for n in (3, 4, 5))
    assert majority > minority
    q.run_until(all_reached(q, end, [3, 4, 5]), 10_000)
    q.network.heal()
    end = write(q, 10)
    q.run_until(all_reached(q, end), 15_000)


@pytest.mark.parametrize("seed", seeds())
def test_can_make_progress_after_back_to_back_leader_failures(seed):
    rng = random.Random(seed)
    q = Quorum(rng.randint(3, 5), seed=seed, observers=rng.randint(0, 2))
    q.run_until(elected, 10_000)
    write(q, 10)
    first = q.active_controller
    cut = q.network.isolate(first)
    q.run_until(lambda q: q.active_controller not in (None, first), 15_000)
    second = q.active_controller
    q.network.heal(cut)
    q.network.isolate(second)
    q.run_until(lambda q: q.active_controller not in (None, second)
                and q.replica(q.active_controller).epoch > q.replica(second).epoch, 20_000)
    write(q, 10)
    q.converge()


@pytest.mark.parametrize("seed", seeds())
def test_can_recover_from_single_node_disk_loss(seed):
    """KIP-853 care: the node whose disk is wiped forgot its votes, so it must not vote again.

    Our model: a wiped voter comes back formatted with a new directory id. The voters know it by
    its old (id, directory id), so it is an observer now: it catches up on the log, never votes,
    never stands, and fetches that do not count for the high watermark. The quorum keeps
    working with the voters left (a majority of the original voter count is still needed).
    """
    rng = random.Random(seed)
    q = Quorum(rng.randint(3, 5), seed=seed, observers=rng.randint(0, 1))
    q.run_until(elected, 10_000)
    write(q, 10)
    victim = rng.choice(q.voters)
    old_dir = q.replica(victim).dir
    q.faults.wipe_disk(victim, start=False)
    q.run_until(lambda q: q.active_controller not in (None, victim), 15_000)
    before = q.high_watermark
    q.faults.start(victim)
    back = q.replica(victim)
    assert back.wiped and back.dir != old_dir and back.is_observer
    end = write(q, 10)
    q.run_until(all_reached(q, max(end, before)), 15_000)
    assert back.role in ("follower", "unattached") and back.voted_id is None
    # it refuses to vote, whatever the epoch
    refusal = back.on_message(q.active_controller, rpc.request(1, rpc.vote_request(
        q.cluster_id, 999, q.active_controller, q.directory_ids[q.active_controller], victim,
        q.directory_ids[victim], 1, 0)), q.now_ms)
    answer = next(m.body for _, m in refusal.sends if isinstance(m, rpc.Response))
    assert rpc.vote_partition(answer).error_code == E.INCONSISTENT_VOTER_SET
    desc = q.describe_quorum().topics[0].partitions[0]
    assert (victim, Uuid(back.dir)) in [(o.replica_id, o.replica_directory_id)
                                        for o in desc.observers]
    q.converge()
