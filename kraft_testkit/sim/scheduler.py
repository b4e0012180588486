"""Virtual time: a heap of callbacks keyed by integer milliseconds.

The clock does not tick; it jumps to the next event. Events due at the same instant run in an order
drawn from the seed (a random tie key), so different seeds explore different interleavings while
one seed always replays the same one. A caller that needs several same-instant events to keep their
relative order passes the same ``tie`` to each: equal keys fall back to insertion order.

A heap entry is a list ``[at_ms, tie, seq, callback, arg]``; it doubles as the handle that
:meth:`Scheduler.cancel` takes (cancelling clears the callback; the entry is skipped when popped).
Callbacks receive the one ``arg`` they were scheduled with, so a caller can pass a bound method
created once instead of allocating a closure per event.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

from kraft_testkit.sim.errors import InvalidArgument

Handle = list  # [at_ms, tie, seq, callback | None, arg]; opaque to callers
Callback = Callable[[Any], object]

_AT, _TIE, _SEQ, _FN, _ARG = range(5)


class Scheduler:
    """A virtual clock plus the events waiting on it."""

    __slots__ = ("_heap", "_seq", "_tie", "current", "executed", "now_ms")

    def __init__(self, rng: random.Random, start_ms: int = 0) -> None:
        self.now_ms = start_ms
        self.executed = 0  # events run so far
        self.current: Handle | None = None  # the event running now (or last run)
        self._heap: list[Handle] = []
        self._seq = itertools.count(1).__next__
        self._tie = rng.getrandbits

    def call_at(self, at_ms: int, fn: Callback, arg: Any = None, tie: int | None = None) -> Handle:
        """Run ``fn(arg)`` at virtual time ``at_ms`` (not before now)."""
        if at_ms < self.now_ms:
            if type(at_ms) is not int:
                raise InvalidArgument(f"event time must be an int of ms, got {at_ms!r}")
            raise InvalidArgument(
                f"cannot schedule at {at_ms} ms, the clock is at {self.now_ms} ms"
            )
        entry = [at_ms, self._tie(32) if tie is None else tie, self._seq(), fn, arg]
        heappush(self._heap, entry)
        return entry

    def call_later(self, delay_ms: int, fn: Callback, arg: Any = None) -> Handle:
        """Run ``fn(arg)`` ``delay_ms`` from now."""
        return self.call_at(self.now_ms + delay_ms, fn, arg)

    @staticmethod
    def cancel(handle: Handle) -> None:
        """Forget a scheduled event; a no-op when it already ran or was cancelled."""
        handle[_FN] = None
        handle[_ARG] = None

    def current_key(self) -> tuple[int, int, int] | None:
        """``(at_ms, tie, seq)`` of the event running now (or last run): the order key of
        events, which a fast path must reproduce for what it computes instead of running."""
        entry = self.current
        return None if entry is None else (entry[_AT], entry[_TIE], entry[_SEQ])

    @staticmethod
    def tie_of(handle: Handle) -> int:
        """The tie key of an event: pass it to later ``call_at`` to keep them in insertion order."""
        return handle[_TIE]

    def step(self, until_ms: int | None = None) -> bool:
        """Run the next event, if one is due at or before ``until_ms``; say whether one ran."""
        heap = self._heap
        while heap:
            entry = heap[0]
            if until_ms is not None and entry[_AT] > until_ms:
                return False
            heappop(heap)
            fn = entry[_FN]
            if fn is None:
                continue
            self.now_ms = entry[_AT]
            self.executed += 1
            self.current = entry
            entry[_FN] = None  # the handle now reads as spent; cancelling it is harmless
            fn(entry[_ARG])
            return True
        return False

    def run(self, until_ms: int, after: Callable[[], object] | None = None) -> bool:
        """Run every event due at or before ``until_ms``, calling ``after()`` after each one.

        Stops early, returning True, as soon as ``after()`` returns something true; returns
        False once no event is due by ``until_ms``. The clock stays at the last event run.
        """
        heap = self._heap
        while heap:
            entry = heap[0]
            if entry[_AT] > until_ms:
                return False
            heappop(heap)
            fn = entry[_FN]
            if fn is None:
                continue
            self.now_ms = entry[_AT]
            self.executed += 1
            self.current = entry
            entry[_FN] = None
            fn(entry[_ARG])
            if after is not None and after():
                return True
        return False

    def advance_to(self, at_ms: int) -> None:
        """Move the clock forward to ``at_ms``; every event due before then must have run."""
        if at_ms < self.now_ms:
            raise InvalidArgument(f"time cannot go back from {self.now_ms} ms to {at_ms} ms")
        next_at = self.next_at()
        if next_at is not None and next_at < at_ms:
            raise InvalidArgument(f"cannot skip to {at_ms} ms: an event is due at {next_at} ms")
        self.now_ms = at_ms

    def next_at(self) -> int | None:
        """When the next live event is due; None when nothing is scheduled."""
        heap = self._heap
        while heap and heap[0][_FN] is None:
            heappop(heap)
        return heap[0][_AT] if heap else None

    def __len__(self) -> int:
        """Events still scheduled (cancelled ones that were not popped yet included)."""
        return len(self._heap)
