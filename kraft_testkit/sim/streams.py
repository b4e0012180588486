"""Counter-keyed random streams: the n-th draw is a pure function of (seed, stream, n).

A sequential stream (``random.Random``) hands out its numbers in call order, so whoever skips a
call shifts every later number of that stream. The simulator's per-message and per-timer draws
(a link's latency and tie key for its n-th message, a node's tie key for a timer due at t) come
from here instead: the value for position ``n`` is splitmix64's output at ``n``, computed
directly, so a fast path that accounts for ``k`` skipped messages only moves the counter by
``k``, and no other stream sees a difference. :class:`~kraft_testkit.sim.rng.RngTree` stays the
source of every other random choice (election jitter, crash damage, names...).
"""

from __future__ import annotations

import hashlib
import json
import random

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment (2^64 / golden ratio)
STEP = 0xD1B54A32D192ED03  # an odd multiplier for the draw index within a message
_SCALE53 = 2.0 ** -53


# what json.dumps(obj, separators=(",", ":")) writes, without a new encoder per call (every
# node, link and timer stream of a boot derives its key here)
_COMPACT = json.JSONEncoder(separators=(",", ":"))
_JSON_STR = json.encoder.encode_basestring_ascii  # the str writer _COMPACT itself uses
_int_text = int.__repr__  # and its int writer


def compact_json(items: list) -> str:
    """``_COMPACT.encode(items)`` for a list of strs and ints (a stream's seed and path),
    written directly with the writers the JSON encoder uses for them (the encoder's own
    set-up per call cost more than the text); anything else goes through the encoder."""
    parts = []
    for x in items:
        kind = type(x)
        if kind is str:
            parts.append(_JSON_STR(x))
        elif kind is int:
            parts.append(_int_text(x))
        else:
            return _COMPACT.encode(items)
    return "[" + ",".join(parts) + "]"


def mix64(z: int) -> int:
    """splitmix64's finalizer: a 64-bit bijection that scatters nearby inputs."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_key(seed: int, path: tuple[str, ...]) -> int:
    """A 64-bit key for the stream at ``path`` under ``seed`` (the same in every process)."""
    canonical = compact_json(["counter", seed, *path]).encode()
    return int.from_bytes(hashlib.sha256(canonical).digest()[:8], "big")


def draw(key: int, n: int) -> int:
    """The 64-bit value at position ``n`` of the stream ``key`` (splitmix64 evaluated at n)."""
    return mix64((key + (n + 1) * GOLDEN) & MASK64)


def tie_at(key: int, at_ms: int) -> int:
    """A 32-bit tie key for an event of stream ``key`` due at ``at_ms``: a node's timer gets the
    same key however often it was re-armed before, and whatever else the node did meanwhile."""
    return mix64((key + (at_ms + 1) * GOLDEN) & MASK64) >> 32


def plain_draws(key: int, n: int, low: int, span: int) -> tuple[int, int]:
    """Message ``n``'s latency (``low`` + draw 1 mod ``span``; ``low`` alone when ``span`` is
    0, with no draw) and tie key (the next draw's top 32 bits) on a link of stream ``key``:
    the values :class:`MessageRandom` gives ``randint``/``getrandbits(32)``, computed inline
    (a Fixed or Uniform FIFO link's whole randomness; the network and the warp's model both
    call this)."""
    base = key + (n + 1) * GOLDEN
    if span:
        z = (base + STEP) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        latency = low + (z ^ (z >> 31)) % span
        z = (base + 2 * STEP) & MASK64
    else:
        latency = low
        z = (base + STEP) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return latency, (z ^ (z >> 31)) >> 32


class MessageRandom(random.Random):
    """A ``random.Random`` whose draws for message ``n`` depend only on (key, n, draw index).

    :meth:`seek` selects the message; every draw after it (``random()``, ``getrandbits()`` and
    what the stdlib builds on them: ``randint``, ``gauss``...) is the next position of that
    message's own sub-stream, so latency distributions written against ``random.Random`` work
    unchanged.
    """

    def __init__(self, key: int) -> None:
        self._key = key
        self._sub = 0
        self._i = 0
        super().__init__(key)

    def seek(self, n: int) -> None:
        """Draw for message ``n`` from now on (its first draw comes next)."""
        self._sub = self._key + (n + 1) * GOLDEN
        self._i = 0
        self.gauss_next = None  # gauss() keeps a spare value between calls: not across messages

    def _next64(self) -> int:
        """Draw ``i`` of message ``n``: splitmix64's finalizer over key + (n+1)G + iS."""
        i = self._i = self._i + 1
        z = (self._sub + i * STEP) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def random(self) -> float:
        return (self._next64() >> 11) * _SCALE53

    def randint(self, a: int, b: int) -> int:
        """Uniform over ``[a, b]`` from one 64-bit draw (the bias of the modulo is below 2^-40
        for any span a latency has): the hot path of every ``Uniform`` latency."""
        span = b - a + 1
        if span <= 0:
            raise ValueError(f"empty range for randint({a}, {b})")
        return a + self._next64() % span

    def getrandbits(self, k: int) -> int:
        if k <= 64:
            return self._next64() >> (64 - k) if k > 0 else 0
        out = 0
        for _ in range((k + 63) // 64):
            out = (out << 64) | self._next64()
        return out >> ((-k) % 64)

    def __reduce__(self) -> tuple[object, ...]:  # copy and pickle keep the key and position
        return (MessageRandom, (self._key,), self.getstate())

    def getstate(self) -> tuple[int, int, int]:  # type: ignore[override]
        return (self._key, self._sub, self._i)

    def setstate(self, state: tuple[int, int, int]) -> None:  # type: ignore[override]
        self._key, self._sub, self._i = state
