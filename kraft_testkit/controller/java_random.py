"""Java's ways of drawing and of ordering, where Kafka's placement depends on them.

Kafka's ``StripedReplicaPlacer`` draws from a ``java.util.Random`` (``nextInt(bound)``,
``Collections.shuffle``) and visits racks in ``HashMap`` order. The kit keeps its own seeded
``random.Random`` as the source in normal runs (anything with ``randrange(bound)`` will do); to
replay a Kafka test exactly, a test hands the placer :class:`MockRandom`, the deterministic
generator Kafka's own tests use, which draws as ``java.util.Random.nextInt`` does.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, MutableSequence
from typing import Protocol, TypeVar

T = TypeVar("T")
_MASK64 = (1 << 64) - 1


class IntDraws(Protocol):
    """What placement needs from a random source: a uniform int in ``[0, bound)``."""

    def randrange(self, bound: int, /) -> int: ...


class MockRandom:
    """Kafka's test ``MockRandom`` (an LCG over a 64-bit state, 17 by default), drawing ints as
    ``java.util.Random.nextInt(bound)`` does on top of it."""

    def __init__(self, state: int = 17) -> None:
        self.state = state & _MASK64

    def next_bits(self, bits: int) -> int:
        """``next(bits)``: the top ``bits`` of the new state, as a signed 32-bit int."""
        self.state = (self.state * 2862933555777941757 + 3037000493) & _MASK64
        return _int32(self.state >> (64 - bits))

    def randrange(self, bound: int, /) -> int:
        """``Random.nextInt(bound)``: a power of two scales one draw, any other bound rejects
        the draws that would bias the remainder."""
        if bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        r = self.next_bits(31)
        m = bound - 1
        if bound & m == 0:
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if _int32(u - r + m) >= 0:
                return r
            u = self.next_bits(31)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_shuffle(items: MutableSequence[T], rng: IntDraws) -> None:
    """``Collections.shuffle(list, random)``: from the end, swap each slot with a drawn one.
    With the kit's ``random.Random`` it draws exactly as ``random.shuffle`` does."""
    for i in range(len(items), 1, -1):
        j = rng.randrange(i)
        items[i - 1], items[j] = items[j], items[i - 1]


def string_hash(s: str) -> int:
    """``String.hashCode``: over UTF-16 code units, 32-bit wrap-around."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def optional_string_hash(value: str | None) -> int:
    """``Optional<String>.hashCode``: the string's, 0 when empty."""
    return 0 if value is None else string_hash(value)


def hash_map_order(keys: Iterable[Hashable], hash_of) -> list:
    """The iteration order of a ``new HashMap<>()`` after putting ``keys`` in this order
    (distinct keys): buckets by the spread hash ``h ^ (h >>> 16)`` over the final table size,
    insertion order within a bucket. The table starts at 16 and doubles when the size passes
    3/4 of it, or when a bucket reaches 9 entries while the table is under 64 (where Java would
    rather grow than build a tree bin). Tree bins (64+ slots, 9+ keys in one bucket) are not
    modelled: their keys stay in insertion order."""
    keys = list(keys)
    spread = [(h ^ (h >> 16)) for h in (hash_of(k) & 0xFFFFFFFF for k in keys)]
    capacity = 16
    sizes: dict[int, int] = {}  # bucket -> entries, for the table as it is now
    for count, h in enumerate(spread, start=1):
        slot = h & (capacity - 1)
        sizes[slot] = sizes.get(slot, 0) + 1
        grow = capacity < 64 and sizes[slot] >= 9  # treeifyBin on a small table grows it
        if grow:
            capacity *= 2
        if count > capacity * 3 // 4:
            capacity *= 2
            grow = True
        if grow:
            sizes = {}
            for seen in spread[:count]:
                sizes[seen & (capacity - 1)] = sizes.get(seen & (capacity - 1), 0) + 1
    order = sorted(range(len(keys)), key=lambda i: (spread[i] & (capacity - 1), i))
    return [keys[i] for i in order]
