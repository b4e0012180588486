"""The settled prefix of a metadata log, one entry per run of NoOp batches.

An idle KRaft quorum appends a NoOp batch every ``metadata.max.idle.interval.ms`` (500 ms):
7,200 an hour on every node, which Kafka keeps on disk until retention (100 MiB or 7 days).
Below a node's own snapshot (:meth:`RaftLog.settle`) the log needs of such a batch only its
bytes and header, and a run of them differs only in base offset, timestamps and CRC, all
computable. :class:`ColdRuns` holds that prefix as entries: a :class:`NoOpRun` (first base,
count, epoch, first timestamp, stride, first position; bytes rebuilt on a read, checked equal
to the batches it replaced when it took them) or a single batch ``(batch, bytes, position)``
kept as it was. An idle day then keeps a few entries instead of 172,800 per node.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from typing import Any

from kraft_testkit.protocol.batch_patch import patched, run_template

_Q = struct.Struct(">q")
_I = struct.Struct(">i")


class NoOpRun:
    """``n`` batches of one record each at offsets ``base ...``, stamped ``ts + k * stride``,
    at byte ``position + k * size`` of one segment, every byte but offset, timestamps and CRC
    those of ``template`` (the first batch's bytes)."""

    __slots__ = ("base", "n", "position", "shared", "stride", "template", "ts")

    def __init__(self, template: bytes, base: int, ts: int, position: int,
                 shared: bool) -> None:
        self.template = template
        # the batches were the warp's shared ``SettledBytes`` (read back as such), else
        # settled batches of their own (read back as ``SettledBatch`` and plain bytes)
        self.shared = shared
        self.base = base
        self.ts = ts
        self.position = position
        self.n = 1
        self.stride = 0

    def data(self, k: int, settled: type) -> bytes:
        """The ``k``-th batch's bytes, as the one the run replaced (of the same type)."""
        if k == 0:
            return self.template
        buf = patched(self.template, self.base + k, self.ts + k * self.stride)
        return settled(buf) if self.shared else bytes(buf)

    def batch(self, k: int, settled: type, settled_batch: type) -> Any:
        """The ``k``-th batch as the log held it once settled."""
        if self.shared:
            return self.data(k, settled)
        ts = self.ts + k * self.stride
        return settled_batch(self.base + k, self.base + k, _I.unpack_from(self.template, 12)[0],
                             ts)

    def takes(self, data: bytes, base: int, position: int, shared: bool) -> bool:
        """Whether the batch ``data`` at ``base``/``position`` continues this run exactly."""
        n, tpl = self.n, self.template
        if shared is not self.shared or base != self.base + n or len(data) != len(tpl) \
                or position != self.position + n * len(tpl):
            return False
        ts = _Q.unpack_from(data, 27)[0]
        stride = ts - self.ts if n == 1 else self.stride
        if ts != self.ts + n * stride:
            return False
        if shared:
            # the warp's NoOp bytes (fastforward/noop_batches.py, the only maker of
            # SettledBytes) are built from one template by the patching data() does: equal
            # but for offset, timestamps and CRC when offset and timestamps say so, and the
            # epoch (not covered by the CRC) and the rest are compared
            if data[8:17] != tpl[8:17] or data[21:27] != tpl[21:27] \
                    or data[35:43] != data[27:35] or data[43:] != tpl[43:]:
                return False
        else:
            if patched(tpl, base, ts) != data:
                return False
        self.stride = stride
        self.n = n + 1
        return True


class ColdRuns:
    """The batches ``[first, end)`` of a log below its settled point, as entries sorted by
    offset: ``starts`` (first base) and ``index`` (the log index of their first batch)."""

    __slots__ = ("count", "end", "entries", "index", "settled", "settled_batch", "starts")

    def __init__(self, settled: type, settled_batch: type) -> None:
        self.starts = array("q")
        self.index = array("q")
        self.entries: list[NoOpRun | tuple[Any, bytes, int]] = []
        self.count = 0  # batches held
        self.end = 0  # the offset after the last batch held
        self.settled = settled  # the type of the warp's shared NoOp bytes (SettledBytes)
        self.settled_batch = settled_batch  # and of a settled batch (SettledBatch)

    def add(self, batch: Any, data: bytes, base: int, position: int) -> None:
        """Take the next batch (settled; continues the prefix)."""
        entries = self.entries
        shared = type(batch) is self.settled
        if entries:
            last = entries[-1]
            if type(last) is NoOpRun and last.takes(data, base, position, shared):
                self.count += 1
                self.end = base + 1
                return
        if (shared or type(batch) is self.settled_batch) and run_template(data):
            entry: Any = NoOpRun(data, base, _Q.unpack_from(data, 27)[0], position, shared)
        else:
            entry = (batch, data, position)
        self.starts.append(base)
        self.index.append(self.count)
        entries.append(entry)
        self.count += 1
        self.end = batch.last_offset + 1

    def extend(self, batches: Any, data: Any, bases: Any, positions: Any, j: int) -> None:
        """:meth:`add` of the first ``j`` batches of these columns, a run of the warp's NoOps
        taken in one loop: a ``SettledBytes`` in both columns (built only by
        fastforward/noop_batches.py from one template per epoch) continues the run when its
        length, epoch, offset, position and timestamp say so."""
        settled, unpack, entries = self.settled, _Q.unpack_from, self.entries
        k = 0
        while k < j:
            last = entries[-1] if entries else None
            if type(last) is NoOpRun and last.shared and last.n > 1:
                tpl = last.template
                size, epoch, n0 = len(tpl), tpl[12:16], last.n
                base, pos, ts, stride = last.base, last.position, last.ts, last.stride
                n = n0
                while k < j:
                    d = data[k]
                    if type(d) is not settled or batches[k] is not d or len(d) != size \
                            or bases[k] != base + n or positions[k] != pos + n * size \
                            or unpack(d, 27)[0] != ts + n * stride or d[12:16] != epoch:
                        break
                    n += 1
                    k += 1
                if n != n0:
                    last.n = n
                    self.count += n - n0
                    self.end = base + n
                if k >= j:
                    break
            self.add(batches[k], data[k], bases[k], positions[k])
            k += 1

    # ------------------------------------------------------------------ reading

    def locate(self, i: int) -> tuple[Any, int]:
        """The entry holding the ``i``-th batch and the batch's place in it."""
        e = bisect_right(self.index, i) - 1
        return self.entries[e], i - self.index[e]

    def base(self, i: int) -> int:
        entry, k = self.locate(i)
        return entry.base + k if type(entry) is NoOpRun else entry[0].base_offset

    def data(self, i: int) -> bytes:
        entry, k = self.locate(i)
        return entry.data(k, self.settled) if type(entry) is NoOpRun else entry[1]

    def batch(self, i: int) -> Any:
        """The batch: a run's as its bytes (``SettledBytes`` answer as a settled batch)."""
        entry, k = self.locate(i)
        if type(entry) is NoOpRun:
            return entry.batch(k, self.settled, self.settled_batch)
        return entry[0]

    def position(self, i: int) -> int:
        entry, k = self.locate(i)
        return entry.position + k * len(entry.template) if type(entry) is NoOpRun else entry[2]

    def count_le(self, offset: int) -> int:
        """How many batches start at or below ``offset`` (``bisect_right`` over the bases)."""
        e = bisect_right(self.starts, offset) - 1
        if e < 0:
            return 0
        entry = self.entries[e]
        if type(entry) is NoOpRun:
            return self.index[e] + min(offset - entry.base, entry.n - 1) + 1
        return self.index[e] + 1

    def max_timestamp_batches(self, from_offset: int) -> list[Any]:
        """Batches at or above ``from_offset`` among which the first with the largest
        timestamp is the first with the largest timestamp of all of them (a segment's cut)."""
        out = []
        for e in range(max(bisect_right(self.starts, from_offset) - 1, 0), len(self.entries)):
            entry = self.entries[e]
            if type(entry) is not NoOpRun:
                if entry[0].base_offset >= from_offset:
                    out.append(entry[0])
                continue
            k0 = max(from_offset - entry.base, 0)
            if k0 < entry.n:
                out.append(entry.batch(entry.n - 1 if entry.stride > 0 else k0, self.settled,
                                       self.settled_batch))
        return out

    def drop_before(self, offset: int) -> None:
        """Forget the batches below ``offset`` (the log start moved past them)."""
        keep = self.count_le(offset - 1)  # batches starting below offset
        if keep == 0:
            return
        entries, starts, index = self.entries, self.starts, self.index
        e = bisect_right(index, keep) - 1  # the entry holding the first batch kept
        if e >= 0 and keep < self.count:
            entry = entries[e]
            k = keep - index[e]
            if k and type(entry) is NoOpRun:
                rest = NoOpRun(entry.data(k, self.settled), entry.base + k,
                               entry.ts + k * entry.stride,
                               entry.position + k * len(entry.template), entry.shared)
                rest.n, rest.stride = entry.n - k, entry.stride
                entries[e], starts[e], index[e] = rest, rest.base, keep
        else:
            e = len(entries)
        del entries[:e], starts[:e], index[:e]
        for j in range(len(index)):
            index[j] -= keep
        self.count -= keep

    def held(self) -> list[Any]:
        """What the prefix holds (for memory accounting)."""
        out: list[Any] = [self.starts, self.index, self.entries]
        for entry in self.entries:
            out.append(entry)
            out.extend((entry.template,) if type(entry) is NoOpRun else entry[:2])
        return out


class Column:
    """One of a log's columns (``bases``, ``batches``, ``data``, ``positions``) over its cold
    prefix and its list after it: indexed, sliced, iterated, bisected as the list was."""

    __slots__ = ("cold", "hot", "kind")

    def __init__(self, cold: ColdRuns, hot: Any, kind: str) -> None:
        self.cold, self.hot, self.kind = cold, hot, kind

    def __len__(self) -> int:
        return self.cold.count + len(self.hot)

    def __getitem__(self, i: Any) -> Any:
        n = self.cold.count
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(n + len(self.hot)))]
        if i < 0:
            i += n + len(self.hot)
            if i < 0:
                raise IndexError(i)
        if i >= n:
            return self.hot[i - n]
        return getattr(self.cold, self.kind)(i)

    def __setitem__(self, i: int, value: Any) -> None:
        n = self.cold.count
        if i < 0:
            i += n + len(self.hot)
        if i < n:
            raise IndexError("the settled prefix is not written in place")
        self.hot[i - n] = value

    def __iter__(self) -> Any:
        get = getattr(self.cold, self.kind)
        for i in range(self.cold.count):
            yield get(i)
        yield from self.hot

    def __eq__(self, other: object) -> bool:
        try:
            return len(self) == len(other) and all(  # type: ignore[arg-type]
                a == b for a, b in zip(self, other))  # type: ignore[call-overload]
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def index(self, value: Any) -> int:
        for i, v in enumerate(self):
            if v == value:
                return i
        raise ValueError(value)


__all__ = ["ColdRuns", "Column", "NoOpRun"]
