"""Where a test stops the clock must not change the run: the same seed advanced in one
``run_for`` or in many small steps and ``run_until`` calls ends with the same trace digest,
every node's files byte for byte and every node's metadata image (encoded), faults and admin
requests included before, between and after the idle stretches.

A fast-forward stops at the user's advance targets; this is the property it leans on, and
``cluster_state`` is the comparison its differential test makes; stepped here (the trace
digest is compared), and warped without the digest (see benchmarks/README.md,
"What the bulk step still has to do")."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.frames import encode_record
from kraft_testkit.sim import NoProgress


def cluster_state(c: Cluster) -> dict:
    """Everything a later event could observe, as bytes: each node's files and committed
    image, the cluster's image, the trace digest."""
    state: dict = {"digest": c.sim.trace.digest(), "now": c.sim.now_ms}
    for n in sorted(c.roles):
        process = c.sim.process(n)
        state[f"files {n}"] = sorted(process.disk.view().items())
        machine = process.machine
        if machine is not None and machine.image is not None:
            state[f"image {n}"] = [encode_record(r) for r in machine.image.write()]
    state["metadata"] = [encode_record(r) for r in c.metadata.write()]
    return state


def _advance(c: Cluster, ms: int, chop: random.Random | None) -> None:
    """``ms`` of virtual time in one call, or in pieces: ``run_for`` of random lengths, and
    ``run_until`` calls that stop after a random number of events (possibly between two
    events of the same instant)."""
    if chop is None:
        c.run_for(ms)
        return
    end = c.sim.now_ms + ms
    while c.sim.now_ms < end:
        if chop.random() < 0.3:
            stop = c.sim.scheduler.executed + chop.randint(1, 60)
            try:
                c.run_until(lambda c: c.sim.scheduler.executed >= stop,
                            timeout_ms=end - c.sim.now_ms)
            except NoProgress:  # the stretch ended first: the clock is at its end
                pass
        else:
            c.run_for(min(end - c.sim.now_ms, chop.randint(1, 1_500)))
    assert c.sim.now_ms == end


def _scenario(seed: int, chop: random.Random | None, fast_forward: bool = False) -> dict:
    c = Cluster(3, 3, seed=seed, fast_forward=fast_forward)
    c.create_topic("before", 3, 3)
    _advance(c, 20_000, chop)                  # idle
    old = c.active_controller
    c.faults.kill(old)                         # a fault right after an idle stretch
    _advance(c, 8_000, chop)
    c.faults.start(old)
    c.network.isolate(c.brokers[0])            # its lease runs out in the stretch
    _advance(c, 15_000, chop)
    c.network.heal()
    c.faults.pause(c.controllers[1])
    _advance(c, 3_000, chop)
    c.faults.resume(c.controllers[1])
    _advance(c, 10_000, chop)
    c.create_topic("after", 2, 2)              # an admin request after an idle stretch
    c.faults.restart(c.brokers[2])
    _advance(c, 30_000, chop)
    return cluster_state(c)


@pytest.mark.parametrize("seed", [3, 8])
def test_stopping_the_clock_anywhere_changes_nothing(seed):
    whole = _scenario(seed, None)
    chopped = _scenario(seed, random.Random(seed))
    assert whole.keys() == chopped.keys()
    for key in whole:
        assert whole[key] == chopped[key], key
    assert len(whole) >= 2 * 6  # files and an image for every node


@pytest.mark.parametrize("seed", [3])
def test_a_warped_run_stopped_anywhere_leaves_every_node_the_same(seed):
    """The default (fast-forward on): a warp stops at each advance target, so where the clock
    stops changes no node; the trace differs (each stretch records one line) and is left out."""
    whole = _scenario(seed, None, fast_forward=True)
    chopped = _scenario(seed, random.Random(seed), fast_forward=True)
    stepped = _scenario(seed, None)
    for state in (whole, chopped, stepped):
        del state["digest"]
    assert whole == chopped == stepped
