"""Filters: rules that pick messages on the wire by type or predicate, and by link.

The network applies the first matching filter to each message it sends: drop it, hold it until
released, or delay it. A filter may expire after ``count`` matches.
"""

from __future__ import annotations

from collections.abc import Callable

from kraft_testkit.sim.errors import InvalidArgument
from kraft_testkit.sim.topology import NodeSet

Match = type | tuple[type, ...] | Callable[[object], bool] | None
"""None: every message; a type or tuple of types: isinstance; else a predicate on the message."""


def _describe(match: Match) -> str:
    """A name for a match that is the same in every process (no reprs with addresses)."""
    if match is None:
        return "*"
    if isinstance(match, tuple):
        return "|".join(_describe(m) for m in match)
    return getattr(match, "__name__", None) or type(match).__name__


def describe_nodes(nodes: NodeSet) -> str:
    return "*" if nodes is None else str(sorted(nodes))


class Filter:
    """A rule on outgoing messages: ``drop``, ``hold`` or ``delay`` those that match."""

    __slots__ = ("_dsts", "_match", "_srcs", "action", "delay_ms", "name", "remaining")

    def __init__(
        self,
        action: str,
        match: Match,
        srcs: NodeSet,
        dsts: NodeSet,
        delay_ms: int,
        count: int | None,
    ) -> None:
        if match is not None and not isinstance(match, (type, tuple)) and not callable(match):
            raise InvalidArgument(
                f"a filter matches a type, a tuple of types or a predicate, got {match!r}"
            )
        if count is not None and (type(count) is not int or count < 1):
            raise InvalidArgument(f"count must be an int >= 1 or None, got {count!r}")
        self.action = action
        self.delay_ms = delay_ms
        self.remaining = count
        self._match = match
        self._srcs = srcs
        self._dsts = dsts
        what = _describe(match)
        self.name = f"{action} {what}" + (f" +{delay_ms}ms" if action == "delay" else "")

    def matches(self, src: int, dst: int, msg: object) -> bool:
        if self._srcs is not None and src not in self._srcs:
            return False
        if self._dsts is not None and dst not in self._dsts:
            return False
        match = self._match
        if match is None:
            return True
        if isinstance(match, (type, tuple)):
            return isinstance(msg, match)
        return bool(match(msg))

    def __repr__(self) -> str:
        return f"Filter({self.name})"
