"""Seeded randomness, the scheduler and the trace."""

from __future__ import annotations

import pickle

import pytest

from kraft_testkit.sim import InvalidArgument, RngTree, Scheduler, Trace
from kraft_testkit.sim.trace import format_event


def test_rng_tree_paths_are_stable_and_independent():
    a = RngTree(7)
    first = a.child("network").child("link-1-2").random()
    # creating other streams first, or walking the path in one call, changes nothing
    b = RngTree(7)
    b.child("faults").random()
    b.child("network").random()
    assert b.child("network", "link-1-2").random() == first
    assert RngTree(8).child("network", "link-1-2").random() != first
    assert a.child("x").random() != a.child("y").random()
    assert a.child(3).random() == a.child("3").random()


def test_rng_tree_pickles_with_its_position():
    rng = RngTree(1).child("a")
    rng.random()
    clone = pickle.loads(pickle.dumps(rng))
    assert clone.path == ("a",) and clone.random() == rng.random()


@pytest.mark.parametrize("bad", ["7", 7.0, True, None])
def test_rng_tree_refuses_non_int_seeds(bad):
    with pytest.raises(InvalidArgument, match="seed must be an int"):
        RngTree(bad)


def test_rng_tree_refuses_odd_names():
    with pytest.raises(InvalidArgument):
        RngTree(1).child(("a",))  # type: ignore[arg-type]


def _order(seed: int, n: int = 20) -> list[int]:
    sched = Scheduler(RngTree(seed))
    out: list[int] = []
    for i in range(n):
        sched.call_at(5, out.append, i)
    while sched.step():
        pass
    return out


def test_scheduler_runs_by_time_then_seeded_tie_order():
    sched = Scheduler(RngTree(1))
    out: list[str] = []
    sched.call_at(30, out.append, "c")
    sched.call_at(10, out.append, "a")
    sched.call_later(20, out.append, "b")
    assert sched.next_at() == 10
    while sched.step():
        out.append(str(sched.now_ms))
    assert out == ["a", "10", "b", "20", "c", "30"]
    # same-instant events: a permutation fixed by the seed, different across seeds
    assert sorted(_order(1)) == list(range(20))
    assert _order(1) == _order(1)
    assert len({tuple(_order(seed)) for seed in range(5)}) > 1


def test_scheduler_shared_tie_keeps_insertion_order():
    sched = Scheduler(RngTree(3))
    out: list[int] = []
    tie = Scheduler.tie_of(sched.call_at(5, out.append, 0))
    for i in range(1, 50):
        sched.call_at(5, out.append, i, tie)
    while sched.step():
        pass
    assert out == list(range(50))


def test_scheduler_cancel_and_step_limits():
    sched = Scheduler(RngTree(1))
    out: list[int] = []
    handle = sched.call_at(5, out.append, 1)
    sched.call_at(7, out.append, 2)
    Scheduler.cancel(handle)
    Scheduler.cancel(handle)  # twice is fine
    assert sched.next_at() == 7
    assert not sched.step(until_ms=6)
    assert sched.now_ms == 0
    sched.advance_to(6)
    with pytest.raises(InvalidArgument, match="due at 7"):
        sched.advance_to(8)
    assert sched.step(until_ms=7) and out == [2] and sched.now_ms == 7
    assert not sched.step() and sched.next_at() is None


def test_scheduler_refuses_the_past():
    sched = Scheduler(RngTree(1), start_ms=10)
    with pytest.raises(InvalidArgument, match="clock is at 10"):
        sched.call_at(9, print)
    with pytest.raises(InvalidArgument, match="go back"):
        sched.advance_to(3)


def test_trace_digest_streams_and_keeps_a_bounded_tail():
    small, full = Trace(keep=5), Trace(keep=None)
    for t in range(5000):
        for trace in (small, full):
            trace.record(t, "recv", t % 3, 1, "Ping")
    assert len(small) == len(full) == 5000
    assert small.digest() == full.digest()
    assert len(small.events()) == 5 and len(full.events()) == 5000
    assert small.tail(2) == [format_event(e) for e in full.events()[-2:]]
    assert small.tail(1)[0].endswith("4999 ms    n1 recv <- n1 Ping")
    other = Trace()
    other.record(0, "recv", 0, 1, "Ping")
    assert other.digest() != Trace().digest()


def test_simulator_errors_share_the_kit_root():
    from kraft_testkit.errors import ConfigError, KraftError
    from kraft_testkit.sim import NoProgress, SimulationError

    assert issubclass(SimulationError, KraftError) and issubclass(NoProgress, KraftError)
    assert issubclass(InvalidArgument, ConfigError) and issubclass(InvalidArgument, ValueError)


def test_a_tree_seeded_at_its_first_draw_draws_as_if_seeded_at_once():
    """RngTree works its seed out lazily (most trees only grow children); every way of
    drawing gives what a generator seeded at construction gives, copies and pickles too."""
    import copy
    import random

    from kraft_testkit.sim.rng import _derive

    def pair(name):
        return RngTree(5).child(name, 3), random.Random(_derive(5, (name, "3")))

    t, r = pair("a")
    assert [t.random() for _ in range(3)] == [r.random() for _ in range(3)]
    for draw in (lambda g: g.getrandbits(64), lambda g: g.randint(0, 10**30),
                 lambda g: g.gauss(0, 1), lambda g: g.choice(range(1000)),
                 lambda g: g.randbytes(16), lambda g: g.getstate()):
        t, r = pair("b")
        assert draw(t) == draw(r)
    t = RngTree(5).child("c")
    assert copy.deepcopy(t).random() == pickle.loads(pickle.dumps(t)).random() == t.random()
    t.seed(42)
    assert t.random() == random.Random(42).random()  # an explicit reseed wins
