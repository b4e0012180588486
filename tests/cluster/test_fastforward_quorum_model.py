"""The controllers' idle quorum computed (kraft_testkit/fastforward/quorum_model.py) against
stepping: every event of every controller in the stretch (the leader's timers, each voter's
fetch reaching the leader, each answer reaching its voter) at the same instant, in the same
order, with the same tie key; the leader's state after each of its events (the timeline the
brokers' loops read); and where every voter's log end and high watermark end up."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.observer_loop import NotModelled
from kraft_testkit.fastforward.quorum_model import predict_quorum
from kraft_testkit.fastforward.timeline import LeaderTimeline
from kraft_testkit.sim.link import LinkProfile, Uniform


class _Events:
    """The order key of every event that ran node code on a controller, with what it was."""

    incremental = True

    def __init__(self, c: Cluster) -> None:
        self.c = c
        self.seen: list[tuple[int, int, int, str, int | None]] = []
        self.controllers = set(c.roles)

    def __call__(self, sim) -> None:
        at, tie, _ = sim.scheduler.current_key()
        event = sim.scheduler.current
        fn, arg = event[3], event[4]
        touched = sim.touched
        if touched is None:
            return
        for n in sorted(touched & self.controllers):
            self.seen.append((at, tie, n))


def _stepped(c: Cluster, until_ms: int) -> tuple[list, list]:
    """Run to ``until_ms``, recording (at, tie, node) of every controller event and the
    leader's timeline."""
    leader = c.active_controller.id
    timeline = LeaderTimeline(c, leader)
    events = _Events(c)
    c.sim.add_invariant(timeline, "leader timeline")
    c.sim.add_invariant(events, "controller events")
    c.run_for(until_ms - c.now_ms)
    return events.seen, timeline.steps


@pytest.mark.parametrize("seed, brokers", [(1, 0), (2, 0), (7, 0), (1, 4), (3, 10)])
def test_the_idle_quorum_is_predicted_event_by_event(seed: int, brokers: int) -> None:
    c = Cluster(3, brokers, seed=seed, fast_forward=False)  # stepped: compared with the model
    c.run_for(10_000)
    until = c.now_ms + 20_000
    pred = predict_quorum(c, until)
    assert pred.why_stopped == "run end" and pred.horizon_ms == until + 1
    assert len(pred.drains) >= 35  # a NoOp every 500 ms
    seen, steps = _stepped(c, until)
    computed = [(e.at_ms, e.tie, e.node) for e in pred.events]
    assert computed == seen
    # the recorder has nothing before its first step: it says that one woke
    assert pred.steps[1:] == steps[1:]
    assert pred.steps[0] == replace(steps[0], woke=pred.steps[0].woke)
    for v, loop in pred.loops.items():
        r = c.replica(v)
        assert (loop.end_offset, loop.high_watermark) == (r.log_end_offset, r.hw)
    leader = c.replica(pred.leader)
    assert (pred.end_offset, pred.high_watermark) == (leader.log_end_offset, leader.hw)


def test_slow_links_are_predicted_event_by_event() -> None:
    """Latencies of 1-40 ms: answers queue behind answers on a FIFO link (a message that
    would arrive before an earlier one takes its instant and tie), which the links' clocks
    (``observer_loop.LinkClock``) reproduce."""
    c = Cluster(3, 6, seed=3, link=LinkProfile(Uniform(1, 40)), fast_forward=False)
    c.run_for(10_000)
    until = c.now_ms + 20_000
    pred = predict_quorum(c, until)
    assert pred.why_stopped == "run end"
    seen, _ = _stepped(c, until)
    assert [(e.at_ms, e.tie, e.node) for e in pred.events] == seen
    for n, loop in pred.loops.items():
        link = c.sim.network._link(n, pred.leader, None)  # noqa: SLF001
        assert (loop.to_leader.sent, loop.to_leader._last_at) == (link.sent, link.last_at)


def test_a_wrong_tie_is_seen() -> None:
    """The comparison can fail: a model that drew the leader's timer ties from another key
    orders same-millisecond events differently somewhere, or at least records other ties."""
    c = Cluster(3, 0, seed=1, fast_forward=False)
    c.run_for(3_000)
    until = c.now_ms + 10_000
    proc = c.sim.process(c.active_controller.id)
    real = proc._timer_ties
    proc._timer_ties = real ^ 1
    try:
        pred = predict_quorum(c, until)
    finally:
        proc._timer_ties = real
    seen, _ = _stepped(c, until)
    assert [(e.at_ms, e.tie, e.node) for e in pred.events] != seen


def test_a_broker_that_is_not_running_yet_is_not_modelled() -> None:
    c = Cluster(3, 1, seed=1, boot=False, fast_forward=False)
    c.run_for(700)
    with pytest.raises(NotModelled):
        predict_quorum(c, c.now_ms + 1_000)
