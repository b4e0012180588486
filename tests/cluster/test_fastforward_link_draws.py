"""The idle model's block draws (``fastforward/link_draws.py``, ``LinkClock``) give the values
the network draws message by message (``streams.plain_draws``): the warp's exactness rests on it."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.link_draws import draw_block
from kraft_testkit.fastforward.observer_loop import LinkClock
from kraft_testkit.sim.link import Fixed, LinkProfile, Uniform
from kraft_testkit.sim.streams import plain_draws


@pytest.mark.parametrize("span", [0, 1, 5, 40, 1000])
def test_draw_block_matches_plain_draws(span: int) -> None:
    rnd = random.Random(span)
    for _ in range(30):
        key, n0 = rnd.getrandbits(64), rnd.randrange(0, 1 << 40)
        count, low = rnd.choice([1, 2, 16, 77, 512]), rnd.randrange(0, 50)
        lats, ties = draw_block(key, n0, count, low, span)
        assert len(lats) == len(ties) == count
        for i in range(count):
            assert (lats[i], ties[i]) == plain_draws(key, n0 + i, low, span)


@pytest.mark.parametrize("latency", [Fixed(3), Uniform(1, 5), Uniform(1, 40)])
def test_link_clock_arrivals_match_message_by_message(latency: object) -> None:
    """Across block boundaries (16, 32, ... 512 messages), and with FIFO holds (a message
    sent before the last one's arrival may take its instant and tie)."""
    key, sent = 0x0123456789ABCDEF, 7
    clock = LinkClock(key, LinkProfile(latency=latency), sent, 0, 0)
    low, span = clock._plain  # noqa: SLF001
    last_at = last_tie = 0
    rnd = random.Random(1)
    t = 0
    for n in range(sent, sent + 3000):
        t += rnd.choice([0, 1, 2, 50])
        lat, tie = plain_draws(key, n, low, span)
        at = t + lat
        if at <= last_at:
            at, tie = last_at, last_tie
        last_at, last_tie = at, tie
        assert clock.arrival(t) == (at, tie)
        assert clock.sent == n + 1


def test_link_clock_moved_by_hand_draws_from_there() -> None:
    clock = LinkClock(99, LinkProfile(latency=Uniform(1, 5)), 0, 0, 0)
    clock.arrival(0)
    clock.sent = 1000
    assert clock.arrival(10_000) == (10_000 + plain_draws(99, 1000, 1, 5)[0],
                                     plain_draws(99, 1000, 1, 5)[1])
    assert clock.sent == 1001


def test_a_later_stretchs_clock_starts_in_the_last_block() -> None:
    """``LinkClock.of`` picks up the block an earlier clock of the link drew (the network
    keeps the last one a link's clocks made): the same draws, from where the link is."""
    c = Cluster(3, 1, seed=4)
    c.run_for(3_000)
    net = c.sim.network
    link = net._peek_link(3, 0)  # noqa: SLF001 - the broker's fetches to a controller
    first = LinkClock.of(net, 3, 0)
    for k in range(10):  # its first block (16 messages) is the link's last one now
        first.arrival(10_000 + 500 * k)
    again = LinkClock.of(net, 3, 0)  # the link has not moved: it starts in that block
    assert again._lats is first._lats and again.sent == link.sent  # noqa: SLF001
    fresh = LinkClock(link.key, link.profile, link.sent, link.last_at, link.last_tie)
    times = [20_000 + 500 * k for k in range(40)]  # past the cached block, into new ones
    assert [again.arrival(t) for t in times] == [fresh.arrival(t) for t in times]
    assert again.sent == fresh.sent == link.sent + 40
