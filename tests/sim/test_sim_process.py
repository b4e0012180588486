"""Node processes: crash, stop, restart, wipe, pause, clock skew, and the effects contract."""

from __future__ import annotations

import pytest
from sim_helpers import Msg, Recorder, Script, log_ops, pair, recorder, writer

from kraft_testkit.sim import (
    NEVER,
    Append,
    Effects,
    EffectsError,
    Fixed,
    LinkProfile,
    NodeStateError,
    ProcessState,
    Simulation,
    UnknownNode,
)
from kraft_testkit.sim.toy import LOG, gossip, logged_value


def _writer_sim(seed: int = 1, **options) -> Simulation:
    sim = Simulation(seed, **options)
    sim.add_node(
        1, writer(log_ops("log", b"synced"), log_ops("log", b"-unsynced") + log_ops("x", b"new"))
    )
    sim.run_for(1)  # the unsynced writes happen at 1 ms
    assert sim.process(1).disk.view() == {"log": b"synced-unsynced", "x": b"new"}
    return sim


def test_kill_loses_unsynced_writes_and_keeps_synced_ones():
    sim = _writer_sim()
    sim.kill(1, torn_tail_probability=0.0)
    assert sim.process(1).state is ProcessState.KILLED
    assert sim.process(1).disk.view() == {"log": b"synced"}


def test_kill_may_leave_a_torn_tail():
    tails = set()
    for seed in range(40):
        sim = _writer_sim(seed, torn_tail_probability=1.0)
        sim.kill(1)
        log = sim.process(1).disk.view()["log"]
        assert b"synced-unsynced".startswith(log) and log.startswith(b"synced")
        tails.add(log)
    assert len(tails) > 3 and b"synced" not in tails  # always something kept, mostly torn


def test_graceful_stop_syncs_everything():
    sim = _writer_sim()
    sim.stop(1)
    assert sim.process(1).state is ProcessState.STOPPED
    assert sim.process(1).disk.durable() == {"log": b"synced-unsynced", "x": b"new"}


def test_restart_builds_a_new_machine_over_the_recovered_disk():
    seen = []

    def factory(ctx):
        seen.append((ctx.incarnation, dict(ctx.disk)))
        return Recorder(ctx, Script())

    sim = Simulation(3)
    first = sim.add_node(7, factory).machine
    sim.process(7).disk.apply(Append("f", b"1"))
    sim.restart(7)  # a crash: the unsynced write is gone
    assert sim.process(7).machine is not first
    sim.process(7).disk.apply(Append("f", b"2"))
    sim.restart(7, graceful=True)
    sim.stop(7)
    sim.start(7)
    assert seen == [(1, {}), (2, {}), (3, {"f": b"2"}), (4, {"f": b"2"})]
    assert sim.process(7).incarnation == 4


def test_node_rng_is_seeded_per_incarnation():
    def draws(seed):
        sim = Simulation(seed)
        values = []
        sim.add_node(1, lambda ctx: values.append(ctx.rng.random()) or Recorder(ctx, Script()))
        sim.restart(1)
        return values

    assert draws(1) == draws(1)
    assert draws(1)[0] != draws(1)[1] and draws(1) != draws(2)


def test_gossip_survives_crashes_without_losing_acknowledged_values():
    ids = [1, 2, 3]
    sim = Simulation(9)
    for i in ids:
        sim.add_node(i, gossip(ids))
    sim.run_for(100)
    before = sim.process(1).machine.value
    sim.kill(1)
    assert logged_value(sim.process(1).disk.view()[LOG]) == before  # every value was synced
    sim.run_for(50)
    sim.start(1)
    assert sim.process(1).machine.value == before
    sim.run_for(100)
    assert sim.process(1).machine.value > before


def test_wipe_needs_a_down_node_and_empties_its_disk():
    sim = _writer_sim()
    with pytest.raises(NodeStateError, match="stop or kill it first"):
        sim.wipe(1)
    sim.stop(1)
    sim.wipe(1)
    sim.start(1)
    assert sim.process(1).disk.view() == {}


def test_pause_queues_messages_and_delays_the_timer():
    sim = Simulation(1, link=LinkProfile(latency=Fixed(1)))
    sim.add_node(2, recorder(Script(wake_at=10)))
    sim.add_node(1, recorder(Script(dst=2, count=5, every_ms=2)))
    rx = sim.process(2).machine
    sim.run_for(2)
    sim.pause(2)
    sim.run_for(48)
    assert rx.timers == [] and [m.n for _, _, m in rx.received] == []
    sim.resume(2)
    sim.run_for(0)
    assert rx.timers == [50]  # late, at resume time
    assert [(t, m.n) for t, _, m in rx.received] == [(50, 1), (50, 2), (50, 3), (50, 4), (50, 5)]


def test_kill_while_paused_drops_the_queue():
    sim, _, _ = pair(script=Script(dst=2, count=3, burst=True))
    sim.pause(2)
    sim.run_for(20)
    sim.kill(2)
    sim.start(2)
    sim.run_for(20)
    assert sim.process(2).machine.received == []


def test_clock_skew_shifts_what_the_node_sees_and_its_timers():
    sim = Simulation(1)
    node = sim.add_node(1, recorder(Script(wake_at=150)), skew_ms=100).machine
    assert node.started_at == 100
    sim.run_for(49)
    assert node.timers == []
    sim.run_for(1)
    assert node.timers == [150] and sim.now_ms == 50
    # changing the skew moves a pending wake-up: it keeps its time on the node's clock
    node2 = sim.add_node(2, recorder(Script(wake_at=200))).machine
    sim.set_skew(2, 100)
    sim.run_for(50)
    assert node2.timers == [200] and sim.now_ms == 100
    with pytest.raises(Exception, match="int"):
        sim.set_skew(2, 1.5)


class _Once:
    """Asks for a timer, then replaces or cancels it, as told."""

    def __init__(self, ctx, second):
        self.second = second
        self.fired = []

    def on_start(self, now_ms):
        return Effects(timer_ms=10)

    def on_message(self, src, msg, now_ms):
        return Effects(timer_ms=self.second)

    def on_timer(self, now_ms):
        self.fired.append(now_ms)


@pytest.mark.parametrize(
    "second, fired", [(None, [10]), (NEVER, []), (30, [30]), (-5, [4])]
)  # a past time fires at once
def test_timer_keep_replace_cancel(second, fired):
    sim = Simulation(1, link=LinkProfile(latency=Fixed(1)))
    node = sim.add_node(1, lambda ctx: _Once(ctx, second)).machine
    sim.add_node(2, recorder(Script(dst=1, count=1, every_ms=3)))  # pokes node 1 at 4 ms
    sim.run_for(100)
    assert node.fired == fired


class _Bad:
    def __init__(self, result):
        self.result = result

    def on_start(self, now_ms):
        return self.result

    on_message = on_timer = on_start


@pytest.mark.parametrize(
    "result, message",
    [
        ({"sends": []}, "returned dict"),
        (Effects(sends=[("2", Msg(1))]), "destinations are node ids"),
        (Effects(timer_ms=1.5), "timer_ms is an int"),
    ],
)
def test_effects_contract_violations(result, message):
    sim = Simulation(1)
    with pytest.raises(EffectsError, match=message):
        sim.add_node(1, lambda ctx: _Bad(result))


def test_factory_must_build_a_state_machine():
    sim = Simulation(1)
    with pytest.raises(EffectsError, match="no on_start"):
        sim.add_node(1, lambda ctx: object())


def test_lifecycle_state_errors():
    sim = Simulation(1)
    sim.add_node(1, recorder(), start=False)
    assert sim.process(1).state is ProcessState.NEW
    for action in (sim.kill, sim.stop, sim.pause, sim.resume):
        with pytest.raises(NodeStateError, match="it is new"):
            action(1)
    sim.start(1)
    with pytest.raises(NodeStateError, match="already running"):
        sim.start(1)
    with pytest.raises(NodeStateError, match="it is running"):
        sim.resume(1)
    with pytest.raises(UnknownNode, match="no node 5"):
        sim.kill(5)
    with pytest.raises(Exception, match="already exists"):
        sim.add_node(1, recorder())
