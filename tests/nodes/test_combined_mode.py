"""process.roles=broker,controller: one node is both, sharing one Raft replica."""

import pytest

from kraft_testkit.cluster import Cluster


@pytest.mark.parametrize("seed", range(4))
def test_combined_nodes_boot_fail_over_and_fence(seed):
    c = Cluster(3, 4, seed=seed, combined=True)
    assert [h.id for h in c.controllers] == [0, 1, 2]
    assert [h.roles for h in c.nodes] == [("broker", "controller")] * 3 + [("broker",)]
    c.create_topic("t", 4, 3)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    # the dead node was a broker too: its lease runs out and it leads nothing
    c.run_until(lambda c: c.broker_state(old).fenced, 20_000)
    assert old.id not in {p.leader for p in c.metadata.topic("t").partitions.values()}
    c.faults.start(old)
    c.run_until(lambda c: not c.broker_state(old).fenced and
                c.broker_state(old).state == "RUNNING", 30_000)


def test_mixed_roles_need_valid_counts():
    from kraft_testkit.errors import ConfigError

    with pytest.raises(ConfigError, match="controllers must be an int >= 1"):
        Cluster(0, 3)
    with pytest.raises(ConfigError, match="storage must be one of memory, tmpdir"):
        Cluster(1, 1, storage="s3")
    with pytest.raises(ConfigError, match="unknown configuration key 'broker.sesion.timeout.ms'"):
        Cluster(1, 1, configs={"broker.sesion.timeout.ms": 1})
