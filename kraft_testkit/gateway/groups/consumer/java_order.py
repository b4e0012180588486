"""Java's ``HashMap``/``HashSet`` iteration order, which Kafka's assignors inherit: the member
a uniform assignor visits first, the topic whose partitions it hands out first. Reproducing it
makes the kit's target assignments the ones a 4.2.1 coordinator computes for the same ids.

A key sits in bucket ``spread(hashCode) & (n - 1)`` of an ``n``-slot table; iteration walks the
buckets in order and each bucket's keys in insertion order (a resize splits a bucket keeping that
order; buckets long enough to become trees, 8+ colliding keys, are not modelled).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

K = TypeVar("K")


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` over UTF-16 code units, 32-bit (also the group's
    ``__consumer_offsets`` partition, groups/coordinator.py)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def uuid_hash(raw: bytes) -> int:
    """``Uuid.hashCode()``: the two halves xor-ed, folded to 32 bits (signed)."""
    h = int.from_bytes(raw[:8], "big") ^ int.from_bytes(raw[8:], "big")
    v = ((h >> 32) ^ h) & 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def int_hash(value: int) -> int:
    return value


def table_size(count: int, initial: int = 16) -> int:
    """The table a map filled by ``count`` puts ends with (load factor 0.75)."""
    n = 1
    while n < initial:
        n <<= 1
    while count > 0.75 * n:
        n <<= 1
    return n


def copy_table_size(count: int) -> int:
    """``new HashSet<>(collection)``: ``max(size / .75f + 1, 16)`` rounded up to a power of 2."""
    return table_size(count, max(int(count / 0.75) + 1, 16))


def order(keys: Iterable[K], hash_of: Callable[[K], int], n: int | None = None) -> list[K]:
    """``keys`` (in insertion order, duplicates dropped) in the order Java iterates them."""
    unique = list(dict.fromkeys(keys))
    size = table_size(len(unique)) if n is None else n

    def bucket(k: K) -> int:
        h = hash_of(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (size - 1)
    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(unique))]


def string_order(keys: Iterable[str], n: int | None = None) -> list[str]:
    return order(keys, java_string_hash, n)


def uuid_order(keys: Iterable[bytes], n: int | None = None) -> list:
    return order(keys, uuid_hash, n)
