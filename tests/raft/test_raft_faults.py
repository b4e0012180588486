"""Fault schedules: random ones from seeds, Hypothesis-built ones, and determinism across them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft_testkit.tools.simulate import FAULT_KINDS, Fault, iter_results, random_schedule, run_seed


def explain(result) -> str:
    return f"seed {result.seed}: {result.kind}: {result.detail}\n" + "\n".join(result.trace_tail)


@st.composite
def schedules(draw, voters: int, duration_ms: int) -> list[Fault]:
    times = draw(st.lists(st.integers(0, duration_ms - 1), min_size=1, max_size=25))
    return [Fault(t, draw(st.sampled_from(FAULT_KINDS)), draw(st.integers(1, voters)),
                  draw(st.integers(100, 15_000))) for t in sorted(times)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), voters=st.integers(3, 5), seed=st.integers(0, 2**31))
def test_hypothesis_fault_schedules_keep_the_quorum_safe_and_live(data, voters, seed):
    schedule = data.draw(schedules(voters, 60_000))
    result = run_seed(seed, voters=voters, minutes=1, schedule=schedule)
    assert result.ok, explain(result)


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize("seed", range(4))
def test_random_fault_schedules(seed, voters):
    result = run_seed(seed, voters=voters, minutes=2)
    assert result.ok, explain(result)
    assert result.faults > 10 and result.commits > 0


@pytest.mark.sweep
@pytest.mark.parametrize("seed", range(100, 130))
def test_random_fault_schedules_long(seed):
    result = run_seed(seed, voters=5, minutes=10)
    assert result.ok, explain(result)


def test_schedule_depends_only_on_the_seed():
    assert random_schedule(3, 5, 60_000) == random_schedule(3, 5, 60_000)
    assert random_schedule(3, 5, 60_000) != random_schedule(4, 5, 60_000)


def test_same_seed_same_digest_and_wire_mode_changes_nothing():
    a = run_seed(9, voters=5, minutes=1)
    b = run_seed(9, voters=5, minutes=1)
    c = run_seed(9, voters=5, minutes=1, wire=False)
    d = run_seed(10, voters=5, minutes=1)
    assert a.digest == b.digest == c.digest != d.digest
    assert a.events == b.events


def test_same_digest_in_another_process():
    here = run_seed(21, voters=3, minutes=1)
    code = ("from kraft_testkit.tools.simulate import run_seed; "
            "print(run_seed(21, voters=3, minutes=1).digest)")
    # this checkout's code first (a worktree or a clone beside an editable install of another),
    # the rest of the environment as it is; only the hash seed differs from this process's
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == here.digest


def test_results_do_not_depend_on_the_worker_count():
    one = {r.seed: r.digest for r in iter_results(range(3), 3, 0.5, "random", True, 1)}
    two = {r.seed: r.digest for r in iter_results(range(3), 3, 0.5, "random", True, 2)}
    assert one == two
