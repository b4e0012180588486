"""Controlled shutdown (KIP-631): leaders move away before the controller answers
ShouldShutDown, the broker leads nothing when it stops, and without ELR no ISR is ever emptied
(the last member stays, with leader -1). These scenarios run with ELR off
(eligible.leader.replicas.version 0, Kafka before 4.1); tests/cluster/test_cluster_elr.py has
the Kafka 4.2 default, where the ISR may empty and the ELR remembers who may lead.
Invariants (checked after every event) guard the ISR rules."""

from __future__ import annotations

import pytest
from cluster_scn_helpers import (
    Spy,
    cluster_with_epoch_invariant,
    fence_records,
    led_by,
    log_records,
    of_type,
    partitions,
)

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol import messages as M

SEEDS = range(8)
NO_ELR = {"eligible.leader.replicas.version": 0}


def shutdown_watch(c: Cluster, broker: int) -> list:
    """Snapshots of the committed image at the moment ShouldShutDown reaches ``broker``."""
    seen: list = []

    def on_response(src: int, dst: int, body: object) -> None:
        if dst == broker and isinstance(body, M.BrokerHeartbeatResponse) \
                and body.should_shut_down:
            seen.append((c.now_ms, c.metadata))
    Spy(c, on_response=on_response)
    return seen


@pytest.mark.parametrize("seed", SEEDS)
def test_leaders_move_away_before_should_shut_down(seed, tmp_path):
    c = Cluster(3, 3, seed=seed, features=NO_ELR)
    c.create_topic("t", 9, 3)
    b = seed % 3
    c.create_topic("solo", assignments=[[b]])                 # b is the only replica
    c.create_topic("pair", assignments=[[b, (b + 1) % 3]])    # b leads, another follows
    assert led_by(c.metadata, b)
    epoch = c.broker_state(b).epoch
    seen = shutdown_watch(c, b)
    c.controlled_shutdown(b)
    assert seen, "the broker stopped without ShouldShutDown"
    _, img = seen[0]
    # when the controller said ShouldShutDown, the committed image had b lead nothing
    assert led_by(img, b) == []
    for topic, pid, p in partitions(img):
        assert p.isr, f"{topic}-{pid}: empty ISR"
        if topic == "solo":
            assert (p.leader, p.isr) == (-1, (b,)), "the last ISR member stays, leaderless"
        else:
            assert b not in p.isr
            assert p.leader not in (-1, b)
    assert c.broker_state(b).process == "stopped"
    st = c.broker_state(b)
    assert st.registered and st.fenced and st.epoch == epoch
    final = c.metadata
    assert led_by(final, b) == []
    assert final.partition("pair", 0).leader == (b + 1) % 3
    # in the log: marked in controlled shutdown, then leaderships moved, then fenced
    records = log_records(c, tmp_path / "log")
    marks = [r for r in of_type(records, "BrokerRegistrationChangeRecord")
             if r.msg.broker_id == b and r.msg.in_controlled_shutdown == 1]
    assert len(marks) == 1
    fence = fence_records(records, b)[-1]
    moves = [r for r in of_type(records, "PartitionChangeRecord")
             if marks[0].offset < r.offset < fence.offset]
    assert moves, "the controller moved the broker's leaderships between mark and fence"
    # the other brokers keep running
    assert all(c.broker_state(o).state == "RUNNING" for o in c.broker_ids if o != b)


@pytest.mark.parametrize("seed", range(6))
def test_shutting_down_every_broker_leaves_the_last_isr_member_leaderless(seed):
    # a restart re-registers: the built-in invariant's cross-node epoch rule would misfire
    c = cluster_with_epoch_invariant(3, 3, seed=seed, features=NO_ELR)
    c.create_topic("t", 6, 3)
    order = [(seed + i) % 3 for i in range(3)]
    for i, b in enumerate(order):
        seen = shutdown_watch(c, b)
        c.controlled_shutdown(b)
        assert seen and led_by(seen[0][1], b) == []
        img = c.metadata
        for _, _, p in partitions(img):
            assert p.isr
        if i < 2:
            assert all(p.leader == order[-1] or p.leader in order[i + 1:]
                       for _, _, p in partitions(img))
    img = c.metadata
    last = order[-1]
    for _, _, p in partitions(img):
        assert (p.leader, p.isr) == (-1, (last,))
    assert c.controller_metrics().active_broker_count == 0
    # the last ISR member coming back leads again (it never left the ISR)
    c.faults.start(last)
    c.run_until(lambda c: all(p.leader == last for _, _, p in partitions(c.metadata)), 60_000)


@pytest.mark.parametrize("seed", range(6))
def test_controlled_shutdown_while_another_broker_is_down(seed):
    c = Cluster(3, 4, seed=seed, features=NO_ELR)
    c.create_topic("t", 8, 3)
    down, b = seed % 4, (seed + 1) % 4
    c.faults.kill(down)
    c.run_until(lambda c: c.broker_state(down).fenced, 20_000)
    seen = shutdown_watch(c, b)
    c.controlled_shutdown(b)
    assert seen and led_by(seen[0][1], b) == []
    img = c.metadata
    for _, _, p in partitions(img):
        assert p.isr
        assert p.leader not in (b, down)
        if p.leader == -1:
            # both other replicas were gone: the last ISR member is kept
            assert len(p.isr) == 1 and p.isr[0] in (b, down)
    running = [o for o in c.broker_ids if o not in (b, down)]
    assert all(c.broker_state(o).state == "RUNNING" for o in running)


@pytest.mark.parametrize("seed", range(4))
def test_graceful_stop_is_a_controlled_shutdown(seed):
    c = cluster_with_epoch_invariant(3, 3, seed=seed, features=NO_ELR)
    c.create_topic("t", 3, 3)
    b = (seed + 1) % 3
    seen = shutdown_watch(c, b)
    c.faults.stop(b)
    assert seen and c.broker_state(b).process == "stopped"
    assert led_by(c.metadata, b) == []
    assert c.broker_state(b).in_controlled_shutdown
    # it comes back: a new incarnation registers (once the old lease ran out) and runs
    c.faults.start(b)
    c.run_until(lambda c: c.broker_state(b).state == "RUNNING" and not c.broker_state(b).fenced,
                40_000)
    assert not c.broker_state(b).in_controlled_shutdown
