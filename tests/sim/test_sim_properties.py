"""Random fault schedules never break the toy node's durability, and the cluster recovers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.sim import LinkProfile, Normal, Simulation
from kraft_testkit.sim.toy import LOG, Ack, Ping, gossip, logged_value

IDS = (1, 2, 3)
ACTIONS = (
    "kill",
    "stop",
    "start",
    "restart",
    "pause",
    "resume",
    "isolate",
    "split",
    "heal",
    "skew",
)

faults = st.lists(
    st.tuples(
        st.integers(0, 60), st.sampled_from(ACTIONS), st.sampled_from(IDS), st.integers(-50, 50)
    ),
    max_size=20,
)


def apply(sim: Simulation, action: str, node: int, amount: int) -> None:
    process = sim.process(node)
    if action == "kill" and process.up:
        sim.kill(node)
    elif action == "stop" and process.up:
        sim.stop(node)
    elif action == "start" and not process.up:
        sim.start(node)
    elif action == "restart":
        sim.restart(node, graceful=amount > 0)
    elif action == "pause" and process.state.value == "running":
        sim.pause(node)
    elif action == "resume" and process.state.value == "paused":
        sim.resume(node)
    elif action == "isolate":
        sim.network.isolate(node)
    elif action == "split":
        sim.network.partition([node], [n for n in IDS if n != node])
    elif action == "heal":
        sim.network.heal()
    elif action == "skew":
        sim.set_skew(node, amount)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), schedule=faults)
def test_random_faults_never_lose_a_value_that_was_sent(seed, schedule):
    sim = Simulation(
        seed, link=LinkProfile(latency=Normal(4, 3), drop=0.05, duplicate=0.05, reorder=0.05)
    )
    sent = dict.fromkeys(IDS, 0)

    def note_sent(src, dst, msg):
        if isinstance(msg, (Ping, Ack)):
            sent[src] = max(sent[src], msg.value)

    def sent_values_are_durable(s):
        for n in s.nodes:
            durable = logged_value(s.process(n).disk.durable().get(LOG))
            assert sent[n] <= durable, f"node {n} sent {sent[n]} but only {durable} is durable"

    sim.network.on_deliver(note_sent)
    sim.add_invariant(sent_values_are_durable)
    for n in IDS:
        sim.add_node(n, gossip(IDS))
    for wait, action, node, amount in schedule:
        sim.run_for(wait)
        apply(sim, action, node, amount)

    # liveness: once the faults heal, every node moves past the highest value seen so far
    sim.network.heal()
    for n in IDS:
        if sim.process(n).state.value == "paused":
            sim.resume(n)
        elif not sim.process(n).up:
            sim.start(n)
    target = max(sent.values()) + 1
    sim.run_until(
        lambda s: all(s.process(n).machine.value >= target for n in IDS), timeout_ms=2_000
    )


def test_the_invariant_catches_a_node_that_sends_before_it_persists():
    sim = Simulation(3, torn_tail_probability=0.0)
    sent = dict.fromkeys(IDS, 0)
    sim.network.on_deliver(lambda src, dst, msg: sent.__setitem__(src, max(sent[src], msg.value)))
    for n in IDS:
        sim.add_node(n, gossip(IDS, durable=False))
    sim.run_for(100)
    sim.kill(1)
    durable = logged_value(sim.process(1).disk.durable().get(LOG))
    assert durable < sent[1]
