"""KIP-853 requests a replica sends about itself: auto-join (Kafka 4.2's
``controller.quorum.auto.join.enable``, off by default) and UpdateRaftVoter."""

from __future__ import annotations

import pytest

from kraft_testkit.errors import ConfigError
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft.config import RaftConfig

AUTO_JOIN = {"controller.quorum.auto.join.enable": "true"}


def _boot(voters: int, seed: int, config=None) -> Quorum:
    q = Quorum(voters=voters, kraft_version=1, seed=seed, config=config)
    q.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
    return q


def test_auto_join_is_off_by_default():
    assert RaftConfig().auto_join is False
    q = _boot(1, 1)
    node = q.add_controller()
    q.run_for(10_000)
    assert set(q.voter_set()) == {1} and not q.replica(node).is_voter
    with pytest.raises(ConfigError, match="auto.join"):
        RaftConfig.from_kafka({"controller.quorum.auto.join.enable": "maybe"})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_auto_join_grows_the_quorum(seed):
    q = _boot(1, seed, AUTO_JOIN)
    added = [q.add_controller() for _ in range(2)]
    q.run_until(lambda q: q.voter_set() is not None and set(q.voter_set()) == {1, *added},
                timeout_ms=30_000)
    q.append([b"after"])
    q.converge()


def test_auto_join_after_a_disk_replacement_removes_the_old_entry_first():
    q = _boot(3, 4, AUTO_JOIN)
    victim = next(n for n in q.voters if n != q.leader_id)
    old_dir = q.voter_set().keys[victim]
    q.faults.replace_disk(victim)
    q.run_until(lambda q: q.voter_set() is not None and
                q.voter_set().keys.get(victim) == q.replica(victim).dir, timeout_ms=30_000)
    assert q.voter_set().keys[victim] != old_dir
    q.append([b"after"])
    q.converge()


@pytest.mark.parametrize("follower", [True, False])
def test_a_voter_with_new_endpoints_updates_its_entry(follower):
    q = _boot(3, 5)
    node = next(n for n in q.voters if (n != q.leader_id) == follower)
    assert q.voter_set().voters[node].endpoints == (("CONTROLLER", f"controller-{node}", 9093),)
    q.endpoints[node] = (("CONTROLLER", "new-host", 19093),)
    q.faults.restart(node)
    if not follower:  # a restarted leader: another leads, or it leads again and writes it
        q.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
    q.run_until(lambda q: q.voter_set() is not None and
                q.voter_set().voters[node].endpoints == (("CONTROLLER", "new-host", 19093),),
                timeout_ms=30_000)
    nodes = {n.node_id: n for n in q.describe_quorum().nodes}
    assert nodes[node].listeners[0].host == "new-host"
    q.append([b"after"])
    q.converge()
