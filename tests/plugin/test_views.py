"""``controller_quorum`` and ``broker_fleet`` are what their names say: a quorum view and a
fleet view over the test's one cluster; ``records()`` and ``wait_brokers_caught_up()``."""

import pytest

from kraft_testkit import ConfigError
from kraft_testkit.handles import BrokerStatus
from kraft_testkit.views import BrokerFleet, QuorumView


def test_quorum_view_names_voters_leader_epoch_and_high_watermark(controller_quorum):
    q = controller_quorum
    assert isinstance(q, QuorumView)
    q.run_until(lambda c: q.high_watermark > 0, 10_000)  # the new leader's first commit
    assert [h.id for h in q.voters] == [1000, 1001, 1002] and q.observers == []
    assert q.leader is not None and q.leader == q.active and q.leader in q
    assert q.epoch >= 1 and q.epoch == q.cluster.replica(q.leader).epoch
    assert q.high_watermark == q.cluster.replica(q.leader).hw > 0
    described = q.describe_quorum().topics[0].partitions[0]
    assert described.leader_id == q.leader.id and described.leader_epoch == q.epoch
    assert described.high_watermark == q.high_watermark


def test_kill_leader_then_a_new_one_in_a_later_epoch(controller_quorum):
    q = controller_quorum
    epoch = q.epoch
    old = q.kill_leader()
    assert not old.up
    new = q.wait_for_leader(other_than=old, timeout_ms=10_000)
    assert new != old and q.epoch > epoch and q.leader == new


def test_isolate_leader_returns_the_cut_that_heals_it(controller_quorum):
    q = controller_quorum
    old, cut = q.isolate_leader()
    new = q.wait_for_leader(other_than=old, timeout_ms=20_000)
    q.cluster.network.heal(cut)
    q.run_until(lambda c: c.replica(old).leader_id == new.id, 10_000)
    assert q.leader == new


@pytest.mark.kraft(kraft_version=1, brokers=0)
def test_add_and_remove_voters_through_the_view(controller_quorum):
    q = controller_quorum
    new = q.add_controller()
    assert new in q.observers
    q.run_until(lambda c: c.replica(new) is not None and c.replica(new).hw >= 1, 20_000)
    q.add_voter(new)
    assert new in q.voters and len(q) == 4
    q.remove_voter(new)
    assert new not in q.voters and new in q.observers


def test_broker_fleet_is_a_sequence_with_states_and_leaders(kraft_cluster, broker_fleet):
    f = broker_fleet
    assert isinstance(f, BrokerFleet) and f == kraft_cluster.brokers
    assert f[0] == kraft_cluster.brokers[0] and len(f) == 3 and list(f) == f[:]
    states = f.states()
    assert set(states) == {0, 1, 2} and all(isinstance(s, BrokerStatus) for s in states.values())
    assert f.fenced == [] and f.unfenced == list(f) and f.running == list(f)
    kraft_cluster.create_topic("orders", partitions=6, replication_factor=3)
    leaders = f.leaders()
    assert set(leaders) == {0, 1, 2} and sum(leaders.values()) == 6
    assert len(f.led_by(f[1])) == leaders[1]


def test_fleet_isolate_fences_then_wait_unfenced_after_the_heal(kraft_cluster, broker_fleet):
    f = broker_fleet
    cut = f.isolate(f[2])
    kraft_cluster.run_until(lambda c: f.state(f[2]).fenced, timeout_ms=30_000)
    assert f.fenced == [f[2]]
    kraft_cluster.network.heal(cut)
    f.wait_unfenced(timeout_ms=60_000)
    assert f.fenced == []


def test_fleet_kill_and_roll(kraft_cluster, broker_fleet):
    f = broker_fleet
    kraft_cluster.create_topic("orders", partitions=3, replication_factor=3)
    f.kill(f[0])
    assert f.state(f[0]).process == "killed"
    f.start(f[0])
    f.wait_unfenced()
    epochs = {b.id: f.state(b).epoch for b in f}
    f.roll()
    assert all(f.state(b).epoch > epochs[b.id] for b in f)  # each re-registered
    assert f.fenced == [] and sum(f.leaders().values()) == 3


def test_fleet_refuses_a_controller(kraft_cluster, broker_fleet):
    with pytest.raises(ConfigError, match="not a broker"):
        broker_fleet.kill(kraft_cluster.controllers[0])


def test_old_attribute_access_still_works_with_a_warning(controller_quorum):
    with pytest.warns(DeprecationWarning, match="controller_quorum.cluster.trace"):
        assert controller_quorum.trace is controller_quorum.cluster.trace


def test_records_since_an_offset_are_the_committed_records(kraft_cluster):
    c = kraft_cluster
    mark = c.metadata.offset + 1
    c.create_topic("orders", partitions=2, replication_factor=3)
    records = c.records(since=mark)
    assert [r.type for r in records] == ["TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_RECORD"]
    assert records[0].value.name == "orders" and records[0].version == 0
    assert [r.offset for r in records] == list(range(mark, mark + 3))
    assert all(r.epoch == c.quorum.epoch and not r.control for r in records)
    assert records[0].timestamp >= 1_767_225_600_000
    assert records[-1].offset <= c.quorum.high_watermark - 1
    every = c.records(control=True)
    assert every[0].offset == 0 and every[0].type == "LEADER_CHANGE" and every[0].control
    assert c.records(since=c.quorum.high_watermark) == []
    assert records[0].to_json()["data"]["name"] == "orders"
    with pytest.raises(ConfigError, match="since"):
        c.records(since=-1)


def test_wait_brokers_caught_up_after_create_topic(kraft_cluster):
    c = kraft_cluster
    c.create_topic("fresh", partitions=1, replication_factor=1)
    offset = c.wait_brokers_caught_up()
    assert offset == c.metadata.offset
    assert all(c.broker_state(b).metadata_offset >= offset for b in c.brokers)
    for b in c.brokers:
        assert c.broker_metadata(b, ["fresh"]).topics[0].error_code == 0
