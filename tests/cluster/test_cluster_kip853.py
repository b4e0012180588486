"""KIP-853 through the Cluster API: add_controller, add_voter, remove_voter, replace_disk,
describe_quorum; the five scenarios with brokers and topics, under the cluster and Raft
invariants, several seeds; a reopen that takes the voter set from the log."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError
from kraft_testkit.protocol.error_codes import KafkaApiError

SEEDS = [1, 2]


def _topics(c: Cluster, names: list[str]) -> None:
    """Every topic created so far is in the committed image of every running broker."""
    c.run_until(lambda c: all(set(names) <= set(c.broker(b.id).image.topics.names())
                              for b in c.brokers if c.broker(b.id) is not None), 30_000)


def _voters(c: Cluster) -> set[int]:
    return set(c.voter_set())


def _one_leader_per_epoch(c: Cluster) -> None:
    leaders = {}
    for h in c.controllers:
        r = c.replica(h)
        if r is not None and r.role == "leader":
            assert leaders.setdefault(r.epoch, h.id) == h.id


@pytest.mark.parametrize("seed", SEEDS)
def test_grow_one_controller_to_three_then_five(seed):
    c = Cluster(1, 2, seed=seed, kraft_version=1)
    names = []
    for size in (3, 5):
        while len(_voters(c)) < size:
            node = c.add_controller()
            names.append(f"t{node.id}")
            c.create_topic(names[-1], 2, 2)
            c.add_voter(node)
    assert _voters(c) == {1000, 1001, 1002, 1003, 1004}
    c.create_topic("last", 1, 2)
    _topics(c, names + ["last"])
    q = c.describe_quorum().topics[0].partitions[0]
    assert [v.replica_id for v in q.current_voters] == [1000, 1001, 1002, 1003, 1004]
    assert {v.replica_directory_id for v in q.current_voters} == \
        {c.replica(n).dir for n in c.controller_ids}
    assert {n.node_id for n in c.describe_quorum().nodes} == _voters(c)
    _one_leader_per_epoch(c)


@pytest.mark.parametrize("seed", SEEDS)
def test_shrink_five_controllers_to_three(seed):
    c = Cluster(5, 2, seed=seed, kraft_version=1)
    c.create_topic("before", 2, 2)
    for node in sorted(_voters(c) - {c.active_controller.id})[-2:]:
        c.remove_voter(node)
    assert len(_voters(c)) == 3
    c.create_topic("after", 2, 2)
    _topics(c, ["before", "after"])
    q = c.describe_quorum().topics[0].partitions[0]
    assert {o.replica_id for o in q.observers} >= set(c.controller_ids) - _voters(c)
    _one_leader_per_epoch(c)


@pytest.mark.parametrize("seed", SEEDS)
def test_replace_a_failed_disk_on_a_controller(seed):
    c = Cluster(3, 2, seed=seed, kraft_version=1)
    c.create_topic("before", 2, 2)
    victim = next(h for h in c.controllers if h != c.active_controller)
    old_dir = c.voter_set().keys[victim.id]
    c.faults.replace_disk(victim)
    c.run_for(2_000)
    assert c.replica(victim).dir != old_dir and not c.replica(victim).is_voter
    with pytest.raises(KafkaApiError, match="DUPLICATE_VOTER"):
        c.add_voter(victim)
    c.remove_voter(victim, old_dir)
    c.add_voter(victim)
    assert c.voter_set().keys[victim.id] == c.replica(victim).dir
    c.create_topic("after", 2, 2)
    _topics(c, ["before", "after"])
    _one_leader_per_epoch(c)


@pytest.mark.parametrize("seed", SEEDS)
def test_remove_the_active_controller(seed):
    c = Cluster(3, 2, seed=seed, kraft_version=1)
    c.create_topic("before", 2, 2)
    old = c.active_controller
    c.remove_voter(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 20_000)
    assert old.id not in _voters(c)
    c.run_until(lambda c: c.replica(old).metrics()["current-state"] == "observer", 10_000)
    c.create_topic("after", 2, 2)
    _topics(c, ["before", "after"])
    _one_leader_per_epoch(c)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_voter_change_racing_a_controller_failover(seed):
    c = Cluster(3, 2, seed=seed, kraft_version=1)
    c.create_topic("before", 2, 2)
    node = c.add_controller()
    c.run_for(2_000)
    old = c.active_controller
    # the admin request reaches the leader, which appends the VotersRecord; it dies at once
    from kraft_testkit.raft import membership
    body = membership.add_voter_request(c.cluster_id, node.id, c.replica(node).dir)
    c.sim.network.send(-1, old.id, __import__("kraft_testkit.raft.rpc", fromlist=["rpc"])
                       .request(999_999, body))
    c.run_until(lambda c: c.replica(old).history.latest is not None and
                node.id in c.replica(old).voters, 5_000)
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 30_000)
    c.faults.start(old)
    try:
        c.add_voter(node)  # kept by the new leader (DUPLICATE_VOTER) or truncated away
    except KafkaApiError as e:
        assert e.name == "DUPLICATE_VOTER"
    assert _voters(c) == {1000, 1001, 1002, node.id}
    c.create_topic("after", 2, 2)
    _topics(c, ["before", "after"])
    _one_leader_per_epoch(c)


def test_static_voters_refuse_changes():
    c = Cluster(1, 1, seed=4)
    with pytest.raises(ConfigError, match="controller.quorum.voters"):
        c.add_controller()  # Kafka refuses a controller outside the static voters at start
    with pytest.raises(KafkaApiError, match="UNSUPPORTED_VERSION"):
        c.add_voter(c.controllers[0])
    with pytest.raises(ConfigError, match="kraft_version"):
        Cluster(1, 1, kraft_version=2)


def test_reopen_takes_the_voters_from_the_log(tmp_path):
    c = Cluster(1, 1, seed=5, kraft_version=1, storage="tmpdir", data_dir=tmp_path)
    for _ in range(2):
        c.add_voter(c.add_controller())
    c.create_topic("kept", 1, 1)
    c.close()
    again = Cluster(1, 1, seed=9, kraft_version=1, storage="tmpdir", data_dir=tmp_path)
    assert again.controller_ids == [1000, 1001, 1002]
    assert _voters(again) == {1000, 1001, 1002}
    assert again.metadata.topics.by_name("kept") is not None


def test_same_seed_same_digest():
    def run() -> str:
        c = Cluster(1, 1, seed=12, kraft_version=1)
        c.add_voter(c.add_controller())
        c.remove_voter(c.active_controller)
        c.run_until(lambda c: c.active_controller is not None, 20_000)
        c.create_topic("t", 1, 1)
        return c.trace.digest()
    assert run() == run()


def test_describe_quorum_tool_reads_voters_from_the_log(tmp_path):
    from kraft_testkit.tools.cluster_tool import describe_quorum, read_directory

    c = Cluster(1, 1, seed=6, kraft_version=1, storage="tmpdir", data_dir=tmp_path)
    c.add_voter(c.add_controller())
    c.close()
    d = describe_quorum(read_directory(tmp_path))
    assert [r.node_id for r in d.voters] == [1000, 1001]
    assert 0 in [r.node_id for r in d.observers]


def test_describe_quorum_tool_shows_endpoints():
    from kraft_testkit.tools.cluster_tool import describe_quorum_text

    c = Cluster(1, 0, seed=7, kraft_version=1)
    c.add_voter(c.add_controller())
    text = describe_quorum_text(c)
    assert '"endpoints": ["CONTROLLER://controller-1001:9093"]' in text
    assert f'"directoryId": "{c.replica(1001).dir}"' in text


def test_auto_join_adds_controllers_not_brokers():
    c = Cluster(1, 2, seed=8, kraft_version=1,
                configs={"controller.quorum.auto.join.enable": True})
    node = c.add_controller()
    c.run_until(lambda c: c.voter_set() is not None and len(c.voter_set()) == 2, 30_000)
    c.run_for(10_000)
    assert set(c.voter_set()) == {1000, node.id}


def test_kraft_version_feature_must_match_the_quorum():
    c = Cluster(1, 0, seed=2, kraft_version=1, features={"kraft.version": 1})
    assert c.voter_set() is not None
    with pytest.raises(ConfigError, match="unless KIP-853 configuration is present"):
        Cluster(1, 0, features={"kraft.version": 1})
    with pytest.raises(ConfigError, match="if KIP-853 configuration is present"):
        Cluster(1, 0, kraft_version=1, features={"kraft.version": 0})


@pytest.mark.kraft(controllers=1, brokers=1, kraft_version=1, seed=3)
def test_the_pytest_marker_takes_kraft_version(kraft_cluster):
    kraft_cluster.add_voter(kraft_cluster.add_controller())
    assert len(kraft_cluster.voter_set()) == 2


def test_only_a_running_controller_can_become_a_voter():
    c = Cluster(1, 1, seed=9, kraft_version=1)
    with pytest.raises(ConfigError, match="not a running controller"):
        c.add_voter(c.brokers[0])
    node = c.add_controller()
    c.faults.kill(node)
    with pytest.raises(ConfigError, match="not a running controller"):
        c.add_voter(node)
    with pytest.raises(ConfigError, match="not in the voter set"):
        c.remove_voter(node)
