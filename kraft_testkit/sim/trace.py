"""The record of a run: every event, compact, with a digest that is the same in any process.

An event is a tuple ``(time_ms, kind, node, peer, detail)`` of ints, short strs and None: nothing
that depends on ``id()`` or ``hash()``. Events are folded into a running sha256 in batches, and only
the most recent ``keep`` of them stay in memory (all of them with ``keep=None``), so a long run
costs bounded memory while its digest still covers everything.
"""

from __future__ import annotations

import hashlib
from collections import deque

from kraft_testkit.sim.errors import InvalidArgument

Event = tuple[int, str, "int | None", "int | None", str]

_BATCH = 2048


def format_event(event: Event) -> str:
    """One line for humans: ``1234 ms  n2 recv <- n1 Ping``, ``1234 ms  n1 drop -> n2 Ping (loss)``.

    ``recv`` and ``queue`` are told from the receiver's side; every other message event (send, drop,
    dup, hold, release, vanish) from the sender's.
    """
    time_ms, kind, node, peer, detail = event
    who = "--" if node is None else f"n{node}"
    arrow = ""
    if peer is not None:
        arrow = f" {'<-' if kind in ('recv', 'queue') else '->'} n{peer}"
    return f"{time_ms:>9} ms  {who:>4} {kind}{arrow} {detail}".rstrip()


def _canonical(event: Event) -> str:
    time_ms, kind, node, peer, detail = event
    return f"{time_ms}\x1f{kind}\x1f{node}\x1f{peer}\x1f{detail}\n"


# _canonical as one %-format of the event tuple (str() of each field, as the f-string does):
# folding a batch is then one C-level format per event, not a Python call
_CANONICAL = "%s\x1f%s\x1f%s\x1f%s\x1f%s\n"


class Trace:
    """Append-only event log with a streaming digest."""

    __slots__ = ("_folded", "_kept", "_pending", "_sha")

    def __init__(self, keep: int | None = 10_000) -> None:
        if keep is not None and (type(keep) is not int or keep < 1):
            raise InvalidArgument(
                f"trace_keep must be an int >= 1 or None (keep all), got {keep!r}"
            )
        self._pending: list[Event] = []
        self._kept: deque[Event] = deque(maxlen=keep)
        self._sha = hashlib.sha256()
        self._folded = 0

    def record(
        self, time_ms: int, kind: str, node: int | None, peer: int | None = None, detail: str = ""
    ) -> None:
        pending = self._pending
        pending.append((time_ms, kind, node, peer, detail))
        if len(pending) >= _BATCH:
            self._fold()

    def _fold(self) -> None:
        pending = self._pending
        if pending:
            fmt = _CANONICAL
            self._sha.update("".join([fmt % e for e in pending]).encode())
            self._kept.extend(pending)
            self._folded += len(pending)
            pending.clear()

    def digest(self) -> str:
        """sha256 (hex) over the canonical encoding of every event so far."""
        self._fold()
        return self._sha.hexdigest()

    def events(self) -> list[Event]:
        """The events still in memory, oldest first (all of them when ``keep`` is None)."""
        self._fold()
        return list(self._kept)

    def tail(self, n: int = 30) -> list[str]:
        """The last ``n`` events, formatted for error messages."""
        self._fold()
        kept = self._kept
        start = max(0, len(kept) - n)
        return [format_event(kept[i]) for i in range(start, len(kept))]

    def __len__(self) -> int:
        """Events recorded so far (including those no longer kept in memory)."""
        return self._folded + len(self._pending)
