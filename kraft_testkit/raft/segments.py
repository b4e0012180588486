"""One segment of the metadata log: ``<base>.log`` with its ``.index`` and ``.timeindex``.

Kafka's rules (``LogSegment``, ``OffsetIndex``, ``TimeIndex`` of Kafka 3.x/4.x), kept here so the
files a kit node leaves are the files a Kafka node would:

* An index entry is added when more than ``index.interval.bytes`` were appended since the last
  one: the offset index gets ``(last offset of the batch - base, byte position of the batch)``,
  the time index ``(largest timestamp so far, offset of that batch - base)`` if that timestamp is
  larger than its last entry's. Entries are big-endian int32/int32 and int64/int32.
* A segment rolls when the next batch would take it past ``segment.bytes``, when that batch's
  timestamp is more than ``segment.ms`` after the segment's first batch, or when an index is full
  (``segment.index.bytes`` / entry size entries). The new segment is named after the batch's
  base offset; the old one gets a last time-index entry for its largest timestamp.
* Truncation keeps the index entries of offsets below the cut.
* Recovery rebuilds both indexes from the segment's batches, as Kafka's metadata log does on every
  start (it opens its log as after an unclean shutdown, from offset 0), and rewrites the files when
  they differ: a torn, truncated or stale index is not an error.

Kafka preallocates the active segment's index files (``segment.index.bytes`` of zeros) and trims
them on roll or close; the kit writes them at their valid size all along (what a trim leaves), so a
directory holds no megabytes of zeros per node. Readers see the same entries either way.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.sim.node import Append, Delete, DiskOp, Replace, Truncate

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1
_NEVER = 1 << 62


@dataclass(frozen=True, slots=True)
class LogConfig:
    """What the segments and the cleaner follow (Kafka's ``MetadataLogConfig`` and the topic
    defaults Kafka's metadata log runs with)."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096
    index_max_bytes: int = 10 * 1024 * 1024
    retention_bytes: int = 100 * 1024 * 1024
    retention_ms: int = 7 * 24 * 3600 * 1000


def file_names(directory: str, base: int) -> tuple[str, str, str]:
    """``(<base>.log, <base>.index, <base>.timeindex)`` under ``directory``."""
    stem = f"{directory}/{base:020d}"
    return f"{stem}.log", f"{stem}.index", f"{stem}.timeindex"


class IndexEntries:
    """A segment's index entries ``(a, b)`` as arithmetic runs: each run its first entry, its
    step and its length, in arrays (an idle log adds an entry every 57 NoOp batches, 4,104
    bytes and 28.5 s later: ~126 an hour on every node, which a run holds in 40 bytes). Read and
    compared as a list of tuples."""

    __slots__ = ("a", "at", "b", "da", "db", "n")

    def __init__(self, pairs: object = ()) -> None:
        self.a, self.b = array("q"), array("q")  # each run's first entry
        self.da, self.db = array("q"), array("q")  # its step
        self.at = array("q")  # the index of its first entry
        self.n = 0  # entries in all
        for pair in pairs:  # type: ignore[attr-defined]
            self.append(pair)

    def append(self, pair: tuple[int, int]) -> None:
        x, y = pair
        e = len(self.a) - 1
        if e >= 0:
            k = self.n - self.at[e]  # entries in the last run
            if k == 1:
                self.da[e], self.db[e] = x - self.a[e], y - self.b[e]
                self.n += 1
                return
            if x == self.a[e] + k * self.da[e] and y == self.b[e] + k * self.db[e]:
                self.n += 1
                return
        self.a.append(x)
        self.b.append(y)
        self.da.append(0)
        self.db.append(0)
        self.at.append(self.n)
        self.n += 1

    def held_bytes(self) -> int:
        """The bytes of the arrays (for the memory test and benchmark)."""
        return 8 * 5 * len(self.a)

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0

    def __getitem__(self, i: int) -> tuple[int, int]:
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("index entry out of range")
        e = bisect_right(self.at, i) - 1
        k = i - self.at[e]
        return self.a[e] + k * self.da[e], self.b[e] + k * self.db[e]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        ends = list(self.at[1:]) + [self.n]
        for a, b, da, db, start, end in zip(self.a, self.b, self.da, self.db, self.at, ends):
            for k in range(end - start):
                yield a + k * da, b + k * db

    def __eq__(self, other: object) -> bool:
        try:
            return list(self) == list(other)  # type: ignore[call-overload]
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IndexEntries({list(self)!r})"


class Segment:
    """The bookkeeping of one segment; the batches themselves live in :class:`RaftLog`."""

    __slots__ = ("base", "first_ts", "full", "index", "log", "max_ts", "max_ts_offset",
                 "offsets", "roll_at", "since", "size", "timeindex", "times")

    def __init__(self, directory: str, base: int) -> None:
        self.base = base
        self.log, self.index, self.timeindex = file_names(directory, base)
        self.size = 0
        self.first_ts: int | None = None  # Kafka's rollingBasedTimestamp
        self.roll_at = _NEVER  # a batch stamped after this rolls the segment (first_ts + ms)
        self.full = False  # an index is full: the next batch rolls the segment
        self.max_ts = NO_TIMESTAMP
        self.max_ts_offset = -1
        self.since = 0  # bytes appended since the last index entry
        self.offsets = IndexEntries()  # (absolute last offset, position)
        self.times = IndexEntries()  # (timestamp, absolute offset)

    def files(self) -> tuple[str, str, str]:
        return self.log, self.index, self.timeindex

    def create_ops(self) -> list[DiskOp]:
        """Create the three (empty) files, as Kafka does on a roll."""
        return [Append(self.log, b""), Append(self.index, b""), Append(self.timeindex, b"")]

    def delete_ops(self) -> list[DiskOp]:
        return [Delete(self.log), Delete(self.index), Delete(self.timeindex)]

    # ------------------------------------------------------------------ rolling

    def should_roll(self, batch: RecordBatch, size: int, config: LogConfig) -> bool:
        """Kafka's ``LogSegment.shouldRoll`` before appending ``batch`` (``size`` bytes): by
        size, by age (``roll_at``) or a full index. An empty segment takes any batch (Kafka
        would recreate it in place)."""
        return self.size > 0 and (self.size > config.segment_bytes - size
                                  or batch.max_timestamp > self.roll_at or self.full)

    def close_ops(self) -> list[DiskOp]:
        """Kafka's ``onBecomeInactiveSegment``: the largest timestamp goes into the time index."""
        op = self._time_entry()
        return [op] if op is not None else []

    # ------------------------------------------------------------------ appending

    def add(self, batch: RecordBatch, size: int, config: LogConfig) -> list[DiskOp] | None:
        """Account for ``batch`` appended at the end (``size`` bytes); the index entries due."""
        position = self.size
        ts = batch.max_timestamp
        if position == 0:
            self._started(ts, config)
        if ts > self.max_ts:
            self.max_ts, self.max_ts_offset = ts, batch.last_offset
        self.size = position + size
        if self.since <= config.index_interval_bytes:
            self.since += size
            return None
        last = batch.last_offset
        self.offsets.append((last, position))
        ops: list[DiskOp] = [Append(self.index, OFFSET_ENTRY.pack(last - self.base, position))]
        op = self._time_entry()
        if op is not None:
            ops.append(op)
        self.since = size
        self.full = (len(self.offsets) >= config.index_max_bytes // OFFSET_ENTRY.size
                     or len(self.times) >= config.index_max_bytes // TIME_ENTRY.size)
        return ops

    def add_run(self, batches: list[RecordBatch], size: int, config: LogConfig
                ) -> tuple[bytes, bytes]:
        """:meth:`add` for a run of batches of ``size`` bytes each that the caller checked
        will not roll the segment (bulk NoOps): the index and time-index bytes the run adds,
        each the concatenation of what the separate :meth:`add` calls would have appended."""
        offset_out = bytearray()
        time_out = bytearray()
        interval = config.index_interval_bytes
        position, since, base = self.size, self.since, self.base
        max_ts, max_ts_offset = self.max_ts, self.max_ts_offset
        times = self.times
        last_time = times[-1][0] if times else NO_TIMESTAMP
        pack_offset, pack_time = OFFSET_ENTRY.pack, TIME_ENTRY.pack
        for batch in batches:
            ts = batch.max_timestamp
            if position == 0:
                self._started(ts, config)
            if ts > max_ts:
                max_ts, max_ts_offset = ts, batch.last_offset
            if since <= interval:
                since += size
                position += size
                continue
            last = batch.last_offset
            self.offsets.append((last, position))
            offset_out += pack_offset(last - base, position)
            if max_ts > last_time:  # _time_entry
                times.append((max_ts, max_ts_offset))
                time_out += pack_time(max_ts, max_ts_offset - base)
                last_time = max_ts
            since = size
            position += size
            self.full = (len(self.offsets) >= config.index_max_bytes // OFFSET_ENTRY.size
                         or len(times) >= config.index_max_bytes // TIME_ENTRY.size)
        self.size, self.since = position, since
        self.max_ts, self.max_ts_offset = max_ts, max_ts_offset
        return bytes(offset_out), bytes(time_out)

    def _started(self, first_ts: int, config: LogConfig) -> None:
        self.first_ts = first_ts
        self.roll_at = first_ts + config.segment_ms if first_ts >= 0 else _NEVER

    def _time_entry(self) -> DiskOp | None:
        """Kafka's ``TimeIndex.maybeAppend``: only a timestamp larger than the last entry's."""
        last = self.times[-1][0] if self.times else NO_TIMESTAMP
        if self.max_ts <= last:
            return None
        self.times.append((self.max_ts, self.max_ts_offset))
        return Append(self.timeindex, TIME_ENTRY.pack(self.max_ts, self.max_ts_offset - self.base))

    # ------------------------------------------------------------------ truncating

    def truncate(self, offset: int, position: int, kept: list[RecordBatch]) -> list[DiskOp]:
        """Cut the segment at ``offset`` (a batch boundary at byte ``position``); ``kept`` are
        the batches left in it. Index entries of offsets below the cut stay."""
        ops: list[DiskOp] = []
        if position < self.size:
            ops.append(Truncate(self.log, position))
        n = len(self.offsets)
        self.offsets = IndexEntries(e for e in self.offsets if e[0] < offset)
        if len(self.offsets) != n:
            ops.append(Truncate(self.index, len(self.offsets) * OFFSET_ENTRY.size))
        n = len(self.times)
        self.times = IndexEntries(e for e in self.times if e[1] < offset)
        if len(self.times) != n:
            ops.append(Truncate(self.timeindex, len(self.times) * TIME_ENTRY.size))
        self.size = position
        self.since = 0
        self.full = False  # (Kafka resizes the indexes back to their full size)
        if position == 0:
            self.first_ts, self.roll_at = None, _NEVER
        self.max_ts, self.max_ts_offset = NO_TIMESTAMP, -1
        for b in kept:
            if b.max_timestamp > self.max_ts:
                self.max_ts, self.max_ts_offset = b.max_timestamp, b.last_offset
        return ops

    # ------------------------------------------------------------------ recovery

    def rebuild(self, batches: list[tuple[int, RecordBatch, int]], config: LogConfig) -> None:
        """Kafka's ``LogSegment.recover``: the indexes from ``(position, batch, size)``."""
        self.offsets, self.times = IndexEntries(), IndexEntries()
        self.max_ts, self.max_ts_offset = NO_TIMESTAMP, -1
        interval = config.index_interval_bytes
        last_entry = 0
        for position, batch, size in batches:
            if position == 0:
                self._started(batch.max_timestamp, config)
            if batch.max_timestamp > self.max_ts:
                self.max_ts, self.max_ts_offset = batch.max_timestamp, batch.last_offset
            if position - last_entry > interval:
                self.offsets.append((batch.last_offset, position))
                self._time_entry()
                last_entry = position
            self.size = position + size
        self._time_entry()  # "a normally closed segment always appends the biggest timestamp"
        self.since = 0
        self.full = (len(self.offsets) >= config.index_max_bytes // OFFSET_ENTRY.size
                     or len(self.times) >= config.index_max_bytes // TIME_ENTRY.size)

    def index_bytes(self) -> bytes:
        return b"".join(OFFSET_ENTRY.pack(o - self.base, p) for o, p in self.offsets)

    def timeindex_bytes(self) -> bytes:
        return b"".join(TIME_ENTRY.pack(t, o - self.base) for t, o in self.times)

    def repair_ops(self, files: dict[str, bytes] | object) -> list[DiskOp]:
        """Rewrite an index file that is missing or differs from the rebuilt one."""
        ops: list[DiskOp] = []
        for name, want in ((self.index, self.index_bytes()),
                           (self.timeindex, self.timeindex_bytes())):
            if files.get(name) != want:  # type: ignore[attr-defined]
                ops.append(Replace(name, want))
        return ops
