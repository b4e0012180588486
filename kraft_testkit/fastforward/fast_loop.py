"""A fast broker loop's state (:class:`FastLoop`: ``fast_brokers.py`` advances it,
``fast_beats.py`` its heartbeats) and the draw of its next message, kept apart from the
loops' methods (``fast_brokers.py`` stays under the modules' size)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraft_testkit.fastforward.observer_loop import LinkClock
from kraft_testkit.sim.node import NEVER

ANSWER, FETCH, PARKED = 0, 1, 2
_IDLE = NEVER << 32  # a parked fetch's key: no lean event of its own
PRE = -(1 << 40)  # the positions of fetches parked before the stretch: before every instant


@dataclass(slots=True, eq=False)
class FastLoop:
    """One broker's metadata fetch loop, kept out of the heap: what it has pending."""

    node: int
    loop: Any  # follower_model.Loop
    rec: list  # the leader's record of it: [last fetch ms, end offset, caught up ms]
    phase: int
    key: int  # ANSWER or FETCH: its arrival, instant << 32 | tie; PARKED: _IDLE
    at: int = 0
    tie: int = 0
    end: int = 0  # ANSWER: the log end it carries; FETCH and PARKED: the fetch offset
    hw: int = 0  # ANSWER: the high watermark it carries
    deadline: int = NEVER  # PARKED: its max wait runs out then
    pos: int = 0  # PARKED: where the leader parked it (instant << 32 | tie; PRE + i before)
    #: its heartbeats, in the loop too (``fast_beats.py``): the next one's phase and instant
    beats: bool = False
    hphase: int = 0
    hat: int = 0
    htie: int = 0
    hkey: int = _IDLE  # the next heartbeat event (instant << 32 | tie); _IDLE: none of its own
    voter: bool = False  # a voter's loop: its fetch moves its progress and check-quorum
    up_low: int = 0  # its link to the leader's lowest latency


def _plain(clock: LinkClock) -> tuple[int, int] | None:
    """(lowest, highest) latency of a link whose draws the lean path inlines, else None."""
    plain = clock._plain  # noqa: SLF001
    if plain is None or plain[0] < 1:
        return None
    low, span = plain
    return low, low + max(span, 1) - 1


def _draw(fb: FastLoop, clock: LinkClock, sent_at: int) -> None:
    """The link's next message, sent at ``sent_at``: ``fb.at``, ``fb.tie`` and ``fb.key`` set
    to its arrival (``LinkClock.arrival`` written out: a call less on a common step)."""
    i = clock._i  # noqa: SLF001
    if i == clock._have:  # noqa: SLF001
        i = clock.refill()
    clock._i = i + 1  # noqa: SLF001
    at = sent_at + clock._lats[i]  # noqa: SLF001
    if at <= clock._last_at:  # noqa: SLF001 - behind an earlier message: its instant and tie
        fb.at = at = clock._last_at  # noqa: SLF001
        fb.tie = tie = clock._last_tie  # noqa: SLF001
    else:
        clock._last_at = fb.at = at  # noqa: SLF001
        clock._last_tie = fb.tie = tie = clock._ties[i]  # noqa: SLF001
    fb.key = at << 32 | tie
