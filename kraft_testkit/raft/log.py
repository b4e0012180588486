"""The replicated log of ``__cluster_metadata-0``: batches in memory, mirrored to Kafka's files.

The log holds whole record batches from its start offset to its end offset, and the epoch of each
run of batches (Kafka's leader-epoch cache). Every change returns the disk operations that mirror
it in Kafka's layout (``KafkaMetadataLog`` over ``UnifiedLog``):

* segments ``<base:020d>.log`` with their ``.index`` and ``.timeindex``
  (:mod:`kraft_testkit.raft.segments`), rolled by size, by age or when an index is full;
* a truncation after divergence deletes the segments above the cut and cuts the one holding it;
* snapshots ``<end:020d>-<epoch:010d>.checkpoint`` accumulate; a snapshot taken here does not move
  the log start. :meth:`RaftLog.maybe_clean` (Kafka's ``maybeClean``, every minute) deletes the
  oldest snapshots while the log and snapshots exceed ``metadata.max.retention.bytes`` or a
  snapshot is older than ``metadata.max.retention.ms``, moving the log start to the next snapshot
  and deleting the segments wholly below it. A snapshot fetched from the leader past the log's end
  truncates the log fully and starts it there (``truncateToLatestSnapshot``).

:func:`kraft_testkit.raft.log_recovery.recover_log` reads the files back (that module imports
this one, never the other way).

Size: one class, the log's every change and read over its two parts (the settled prefix's
runs of :mod:`kraft_testkit.raft.log_runs` and the columns after it), which must stay
together to keep the columns in step.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any, NamedTuple

from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.raft.errors import CorruptFile, LogError
from kraft_testkit.raft.log_runs import ColdRuns, Column
from kraft_testkit.raft.segments import OFFSET_ENTRY, TIME_ENTRY, LogConfig, Segment
from kraft_testkit.raft.snapshot import Snapshot, SnapshotInfo, file_name
from kraft_testkit.sim.node import Append, Delete, DiskOp, Replace

DIR = "__cluster_metadata-0"
QUORUM_STATE = f"{DIR}/quorum-state"
LEADER_EPOCH_CHECKPOINT = f"{DIR}/leader-epoch-checkpoint"
_LENGTH = struct.Struct(">i")


def segment_name(base_offset: int) -> str:
    return f"{DIR}/{base_offset:020d}.log"


def snapshot_path(end_offset: int, epoch: int) -> str:
    return f"{DIR}/{file_name(end_offset, epoch)}"


def encode_epoch_checkpoint(entries: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> bytes:
    """Kafka's ``leader-epoch-checkpoint``: version 0, the count, then ``epoch start-offset``."""
    return ("0\n%d\n" % len(entries) + "".join(f"{e} {o}\n" for e, o in entries)).encode()


def decode_epoch_checkpoint(raw: bytes, path: str = LEADER_EPOCH_CHECKPOINT
                            ) -> list[tuple[int, int]]:
    """Parse a ``leader-epoch-checkpoint``; :class:`CorruptFile` names the line that is wrong
    (Kafka's CheckpointFile refuses a malformed file)."""
    lines = raw.decode("utf-8", "replace").splitlines()
    if not lines or lines[0].strip() != "0":
        raise CorruptFile(path, f"line 1: version {lines[0].strip() if lines else ''!r}, "
                                f"expected 0")
    if len(lines) < 2 or not lines[1].strip().isdigit():
        raise CorruptFile(path, "line 2: the number of entries is missing or not a number")
    count = int(lines[1])
    if len(lines) - 2 != count:
        raise CorruptFile(path, f"line 2 says {count} entries, the file has {len(lines) - 2}")
    entries = []
    for n, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != 2 or not all(x.isdigit() for x in parts):
            raise CorruptFile(path, f"line {n}: {line!r} is not 'epoch start-offset'")
        entries.append((int(parts[0]), int(parts[1])))
    return entries


_RUN_START = itemgetter(1)  # of an (epoch, start offset) entry of RaftLog.epochs


class SettledBatch(NamedTuple):
    """What the log still needs of a batch below a snapshot this node took (a quarter of the
    memory of the decoded batch): Kafka keeps such batches on disk until retention, and with
    Kafka's defaults (100 MiB, 7 days) a long time warp would otherwise hold them all decoded.
    Fetches read their bytes (``RaftLog.data``); no listener is handed them again."""

    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    max_timestamp: int


_Q = struct.Struct(">q")
_I = struct.Struct(">i")


class SettledBytes(bytes):
    """The bytes of a batch shared by every node (the warp's NoOp batches, built once for all
    of them: fastforward/noop_batches.py) that also answer as its :class:`SettledBatch`, read
    from the batch header. Settling such a batch puts its bytes object in its place: no
    object per batch per node, and the decoded batches go once every node took a snapshot
    past them (an idle hour's 7,200 NoOps on 3 + 3 held ~2.5 MB of them, for good)."""

    __slots__ = ()

    @property
    def base_offset(self) -> int:
        return _Q.unpack_from(self, 0)[0]

    @property
    def last_offset(self) -> int:
        return _Q.unpack_from(self, 0)[0] + _I.unpack_from(self, 23)[0]  # lastOffsetDelta

    @property
    def partition_leader_epoch(self) -> int:
        return _I.unpack_from(self, 12)[0]

    @property
    def max_timestamp(self) -> int:
        return _Q.unpack_from(self, 35)[0]


#: ids of records tuples shared by many batches on every node (the warp's NoOp batches,
#: fastforward/noop_run.py, whose bytes are :class:`SettledBytes`): settling such a batch
#: puts its shared bytes in its place instead of a :class:`SettledBatch` per node
SHARED_RECORDS: set[int] = set()


class RaftLog:
    """Batches ``[start_offset, end_offset)``, their epochs, segments and retained snapshots."""

    __slots__ = (
        "cold",
        "config",
        "end_offset",
        "epochs",
        "hbases",
        "hbatches",
        "hdata",
        "hpositions",
        "segments",
        "settled",
        "snapshot",
        "snapshots",
        "start_epoch",
        "start_offset",
    )

    def __init__(self, start_offset: int = 0, start_epoch: int = 0,
                 snapshot: Snapshot | None = None, config: LogConfig | None = None) -> None:
        self.config = config or LogConfig()
        self.snapshot = snapshot  # the latest snapshot, whole
        self.snapshots: list[SnapshotInfo] = [SnapshotInfo.of(snapshot)] if snapshot else []
        self._reset(start_offset, start_epoch)

    def _reset(self, start_offset: int, start_epoch: int) -> None:
        """An empty log starting at ``start_offset``, in one segment named after it."""
        self.start_offset = start_offset
        self.start_epoch = start_epoch  # epoch of the record before start_offset (0: none)
        self.end_offset = start_offset
        self.segments: list[Segment] = [Segment(DIR, start_offset)]
        self.settled = start_offset  # batches below are SettledBatch
        # the settled prefix's runs (log_runs.py); the columns below hold the batches after it
        self.cold: ColdRuns | None = None
        self.hbases = array("q")  # base offset of each batch (8 bytes each, as positions)
        self.hbatches: list[RecordBatch | SettledBatch | SettledBytes] = []
        self.hdata: list[bytes] = []
        # position of each batch in its segment file (8 bytes each, no int objects: a long
        # idle run appends 7,200 NoOp batches an hour on every node)
        self.hpositions = array("q")
        self.epochs: list[tuple[int, int]] = []  # (epoch, first offset) of each run of batches

    # ------------------------------------------------------------------ reading

    @property
    def segment(self) -> str:
        """The active segment's file name."""
        return self.segments[-1].log

    @property
    def size(self) -> int:
        """Bytes in all segment files (Kafka's ``UnifiedLog.size``)."""
        return sum(s.size for s in self.segments)

    @property
    def last_epoch(self) -> int:
        """Epoch of the last record (Kafka's lastFetchedEpoch): 0 for an empty log."""
        return self.epochs[-1][0] if self.epochs else self.start_epoch

    def __len__(self) -> int:
        cold = self.cold
        return len(self.hbatches) + (cold.count if cold is not None else 0)

    # The four columns, indexed together: the settled prefix's runs (``cold``, log_runs.py)
    # and the lists after it. Without a cold prefix they are the lists themselves.

    @property
    def bases(self) -> Any:
        return self.hbases if self.cold is None else Column(self.cold, self.hbases, "base")

    @property
    def batches(self) -> Any:
        return self.hbatches if self.cold is None else Column(self.cold, self.hbatches, "batch")

    @property
    def data(self) -> Any:
        return self.hdata if self.cold is None else Column(self.cold, self.hdata, "data")

    @property
    def positions(self) -> Any:
        return self.hpositions if self.cold is None else Column(
            self.cold, self.hpositions, "position")

    def held_objects(self) -> list[Any]:
        """The objects the columns hold (the lists, and what is in them), for accounting."""
        out: list[Any] = [self.hbases, self.hpositions, self.hbatches, self.hdata,
                          *self.hbatches, *self.hdata]
        return out + (self.cold.held() if self.cold is not None else [])

    def index_right(self, offset: int) -> int:
        """``bisect_right(bases, offset)``: how many batches start at or below ``offset``."""
        cold = self.cold
        if cold is None:
            return bisect_right(self.hbases, offset)
        if offset < cold.end:
            return cold.count_le(offset)
        return cold.count + bisect_right(self.hbases, offset)

    def index_left(self, offset: int) -> int:
        """``bisect_left(bases, offset)``: how many batches start below ``offset``."""
        cold = self.cold
        if cold is None:
            return bisect_left(self.hbases, offset)
        if offset <= cold.end:
            return cold.count_le(offset - 1)
        return cold.count + bisect_left(self.hbases, offset)

    def batch_data(self, i: int) -> tuple[Any, bytes]:
        """The ``i``-th batch and its bytes."""
        cold = self.cold
        if cold is not None:
            if i < cold.count:
                return cold.batch(i), cold.data(i)
            i -= cold.count
        return self.hbatches[i], self.hdata[i]

    def batches_and_data(self, i: int, j: int) -> tuple[list[Any], list[bytes]]:
        """The batches ``i`` to ``j`` (indexes) and their bytes, as two lists."""
        cold = self.cold
        n = 0 if cold is None else cold.count
        if i >= n:
            return self.hbatches[i - n:j - n], self.hdata[i - n:j - n]
        pairs = [self.batch_data(k) for k in range(i, min(j, len(self)))]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def _data_range(self, i: int, j: int) -> list[bytes]:
        cold = self.cold
        if cold is None or i >= cold.count:
            n = 0 if cold is None else cold.count
            return self.hdata[i - n:j - n]
        return [cold.data(k) for k in range(i, min(j, cold.count))] + \
            self.hdata[0:max(j - cold.count, 0)]

    def read(self, offset: int, max_bytes: int, end_offset: int | None = None) -> bytes:
        """Whole batches from ``offset`` on, at least one, about ``max_bytes`` in all; with
        ``end_offset``, as the log read when it ended there (the fast-forward rebuilds an
        answer sent before the leader's later appends)."""
        cold = self.cold
        if cold is not None and offset < cold.end:
            return self._read_cold(offset, max_bytes, end_offset)
        bases = self.hbases
        i = bisect_right(bases, offset) - 1
        i = max(i, 0)
        end = self.end_offset if end_offset is None else end_offset
        if i >= len(bases) or offset >= end:
            return b""
        data = self.hdata
        out = [data[i]]
        size = len(data[i])
        i += 1
        n = len(data) if end_offset is None else bisect_left(bases, end_offset)
        while i < n and size + len(data[i]) <= max_bytes:
            out.append(data[i])
            size += len(data[i])
            i += 1
        return out[0] if len(out) == 1 else b"".join(out)

    def _read_cold(self, offset: int, max_bytes: int, end_offset: int | None) -> bytes:
        """:meth:`read` from inside the settled prefix (a follower far behind)."""
        i = max(self.index_right(offset) - 1, 0)
        end = self.end_offset if end_offset is None else end_offset
        if offset >= end:
            return b""
        n = len(self) if end_offset is None else self.index_left(end_offset)
        out: list[bytes] = []
        size = 0
        while i < n:
            d = self.batch_data(i)[1]
            if out and size + len(d) > max_bytes:
                break
            out.append(d)
            size += len(d)
            i += 1
        return b"".join(out)

    def batches_between(self, start: int, end: int) -> list[RecordBatch]:
        """Whole batches with ``start <= base`` and last offset ``< end``."""
        i = self.index_left(start)
        j = self.index_right(end - 1)
        cold = self.cold
        if cold is None:
            out = self.hbatches[i:j]
        elif i >= cold.count:
            out = self.hbatches[i - cold.count:j - cold.count]
        else:
            out = [self.batch_data(k)[0] for k in range(i, j)]
        while out and out[-1].last_offset >= end:
            out.pop()
        return out

    def raw_between(self, start: int, end: int) -> bytes:
        """The bytes (as in the segment) of the whole batches with ``start <= base`` and last
        offset ``< end``: what a reader of the committed log wants, decoded or not."""
        i = self.index_left(start)
        j = self.index_right(end - 1)
        while j > i and self.batch_data(j - 1)[0].last_offset >= end:
            j -= 1
        return b"".join(self._data_range(i, j))

    def batch_at(self, offset: int) -> RecordBatch | SettledBatch | SettledBytes | None:
        """The batch holding ``offset``, if the log has it."""
        i = self.index_right(offset) - 1
        if i < 0 or offset >= self.end_offset:
            return None
        return self.batch_data(i)[0]

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        """Kafka's endOffsetForEpoch: the largest epoch ``<= epoch`` here and where it ends.

        None when ``epoch`` is older than anything the log (or its snapshot) knows.
        """
        if epoch >= self.last_epoch:
            return (self.last_epoch, self.end_offset)
        epochs = self.epochs
        i = bisect_right(epochs, (epoch, 1 << 62))  # the first run with a larger epoch
        if i > 0:
            return (epochs[i - 1][0], epochs[i][1])
        if self.start_epoch <= epoch:
            return (self.start_epoch, epochs[0][1] if epochs else self.end_offset)
        return None

    def validate(self, offset: int, epoch: int) -> tuple[str, tuple[int, int] | None]:
        """Check a follower's fetch position against this log, as Kafka's leader does.

        ``("valid", None)``; ``("diverging", (epoch, end offset))`` to make it truncate;
        ``("snapshot", (end offset, epoch))`` when it must fetch the snapshot instead.
        """
        if self.start_offset == 0 and offset == 0:
            return ("valid", None)
        # Kafka 4.2.1 ReplicatedLog#validateOffsetAndEpoch: with a snapshot at hand, the latest
        # one for a fetch below the log start, at the log start in another epoch than the
        # oldest snapshot's, or in an epoch older than the oldest snapshot's
        oldest = self.snapshots[0] if self.snapshots else None
        if oldest is not None and self.snapshot is not None and (
                offset < self.start_offset or epoch < oldest.epoch
                or offset == self.start_offset and epoch != oldest.epoch):
            return ("snapshot", self.snapshot.snapshot_id)
        found = None if offset < self.start_offset else self.end_offset_for_epoch(epoch)
        if found is None:
            if self.snapshot is not None:
                return ("snapshot", self.snapshot.snapshot_id)
            return ("diverging", (self.start_epoch, self.start_offset))
        if found[0] != epoch or offset > found[1]:
            return ("diverging", found)
        return ("valid", None)

    def epoch_entries(self) -> tuple[tuple[int, int], ...]:
        """The leader-epoch cache as Kafka checkpoints it: each epoch with its first offset,
        the run that began before the log start clipped to start there."""
        entries = tuple(self.epochs)
        if self.start_epoch > 0 and (not entries or entries[0][1] > self.start_offset):
            entries = ((self.start_epoch, self.start_offset),) + entries
        return entries

    def truncation_point(self, epoch: int, end_offset: int) -> int:
        """Where a follower cuts its log when the leader says its ``epoch`` ends at ``end_offset``."""
        local = self.end_offset_for_epoch(epoch)
        cut = end_offset if local is None else min(end_offset, local[1])
        return max(cut, self.start_offset)

    # ------------------------------------------------------------------ changing

    def append(self, batch: RecordBatch, data: bytes) -> list[DiskOp]:
        """Add a batch at the end (its base offset must be the end offset), rolling to a new
        segment first when Kafka would. Returns the disk ops."""
        if batch.base_offset != self.end_offset:
            raise LogError(f"batch at {batch.base_offset} does not continue the log at "
                           f"{self.end_offset}")
        epoch = batch.partition_leader_epoch
        if epoch < self.last_epoch:
            raise LogError(f"batch epoch {epoch} is older than the log's last epoch "
                           f"{self.last_epoch}")
        config = self.config
        seg = self.segments[-1]
        size = len(data)
        ops: list[DiskOp] | None = None
        if seg.should_roll(batch, size, config):
            ops = seg.close_ops()
            seg = Segment(DIR, batch.base_offset)
            self.segments.append(seg)
            ops += seg.create_ops()
        if not self.epochs or epoch > self.epochs[-1][0]:
            self.epochs.append((epoch, batch.base_offset))
        self.hbases.append(batch.base_offset)
        self.hbatches.append(batch)
        self.hdata.append(data)
        self.hpositions.append(seg.size)
        self.end_offset = batch.last_offset + 1
        index_ops = seg.add(batch, size, config)
        if ops is None and index_ops is None:
            return [Append(seg.log, data)]
        ops = ops or []
        ops.append(Append(seg.log, data))
        return ops + (index_ops or [])

    def append_run(self, batches: list[RecordBatch], data: list[bytes]) -> list[DiskOp]:
        """:meth:`append` of each batch in turn, as one call: a run of batches of one size and
        one epoch that continue the log (bulk NoOps). The files end byte for byte as after the
        separate appends; the disk ops come merged (one append per file). A run in which the
        segment would roll (by size, age or a full index) goes batch by batch."""
        if not batches:
            return []
        size = len(data[0])
        epoch = batches[0].partition_leader_epoch
        first = batches[0]
        seg = self.segments[-1]
        config = self.config
        k = len(batches)
        roll_at = seg.roll_at if seg.size else (
            first.max_timestamp + config.segment_ms if first.max_timestamp >= 0 else 1 << 62)
        limit = config.index_max_bytes
        bases = [b.base_offset for b in batches]
        if (bases != list(range(self.end_offset, self.end_offset + k))  # one record each
                or epoch < self.last_epoch
                or any(b.partition_leader_epoch != epoch or b.last_offset_delta for b in batches)
                or any(len(d) != size for d in data)
                or seg.size + k * size > config.segment_bytes
                or max(b.max_timestamp for b in batches) > roll_at
                or seg.full or len(seg.offsets) + k >= limit // OFFSET_ENTRY.size
                or len(seg.times) + k >= limit // TIME_ENTRY.size):
            ops: list[DiskOp] = []
            for batch, raw in zip(batches, data):
                ops += self.append(batch, raw)
            return ops
        if not self.epochs or epoch > self.epochs[-1][0]:
            self.epochs.append((epoch, first.base_offset))
        self.hbases.extend(bases)
        self.hbatches.extend(batches)
        self.hdata.extend(data)
        self.hpositions.extend(range(seg.size, seg.size + k * size, size))
        self.end_offset = bases[-1] + 1
        index, timeindex = seg.add_run(batches, size, config)
        ops = [Append(seg.log, b"".join(data))]
        if index:
            ops.append(Append(seg.index, index))
        if timeindex:
            ops.append(Append(seg.timeindex, timeindex))
        return ops

    def truncate_to(self, offset: int) -> list[DiskOp]:
        """Drop every batch holding ``offset`` or later (divergence): segments above the cut
        go, the one holding it is cut, with its indexes. Returns the disk ops."""
        if offset >= self.end_offset:
            return []
        offset = max(offset, self.start_offset)
        cold = self.cold
        if cold is not None and offset < cold.end:
            self._thaw()  # below the settled point: never in Raft, kept exact all the same
            cold = None
        n = 0 if cold is None else cold.count
        bases = self.hbases
        i = bisect_right(bases, offset) - 1
        if i < 0 or self.hbatches[i].last_offset < offset:
            i += 1
        if i >= len(bases):
            return []
        new_end = bases[i]
        ops: list[DiskOp] = []
        segments = self.segments
        while len(segments) > 1 and segments[-1].base > new_end:
            ops += segments.pop().delete_ops()
        seg = segments[-1]
        kept = self.hbatches[bisect_left(bases, seg.base):i]
        if n and seg.base < cold.end:  # type: ignore[union-attr]
            kept = cold.max_timestamp_batches(seg.base) + kept  # type: ignore[union-attr]
        ops += seg.truncate(new_end, self.hpositions[i], kept)
        del self.hbases[i:], self.hbatches[i:], self.hdata[i:], self.hpositions[i:]
        while self.epochs and self.epochs[-1][1] >= new_end:
            self.epochs.pop()
        self.end_offset = new_end
        self.settled = min(self.settled, new_end)
        return ops

    def _thaw(self) -> None:
        """Put the settled prefix back into the columns (each batch read from its run)."""
        cold = self.cold
        if cold is None:
            return
        n = cold.count
        self.hbases[0:0] = array("q", (cold.base(i) for i in range(n)))
        self.hbatches[0:0] = [cold.batch(i) for i in range(n)]
        self.hdata[0:0] = [cold.data(i) for i in range(n)]
        self.hpositions[0:0] = array("q", (cold.position(i) for i in range(n)))
        self.cold = None

    def install_snapshot(self, snapshot: Snapshot) -> list[DiskOp]:
        """Keep a snapshot this replica took: its file is written and it becomes the latest;
        the log start stays (only :meth:`maybe_clean` moves it, as in Kafka)."""
        ops: list[DiskOp] = [Replace(snapshot_path(*snapshot.snapshot_id), snapshot.data)]
        self._remember(snapshot)
        self.settle(snapshot.end_offset)
        return ops

    def settle(self, end: int) -> None:
        """Keep only :class:`SettledBatch` of the batches below ``end``: the node's listener
        has them all (in a snapshot it took, or loaded first at start). Then move them to the
        settled prefix (``cold``): a run of NoOp batches becomes one entry."""
        bases, batches, data, shared = self.hbases, self.hbatches, self.hdata, SHARED_RECORDS
        j = bisect_left(bases, min(end, self.end_offset))
        for k in range(bisect_left(bases, self.settled), j):
            b = batches[k]
            if type(b) is SettledBytes:
                continue
            if id(b[1]) in shared:
                if type(data[k]) is SettledBytes:
                    batches[k] = data[k]
                continue
            batches[k] = SettledBatch(b.base_offset, b.last_offset, b.partition_leader_epoch,
                                      b.max_timestamp)
        self.settled = max(self.settled, min(end, self.end_offset))
        if j:
            cold = self.cold
            if cold is None:
                cold = self.cold = ColdRuns(SettledBytes, SettledBatch)
            positions = self.hpositions
            cold.extend(batches, data, bases, positions, j)
            del bases[:j], batches[:j], data[:j], positions[:j]

    def install_fetched_snapshot(self, snapshot: Snapshot) -> list[DiskOp]:
        """Keep a snapshot downloaded from the leader; when it is past this log (a newer epoch,
        or the same epoch past the end) the log is truncated fully and starts at it, and older
        snapshots go (Kafka's ``truncateToLatestSnapshot``)."""
        ops: list[DiskOp] = [Replace(snapshot_path(*snapshot.snapshot_id), snapshot.data)]
        self._remember(snapshot)
        return ops + self.truncate_to_latest_snapshot()

    def truncate_to_latest_snapshot(self) -> list[DiskOp]:
        latest = self.snapshot
        if latest is None:
            return []
        last = self.last_epoch
        if latest.epoch > last or (latest.epoch == last and latest.end_offset > self.end_offset):
            return self._truncate_fully(latest.end_offset, latest.epoch) + \
                self._forget_snapshots_before(latest.snapshot_id)
        return []

    def _remember(self, snapshot: Snapshot) -> None:
        sid = snapshot.snapshot_id
        if all(s.snapshot_id != sid for s in self.snapshots):
            self.snapshots.append(SnapshotInfo.of(snapshot))
            self.snapshots.sort(key=lambda s: s.snapshot_id)
        if self.snapshot is None or sid >= self.snapshot.snapshot_id:
            self.snapshot = snapshot

    def _truncate_fully(self, offset: int, epoch: int) -> list[DiskOp]:
        """Kafka's ``truncateFullyAndStartAt``: every segment goes, an empty one starts at
        ``offset``."""
        ops: list[DiskOp] = []
        for seg in self.segments:
            if seg.base == offset:
                ops += [Replace(name, b"") for name in seg.files()]
            else:
                ops += seg.delete_ops()
        fresh = Segment(DIR, offset)
        if all(seg.base != offset for seg in self.segments):
            ops += fresh.create_ops()
        self._reset(offset, epoch)
        return ops

    def _forget_snapshots_before(self, sid: tuple[int, int]) -> list[DiskOp]:
        old = [s for s in self.snapshots if s.snapshot_id < sid]
        self.snapshots = [s for s in self.snapshots if s.snapshot_id >= sid]
        return [Delete(snapshot_path(*s.snapshot_id)) for s in old]

    # ------------------------------------------------------------------ retention

    def maybe_clean(self, now_ms: int) -> list[DiskOp]:
        """Kafka's ``KafkaMetadataLog.maybeClean``: by size, then by age. ``now_ms`` is on the
        clock of the batch timestamps. Returns the disk ops (none when nothing is due)."""
        ops: list[DiskOp] = []
        config = self.config
        if config.retention_bytes >= 0 and len(self.snapshots) >= 2:
            total = sum(s.size for s in self.snapshots)
            for older, newer in list(zip(self.snapshots, self.snapshots[1:])):
                if self.size + total <= config.retention_bytes:
                    break
                total -= older.size
                done = self.delete_before_snapshot(newer.snapshot_id)
                if done is None:
                    break
                ops += done
        if config.retention_ms >= 0 and len(self.snapshots) >= 2:
            for older, newer in list(zip(self.snapshots, self.snapshots[1:])):
                if now_ms - older.timestamp <= config.retention_ms:
                    break
                done = self.delete_before_snapshot(newer.snapshot_id)
                if done is None:
                    break
                ops += done
        return ops

    def delete_before_snapshot(self, sid: tuple[int, int]) -> list[DiskOp] | None:
        """Move the log start to snapshot ``sid``, deleting the segments wholly below it and the
        older snapshots; None when Kafka's conditions do not hold (``deleteBeforeSnapshot``)."""
        if not self.snapshots or all(s.snapshot_id != sid for s in self.snapshots):
            return None
        offset, epoch = sid
        if not self.start_offset < offset <= self.snapshots[-1].end_offset \
                or offset > self.end_offset:
            return None
        ops: list[DiskOp] = []
        segments = self.segments
        while len(segments) > 1 and segments[1].base <= offset:
            ops += segments.pop(0).delete_ops()
        cold = self.cold
        if cold is not None:
            if offset >= cold.end:
                self.cold = None
            else:
                cold.drop_before(offset)
                if not cold.count:
                    self.cold = None
        i = bisect_left(self.hbases, offset)
        del self.hbases[:i], self.hbatches[:i], self.hdata[:i], self.hpositions[:i]
        self.start_offset, self.start_epoch = offset, epoch
        if len(self):  # the epoch runs from the first kept batch on (no walk over the batches)
            kept = self.batch_data(0)[0]
            first = kept.base_offset
            later = bisect_right(self.epochs, first, key=_RUN_START)
            self.epochs = [(kept.partition_leader_epoch, first)] + self.epochs[later:]
        else:
            self.epochs = []
        return ops + self._forget_snapshots_before(sid)


__all__ = ["DIR", "LEADER_EPOCH_CHECKPOINT", "QUORUM_STATE", "CorruptFile", "RaftLog",
           "SettledBatch", "SettledBytes",
           "decode_epoch_checkpoint", "encode_epoch_checkpoint", "segment_name", "snapshot_path"]
