"""A broker's Raft fetch loop, computed from the leader's timeline and the links' draws.

In an idle cluster two thirds of the events are the brokers' long-polling metadata fetches
(benchmarks/README.md, "Anatomy of the idle cluster"). With draws by position
(:mod:`kraft_testkit.sim.streams`) each round trip is a function of things known without
running the broker: the latencies and tie keys of the n-th message on the two links, and
what the leader's log end and high watermark are just before the fetch is processed, in the
order the scheduler runs events, ``(at_ms, tie)``. The leader (``KafkaRaftClient`` as
``raft/replica.py`` models it) answers at once when the fetch is behind its log end, and
otherwise parks it until an event of its own appends or moves the high watermark (then it
answers with the state after that event), or until the fetch's max wait.

:func:`predict_round_trips` is that computation; tests/fastforward checks it against stepping,
round trip by round trip. It is the timing half of a bulk step for the brokers' loops; what
the rest must do is in benchmarks/README.md ("What the bulk step still has to do").
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from kraft_testkit.errors import KraftError
from kraft_testkit.sim.link import LinkProfile
from kraft_testkit.sim.link import Fixed, Uniform
from kraft_testkit.sim.streams import GOLDEN, MASK64, STEP, MessageRandom


class NotModelled(KraftError):
    """The stretch holds something the model does not compute (loss, reordering, a fetch
    reaching its max wait): step it instead."""


@dataclass(frozen=True, slots=True)
class LeaderStep:
    """The leader after one of its events: order key, log end offset, high watermark,
    whether the event woke its parked fetches (it appended, or moved the high watermark), and
    for heartbeats (``heartbeat_loop``) the controller's written and committed offsets."""

    at_ms: int
    tie: int
    end_offset: int
    high_watermark: int
    woke: bool
    written_offset: int = -1  # the controller's last written offset (records not yet drained too)
    committed_offset: int = -1  # the controller's last committed offset


@dataclass(frozen=True, slots=True)
class RoundTrip:
    """One fetch: its offset, when it reached the leader (and the leader's log end then),
    whether it was parked, when the answer left (None: still parked) and arrived (with its tie
    key), and the broker's log end and high watermark once it was handled."""

    fetch_offset: int
    arrived_ms: int
    arrived_tie: int
    leader_end_offset: int
    parked: bool
    answered_ms: int | None
    answered_tie: int
    answer_end_offset: int
    received_ms: int | None
    received_tie: int
    end_offset: int
    high_watermark: int


@dataclass(frozen=True, slots=True)
class ObserverProgress:
    """What the leader knows of the broker (DescribeQuorum's ReplicaState)."""

    end_offset: int
    last_fetch_ms: int
    caught_up_ms: int


class LinkClock:
    """A FIFO link's arrival times by message position, as ``Network`` draws them."""

    def __init__(self, rng: MessageRandom, profile: LinkProfile, sent: int, last_at: int,
                 last_tie: int) -> None:
        if profile.drop or profile.duplicate or profile.reorder or not profile.fifo:
            raise NotModelled(f"the link's profile {profile} loses, duplicates or reorders")
        self._rng = rng
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
        self._key = rng.getstate()[0]

    @classmethod
    def of(cls, network: object, src: int, dst: int, channel: str | None = None) -> LinkClock:
        """A clock that continues the link (``channel``: None for the default one) from
        ``src`` to ``dst`` where it is now (a copy: the network's own link is not touched)."""
        link = network._link(src, dst, channel)  # type: ignore[attr-defined]
        rng = MessageRandom(link.rng.getstate()[0])
        return cls(rng, link.profile, link.sent, link.last_at, link.last_tie)

    def arrival(self, sent_at: int) -> tuple[int, int]:
        """``(at_ms, tie)`` of the next message, sent at ``sent_at``."""
        plain = self._plain
        if plain is not None:  # the same values as MessageRandom's draws 1 and 2
            n = self.sent
            self.sent = n + 1
            base = self._key + (n + 1) * GOLDEN
            low, span = plain
            if span:
                z = (base + STEP) & MASK64
                z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
                z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
                at = sent_at + low + (z ^ (z >> 31)) % span
                z = (base + 2 * STEP) & MASK64
            else:
                at = sent_at + low
                z = (base + STEP) & MASK64
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            tie = (z ^ (z >> 31)) >> 32
            if at <= self._last_at:
                return self._last_at, self._last_tie
            self._last_at, self._last_tie = at, tie
            return at, tie
        rng = self._rng
        rng.seek(self.sent)
        self.sent += 1
        at = sent_at + self._latency.sample(rng)
        tie = rng.getrandbits(32)
        if at <= self._last_at:  # behind an earlier message: its instant and tie, in order
            return self._last_at, self._last_tie
        self._last_at, self._last_tie = at, tie
        return at, tie


def predict_round_trips(leader: Sequence[LeaderStep], to_leader: LinkClock,
                        to_broker: LinkClock, *, sent_at: int, end_offset: int,
                        high_watermark: int, max_wait_ms: int, until_ms: int) -> list[RoundTrip]:
    """The round trips of a broker whose fetch (at its log end ``end_offset``) leaves at
    ``sent_at``, for every fetch that reaches the leader by ``until_ms`` (the last one may be
    parked still, or answered later). ``leader`` holds every leader event of the stretch in
    run order; the clocks continue the two links."""
    keys = [(s.at_ms, s.tie) for s in leader]
    next_woke = [len(leader)] * (len(leader) + 1)  # the first waking event at or after i
    for j in range(len(leader) - 1, -1, -1):
        next_woke[j] = j if leader[j].woke else next_woke[j + 1]
    trips: list[RoundTrip] = []
    offset, hw = end_offset, high_watermark
    while True:
        arrived, tie = to_leader.arrival(sent_at)
        if arrived > until_ms:
            return trips
        # the leader's state just before this event: its own event (when the timeline
        # holds it) may also do due work after answering (a drain, a NoOp), which parked
        # fetches see when the same event wakes them
        i = bisect_left(keys, (arrived, tie))
        if i == 0:
            raise NotModelled("the fetch arrives before the leader's timeline starts")
        before = leader[i - 1]
        parked = offset >= before.end_offset
        if not parked:
            answer = before
        else:
            j = next_woke[i]
            answer = leader[j] if j < len(leader) else None
            if answer is None or answer.at_ms > until_ms:  # still parked at the end
                trips.append(RoundTrip(offset, arrived, tie, before.end_offset, True, None, 0,
                                       -1, None, 0, offset, hw))
                return trips
            if answer.at_ms >= arrived + max_wait_ms:
                raise NotModelled(f"a fetch parked at {arrived} ms reached its max wait")
        received, received_tie = to_broker.arrival(answer.at_ms)
        new_offset = max(offset, answer.end_offset)
        new_hw = max(hw, min(answer.high_watermark, new_offset))
        trips.append(RoundTrip(offset, arrived, tie, before.end_offset, parked, answer.at_ms,
                               answer.tie, answer.end_offset, received, received_tie, new_offset,
                               new_hw))
        if received > until_ms:
            return trips
        offset, hw, sent_at = new_offset, new_hw, received


def broker_state_at(trips: Sequence[RoundTrip], at_ms: int, tie: int, *, end_offset: int,
                    high_watermark: int) -> tuple[int, int]:
    """The broker's (log end, high watermark) as its event ``(at_ms, tie)`` sees them after
    its Raft part ran (``end_offset`` and ``high_watermark``: where the trips started): a
    heartbeat sent in that event reports the high watermark - 1 as its metadata offset,
    including the answer the event itself handled, when it is a fetch answer (the broker's
    logic polls after the Raft client, and sends a heartbeat that is due)."""
    state = (end_offset, high_watermark)
    for trip in trips:
        if trip.received_ms is None or (trip.received_ms, trip.received_tie) > (at_ms, tie):
            break
        state = (trip.end_offset, trip.high_watermark)
    return state


def observer_progress(trips: Sequence[RoundTrip], until: tuple[int, int],
                      caught_up_ms: int = -1) -> ObserverProgress | None:
    """The leader's record of the broker once its event ``until = (at_ms, tie)`` has run:
    each fetch updates it when it arrives and, if parked, again when it is answered
    (``raft/replica.py`` ``_answer_fetch`` runs ``_update_replica`` both times)."""
    progress = None
    caught_up = caught_up_ms  # as it stood before the first trip
    for trip in trips:
        if (trip.arrived_ms, trip.arrived_tie) > until:
            break
        if trip.fetch_offset >= trip.leader_end_offset:
            caught_up = trip.arrived_ms
        progress = ObserverProgress(trip.fetch_offset, trip.arrived_ms, caught_up)
        if trip.parked and trip.answered_ms is not None and \
                (trip.answered_ms, trip.answered_tie) <= until:
            if trip.fetch_offset >= trip.answer_end_offset:
                caught_up = trip.answered_ms
            progress = ObserverProgress(trip.fetch_offset, trip.answered_ms, caught_up)
    return progress
