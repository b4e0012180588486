"""Partition reassignment (KIP-455 as KIP-631 runs it): KIP-631's example [1,2,3] -> [3,4,5] on a
six-broker cluster, step by step in the committed image, with the brokers' own ISR model doing
the catching up; cancel, controller failover, topic deletion."""

from __future__ import annotations

import pytest
from cluster_scn_helpers import log_records, of_type

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import KafkaApiError

SEEDS = range(6)
ORIGINAL, TARGET = (1, 2, 3), (3, 4, 5)
ADDING, REMOVING = (4, 5), (1, 2)
MERGED = (3, 4, 5, 1, 2)   # target first, then the replicas being removed


def six_brokers(seed: int) -> Cluster:
    c = Cluster(3, 6, seed=seed)
    c.create_topic("r", assignments=[list(ORIGINAL), [0, 1, 2]])
    p = c.metadata.partition("r", 0)
    assert (p.replicas, p.isr, p.leader) == (ORIGINAL, ORIGINAL, 1)
    return c


def state(c: Cluster, partition: int = 0) -> tuple:
    p = c.metadata.partition("r", partition)
    return p.replicas, p.isr, p.adding_replicas, p.removing_replicas, p.leader


def block_new_replicas(c: Cluster) -> object:
    """The adding replicas cannot fetch from the leader (their metadata fetches still work)."""
    return c.network.drop(M.FetchRequest, src=set(ADDING), dst=set(ORIGINAL) | set(TARGET))


def assert_completed(c: Cluster) -> None:
    replicas, isr, adding, removing, leader = state(c)
    assert replicas == TARGET
    assert set(isr) == set(TARGET)
    assert (adding, removing) == ((), ())
    assert leader == 3  # the old leader was removed: the first target replica in the ISR leads
    assert c.list_reassignments() == {}


@pytest.mark.parametrize("seed", SEEDS)
def test_kip631_example_step_by_step(seed, tmp_path):
    c = six_brokers(seed)
    c.reassign("r", 0, list(TARGET))
    # 1. the committed image right after the answer
    assert state(c) == (MERGED, ORIGINAL, ADDING, REMOVING, 1)
    assert c.list_reassignments() == {("r", 0): {"replicas": list(MERGED), "adding": list(ADDING),
                                                 "removing": list(REMOVING)}}
    assert state(c, 1)[2:4] == ((), ())  # the other partition is not touched
    # 2. the adding replicas appear on their brokers and catch up: the leader grows the ISR
    c.run_until(lambda c: all(c.broker(b).logic.replica("r", 0) is not None for b in ADDING),
                10_000)
    history = [state(c)]

    def watch(c: Cluster) -> bool:
        s = state(c)
        if s != history[-1]:
            history.append(s)
        return s[2] == ()
    c.run_until(watch, 60_000)
    for replicas, isr, adding, removing, leader in history[:-1]:
        assert (replicas, adding, removing, leader) == (MERGED, ADDING, REMOVING, 1)
        assert set(ORIGINAL) <= set(isr) <= set(MERGED)  # nobody dropped, only added
    assert [len(s[1]) for s in history[:-1]] == sorted(len(s[1]) for s in history[:-1])
    # the ISR grew by an adding replica before the last one completed the move
    assert any(set(s[1]) & set(ADDING) for s in history[:-1])
    # 3. done: the removed replicas are gone, a target replica leads
    assert_completed(c)
    # the brokers follow the image: 1 and 2 drop their replica, 4 and 5 keep theirs
    c.run_until(lambda c: all(c.broker(b).logic.replica("r", 0) is None for b in REMOVING), 10_000)
    assert all(c.broker(b).logic.replica("r", 0) is not None for b in TARGET)
    # the log: the start record and the completing one, with the reassignment fields
    changes = [r for r in of_type(log_records(c, tmp_path / "log"), "PartitionChangeRecord")
               if r.msg.partition_id == 0]
    start = [r for r in changes if tuple(r.msg.adding_replicas or ()) == ADDING]
    assert len(start) == 1 and tuple(start[0].msg.replicas) == MERGED
    end = [r for r in changes if r.msg.replicas is not None and tuple(r.msg.replicas) == TARGET]
    assert len(end) == 1 and end[0].offset > start[0].offset
    assert end[0].msg.leader == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_cancel_midway_reverts(seed):
    c = six_brokers(seed)
    rule = block_new_replicas(c)
    c.reassign("r", 0, list(TARGET))
    c.run_for(5_000)
    assert state(c)[2:] == (ADDING, REMOVING, 1), "it cannot complete while 4 and 5 are cut off"
    assert ("r", 0) in c.list_reassignments()
    c.reassign("r", 0, None)
    replicas, isr, adding, removing, leader = state(c)
    # Kafka's PartitionReassignmentRevert drops the adding replicas from the current list, in
    # its order: [3,4,5,1,2] - {4,5} = [3,1,2] (the original order is not restored)
    assert (replicas, adding, removing) == ((3, 1, 2), (), ())
    assert set(isr) <= set(ORIGINAL) and leader == 1
    assert c.list_reassignments() == {}
    c.network.remove_filter(rule)
    c.run_until(lambda c: all(c.broker(b).logic.replica("r", 0) is None for b in ADDING), 10_000)
    c.run_for(5_000)
    assert state(c)[0] == (3, 1, 2) and set(state(c)[1]) == set(ORIGINAL)
    # a second cancel has nothing to cancel
    with pytest.raises(KafkaApiError, match="NO_REASSIGNMENT_IN_PROGRESS"):
        c.reassign("r", 0, None)


@pytest.mark.parametrize("seed", SEEDS)
def test_controller_failover_midway_still_completes(seed):
    c = six_brokers(seed)
    rule = block_new_replicas(c)
    c.reassign("r", 0, list(TARGET))
    c.run_for(2_000)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 20_000)
    # reassignments are hard state: the new active controller sees it
    assert state(c)[:4] == (MERGED, ORIGINAL, ADDING, REMOVING)
    assert c.list_reassignments() == {("r", 0): {"replicas": list(MERGED), "adding": list(ADDING),
                                                 "removing": list(REMOVING)}}
    c.network.remove_filter(rule)
    c.run_until(lambda c: state(c)[2] == (), 60_000)
    assert_completed(c)
    # the old controller comes back and agrees
    c.faults.start(old)
    def caught_up(c: Cluster) -> bool:
        m = c.controller_node(old)
        p = m.controller.committed.partition("r", 0) if m is not None else None
        return p is not None and p.replicas == TARGET
    c.run_until(caught_up, 20_000)


@pytest.mark.parametrize("seed", SEEDS)
def test_deleting_the_topic_ends_the_reassignment(seed):
    c = six_brokers(seed)
    block_new_replicas(c)
    c.reassign("r", 0, list(TARGET))
    assert ("r", 0) in c.list_reassignments()
    c.delete_topic("r")
    assert c.metadata.topic("r") is None
    assert c.list_reassignments() == {}
    c.network.clear_filters()
    c.run_until(lambda c: all(c.broker(b).logic.replica("r", 0) is None for b in c.broker_ids),
                10_000)
    # the name can be used again, for a new topic with a new id
    c.create_topic("r", 1, 3)
    assert c.list_reassignments() == {}


@pytest.mark.parametrize("seed", range(4))
def test_subset_target_completes_at_once(seed):
    """KIP-631: a target within the current replicas that keeps an ISR member completes in the
    same PartitionChangeRecord."""
    c = six_brokers(seed)
    c.reassign("r", 0, [2, 3])
    replicas, isr, adding, removing, leader = state(c)
    assert (replicas, adding, removing) == ((2, 3), (), ())
    assert set(isr) == {2, 3} and leader == 2
    assert c.list_reassignments() == {}
