"""What the Raft invariants remember of each committed batch, in a few bytes a batch or less.

The ``committed-prefix`` invariant compares every batch a replica newly knows as committed with
the batch first seen at that offset: its last offset and its key (stored CRC and length). An
idle day commits 172,800 NoOp batches; a dict of tuples held ~200 bytes for each, runs of
batches and a CRC each (the record before this module) 4 bytes, 0.7 MB a day. A run of NoOp
batches differs only in offset, timestamps and CRC: once a run has shown it is one (every batch
its first batch's bytes with the offset and a timestamp on one stride patched in, the CRC
right), the CRCs of its batches more than :data:`WINDOW` behind its newest are dropped and
recomputed from the first batch when asked for (a replica that restarts far behind). The
newest stay stored: the other replicas compare the batches just committed, on every step.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right

from kraft_testkit.protocol.batch_patch import patched, run_template

_Q = struct.Struct(">q")
_CRC = struct.Struct(">I")
_HEADER = 61  # a magic-2 batch header
#: CRCs a NoOp run keeps stored behind its newest batch (a bit over an hour of NoOps)
WINDOW = 8_192
#: NoOp runs drop their older CRCs every this many batches added
_TRIM_EVERY = 16_384


class CommittedRecord:
    """Each committed batch as first compared: base offset -> (last offset, key), as runs of
    batches that follow each other with one span (last - base) and one length. A run's CRCs are
    in ``crcs`` from ``at[e]``, for its batches ``kept[e]`` on; a NoOp run (``tpl[e]`` >= 0)
    rebuilds those before from ``templates[tpl[e]]``, ``ts0[e]`` and ``stride[e]``. A batch
    below the newest run that starts none (a replica holding batches the first ones did not)
    goes in ``extra``."""

    __slots__ = ("_candidate", "_since_trim", "_untrimmed", "at", "count", "crcs", "extra",
                 "first", "kept", "lens", "ns", "spans", "starts", "stride", "templates", "tpl",
                 "ts0")

    def __init__(self) -> None:
        self.starts = array("q")  # each run's first base offset
        self.ns = array("q")  # its batches
        self.first = array("q")  # the batches of the runs before it
        self.spans = array("q")  # last - base of each of its batches
        self.lens = array("q")  # the length of each of its batches
        self.at = array("q")  # where its stored CRCs start in crcs
        self.kept = array("q")  # the first of its batches whose CRC is stored
        self.tpl = array("q")  # its template's index in templates, -1: not a NoOp run
        self.ts0 = array("q")  # its first batch's timestamp
        self.stride = array("q")  # and the step between its batches' timestamps
        self.templates: list[bytes] = []
        self.crcs = array("I")
        self.extra: dict[int, tuple[int, int]] = {}
        self.count = 0
        self._candidate: bytes | None = None  # the newest run's first batch, if one record
        self._untrimmed: list[int] = []  # NoOp runs that still store every CRC they may drop
        self._since_trim = 0

    def __len__(self) -> int:
        return self.count

    def held_bytes(self) -> int:
        """The bytes of the arrays and templates (for the memory test and benchmark)."""
        arrays = (self.starts, self.ns, self.first, self.spans, self.lens, self.at, self.kept,
                  self.tpl, self.ts0, self.stride, self.crcs)
        return sum(a.itemsize * len(a) for a in arrays) + 64 * len(self.extra) + \
            sum(len(t) + 33 for t in self.templates)

    def get(self, base: int) -> tuple[int, int] | None:
        starts = self.starts
        e = len(starts) - 1  # the newest first: most lookups are of the batches just committed
        if e >= 0 and starts[e] > base:
            e = bisect_right(starts, base) - 1
        if e >= 0:
            step = self.spans[e] + 1
            k, r = divmod(base - starts[e], step)
            if not r and k < self.ns[e]:
                kept = self.kept[e]
                if k >= kept:
                    crc = self.crcs[self.at[e] + k - kept]
                else:  # a NoOp run's batch more than WINDOW behind: rebuilt
                    data = patched(self.templates[self.tpl[e]], base,
                                    self.ts0[e] + k * self.stride[e])
                    crc = _CRC.unpack_from(data, 17)[0]
                return base + step - 1, crc << 32 | self.lens[e]
        return self.extra.get(base)

    def add(self, base: int, last: int, key: int, data: bytes | None = None) -> None:
        """Remember the batch at ``base``; given its bytes, a run of NoOps is recognised."""
        self.count += 1
        crc, length = key >> 32, key & 0xFFFFFFFF
        starts = self.starts
        e = len(starts) - 1
        if e >= 0:
            step = self.spans[e] + 1
            n = self.ns[e]
            end = starts[e] + n * step
            if base == end and last - base + 1 == step and length == self.lens[e]:
                if self.tpl[e] >= 0 and not self._continues(e, n, base, data):
                    return self._start(base, last, length, crc, data)  # the NoOp run ends
                if n == 1 and self._candidate is not None:
                    self._promote(e, base, data)
                self.ns[e] = n + 1
                self.crcs.append(crc)
                self._since_trim += 1
                if self._since_trim >= _TRIM_EVERY:
                    self._trim()
                return
            if base < end:  # a replica that holds batches below the others' (rare)
                self.extra[base] = (last, key)
                return
        self._start(base, last, length, crc, data)

    def _start(self, base: int, last: int, length: int, crc: int, data: bytes | None) -> None:
        e = len(self.starts) - 1
        self.first.append(self.first[e] + self.ns[e] if e >= 0 else 0)
        self.starts.append(base)
        self.ns.append(1)
        self.spans.append(last - base)
        self.lens.append(length)
        self.at.append(len(self.crcs))
        self.kept.append(0)
        self.tpl.append(-1)
        self.ts0.append(0)
        self.stride.append(0)
        self.crcs.append(crc)
        # its first batch, checked only if a second one continues the run (_promote)
        self._candidate = data if last == base and data is not None else None

    def _promote(self, e: int, base: int, data: bytes | None) -> None:
        """Run ``e`` becomes a NoOp run if its second batch is its first one patched."""
        template, self._candidate = self._candidate, None
        if data is None or len(data) < _HEADER or template is None or not run_template(template):
            return
        template = bytes(template)
        ts0, ts = _Q.unpack_from(template, 27)[0], _Q.unpack_from(data, 27)[0]
        if patched(template, base, ts) != data:
            return
        self.tpl[e] = len(self.templates)
        self.templates.append(template)
        self.ts0[e], self.stride[e] = ts0, ts - ts0
        self._untrimmed.append(e)

    def _continues(self, e: int, n: int, base: int, data: bytes | None) -> bool:
        """Whether ``data`` is the next batch of NoOp run ``e`` (``n`` batches so far)."""
        if data is None or len(data) < _HEADER:
            return False
        ts = self.ts0[e] + n * self.stride[e]
        return _Q.unpack_from(data, 27)[0] == ts and \
            patched(self.templates[self.tpl[e]], base, ts) == data

    def _trim(self) -> None:
        """Drop the CRCs of NoOp runs' batches more than :data:`WINDOW` batches behind the
        newest (the runs after the oldest such run are moved down in ``crcs``)."""
        self._since_trim = 0
        last = len(self.starts) - 1
        total = self.first[last] + self.ns[last]
        change = {}
        for e in self._untrimmed:
            n = self.ns[e]
            keep_from = min(n, max(self.kept[e], n - max(WINDOW - (total - self.first[e] - n), 0)))
            if keep_from > self.kept[e]:
                change[e] = keep_from
        if not change:
            return
        e0 = min(change)
        old = self.crcs
        crcs = old[:self.at[e0]]
        for e in range(e0, last + 1):
            kept, n, at = self.kept[e], self.ns[e], self.at[e]
            keep_from = change.get(e, kept)
            self.at[e] = len(crcs)
            self.kept[e] = keep_from
            crcs.extend(old[at + keep_from - kept:at + n - kept])
        self.crcs = crcs
        self._untrimmed = [e for e in self._untrimmed if self.kept[e] < self.ns[e]]


__all__ = ["WINDOW", "CommittedRecord"]
