"""What the idle model (``quorum_model``, ``follower_model``) shares: the links' arrival
times by message position (:class:`LinkClock`), the leader's state after one of its events
(:class:`LeaderStep`, the model's and ``timeline.LeaderTimeline``'s record), and
:class:`NotModelled`.

With draws by position (:mod:`kraft_testkit.sim.streams`) the n-th message on a link arrives
at a function of the link's key, ``n`` and the instant it was sent, and a FIFO link holds a
message behind an earlier one (then it takes that one's instant and tie), so the model knows
every arrival without running the network. (This module once held a broker's fetch loop
computed from a recorded timeline, ``predict_round_trips``, and ``heartbeat_loop`` its
heartbeats: the quorum model computes both now, with the leader's own events.)
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from kraft_testkit.errors import KraftError
from kraft_testkit.fastforward.link_draws import draw_block
from kraft_testkit.sim.link import LinkProfile
from kraft_testkit.sim.link import Fixed, Uniform
from kraft_testkit.sim.streams import MessageRandom


class NotModelled(KraftError):
    """The stretch holds something the model does not compute (loss, reordering, a fetch
    reaching its max wait): step it instead."""


@dataclass(frozen=True, slots=True)
class LeaderStep:
    """The leader after one of its events: order key, log end offset, high watermark,
    whether the event woke its parked fetches (it appended, or moved the high watermark), and
    the controller's written and committed offsets."""

    at_ms: int
    tie: int
    end_offset: int
    high_watermark: int
    woke: bool
    written_offset: int = -1  # the controller's last written offset (records not yet drained too)
    committed_offset: int = -1  # the controller's last committed offset


#: network -> link key -> the last block of draws a clock of the link made: ``(plain, n0,
#: latencies, ties)``. Values of a pure function of the link's key and the positions, so the
#: cache changes no outcome; it saves the next stretch's clock the block sizes from 16 up and
#: the unused rest of its last block (the clocks of a stretch are new copies of the links).
_BLOCKS: WeakKeyDictionary = WeakKeyDictionary()


def last_blocks(network: object) -> dict:
    """The network's cache of its links' last blocks of draws (see ``_BLOCKS``)."""
    blocks = _BLOCKS.get(network)
    if blocks is None:
        blocks = _BLOCKS[network] = {}
    return blocks


class LinkClock:
    """A FIFO link's arrival times by message position, as ``Network`` draws them.

    A Fixed or Uniform link's draws come in blocks (``link_draws.draw_block``: the same
    values, a quarter of the cost): the block of messages ``_n0 ..`` in ``_lats`` and
    ``_ties``, ``_i`` the next one's index there; a block twice the last one's size (up to
    ``_MOST``) is drawn when one runs out, and the next stretch's clock of the link starts in
    it (``last_blocks``). ``fast_brokers.py`` reads the block inline on its commonest step."""

    __slots__ = ("_key", "_rng", "_latency", "_plain", "_n0", "_i", "_have", "_lats",
                 "_ties", "_last_at", "_last_tie", "_blocks")

    _FIRST, _MOST = 16, 512  # block sizes: the first one's and the largest

    def __init__(self, key: int, profile: LinkProfile, sent: int, last_at: int,
                 last_tie: int) -> None:
        if profile.drop or profile.duplicate or profile.reorder or not profile.fifo:
            raise NotModelled(f"the link's profile {profile} loses, duplicates or reorders")
        self._key = key
        self._rng: MessageRandom | None = None  # only for other latencies (made on first use)
        self._latency = profile.latency
        self._n0, self._i, self._have = sent, 0, 0
        self._lats: list = []
        self._ties: tuple = ()
        self._blocks: dict | None = None  # the network's last blocks, by link (``of``)
        self._last_at = last_at
        self._last_tie = last_tie
        # a Fixed or Uniform latency: the network's two inline draws (sim/network.py send)
        self._plain: tuple[int, int] | None = None
        latency = profile.latency
        if type(latency) is Fixed:
            self._plain = (latency.ms, 0)
        elif type(latency) is Uniform:
            self._plain = (latency.low, latency.high - latency.low + 1)

    @property
    def sent(self) -> int:
        """How many messages the link has sent: the next one's position."""
        return self._n0 + self._i

    @sent.setter
    def sent(self, n: int) -> None:
        """Moved by hand (a test): the block is dropped, the next message draws anew."""
        self._n0, self._i, self._have = n, 0, 0

    @classmethod
    def of(cls, network: object, src: int, dst: int, channel: str | None = None) -> LinkClock:
        """A clock that continues the link (``channel``: None for the default one) from
        ``src`` to ``dst`` where it is now (a copy: the network's own link is not touched).
        It starts in the link's last block of draws where a clock of an earlier stretch left
        one that holds the next message (``last_blocks``)."""
        link = network._peek_link(src, dst, channel)  # type: ignore[attr-defined]
        clock = cls(link.key, link.profile, link.sent, link.last_at, link.last_tie)
        if clock._plain is not None:
            clock._blocks = blocks = last_blocks(network)
            block = blocks.get(link.key)
            if block is not None and block[0] == clock._plain and \
                    block[1] <= link.sent < block[1] + len(block[2]):
                _, clock._n0, clock._lats, clock._ties = block
                clock._have, clock._i = len(block[2]), link.sent - block[1]
        return clock

    def refill(self) -> int:
        """The next block of draws, from the next message on (a Fixed or Uniform link);
        returns the next message's index in it (0)."""
        self._n0 += self._i
        have = self._have
        count = self._FIRST if not have else have * 2 if have < self._MOST else have
        self._lats, self._ties = draw_block(self._key, self._n0, count, *self._plain)
        self._have, self._i = count, 0
        if self._blocks is not None:  # for the next stretch's clock of this link
            self._blocks[self._key] = (self._plain, self._n0, self._lats, self._ties)
        return 0

    def arrival(self, sent_at: int) -> tuple[int, int]:
        """``(at_ms, tie)`` of the next message, sent at ``sent_at``."""
        if self._plain is not None:  # the same values as MessageRandom's draws 1 and 2
            i = self._i
            if i == self._have:
                i = self.refill()
            self._i = i + 1
            at = sent_at + self._lats[i]
            if at <= self._last_at:
                return self._last_at, self._last_tie
            self._last_at = at
            self._last_tie = tie = self._ties[i]
            return at, tie
        rng = self._rng
        if rng is None:
            rng = self._rng = MessageRandom(self._key)
        rng.seek(self.sent)
        self._n0 += 1
        at = sent_at + self._latency.sample(rng)
        tie = rng.getrandbits(32)
        if at <= self._last_at:  # behind an earlier message: its instant and tie, in order
            return self._last_at, self._last_tie
        self._last_at, self._last_tie = at, tie
        return at, tie
