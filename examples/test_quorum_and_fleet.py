"""Example tests over the quorum and fleet views: run them with `pytest examples/`.

``controller_quorum`` and ``broker_fleet`` are views of the test's one cluster (the same one
``kraft_cluster`` is): the quorum's leader, epoch and high watermark; the fleet's states,
leaders per broker and a rolling restart. ``kraft_cluster.records(since=...)`` reads what the
controllers committed, record by record.
"""

import pytest


def test_a_controller_failover_as_the_metadata_log_records_it(controller_quorum, kraft_cluster):
    mark = controller_quorum.high_watermark
    epoch = controller_quorum.epoch
    old = controller_quorum.kill_leader()
    new = controller_quorum.wait_for_leader(other_than=old, timeout_ms=10_000)
    kraft_cluster.create_topic("orders", partitions=3, replication_factor=3)
    records = kraft_cluster.records(since=mark, control=True)
    change = next(r for r in records if r.type == "LEADER_CHANGE")
    assert change.value.leader_id == new.id and change.epoch > epoch
    assert [r.type for r in records if r.type.startswith(("TOPIC", "PARTITION"))] == \
        ["TOPIC_RECORD"] + ["PARTITION_RECORD"] * 3


@pytest.mark.kraft(brokers=4, seed=3)
def test_a_rolling_restart_keeps_every_partition_led(kraft_cluster, broker_fleet):
    kraft_cluster.create_topic("payments", partitions=8, replication_factor=3)
    broker_fleet.roll()                          # controlled shutdown, start, caught up; next
    assert broker_fleet.fenced == []
    assert sum(broker_fleet.leaders().values()) == 8
    kraft_cluster.wait_brokers_caught_up()
    for b in broker_fleet:                       # every broker serves the topic's metadata
        assert kraft_cluster.broker_metadata(b, ["payments"]).topics[0].error_code == 0


def test_a_healed_broker_is_unfenced_however_long_the_cut(kraft_cluster, broker_fleet,
                                                          kraft_clock):
    victim = broker_fleet[1]
    cut = broker_fleet.isolate(victim)
    kraft_clock.advance(60_000)                  # a long cut: fenced, far behind
    assert broker_fleet.fenced == [victim]
    kraft_cluster.network.heal(cut)
    took = broker_fleet.wait_unfenced(timeout_ms=120_000)   # wait on state, not on 10 s
    assert took > 0 and broker_fleet.fenced == []
