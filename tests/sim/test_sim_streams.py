"""Counter-keyed randomness and channels: the draws for a link's n-th message and a node's n-th
timer depend on (seed, stream, n) only, so one subsystem's traffic never moves another's
randomness; a channel is a link of its own (its own FIFO queue and stream)."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_helpers import Msg, Other, Script, recorder

from kraft_testkit.sim import Fixed, InvalidArgument, LinkProfile, Normal, Simulation, Uniform
from kraft_testkit.sim.streams import MessageRandom, draw, stream_key, tie_at


def test_a_draw_is_a_function_of_its_position():
    key = stream_key(7, ("network", "link-1-2"))
    values = [draw(key, n) for n in range(100)]
    assert [draw(key, n) for n in reversed(range(100))][::-1] == values
    assert len(set(values)) == 100  # no short cycle
    assert all(0 <= v < 2**64 for v in values)
    assert stream_key(7, ("a",)) != stream_key(8, ("a",)) != stream_key(7, ("b",))
    ties = [tie_at(key, t) for t in range(50)]  # a timer's tie key: by due instant
    assert ties == [draw(key, t) >> 32 for t in range(50)] and len(set(ties)) == 50


def test_message_random_draws_per_message():
    rng = MessageRandom(stream_key(3, ("x",)))
    latency = Normal(20, 10, low=0)

    def draws(n: int) -> tuple:
        rng.seek(n)
        return (rng.randint(1, 50), rng.random(), latency.sample(rng), rng.getrandbits(100))

    forwards = [draws(n) for n in range(50)]
    backwards = [draws(n) for n in reversed(range(50))][::-1]
    assert forwards == backwards  # the order messages are drawn in does not matter
    assert len({d[0] for d in forwards}) > 20
    assert all(0 <= d[1] < 1 and d[3] < 2**100 for d in forwards)
    rng.seek(0)
    rng.gauss(0, 1)  # leaves a spare normal value behind...
    assert draws(1) == forwards[1]  # ...that the next message does not see


def _two_channel_pair(seed: int, script: Script, link: LinkProfile) -> Simulation:
    sim = Simulation(
        seed, link=link, channel_of=lambda m: "side" if isinstance(m, Other) else None
    )
    sim.add_node(2, recorder())
    sim.add_node(1, recorder(script))
    return sim


def _arrivals(sim: Simulation, kind: type) -> list[tuple[int, int]]:
    return [(t, m.n) for t, _, m in sim.process(2).machine.received if type(m) is kind]


def test_a_channel_keeps_its_own_fifo_order():
    # a slow link: messages on the main channel pile up; the side channel does not wait for them
    sim = _two_channel_pair(
        1, Script(dst=2, count=400, every_ms=1, kinds=(Msg, Other)), LinkProfile(Uniform(1, 80))
    )
    sim.run_for(1_000)
    main, side = _arrivals(sim, Msg), _arrivals(sim, Other)
    assert [n for _, n in main] == sorted(n for _, n in main)  # FIFO within a channel
    assert [n for _, n in side] == sorted(n for _, n in side)
    merged = [n for _, n in sorted(main + side, key=lambda a: a[0])]
    assert merged != sorted(merged)  # ...but the channels overtake each other
    single = Simulation(1, link=LinkProfile(Uniform(1, 80)))  # one channel: one queue
    single.add_node(2, recorder())
    single.add_node(1, recorder(Script(dst=2, count=400, every_ms=1, kinds=(Msg, Other))))
    single.run_for(1_000)
    got = [m.n for _, _, m in single.process(2).machine.received]
    assert got == sorted(got)


def test_traffic_on_one_channel_does_not_move_another_channels_draws():
    link = LinkProfile(Uniform(1, 30), drop=0.1, fifo=False)  # delay = the latency drawn
    only_main = _two_channel_pair(5, Script(dst=2, count=200, every_ms=3), link)
    only_main.run_for(1_000)
    mixed = _two_channel_pair(5, Script(dst=2, count=400, every_ms=3, kinds=(Other, Msg)), link)
    mixed.run_for(2_000)
    # message n leaves at 3n ms; the k-th Msg is n = k alone and n = 2k mixed with Others, and
    # gets the k-th draw of the main channel in both runs: same fate, same delay
    alone = sorted((n, t - 3 * n) for t, n in _arrivals(only_main, Msg))
    mixed_ = sorted((n // 2, t - 3 * n) for t, n in _arrivals(mixed, Msg) if n <= 400)
    assert alone == mixed_ and 150 < len(alone) < 200  # some were lost, the same ones


def _timer_order(extra_node: bool) -> list[tuple[int, str, int | None]]:
    sim = Simulation(11, link=LinkProfile(Fixed(0)), trace_keep=None)
    sim.add_node(3, recorder())
    for n in (1, 2):  # two nodes whose timers fire at the same instants: the tie keys decide
        sim.add_node(n, recorder(Script(dst=3, count=100, every_ms=10)))
    if extra_node:  # a node with timers and traffic of its own, at other instants
        sim.add_node(8, recorder())
        sim.add_node(9, recorder(Script(dst=8, count=300, every_ms=3)))
    sim.run_for(1_000)
    return [(t, k, n) for t, k, n, *_ in sim.trace.events() if n in (1, 2, 3) and k != "start"]


def test_another_nodes_timers_do_not_change_same_instant_order():
    alone, crowded = _timer_order(False), _timer_order(True)
    assert alone == crowded
    firsts = [n for i, (t, k, n) in enumerate(alone) if k == "timer" and alone[i - 1][0] != t]
    assert set(firsts) == {1, 2}  # the seeded order really varies between the two


def test_channel_of_must_name_a_channel():
    sim = Simulation(1, channel_of=lambda m: 3)
    sim.add_node(2, recorder())
    sim.add_node(1, recorder(Script(dst=2, count=1)))
    with pytest.raises(InvalidArgument, match="channel_of must return a str or None"):
        sim.run_for(10)


def test_a_message_stream_copies_with_its_position():
    rng = MessageRandom(stream_key(1, ("y",)))
    rng.seek(9)
    rng.random()
    deep, pickled = copy.deepcopy(rng), pickle.loads(pickle.dumps(rng))
    expected = [rng.randint(1, 99) for _ in range(5)]
    assert [deep.randint(1, 99) for _ in range(5)] == expected
    assert [pickled.randint(1, 99) for _ in range(5)] == expected


@pytest.mark.parametrize("latency", [Uniform(1, 9), Fixed(3)])
def test_the_inline_draws_of_a_plain_link_are_message_randoms(latency, monkeypatch):
    """send() computes a plain FIFO link's two draws inline; forcing the general path (which
    seeks the link's MessageRandom) must give the same arrivals, ties and trace."""
    from kraft_testkit.sim import network

    def run() -> tuple[list, str]:
        sim = _two_channel_pair(5, Script(dst=2, count=60, every_ms=2, kinds=(Msg, Other)),
                                LinkProfile(latency=latency))
        sim.run_for(1_000)
        return _arrivals(sim, Msg) + _arrivals(sim, Other), sim.trace.digest()

    inline = run()
    real = network._Link.set_profile

    def general(self, profile):
        real(self, profile)
        assert self.plain is not None  # the case under test is a plain link
        self.plain = None

    monkeypatch.setattr(network._Link, "set_profile", general)
    assert run() == inline
    assert len(inline[0]) == 60


def test_a_link_that_draws_more_than_latency_and_tie_is_not_plain():
    sim = _two_channel_pair(5, Script(), LinkProfile(latency=Normal(8, 6, low=0)))
    assert sim.network._link(1, 2).plain is None  # noqa: SLF001


@settings(deadline=None)  # Hypothesis' 200 ms per example is wall time: a loaded machine
@given(st.lists(st.text() | st.integers() | st.booleans() | st.none() |
                st.floats(allow_nan=False), max_size=6))
def test_compact_json_is_the_json_encoders_text(items):
    """Stream keys hash ``compact_json`` of (seed, path): it must be the compact JSON text
    (``json.dumps(..., separators=(",", ":"))``) for anything, strs and ints written directly."""
    import json

    from kraft_testkit.sim.streams import compact_json

    assert compact_json(items) == json.dumps(items, separators=(",", ":"))
