"""A seeded mix of the faults above (isolations, failovers, controller partitions, controlled
shutdowns and restarts, reassignments, lossy links) with invariants checked after every event,
then liveness once everything heals: every broker runs unfenced, every partition has a leader,
no reassignment is left, and every node holds the same committed metadata."""

from __future__ import annotations

import random

import pytest
from cluster_scn_helpers import cluster_with_epoch_invariant, partitions

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.error_codes import KafkaApiError
from kraft_testkit.sim import LinkProfile, NoProgress


def chaos(c: Cluster, rng: random.Random, steps: int) -> list[str]:
    done = []
    for _ in range(steps):
        what = rng.choice(["isolate", "failover", "cut-active", "shutdown", "reassign", "lossy",
                           "restart-broker"])
        done.append(what)
        if what == "isolate":
            b = rng.choice(c.broker_ids)
            c.network.isolate(b)
            c.run_for(rng.randrange(1_000, 15_000))
            c.network.heal()
        elif what == "failover":
            old = c.active_controller
            if old is not None:
                c.faults.kill(old)
                c.run_for(rng.randrange(500, 5_000))
                c.faults.start(old)
        elif what == "cut-active":
            old = c.active_controller
            if old is not None:
                others = [h.id for h in c.controllers if h != old]
                c.network.partition([old.id], others)
                c.run_for(rng.randrange(1_000, 6_000))
                c.network.heal()
        elif what == "shutdown":
            b = rng.choice(c.broker_ids)
            if c.broker(b) is not None and c.broker(b).state_name == "RUNNING":
                try:
                    c.controlled_shutdown(b, timeout_ms=20_000)
                except NoProgress:
                    pass
            c.run_for(rng.randrange(0, 3_000))
            if not c.sim.process(b).up:
                c.faults.start(b)
        elif what == "restart-broker":
            b = rng.choice(c.broker_ids)
            if c.sim.process(b).up:
                c.faults.kill(b)
            c.run_for(rng.randrange(0, 3_000))
            c.faults.start(b)
        elif what == "reassign":
            topic = rng.choice(["t0", "t1"])
            pid = rng.randrange(len(c.metadata.topic(topic).partitions))
            target = rng.sample(c.broker_ids, 3)
            try:
                c.reassign(topic, pid, target)
            except (KafkaApiError, NoProgress):
                pass  # e.g. NOT_CONTROLLER answered while the active one resigned
        elif what == "lossy":
            c.network.set_profile(LinkProfile(drop=0.05, duplicate=0.02))
            c.run_for(rng.randrange(1_000, 8_000))
            c.network.set_profile(LinkProfile())
        c.run_for(rng.randrange(0, 2_000))
    return done


def converged(c: Cluster) -> bool:
    active = c.active_controller
    if active is None:
        return False
    img = c.metadata
    for b in c.broker_ids:
        s = c.broker_state(b)
        if s.state != "RUNNING" or s.fenced or s.self_fenced:
            return False
    for _, _, p in partitions(img):
        if p.leader == -1 or p.adding_replicas or p.removing_replicas:
            return False
        if set(p.isr) != set(p.replicas):
            return False
    for h in c.controllers:
        m = c.controller_node(h)
        if m is None or m.controller.committed.offset < img.offset:
            return False
    return all(c.broker(b).metadata_offset >= img.offset for b in c.broker_ids)


def gave_up(c: Cluster) -> list[int]:
    """Running broker processes whose broker logic stopped (e.g. it could not register within
    initial.broker.registration.timeout.ms): a real broker process would exit."""
    return [b for b in c.broker_ids if (m := c.broker(b)) is not None
            and m.state_name in ("SHUTTING_DOWN", "NOT_RUNNING")]


def run_sweep(seed: int, steps: int, converge_ms: int = 120_000, controllers: int = 3,
              brokers: int = 4, supervise: bool = True, **kwargs) -> None:
    """Chaos, then heal and wait for convergence. ``supervise``: restart a broker whose process
    gave up, as systemd or Kubernetes would (repeated failovers renew every unfenced broker's
    lease, so a dead incarnation can hold its id longer than a restarted one keeps trying)."""
    rng = random.Random(seed)
    c = cluster_with_epoch_invariant(controllers, brokers, seed=seed, **kwargs)
    c.create_topic("t0", 6, 3)
    c.create_topic("t1", 2, 3)
    done = chaos(c, rng, steps)
    # heal everything and wait for the cluster to settle
    c.network.heal()
    c.network.clear_filters()
    c.network.set_profile(LinkProfile())
    for h in c.nodes:
        if not c.sim.process(h.id).up:
            c.faults.start(h)
    deadline = c.now_ms + converge_ms
    restarted = []
    while True:
        if supervise:
            for b in gave_up(c):
                restarted.append((c.now_ms, b))
                c.faults.restart(b)
        try:
            c.run_until(converged, min(10_000, max(1, deadline - c.now_ms)))
            break
        except NoProgress as e:
            if c.now_ms >= deadline:
                raise AssertionError(f"seed {seed}: no convergence after {done} "
                                     f"(supervisor restarts: {restarted})") from e
    assert c.list_reassignments() == {}
    # the same committed metadata everywhere (same offset: compare the images)
    c.run_for(1_000)
    target = c.metadata
    want = target.to_dict(provenance=False)
    for h in c.controllers:
        m = c.controller_node(h).controller.committed
        if m.offset == target.offset:
            assert m.to_dict(provenance=False) == want
    for b in c.broker_ids:
        img = c.broker(b).image
        if img.offset == target.offset:
            assert img.to_dict(provenance=False) == want


@pytest.mark.parametrize("seed", range(6))
def test_fault_mix_then_convergence(seed):
    run_sweep(seed, steps=4)


@pytest.mark.sweep
@pytest.mark.parametrize("seed", range(6, 46))
def test_fault_mix_then_convergence_sweep(seed):
    run_sweep(seed, steps=6)



@pytest.mark.sweep
@pytest.mark.parametrize("seed", range(100, 110))
def test_fault_mix_with_the_seeds_timeouts_and_snapshots(seed):
    run_sweep(seed, steps=8, seed_defaults=True,
              configs={"metadata.log.max.record.bytes.between.snapshots": 3_000})


@pytest.mark.sweep
@pytest.mark.parametrize("seed", range(200, 210))
def test_fault_mix_with_five_controllers(seed):
    run_sweep(seed, steps=8, controllers=5, brokers=5)


@pytest.mark.sweep
@pytest.mark.parametrize("seed", range(300, 310))
def test_fault_mix_with_elr_below_min_isr(seed):
    """Kafka 4.2's ELR at work: min.insync.replicas 2, so ISRs shrink into the ELR and empty;
    the ELR, the unclean-shutdown rule and the last known leader must still bring every
    partition back once the faults heal."""
    run_sweep(seed, steps=8, configs={"min.insync.replicas": 2})
