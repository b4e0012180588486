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

from kraft_testkit.errors import KraftError
from kraft_testkit.sim.link import LinkProfile
from kraft_testkit.sim.link import Fixed, Uniform
from kraft_testkit.sim.streams import MessageRandom, plain_draws


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


class LinkClock:
    """A FIFO link's arrival times by message position, as ``Network`` draws them."""

    def __init__(self, key: int, profile: LinkProfile, sent: int, last_at: int,
                 last_tie: int) -> None:
        if profile.drop or profile.duplicate or profile.reorder or not profile.fifo:
            raise NotModelled(f"the link's profile {profile} loses, duplicates or reorders")
        self._key = key
        self._rng: MessageRandom | None = None  # only for other latencies (made on first use)
        self._latency = profile.latency
        self.sent = sent
        self._last_at = last_at
        self._last_tie = last_tie
        # a Fixed or Uniform latency: the network's two inline draws (sim/network.py send)
        self._plain: tuple[int, int] | None = None
        latency = profile.latency
        if type(latency) is Fixed:
            self._plain = (latency.ms, 0)
        elif type(latency) is Uniform:
            self._plain = (latency.low, latency.high - latency.low + 1)

    @classmethod
    def of(cls, network: object, src: int, dst: int, channel: str | None = None) -> LinkClock:
        """A clock that continues the link (``channel``: None for the default one) from
        ``src`` to ``dst`` where it is now (a copy: the network's own link is not touched)."""
        link = network._peek_link(src, dst, channel)  # type: ignore[attr-defined]
        return cls(link.key, link.profile, link.sent, link.last_at, link.last_tie)

    def arrival(self, sent_at: int) -> tuple[int, int]:
        """``(at_ms, tie)`` of the next message, sent at ``sent_at``."""
        plain = self._plain
        if plain is not None:  # the same values as MessageRandom's draws 1 and 2
            n = self.sent
            self.sent = n + 1
            latency, tie = plain_draws(self._key, n, *plain)
            at = sent_at + latency
            if at <= self._last_at:
                return self._last_at, self._last_tie
            self._last_at, self._last_tie = at, tie
            return at, tie
        rng = self._rng
        if rng is None:
            rng = self._rng = MessageRandom(self._key)
        rng.seek(self.sent)
        self.sent += 1
        at = sent_at + self._latency.sample(rng)
        tie = rng.getrandbits(32)
        if at <= self._last_at:  # behind an earlier message: its instant and tie, in order
            return self._last_at, self._last_tie
        self._last_at, self._last_tie = at, tie
        return at, tie
