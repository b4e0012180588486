"""A persistent, insertion-ordered read-only map: the topics maps of every image.

Why not a :class:`~.frozen.FrozenDict` there: a delta that creates one topic copied both topic
maps whole (by id and by name), on every node, for every committed batch that touched a topic,
and freed the copies again when the image was dropped: with 10,000 topics that is most of a
creation's cost, and it grows with the cluster. Kafka's images keep their topics in persistent
maps (``ImageTopicsDelta`` over ``org.apache.kafka.server.immutable.ImmutableMap``, a hash trie
in 4.2.1's ``server-common``), so that a change costs the change.

The layout is two flat levels, which keeps lookups one hash and two C-level ``dict`` reads:

* ``_shards``: a tuple of about sqrt(n) dicts, a key's shard chosen by its hash; each holds
  key -> ``(key, value, seq)``. Shard order depends on the (per-process) hash, so nothing ever
  iterates them.
* ``_chunks``: a tuple of dicts, chunk ``seq >> CHUNK_BITS`` holding seq -> the same item;
  iteration walks the chunks, so the order is insertion order, as a dict's, in every process.

:meth:`derive` copies the two tuples and the few shards and chunks its changes touch (never
mutated once published). Removing a key and putting it back gives it a new place at the end,
as a dict does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, ItemsView, KeysView, Mapping, ValuesView
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING: Any = object()
CHUNK_BITS = 6  # 64 entries a chunk


class PersistentMap(Mapping[K, V], Generic[K, V]):
    """An immutable mapping whose :meth:`derive` costs about sqrt(n) plus the change."""

    __slots__ = ("_chunks", "_len", "_mask", "_next", "_shards")

    _shards: tuple[dict, ...]
    _chunks: tuple[dict, ...]
    _mask: int
    _next: int
    _len: int

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        ordered: dict = {}
        for key, value in pairs:
            ordered[key] = value
        self._fill(ordered.items(), len(ordered))

    def _fill(self, pairs: Iterable[tuple[K, V]], n: int) -> None:
        shards_n = 1
        while shards_n * shards_n < n:
            shards_n <<= 1
        mask = shards_n - 1
        shards: list[dict] = [{} for _ in range(shards_n)]
        chunks: list[dict] = []
        seq = 0
        for key, value in pairs:
            item = (key, value, seq)
            shards[hash(key) & mask][key] = item
            if not seq & ((1 << CHUNK_BITS) - 1):
                chunks.append({})
            chunks[-1][seq] = item
            seq += 1
        self._shards, self._chunks = tuple(shards), tuple(chunks)
        self._mask, self._next, self._len = mask, seq, seq

    # ------------------------------------------------------------- reading

    def get(self, key: Any, default: Any = None) -> Any:
        item = self._shards[hash(key) & self._mask].get(key)
        return default if item is None else item[1]

    def __getitem__(self, key: K) -> V:
        item = self._shards[hash(key) & self._mask].get(key)
        if item is None:
            raise KeyError(key)
        return item[1]

    def __contains__(self, key: object) -> bool:
        return key in self._shards[hash(key) & self._mask]

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        for chunk in self._chunks:
            for item in chunk.values():
                yield item[0]

    def keys(self) -> KeysView[K]:
        return _Keys(self)

    def values(self) -> ValuesView[V]:
        return _Values(self)

    def items(self) -> ItemsView[K, V]:
        return _Items(self)

    def _items(self) -> Iterator[tuple]:
        for chunk in self._chunks:
            yield from chunk.values()

    # ------------------------------------------------------------- deriving

    def derive(self, changes: Iterable[tuple[K, V | None]]) -> PersistentMap[K, V]:
        """This map with ``changes`` applied in order: (key, value) puts, (key, None) removes.
        Copies the shards and chunks the changes touch, not the map."""
        shards = list(self._shards)
        chunks = list(self._chunks)
        own_shards: set[int] = set()
        own_chunks: set[int] = set()
        mask, seq, n = self._mask, self._next, self._len

        def chunk_of(s: int) -> dict:
            ci = s >> CHUNK_BITS
            if ci == len(chunks):
                chunks.append({})
                own_chunks.add(ci)
            elif ci not in own_chunks:
                chunks[ci] = dict(chunks[ci])
                own_chunks.add(ci)
            return chunks[ci]

        changed = False
        for key, value in changes:
            si = hash(key) & mask
            shard = shards[si]
            old = shard.get(key)
            if value is None and old is None:
                continue
            if si not in own_shards:
                shard = shards[si] = dict(shard)
                own_shards.add(si)
            changed = True
            if value is None:
                del shard[key]
                del chunk_of(old[2])[old[2]]
                n -= 1
            elif old is not None:
                item = shard[key] = (key, value, old[2])
                chunk_of(old[2])[old[2]] = item
            else:
                item = shard[key] = (key, value, seq)
                chunk_of(seq)[seq] = item
                seq += 1
                n += 1
        if not changed:
            return self
        out = PersistentMap.__new__(PersistentMap)
        if n > 4 * len(shards) * len(shards) or len(chunks) > 2 * (n >> CHUNK_BITS) + 8:
            # grown past its shards, or holes left by removals: lay it out afresh (amortized:
            # after this, as many changes again as it holds before the next)
            items = [item for chunk in chunks for item in chunk.values()]
            out._fill(((k, v) for k, v, _ in items), n)
            return out
        out._shards, out._chunks = tuple(shards), tuple(chunks)
        out._mask, out._next, out._len = mask, seq, n
        return out

    # ------------------------------------------------------------- value semantics

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, Mapping) or len(other) != self._len:
            return False if isinstance(other, Mapping) else NotImplemented
        get = other.get
        for key, value, _ in self._items():
            theirs = get(key, _MISSING)
            if theirs is _MISSING or not (theirs is value or theirs == value):
                return False
        return True

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(frozenset((k, v) for k, v, _ in self._items()))

    def __reduce__(self) -> tuple:
        return (PersistentMap, ([(k, v) for k, v, _ in self._items()],))

    def __copy__(self) -> PersistentMap[K, V]:
        return self

    def __deepcopy__(self, memo: dict) -> PersistentMap[K, V]:
        return self  # values are immutable too

    def __repr__(self) -> str:
        return f"PersistentMap({ {k: v for k, v, _ in self._items()}!r})"

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("image mappings are immutable; build a new one with a delta")

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse


class _Keys(KeysView):
    __slots__ = ()

    def __iter__(self) -> Iterator:
        for item in self._mapping._items():  # noqa: SLF001
            yield item[0]


class _Values(ValuesView):
    __slots__ = ()

    def __iter__(self) -> Iterator:
        for item in self._mapping._items():  # noqa: SLF001
            yield item[1]


class _Items(ItemsView):
    __slots__ = ()

    def __iter__(self) -> Iterator:
        for item in self._mapping._items():  # noqa: SLF001
            yield item[0], item[1]


EMPTY_MAP: PersistentMap = PersistentMap()
