"""The network: latency, loss, duplication, reordering, partitions, filters, holds, wire mode."""

from __future__ import annotations

import itertools

import pytest
from sim_helpers import Msg, MsgCodec, Other, Script, pair, recorder

from kraft_testkit.sim import Fixed, InvalidArgument, LinkProfile, Normal, Simulation, Uniform
from kraft_testkit.sim import topology as topo
from kraft_testkit.sim.toy import Ping, gossip


def _numbers(node) -> list[int]:
    return [msg.n for _, _, msg in node.received]


def _inversions(seq: list[int]) -> int:
    return sum(1 for a, b in itertools.pairwise(seq) if b < a)


def _overtaken(seq: list[int]) -> int:
    """How many arrived after a message sent later than them."""
    top, late = 0, 0
    for n in seq:
        late += n < top
        top = max(top, n)
    return late


def test_fixed_latency_and_send_order():
    sim, _, rx = pair(
        script=Script(dst=2, count=5, every_ms=10), link=LinkProfile(latency=Fixed(3))
    )
    sim.run_for(100)
    assert [(t, n) for t, n in zip((t for t, _, _ in rx.received), _numbers(rx))] == [
        (13, 1),
        (23, 2),
        (33, 3),
        (43, 4),
        (53, 5),
    ]


def test_fifo_links_keep_order_whatever_the_latency():
    burst = Script(dst=2, count=300, burst=True)
    sim, _, rx = pair(script=burst, link=LinkProfile(latency=Uniform(1, 50)))
    sim.run_for(200)
    assert _numbers(rx) == list(range(1, 301))
    sim, _, rx = pair(script=burst, link=LinkProfile(latency=Uniform(1, 50), fifo=False))
    sim.run_for(200)
    assert sorted(_numbers(rx)) == list(range(1, 301)) and _inversions(_numbers(rx)) > 50


def test_normal_latency_is_clipped():
    sim, _, rx = pair(
        script=Script(dst=2, count=300, burst=True),
        link=LinkProfile(latency=Normal(20, 15, low=5, high=30), fifo=False),
    )
    sim.run_for(100)
    times = [t for t, _, _ in rx.received]
    assert min(times) == 6 and max(times) == 31 and len(set(times)) > 10


def test_drop_duplicate_reorder_statistics():
    n = 4000
    sim, _, rx = pair(script=Script(dst=2, count=n, burst=True), link=LinkProfile(drop=0.25))
    sim.run_for(100)
    assert abs(len(rx.received) / n - 0.75) < 0.03
    assert sim.network.stats["dropped"] == n - len(rx.received)

    sim, _, rx = pair(script=Script(dst=2, count=n, burst=True), link=LinkProfile(duplicate=0.2))
    sim.run_for(100)
    assert abs(len(rx.received) / n - 1.2) < 0.03
    assert set(_numbers(rx)) == set(range(1, n + 1))

    sim, _, rx = pair(
        script=Script(dst=2, count=n, burst=True),
        link=LinkProfile(latency=Fixed(5), reorder=0.1, reorder_delay=Uniform(1, 10)),
    )
    sim.run_for(100)
    numbers = _numbers(rx)
    assert sorted(numbers) == list(range(1, n + 1))
    reordered = sim.network.stats["reordered"]
    assert abs(reordered / n - 0.1) < 0.02
    assert reordered - 10 <= _overtaken(numbers) <= reordered  # the very last ones overtake nobody


def test_per_link_profiles_latest_rule_wins():
    sim = Simulation(1)
    net = sim.network
    net.set_profile(LinkProfile(latency=Fixed(7)), src=1)
    net.set_profile(LinkProfile(latency=Fixed(9)), src=1, dst=[3])
    assert net.profile(1, 2).latency == Fixed(7) and net.profile(1, 3).latency == Fixed(9)
    assert net.profile(2, 1) == LinkProfile()
    net.set_profile(LinkProfile(drop=1.0))
    assert net.profile(1, 3).drop == 1.0


def test_gossip_partition_isolate_heal():
    ids = [1, 2, 3]
    sim = Simulation(5)
    for i in ids:
        sim.add_node(i, gossip(ids))
    seen: list[tuple[int, int]] = []
    sim.network.on_deliver(lambda src, dst, msg: seen.append((src, dst)))
    part = sim.network.partition({1}, {2, 3})
    sim.run_for(200)
    assert seen and all((1 in pair) == (pair == (1, 1)) for pair in seen)
    sim.network.heal(part)
    seen.clear()
    sim.network.isolate(2)
    sim.run_for(200)
    assert {(1, 3), (3, 1)} <= set(seen) and all(2 not in pair for pair in seen)
    sim.network.heal()
    seen.clear()
    sim.run_for(100)
    assert {(a, b) for a in ids for b in ids if a != b} == set(seen)


def test_one_way_partition():
    ids = [1, 2]
    sim = Simulation(2)
    for i in ids:
        sim.add_node(i, gossip(ids))
    sim.network.partition_one_way(1, 2)
    sim.run_for(200)
    one, two = sim.process(1).machine, sim.process(2).machine
    assert two.messages == 0  # nothing from 1 reaches 2
    assert one.messages > 0 and one.acks == 0  # 2's pings reach 1, 1's acks to 2 are cut


def test_partition_made_while_in_flight_drops_on_arrival():
    sim, _, rx = pair(
        script=Script(dst=2, count=5, burst=True), link=LinkProfile(latency=Fixed(10))
    )
    sim.run_for(5)
    sim.network.partition([1], [2])
    sim.run_for(20)
    assert rx.received == [] and sim.network.stats["dropped"] == 5


def test_named_topologies():
    nodes = [1, 2, 3, 4, 5]
    bridge = topo.bridge(nodes)
    assert bridge.blocks(1, 4) and bridge.blocks(5, 2)
    assert not bridge.blocks(1, 3) and not bridge.blocks(3, 5) and not bridge.blocks(1, 2)
    split = topo.split(nodes)
    assert split.blocks(1, 3) and split.blocks(3, 2) and not split.blocks(3, 5)
    import random

    shuffled = topo.split(nodes, random.Random(4))
    minority = [n for n in nodes if sum(shuffled.blocks(n, m) for m in nodes) == 3]
    assert len(minority) == 2
    ring = topo.majorities_ring(nodes)
    views = [frozenset(m for m in nodes if not ring.blocks(n, m)) for n in nodes]
    assert all(len(v) == 3 for v in views) and len(set(views)) == 5
    assert all(ring.blocks(a, b) == ring.blocks(b, a) for a in nodes for b in nodes)
    iso = topo.isolated(3)
    assert iso.blocks(3, 99) and iso.blocks(99, 3) and not iso.blocks(3, 3) and not iso.blocks(1, 2)
    sim = Simulation(1)
    applied = sim.network.apply(ring)
    assert sim.network.blocked(1, 3) and sim.network.partitions == (applied,)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: topo.partition([1, 2]), "two groups"),
        (lambda: topo.partition([1, 2], [2, 3]), "overlap"),
        (lambda: topo.bridge([1, 2]), "at least 3"),
        (lambda: topo.split([1, 1, 2]), "unique"),
        (lambda: topo.one_way(["a"], [1]), "node ids are ints"),
    ],
)
def test_bad_topologies(call, message):
    with pytest.raises(InvalidArgument, match=message):
        call()


def test_heal_unknown_partition_is_an_error():
    sim = Simulation(1)
    with pytest.raises(InvalidArgument, match="not in place"):
        sim.network.heal(topo.isolated(1))


def test_filters_by_type_predicate_and_count():
    script = Script(dst=2, count=12, burst=True, kinds=(Msg, Other))
    sim, _, rx = pair(script=script)
    sim.network.drop(Other)
    sim.network.drop(lambda m: m.n in (1, 3), count=1)
    sim.run_for(50)
    assert _numbers(rx) == [
        3,
        5,
        7,
        9,
        11,
    ]  # Others gone; the predicate dropped only its first match
    assert len(sim.network.filters) == 1

    sim, _, rx = pair(script=Script(dst=2, count=3, burst=True), link=LinkProfile(latency=Fixed(2)))
    rule = sim.network.delay(100, Msg, src=1, dst=2)
    sim.run_for(50)
    assert rx.received == []
    sim.run_for(60)
    assert [t for t, _, _ in rx.received] == [103, 103, 103]
    sim.network.remove_filter(rule)
    assert sim.network.filters == ()


def test_filters_only_apply_to_their_links():
    sim, _, rx = pair(script=Script(dst=2, count=3, burst=True))
    sim.network.drop(src=3)
    sim.network.drop(dst=[1])
    sim.run_for(50)
    assert len(rx.received) == 3


def test_hold_release_and_deliver_one():
    sim, _, rx = pair(script=Script(dst=2, count=6, burst=True, kinds=(Msg, Other)))
    sim.network.hold()
    sim.run_for(50)
    assert rx.received == [] and len(sim.network.held) == 6
    released = sim.network.deliver_one(2)
    assert released.msg == Msg(3)
    sim.run_for(0)
    assert _numbers(rx) == [3]
    sim.network.deliver_one(Other)
    sim.run_for(0)
    assert _numbers(rx) == [3, 2]
    assert sim.network.release(Msg) == 2
    sim.run_for(0)
    assert _numbers(rx) == [3, 2, 1, 5]
    assert sim.network.release() == 2
    sim.run_for(0)
    assert _numbers(rx) == [3, 2, 1, 5, 4, 6]
    assert sim.network.held == ()
    with pytest.raises(InvalidArgument, match="no held message"):
        sim.network.deliver_one()


def test_released_messages_still_obey_partitions():
    sim, _, rx = pair(script=Script(dst=2, count=2, burst=True))
    sim.network.hold(Msg)
    sim.run_for(10)
    sim.network.isolate(2)
    sim.network.release()
    sim.run_for(10)
    assert rx.received == [] and sim.network.stats["dropped"] == 2


def test_wire_mode_encodes_every_message():
    codec = MsgCodec()
    sim, _, rx = pair(
        script=Script(dst=2, count=4, burst=True, kinds=(Msg, Other)),
        codec=codec,
        link=LinkProfile(duplicate=1.0),
    )
    sim.run_for(20)
    assert codec.encoded == 4 and codec.decoded == 8
    assert [m for _, _, m in rx.received][::2] == [Msg(1), Other(2), Msg(3), Other(4)]
    first, second = rx.received[0][2], rx.received[1][2]
    assert first == second and first is not second


def test_wire_mode_refuses_bad_codecs_and_surfaces_encode_errors():
    with pytest.raises(InvalidArgument, match="codec"):
        Simulation(1, codec=object())

    class Broken:
        def encode(self, msg):
            raise ValueError("cannot encode")

        def decode(self, data):
            return data

    sim, _, _ = pair(script=Script(dst=2, count=1, burst=True), codec=Broken())
    with pytest.raises(ValueError, match="cannot encode"):
        sim.run_for(5)


def test_messages_to_dead_or_restarted_nodes_vanish():
    sim, _, _ = pair(script=Script(dst=2, count=3, burst=True), link=LinkProfile(latency=Fixed(10)))
    sim.kill(2)
    sim.run_for(20)
    assert sim.network.stats["vanished"] == 3

    sim, _, _ = pair(script=Script(dst=2, count=3, burst=True), link=LinkProfile(latency=Fixed(10)))
    sim.run_for(5)
    sim.restart(2)  # the connection the messages travelled on died with the old process
    sim.run_for(20)
    assert sim.process(2).machine.received == [] and sim.network.stats["vanished"] == 3

    sim = Simulation(1)
    sim.add_node(1, recorder(Script(dst=42, count=1, burst=True)))
    sim.run_for(10)
    assert sim.network.stats["vanished"] == 1


def test_bad_profiles_and_filters():
    with pytest.raises(InvalidArgument, match="probability"):
        LinkProfile(drop=1.5)
    with pytest.raises(InvalidArgument, match="low <= high"):
        Uniform(5, 1)
    with pytest.raises(InvalidArgument, match=">= 0"):
        Fixed(-1)
    with pytest.raises(InvalidArgument, match="Latency"):
        LinkProfile(latency=3)  # type: ignore[arg-type]
    sim = Simulation(1)
    with pytest.raises(InvalidArgument, match="predicate"):
        sim.network.drop(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="count"):
        sim.network.hold(Ping, count=0)
    with pytest.raises(InvalidArgument, match="delay"):
        sim.network.delay(-5)
