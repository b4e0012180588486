"""Eligible leader replicas (KIP-966) through the public API, as Kafka 4.2 runs them by default.

A new cluster at metadata.version 4.2-IV1 finalizes eligible.leader.replicas.version 1 and a
cluster-level min.insync.replicas (Kafka's ELR safety record). Below min ISR, replicas that
leave the ISR are remembered in the ELR, the ISR may empty, and an ELR member that comes back
leads again without an unclean election; one that restarts after a crash (no clean-shutdown
proof) is dropped from the ELR. ``metadata_version=`` selects the older releases: at 4.0-IV0
(before the ELR records) or with the feature off, the pre-KIP-966 rule holds (the last ISR
member stays in the ISR).
"""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.error_codes import KafkaApiError

ELR = "eligible.leader.replicas.version"


def part(c: Cluster):
    return c.metadata.partition("t", 0)


def others(c: Cluster, leader: int) -> list[int]:
    return [b for b in c.broker_ids if b != leader]


def fenced(c: Cluster, b: int) -> bool:
    return c.broker_state(b).fenced


@pytest.mark.parametrize("seed", range(3))
def test_default_cluster_runs_elr_and_elects_from_it(seed):
    c = Cluster(3, 3, seed=seed, configs={"min.insync.replicas": 2})
    assert c.metadata.features.finalized[ELR] == 1
    assert c.metadata.configs.broker("")["min.insync.replicas"] == "2"  # the safety record
    c.create_topic("t", 1, 3)
    leader = part(c).leader
    a, b = others(c, leader)
    c.faults.kill(a)
    c.run_until(lambda c: fenced(c, a), 20_000)
    assert set(part(c).isr) == {leader, b} and part(c).elr == ()   # at min ISR: no ELR
    c.faults.kill(leader)
    c.run_until(lambda c: fenced(c, leader), 20_000)
    p = part(c)
    assert (p.leader, p.isr, p.elr) == (b, (b,), (leader,))        # below min ISR
    c.faults.kill(b)
    c.run_until(lambda c: fenced(c, b), 20_000)
    p = part(c)
    assert (p.leader, p.isr, sorted(p.elr), p.last_known_elr) == (-1, (), sorted([leader, b]),
                                                                   (b,))
    # b comes back after a crash: it cannot prove a clean shutdown, so it leaves the ELR
    c.faults.start(b)
    c.run_until(lambda c: not fenced(c, b), 30_000)
    p = part(c)
    assert p.leader == -1 and b not in p.elr and p.elr == (leader,)


@pytest.mark.parametrize("seed", range(2))
def test_a_cleanly_stopped_elr_member_leads_again(seed):
    c = Cluster(3, 3, seed=seed, configs={"min.insync.replicas": 3})
    c.create_topic("t", 1, 3)
    first = part(c).leader
    rest = others(c, first)
    for b in rest:                              # controlled shutdowns: clean
        c.controlled_shutdown(b)
    p = part(c)
    assert p.isr == (first,) and sorted(p.elr) == sorted(rest)
    c.controlled_shutdown(first)
    p = part(c)
    assert (p.leader, p.isr) == (-1, ()) and sorted(p.elr) == sorted(c.broker_ids)
    c.faults.start(rest[0])                     # a clean restart keeps its ELR place
    c.run_until(lambda c: part(c).leader == rest[0], 30_000)
    p = part(c)
    assert p.isr == (rest[0],) and rest[0] not in p.elr and p.leader_recovery_state == 0


def test_min_insync_replicas_changes_clear_the_elr():
    """Kafka's createClearElrRecordsAsNeeded: a topic-level change clears that topic's ELR."""
    c = Cluster(3, 3, seed=4, configs={"min.insync.replicas": 3})
    c.create_topic("t", 1, 3)
    victim = others(c, part(c).leader)[0]
    c.faults.kill(victim)
    c.run_until(lambda c: part(c).elr == (victim,), 20_000)
    epoch = part(c).partition_epoch
    c.alter_configs(topic="t", set={"min.insync.replicas": "2"})
    p = part(c)
    assert p.elr == () and p.last_known_elr == () and p.partition_epoch == epoch + 1
    # broker-level min.insync.replicas cannot change while ELR is on; the cluster one stays
    with pytest.raises(KafkaApiError, match="INVALID_CONFIG.*Broker-level"):
        c.alter_configs(broker=0, set={"min.insync.replicas": "2"})
    with pytest.raises(KafkaApiError, match="INVALID_CONFIG.*Cluster-level"):
        c.alter_configs(broker="", delete=["min.insync.replicas"])


@pytest.mark.parametrize("kwargs", [{"metadata_version": "4.0-IV0"},
                                    {"features": {ELR: 0}}])
def test_without_elr_the_last_isr_member_stays(kwargs):
    """Kafka before 4.1 (and 4.x with the feature off): no ELR, the ISR is never emptied."""
    c = Cluster(3, 3, seed=1, configs={"min.insync.replicas": 2}, **kwargs)
    assert c.metadata.features.finalized.get(ELR, 0) == 0
    c.create_topic("t", 1, 3)
    leader = part(c).leader
    for b in others(c, leader) + [leader]:
        c.faults.kill(b)
        c.run_until(lambda c, b=b: fenced(c, b), 20_000)
    p = part(c)
    assert p.leader == -1 and p.isr == (leader,) and p.elr == ()


def test_enabling_elr_writes_the_safety_records_first():
    c = Cluster(1, 3, seed=2, features={ELR: 0})
    c.alter_configs(broker=1, set={"min.insync.replicas": "2"})
    c.update_feature(ELR, 1)
    assert c.metadata.features.finalized[ELR] == 1
    assert c.metadata.configs.broker("")["min.insync.replicas"] == "1"
    assert "min.insync.replicas" not in c.metadata.configs.broker(1)


def test_elr_records_need_metadata_version_4_0_iv1():
    c = Cluster(1, 3, seed=3, metadata_version="4.0-IV0")
    with pytest.raises(KafkaApiError, match="depends on metadata.version level 23"):
        c.update_feature(ELR, 1)
    c.update_feature("metadata.version", 23)
    c.update_feature(ELR, 1)
    assert c.metadata.features.finalized[ELR] == 1
