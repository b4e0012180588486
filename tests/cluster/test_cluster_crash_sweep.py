"""The crash sweep (see crash_sweep.py): a few seeds in every run, 1,000 with ``-m slow`` (the
figure is in benchmarks/README.md, from benchmarks/bench_crash_sweep.py)."""

from __future__ import annotations

import pytest
from crash_sweep import ENDINGS, run_crash_seed

from kraft_testkit.cluster import Cluster


@pytest.mark.parametrize("seed", range(8))
def test_crash_sweep(seed, tmp_path):
    result = run_crash_seed(seed, str(tmp_path))
    assert result.ok, f"seed {seed} ({result.ending}): {result.detail}"
    assert result.topics >= 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8, 1_000))
def test_crash_sweep_long(seed, tmp_path):
    result = run_crash_seed(seed, str(tmp_path))
    assert result.ok, f"seed {seed} ({result.ending}): {result.detail}"


def test_every_ending_is_swept():
    assert {ENDINGS[s % len(ENDINGS)] for s in range(8)} == set(ENDINGS)


def test_a_crash_in_the_middle_of_a_write_drops_the_rest_of_the_step():
    c = Cluster(1, 1, seed=3)
    node = c.controllers[0]
    c.faults.crash_in_writes(node, 0)
    c.create_topic("a", partitions=1, replication_factor=1) if False else None
    c.run_for(2_000)  # the next write (a NoOp append) never happens
    assert not node.up
    assert any("crash after 0 of" in line for line in c.trace.tail(200))
    c.faults.start(node)
    c.run_until(lambda c: c.active_controller is not None, timeout_ms=10_000)
    c.create_topic("a", partitions=1, replication_factor=1)
