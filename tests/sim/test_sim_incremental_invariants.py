"""Incremental invariants: after an event a checker that asks for it sees the nodes the event
touched (node code ran, or the process changed); a full check (a fault action, ``check_now``)
sees None, meaning every node. Checkers that do not ask run as before."""

from __future__ import annotations

from kraft_testkit.sim import Simulation
from kraft_testkit.sim.toy import gossip


class Spy:
    incremental = True

    def __init__(self) -> None:
        self.seen: list[frozenset[int] | None] = []

    def __call__(self, sim: Simulation) -> None:
        self.seen.append(sim.touched)


def world(seed: int = 3) -> tuple[Simulation, Spy, list]:
    sim = Simulation(seed)
    spy = Spy()
    plain: list = []
    sim.add_invariant(spy, "spy")
    sim.add_invariant(lambda s: plain.append(s.touched), "plain")
    for n in (1, 2, 3):
        sim.add_node(n, gossip([1, 2, 3], period_ms=10))
    return sim, spy, plain


def test_each_event_reports_the_node_it_ran_on():
    sim, spy, _ = world()
    spy.seen.clear()
    for _ in range(200):
        sim.step()
    assert len(spy.seen) == 200
    assert all(t is not None and len(t) <= 1 for t in spy.seen)
    assert {n for t in spy.seen for n in t} == {1, 2, 3}


def test_fault_actions_and_check_now_are_full_checks():
    sim, spy, _ = world()
    sim.run_for(50)
    spy.seen.clear()
    sim.kill(2)
    sim.check_now()
    assert spy.seen == [None, None]
    sim.start(2)
    sim.run_for(1)
    assert spy.seen[2] is None  # start is an action: a full check


def test_a_message_lost_on_the_way_touches_no_node():
    sim, spy, _ = world()
    sim.run_for(20)
    while not any(e[1] == "send" and 3 in e[2:4] for e in sim.trace.events()[-3:]):
        sim.step()  # until a ping to or from 3 is on its way
    sim.network.isolate(3)
    spy.seen.clear()
    sim.run_for(100)
    assert frozenset() in spy.seen  # pings to and from 3 dropped on arrival: nothing ran


def test_the_touched_set_is_reset_between_checks_even_with_invariants_off():
    sim, spy, _ = world()
    sim.check_invariants = False
    sim.run_for(100)  # nodes run unchecked: the first checked event sees them all (a superset)
    sim.check_invariants = True
    sim.step()
    assert spy.seen[-1] == {1, 2, 3}
    sim.check_now()
    spy.seen.clear()
    sim.step()
    assert spy.seen and len(spy.seen[0]) <= 1
