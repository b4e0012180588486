"""The simulation as a whole: determinism, run_until, invariants."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sim_helpers import Script, recorder

from kraft_testkit.sim import (
    InvalidArgument,
    InvariantViolation,
    LinkProfile,
    Nondeterminism,
    NoProgress,
    Normal,
    Simulation,
    Uniform,
    check_determinism,
)
from kraft_testkit.sim.toy import ToyCodec, gossip

REPO = Path(__file__).resolve().parents[2]


def chaos(sim: Simulation) -> None:
    """A busy scenario: five gossiping nodes under loss, duplication, reordering and faults."""
    ids = [1, 2, 3, 4, 5]
    sim.network.set_profile(
        LinkProfile(latency=Normal(5, 3), drop=0.05, duplicate=0.05, reorder=0.05)
    )
    for i in ids:
        sim.add_node(i, gossip(ids), skew_ms=i * 7)
    sim.run_for(200)
    sim.network.partition({1, 2}, {3, 4, 5})
    sim.kill(3)
    sim.pause(4)
    sim.run_for(200)
    sim.network.heal()
    sim.start(3)
    sim.resume(4)
    sim.network.hold(lambda m: m.value % 3 == 0)
    sim.run_for(200)
    sim.network.release()
    sim.run_for(100)


def digest_of(seed: int, **options) -> str:
    sim = Simulation(seed, **options)
    chaos(sim)
    return sim.trace.digest()


def test_same_seed_same_digest_different_seed_different_digest():
    assert digest_of(11) == digest_of(11)
    assert digest_of(11) != digest_of(12)
    assert digest_of(11, codec=ToyCodec()) == digest_of(11)  # wire mode changes no decision


def test_same_digest_in_another_process_with_another_hash_seed():
    code = "from test_sim_world import digest_of\nprint(digest_of(11))\n"
    env = {
        **os.environ,
        "PYTHONHASHSEED": "12345",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(Path(__file__).parent)]),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == digest_of(11)


def test_check_determinism_returns_the_digest():
    assert check_determinism(chaos, 11) == digest_of(11, trace_keep=None)


def test_check_determinism_names_the_first_differing_event():
    calls = itertools.count()

    def leaky(sim: Simulation) -> None:
        sim.add_node(1, recorder(Script(dst=1, count=5)))
        sim.run_for(3)
        if next(calls) == 1:  # state leaking from outside the seed
            sim.network.set_profile(LinkProfile(drop=1.0))
        sim.run_for(10)

    with pytest.raises(Nondeterminism) as info:
        check_determinism(leaky, 4)
    assert info.value.seed == 4 and "n1 timer" in info.value.first and "3 ms" in info.value.second
    assert "profile" in info.value.second
    assert "runs differ at event #" in str(info.value)


def test_run_until_returns_elapsed_time():
    ids = [1, 2, 3]
    sim = Simulation(1)
    for i in ids:
        sim.add_node(i, gossip(ids))
    took = sim.run_until(
        lambda s: all(s.process(i).machine.value >= 5 for i in ids), timeout_ms=1000
    )
    assert 0 < took == sim.now_ms < 1000
    assert sim.run_until(lambda s: True, timeout_ms=0) == 0


def test_no_progress_carries_seed_and_trace_tail():
    ids = [1, 2]
    sim = Simulation(77)
    for i in ids:
        sim.add_node(i, gossip(ids))

    def everyone_at_a_million(s):
        return False

    with pytest.raises(NoProgress) as info:
        sim.run_until(everyone_at_a_million, timeout_ms=500)
    error = info.value
    assert error.seed == 77 and error.now_ms == 500 == sim.now_ms
    assert "everyone_at_a_million still false after 500 ms" in str(error)
    assert "Simulation(seed=77)" in str(error) and len(error.trace_tail) == 30
    assert error.trace_tail[-1] in str(error)


def test_no_progress_when_nothing_is_left_to_happen():
    sim = Simulation(5)
    sim.add_node(1, recorder())
    with pytest.raises(NoProgress, match="nothing is left to happen") as info:
        sim.run_until(lambda s: False, timeout_ms=10_000)
    assert info.value.seed == 5


def test_invariants_run_after_every_event_and_carry_the_seed():
    ids = [1, 2, 3]
    sim = Simulation(21)
    for i in ids:
        sim.add_node(i, gossip(ids))
    checked = []

    def counter_below_10(s):
        checked.append(s.now_ms)
        assert all(s.process(i).machine.value < 10 for i in ids if s.process(i).up), (
            "a counter reached 10"
        )

    sim.add_invariant(counter_below_10)
    sim.run_for(50)
    assert len(checked) > 30
    with pytest.raises(InvariantViolation) as info:
        sim.run_for(1000)
    error = info.value
    assert error.invariant == "counter_below_10" and error.seed == 21
    assert "a counter reached 10" in str(error) and "Simulation(seed=21)" in str(error)
    sim.check_invariants = False
    sim.run_for(10)  # off: no checks


def test_invariant_returning_false_and_actions_are_checked():
    sim = Simulation(1)
    sim.add_node(1, recorder())
    sim.add_invariant(lambda s: s.process(1).up, name="node 1 up")
    with pytest.raises(InvariantViolation, match="'node 1 up' violated: returned False"):
        sim.kill(1)


def test_bad_arguments():
    with pytest.raises(InvalidArgument, match="seed"):
        Simulation("1")  # type: ignore[arg-type]
    sim = Simulation(1)
    with pytest.raises(InvalidArgument, match="run_for"):
        sim.run_for(-1)
    with pytest.raises(InvalidArgument, match="timeout_ms"):
        sim.run_until(lambda s: True, timeout_ms=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="node ids"):
        sim.add_node("a", recorder())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="torn_tail_probability"):
        Simulation(1, torn_tail_probability=2)
    with pytest.raises(InvalidArgument, match="trace_keep"):
        Simulation(1, trace_keep=0)
    with pytest.raises(InvalidArgument, match="LinkProfile"):
        Simulation(1, link=Uniform(1, 2))  # type: ignore[arg-type]


def test_step_and_notes():
    sim = Simulation(1)
    sim.add_node(1, recorder(Script(wake_at=5)))
    sim.note("hello")
    assert sim.step() and sim.now_ms == 5
    assert not sim.step()
    assert "note hello" in sim.trace.tail(3)[1]
