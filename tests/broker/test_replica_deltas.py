"""A broker applies a metadata change by the topics its delta touched (Kafka's
``ReplicaManager#applyDelta`` over a ``TopicsDelta``), not by walking every partition: the
same replicas, events and directories as the full walk, at a cost that follows the change."""

from __future__ import annotations

import gc

import pytest

from kraft_testkit.broker import replicas as replicas_module
from kraft_testkit.cluster import Cluster
from kraft_testkit.metadata import MetadataDelta, MetadataImage, changed_topics
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid


def _topic(delta: MetadataDelta, name: str, n: int) -> Uuid:
    tid = Uuid(bytes([n + 1] * 16))
    delta.replay(M.TopicRecord(name=name, topic_id=tid))
    delta.replay(M.PartitionRecord(partition_id=0, topic_id=tid, replicas=[0], isr=[0],
                                   leader=0, leader_epoch=0, partition_epoch=0))
    return tid


def test_changed_topics_follows_the_deltas_and_says_when_it_cannot():
    d = MetadataDelta(MetadataImage.EMPTY)
    a = _topic(d, "a", 1)
    one = d.apply()
    d = MetadataDelta(one)
    b = _topic(d, "b", 2)
    two = d.apply()
    d = MetadataDelta(two)
    d.replay(M.RemoveTopicRecord(topic_id=a))
    three = d.apply()
    assert changed_topics(two.topics, two.topics) == set()
    assert changed_topics(one.topics, two.topics) == {b}
    assert changed_topics(one.topics, three.topics) == {a, b}  # across two deltas
    assert changed_topics(three.topics, one.topics) is None    # not an ancestor
    loaded = MetadataImage.from_snapshot(three.write(29), (10, 1))
    assert changed_topics(three.topics, loaded.topics) is None  # a snapshot: walk everything
    # the chain holds its versions weakly: a version nobody holds breaks it (then: walk all)
    d = MetadataDelta(MetadataDelta(three).apply())
    _topic(d, "c", 3)
    four = d.apply()
    del two
    gc.collect()
    assert changed_topics(one.topics, four.topics) is None


def _scenario(seed: int) -> Cluster:
    c = Cluster(3, 4, seed=seed, fast_forward=False)
    c.create_topic("a", 4, 3)
    c.create_topic("b", 2, 2)
    c.run_for(2_000)
    c.delete_topic("a")
    c.create_topic("a", 3, 3)                  # the same name again, a new id
    c.create_partitions("b", 4)
    c.reassign("b", 0, [3, 2])
    c.run_for(3_000)
    c.faults.restart(c.brokers[1])             # a snapshot-less restart: a full walk
    c.create_topic("c", 5, 3)
    c.run_for(5_000)
    return c


def _broker_state(c: Cluster) -> dict:
    out = {}
    for b in c.broker_ids:
        logic = c.sim.process(b).machine.logic
        out[b] = ({k: (r.topic_name, r.leader, r.leader_epoch, r.isr, r.replicas,
                       r.partition_epoch) for k, r in logic.replicas.replicas.items()},
                  list(logic.replicas.replicas), [str(e) for e in logic.events],
                  sorted(c.sim.process(b).disk.view().items()))
    return out


@pytest.mark.parametrize("seed", [1, 5])
def test_applying_deltas_leaves_what_the_full_walk_leaves(seed, monkeypatch):
    by_delta = _broker_state(_scenario(seed))
    monkeypatch.setattr(replicas_module, "changed_topics", lambda since, now: None)
    by_walk = _broker_state(_scenario(seed))
    assert by_delta == by_walk
    assert any("deleted replica a-" in e for state in by_delta.values() for e in state[2])


def test_a_new_topic_is_applied_without_looking_at_the_others(monkeypatch):
    c = Cluster(3, 3, seed=2, fast_forward=False)
    for i in range(20):
        c.create_topic(f"t{i}", 5, 3)
    c.run_for(1_000)                           # every broker has applied them
    applied: list[set | None] = []
    applied_registrations: list[str] = []

    def recording(since, now):
        touched = changed_topics(since, now)
        applied.append(touched)
        return touched

    real = replicas_module.ReplicaManager._apply_registration

    def counting(self, rep, reg, now_ms):
        applied_registrations.append(rep.name)
        return real(self, rep, reg, now_ms)

    monkeypatch.setattr(replicas_module, "changed_topics", recording)
    monkeypatch.setattr(replicas_module.ReplicaManager, "_apply_registration", counting)
    c.create_topic("new", 5, 3)
    c.run_for(1_000)                           # every broker has applied it
    new_id = c.metadata.topics.by_name("new").id
    assert applied and len(applied) == 3 and all(touched == {new_id} for touched in applied)
    assert sorted(applied_registrations) == sorted([f"new-{p}" for p in range(5)] * 3)


@pytest.mark.parametrize("seed", [1, 5])
def test_leader_and_follower_counts_follow_every_change(seed):
    """``next_deadline`` reads how many replicas a broker leads and follows from counts kept
    at each leader change (no walk over the partitions after every event): after deletions,
    re-creation, new partitions, a reassignment and a restart they are what a walk counts."""
    c = _scenario(seed)
    c.faults.kill(c.brokers[2])
    c.run_for(12_000)                           # its session expires: leaders move
    for b in c.broker_ids:
        machine = c.sim.process(b).machine
        if machine is None:
            continue
        rm = machine.logic.replicas
        led = sum(r.leader == b for r in rm.replicas.values())
        followed = sum(r.leader not in (-1, b) for r in rm.replicas.values())
        assert (rm._led, rm._followed) == (led, followed), b  # noqa: SLF001
        assert sorted(rm._led_reps) == sorted(k for k, r in rm.replicas.items()  # noqa: SLF001
                                              if r.leader == b)
