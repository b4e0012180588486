"""The brokers' fetch loops computed out of the model's heap (fastforward/fast_brokers.py).

A compact prediction with the fast loops must be the one the heap alone computes: the same
events, held answers, leader records, parked fetches in the leader's order, wake-ups,
messages in flight, link counters and counters (``model_digest.compact_fingerprint``), or
the same refusal. Each test walks a cluster through time and compares both predictions at
many instants and for stretches of many lengths; the warp's own differential tests
(test_fastforward_warp.py and the others) compare the materialized result with stepping."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward import fast_brokers
from kraft_testkit.fastforward.model_digest import compact_fingerprint
from kraft_testkit.fastforward.observer_loop import NotModelled
from kraft_testkit.fastforward.quorum_model import predict_quorum
from kraft_testkit.sim import LinkProfile
from kraft_testkit.sim.link import Fixed, Uniform
from test_fastforward_differential import _state


def _predict(c: Cluster, until: int, fast: bool) -> tuple:
    try:
        p = predict_quorum(c, until, steps=False, compact=True, fast=fast)
    except NotModelled as e:
        return ("not modelled", str(e)), 0, ""
    _predict.beats += p.fast_beats
    return (compact_fingerprint(p), p.horizon_ms, p.why_stopped), p.fast_loops, p.why_stopped


_predict.beats = 0  # fast loops with their heartbeats in them, over every call (fast_beats)


def _walk(c: Cluster, seed: int, points: int = 25, step_ms: int = 1500) -> dict:
    """Both predictions at ``points`` instants (stretches of 40 ms to 25 virtual s), the
    cluster run on between them; returns how often the fast loops were used and why the
    stretches stopped."""
    rnd = random.Random(seed)
    used, stops = 0, set()
    for _ in range(points):
        until = c.now_ms + rnd.choice([40, 400, 2_500, 25_000])
        heap, _, _ = _predict(c, until, fast=False)
        fast, loops, why = _predict(c, until, fast=True)
        assert fast == heap, (c.now_ms, until)
        used += loops > 0
        stops.add(why.split(" on ")[0])
        c.run_for(rnd.randint(1, step_ms))
    return {"used": used, "stops": stops}


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_an_idle_cluster_is_predicted_the_same_with_the_fast_loops(seed):
    c = Cluster(3, 10, seed=seed, fast_forward=True)
    c.run_for(8_000)
    seen = _walk(c, seed)
    assert seen["used"] == 25  # every broker is plain: the fast loops run in every stretch
    assert "run end" in seen["stops"]


def test_other_latencies_and_a_fixed_link():
    for link, seed in ((LinkProfile(latency=Uniform(1, 40)), 3),
                       (LinkProfile(latency=Fixed(3)), 4)):
        c = Cluster(3, 5, seed=seed, link=link)
        c.run_for(8_000)
        assert _walk(c, seed, points=12)["used"] == 12


@pytest.mark.parametrize("seed", [1, 3])
def test_slow_links_put_fetches_on_the_leaders_busy_instants(seed, monkeypatch):
    """Latencies up to 200 ms spread the fetches so that some reach the leader at an instant
    where it has work due (a drain, the NoOp task, a max wait): those run as its full event,
    in order, and a lean fetch may park with a max wait before the model's next event."""
    full = []
    run_full = fast_brokers.FastBrokers._fast_full

    def counted(self, fb):
        full.append(fb.phase)
        return run_full(self, fb)

    monkeypatch.setattr(fast_brokers.FastBrokers, "_fast_full", counted)
    c = Cluster(3, 6, seed=seed, link=LinkProfile(latency=Uniform(1, 200)))
    c.run_for(8_000)
    rnd = random.Random(seed)
    loops = 0
    for _ in range(30):
        heap, _, _ = _predict(c, c.now_ms + 30_000, fast=False)
        fast, n, _ = _predict(c, c.now_ms + 30_000, fast=True)
        assert fast == heap, c.now_ms
        loops += n
        c.run_for(rnd.randint(1_000, 20_000))
    assert loops > 150  # of 180: a loop whose answer could come late stays in the heap
    assert full.count(fast_brokers.FETCH) >= 5


def test_links_too_slow_for_the_bound_keep_the_heap():
    """An answer could come after the broker's fetch timeout: no fast loop, same result."""
    c = Cluster(3, 3, seed=6, link=LinkProfile(latency=Uniform(1, 800)))
    c.run_for(10_000)
    assert _walk(c, 6, points=8)["used"] == 0


def test_a_dead_broker_stops_the_stretch_at_its_lease_end_alike():
    c = Cluster(3, 6, seed=8)  # a seed whose 12 points all use the fast loops
    c.run_for(8_000)
    c.faults.kill(c.brokers[2])
    c.run_for(300)
    seen = _walk(c, 8, points=12, step_ms=900)
    assert seen["used"] == 12
    assert "a broker's lease" in seen["stops"]


def test_a_failover_and_replicated_partitions_mix_fast_loops_and_heap_loops():
    """Brokers that host replicas fetch from each other and keep their loops in the heap;
    the others are fast; a dead voter is asked again and again."""
    c = Cluster(3, 6, seed=8)
    c.create_topic("t", 2, 2)
    c.run_for(6_000)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    c.run_for(2_000)
    seen = _walk(c, 8, points=15)
    assert seen["used"] > 0


def test_a_planted_bug_is_caught(monkeypatch):
    """The lean path run past the leader's next wake-up (a drain it would not see)."""
    lean = fast_brokers.FastBrokers._fast_lean

    def past_the_wake_up(self, fb):
        self.fast_lean += 2_000 << 32
        lean(self, fb)

    c = Cluster(3, 10, seed=1)
    c.run_for(8_000)
    heap, _, _ = _predict(c, c.now_ms + 20_000, fast=False)
    monkeypatch.setattr(fast_brokers.FastBrokers, "_fast_lean", past_the_wake_up)
    fast, _, _ = _predict(c, c.now_ms + 20_000, fast=True)
    assert fast != heap


@pytest.mark.parametrize("high", [30, 200])
def test_a_warped_run_on_slower_links_equals_stepping(high):
    link = LinkProfile(latency=Uniform(2, high))
    runs = []
    for fast_forward in (False, True):
        c = Cluster(3, 6, seed=9, link=link, fast_forward=fast_forward)
        c.run_for(90_000)
        runs.append(_state(c))
    assert runs[0] == runs[1]
    assert c.fast_forward_stats["virtual ms warped"] > 60_000


_LATENCIES = (Uniform(1, 5), Uniform(1, 40), Uniform(1, 200), Fixed(3), Uniform(2, 700))


def random_walk(seed: int, points: int = 20, replicated: bool = False) -> tuple[int, int, int]:
    """A random cluster (3 + 3..10 brokers, one of ``_LATENCIES``, a topic or not; with
    ``replicated`` always a topic of replication factor 2 or 3, whose brokers fetch from
    each other) through random faults (a broker or a controller killed, whatever is down
    started again) and idle stretches, both predictions compared at every step (an
    AssertionError names the instant); returns (predictions with fast loops, fast loops in
    them, of which with their heartbeats)."""
    rnd = random.Random(seed)
    c = Cluster(3, rnd.randint(3, 10), seed=seed,
                link=LinkProfile(latency=rnd.choice(_LATENCIES)))
    if replicated:
        c.create_topic("t", rnd.randint(2, 6), rnd.randint(2, 3))
    elif rnd.random() < 0.4:
        c.create_topic("t", rnd.randint(1, 4), rnd.randint(1, 3))
    c.run_for(rnd.randint(6_000, 12_000))
    used = loops = 0
    beats = _predict.beats
    for _ in range(points):
        until = c.now_ms + rnd.choice([40, 400, 2_500, 25_000, 60_000])
        heap, _, _ = _predict(c, until, fast=False)
        fast, n, _ = _predict(c, until, fast=True)
        assert fast == heap, f"seed {seed} at {c.now_ms} ms, until {until}"
        used += n > 0
        loops += n
        roll = rnd.random()
        down = [n for n in c.roles if not c.sim.process(n).up]
        brokers = [b for b in c.broker_ids if b not in down]
        if roll < 0.08 and len(down) < 2 and brokers:
            c.faults.kill(rnd.choice(brokers))
        elif roll < 0.12 and not down and c.active_controller is not None:
            c.faults.kill(rnd.choice([c.active_controller, *c.controllers]))
        elif roll < 0.2 and down:
            c.faults.start(rnd.choice(down))
        c.run_for(rnd.randint(1, 6_000))
    return used, loops, _predict.beats - beats


@pytest.mark.parametrize("seed", [0, 4, 11, 12])  # 12: a heartbeat's every event full too
def test_random_walks_with_faults(seed):
    used, _, beats = random_walk(seed)
    assert used > 0 and beats > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_brokers_that_replicate_partitions_are_fast_too(seed):
    """Their replica fetches and ISR checks wake their logic: an answer at or past that
    instant runs as the full event, the replica messages stay heap events."""
    used, _, _ = random_walk(seed, replicated=True)
    assert used > 0


def test_held_heartbeats_are_applied_and_leave_stepping_state(monkeypatch):
    """A broker that hosts nothing has its heartbeats held in a compact stretch (no event,
    no message built: ``held_events.py``, through ``Lifecycle.sent_steady_heartbeat`` and
    ``steady_answer``): they are applied there, and the warped state is the stepped one."""
    from kraft_testkit.broker.lifecycle import Lifecycle
    held = []
    sent, answered = Lifecycle.sent_steady_heartbeat, Lifecycle.steady_answer

    def counted_sent(self, now_ms, offset):
        held.append("sent")
        sent(self, now_ms, offset)

    def counted_answer(self, now_ms):
        held.append("answer")
        answered(self, now_ms)

    monkeypatch.setattr(Lifecycle, "sent_steady_heartbeat", counted_sent)
    monkeypatch.setattr(Lifecycle, "steady_answer", counted_answer)
    runs = []
    for fast_forward in (False, True):
        c = Cluster(3, 6, seed=12, fast_forward=fast_forward)
        c.run_for(60_000)
        runs.append(_state(c))
    assert runs[0] == runs[1]
    # 6 brokers x a heartbeat every 2 s for about 50 warped s, each sent and answered
    assert held.count("sent") > 120 and held.count("answer") > 120


def test_a_planted_bug_in_the_fast_heartbeats_is_caught(monkeypatch):
    """A lean heartbeat that reports one offset too many (``fast_beats._beat_lean``) makes
    the fast prediction differ from the heap's."""
    from kraft_testkit.fastforward.fast_beats import FastBeats
    from kraft_testkit.fastforward.follower_model import SEND
    real = FastBeats._beat_lean

    def planted(self, fb):
        done = real(self, fb)
        beats = fb.loop.logic
        if done and beats and beats[-1][0] == SEND:
            beats[-1] = (SEND, beats[-1][1], beats[-1][2] + 1)
        return done

    monkeypatch.setattr(FastBeats, "_beat_lean", planted)
    with pytest.raises(AssertionError):
        random_walk(0, points=6)


def test_a_lean_park_that_moves_the_leaders_timer_keeps_the_order():
    """With a NoOp interval longer than the fetch max wait, a parked fetch's max wait is the
    leader's next wake-up: a lean park moves the leader's timer into the heap, before events
    the pass had left for full runs; the model runs it first (it ran a heartbeat 300 ms after
    it, before the fix)."""
    c = Cluster(3, 3, seed=96, link=LinkProfile(latency=Uniform(1, 40)),
                configs={"metadata.max.idle.interval.ms": 2000,
                         "replica.lag.time.max.ms": 2000})
    c.run_for(3_000)
    seen = _walk(c, 96, points=25)
    assert seen["used"] > 0
