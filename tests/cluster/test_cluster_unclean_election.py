"""Periodic unclean leader election (Kafka 4.x's MAYBE_ELECT_UNCLEAN_LEADERS).

While a partition is leaderless the active controller looks again every
``unclean.leader.election.interval.ms`` (5 minutes) and, where the topic's
``unclean.leader.election.enable`` is true, elects any live replica (leader recovery state
RECOVERING). Turning the setting on for an offline topic is therefore enough: no
ElectLeaders call is needed. Topics without the setting stay offline.
"""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster

NO_ELR = {"eligible.leader.replicas.version": 0}


def offline_topic(seed: int, **kw) -> tuple[Cluster, int, int]:
    """Topic "t" on brokers 0 and 1; the ISR shrinks to 0, then 0 dies: leaderless, and 1
    (out of sync) is alive."""
    c = Cluster(3, 3, seed=seed, configs={"unclean.leader.election.interval.ms": 10_000}, **kw)
    c.create_topic("t", assignments=[[0, 1]])
    c.faults.kill(1)
    c.run_until(lambda c: c.metadata.partition("t", 0).isr == (0,), 40_000)
    c.faults.kill(0)
    c.run_until(lambda c: c.broker_state(0).fenced, 20_000)
    c.faults.start(1)
    c.run_until(lambda c: not c.broker_state(1).fenced, 30_000)
    assert c.metadata.partition("t", 0).leader == -1
    return c, 0, 1


@pytest.mark.parametrize("seed", range(2))
def test_turning_unclean_election_on_elects_a_leader_within_the_interval(seed):
    c, _, alive = offline_topic(seed, features=NO_ELR)
    c.run_for(15_000)
    assert c.metadata.partition("t", 0).leader == -1      # not allowed yet: stays offline
    c.alter_configs(topic="t", set={"unclean.leader.election.enable": "true"})
    start = c.now_ms
    c.run_until(lambda c: c.metadata.partition("t", 0).leader == alive, 30_000)
    p = c.metadata.partition("t", 0)
    assert p.isr == (alive,) and c.now_ms - start <= 10_000 + 2_000


def test_with_elr_on_an_unclean_election_still_elects_when_the_elr_is_down():
    c, dead, alive = offline_topic(5)      # ELR on (Kafka 4.2's default), min ISR 1
    assert c.metadata.partition("t", 0).elr == (dead,)
    c.alter_configs(topic="t", set={"unclean.leader.election.enable": "true"})
    c.run_until(lambda c: c.metadata.partition("t", 0).leader == alive, 30_000)
    assert c.metadata.partition("t", 0).isr == (alive,)
