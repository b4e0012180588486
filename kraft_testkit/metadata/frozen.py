"""A read-only dict: the mapping type of every image.

Why not ``types.MappingProxyType``: a proxy cannot be pickled (nodes and traces get pickled) and
adds a wrapper per section. A ``dict`` subclass keeps C-speed lookups and equality, pickles, and
refuses mutation through its public methods. Deltas build new ones with :func:`derive`, which
copies the parent once (structural sharing happens one level down: the values are shared).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING: Any = object()


class FrozenDict(dict[K, V]):
    """A dict that cannot be changed after it is built."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("image mappings are immutable; build a new one with a delta")

    __setitem__ = __delitem__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return (FrozenDict, (dict(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __copy__(self) -> FrozenDict[K, V]:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenDict[K, V]:
        return self  # values are immutable too


EMPTY: FrozenDict = FrozenDict()


def freeze(items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> FrozenDict[K, V]:
    """A FrozenDict holding ``items`` (the empty one is shared)."""
    out: FrozenDict = FrozenDict(items)
    return out if out else EMPTY


def derive(base: Mapping[K, V], changes: Mapping[K, V | None]) -> FrozenDict[K, V]:
    """``base`` with ``changes`` applied; a ``None`` value deletes the key.

    One copy of ``base`` (C speed), then one store per change: the cost of a delta is the size of
    the section it touches, not of the whole image.
    """
    if not changes:
        return base if isinstance(base, FrozenDict) else freeze(base)
    out: FrozenDict = FrozenDict(base)
    put, drop = dict.__setitem__, dict.pop
    for key, value in changes.items():
        if value is None:
            drop(out, key, None)
        else:
            put(out, key, value)
    return out if out else EMPTY
