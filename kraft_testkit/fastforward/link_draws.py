"""A link's draws for a block of messages at once: the same values as
:func:`kraft_testkit.sim.streams.plain_draws`, message by message, at a quarter of the cost.

The idle model draws every message of the fetch loops and heartbeats (270,000 an idle hour of
3 + 10), each two splitmix64 finalizers on 64-bit Python ints, about 1 us a message; that was
a fifth of a warped idle hour. The finalizer is shifts, xors, masks and two multiplications by
constants, so it runs on many inputs at once when they sit side by side in one big int, each
in its own 128-bit lane (a lane's 64-bit value times a 64-bit constant stays in its lane; every
shift's spill from the next lane is masked off before it is multiplied). The inputs of messages
``n0 .. n0 + count - 1`` are an arithmetic sequence, ``key + (n + 1) * GOLDEN`` (+ ``STEP``
for the latency, + ``2 * STEP`` for the tie), packed with two multiplications. The lanes come
back out through ``struct`` (the tie is the top half of a lane's low 64 bits: the second
32-bit word of each 16-byte lane).
"""

from __future__ import annotations

import struct

from kraft_testkit.sim.streams import GOLDEN, MASK64, STEP

_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's (streams.mix64)
_LANES: dict[int, tuple[int, int, int]] = {}  # count -> (ones, indices, mask) per lane


def _lanes(count: int) -> tuple[int, int, int]:
    """The packed constants for ``count`` lanes: 1 in each, each lane's index, 2^64 - 1 in
    each (made once per size; they are pure functions of it)."""
    lanes = _LANES.get(count)
    if lanes is None:
        ones = sum(1 << (128 * i) for i in range(count))
        index = sum(i << (128 * i) for i in range(count))
        lanes = _LANES[count] = (ones, index, ones * MASK64)
    return lanes


def _mixed(first: int, count: int) -> int:
    """``streams.mix64`` of ``first + i * GOLDEN`` (mod 2^64) for ``i < count``, lane ``i``."""
    ones, index, mask = _lanes(count)
    z = (first * ones + GOLDEN * index) & mask
    z = ((z ^ (z >> 30)) & mask) * _M1 & mask
    z = ((z ^ (z >> 27)) & mask) * _M2 & mask
    return (z ^ (z >> 31)) & mask


def draw_block(key: int, n0: int, count: int, low: int, span: int) -> tuple[list, tuple]:
    """Latencies and tie keys of messages ``n0 .. n0 + count - 1`` on a Fixed (``span`` 0) or
    Uniform link of stream ``key``: element ``i`` is ``plain_draws(key, n0 + i, low, span)``."""
    base = key + (n0 + 1) * GOLDEN
    size = 16 * count
    if span:
        lat = _mixed((base + STEP) & MASK64, count).to_bytes(size, "little")
        lats = [low + z % span for z in struct.unpack(f"<{2 * count}Q", lat)[::2]]
        tie = _mixed((base + 2 * STEP) & MASK64, count)
    else:
        lats = [low] * count
        tie = _mixed((base + STEP) & MASK64, count)
    return lats, struct.unpack(f"<{4 * count}I", tie.to_bytes(size, "little"))[1::4]
