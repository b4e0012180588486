"""The replicated log of ``__cluster_metadata-0``: batches in memory, mirrored to Kafka's files.

The log holds whole record batches from its start offset to its end offset, and the epoch of each
run of batches (Kafka's leader-epoch cache). Every change returns the disk operations that mirror
it in a Kafka segment file, ``__cluster_metadata-0/<base offset:020d>.log``: appends append, a
truncation after divergence truncates. When a snapshot moves the start offset, the batches from the
snapshot on are rewritten into a new segment named after it and the old one goes, in the same
synced step, so a crash sees either layout whole.

:meth:`RaftLog.recover` reads the files back: the newest snapshot, then the segment, cut at the
last whole batch when a crash left a torn tail. Damage anywhere else (a bad CRC, a broken
snapshot) raises :class:`~kraft_testkit.raft.errors.CorruptFile` naming the file and byte offset.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections.abc import Mapping

from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.records import RecordBatch, iter_batches
from kraft_testkit.raft.errors import CorruptFile, LogError
from kraft_testkit.raft.snapshot import (
    SUFFIX,
    Snapshot,
    decode_snapshot,
    file_name,
    parse_file_name,
)
from kraft_testkit.sim.node import Append, Delete, DiskOp, Replace, Truncate

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


class RaftLog:
    """Batches ``[start_offset, end_offset)``, their epochs, and the latest snapshot."""

    __slots__ = (
        "bases",
        "batches",
        "data",
        "end_offset",
        "epochs",
        "positions",
        "segment",
        "size",
        "snapshot",
        "start_epoch",
        "start_offset",
    )

    def __init__(self, start_offset: int = 0, start_epoch: int = 0,
                 snapshot: Snapshot | None = None) -> None:
        self.snapshot = snapshot
        self._reset(start_offset, start_epoch)

    def _reset(self, start_offset: int, start_epoch: int) -> None:
        """An empty log starting at ``start_offset``, in the segment named after it."""
        self.start_offset = start_offset
        self.start_epoch = start_epoch  # epoch of the record before start_offset (0: none)
        self.end_offset = start_offset
        self.segment = segment_name(start_offset)
        self.size = 0  # bytes in the segment file
        self.bases: list[int] = []
        self.batches: list[RecordBatch] = []
        self.data: list[bytes] = []
        self.positions: list[int] = []  # file position of each batch
        self.epochs: list[tuple[int, int]] = []  # (epoch, first offset) of each run of batches

    # ------------------------------------------------------------------ reading

    @property
    def last_epoch(self) -> int:
        """Epoch of the last record (Kafka's lastFetchedEpoch): 0 for an empty log."""
        return self.epochs[-1][0] if self.epochs else self.start_epoch

    def __len__(self) -> int:
        return len(self.batches)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from ``offset`` on, at least one, about ``max_bytes`` in all."""
        bases = self.bases
        i = bisect_right(bases, offset) - 1
        i = max(i, 0)
        if i >= len(bases) or offset >= self.end_offset:
            return b""
        data = self.data
        out = [data[i]]
        size = len(data[i])
        i += 1
        n = len(data)
        while i < n and size + len(data[i]) <= max_bytes:
            out.append(data[i])
            size += len(data[i])
            i += 1
        return out[0] if len(out) == 1 else b"".join(out)

    def batches_between(self, start: int, end: int) -> list[RecordBatch]:
        """Whole batches with ``start <= base`` and last offset ``< end``."""
        bases = self.bases
        i = bisect_left(bases, start)
        j = bisect_right(bases, end - 1)
        out = self.batches[i:j]
        while out and out[-1].last_offset >= end:
            out.pop()
        return out

    def batch_at(self, offset: int) -> RecordBatch | None:
        """The batch holding ``offset``, if the log has it."""
        i = bisect_right(self.bases, offset) - 1
        if i < 0 or offset >= self.end_offset:
            return None
        return self.batches[i]

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

    def append(self, batch: RecordBatch, data: bytes) -> DiskOp:
        """Add a batch at the end; its base offset must be the end offset."""
        if batch.base_offset != self.end_offset:
            raise LogError(f"batch at {batch.base_offset} does not continue the log at "
                           f"{self.end_offset}")
        epoch = batch.partition_leader_epoch
        if epoch < self.last_epoch:
            raise LogError(f"batch epoch {epoch} is older than the log's last epoch "
                           f"{self.last_epoch}")
        if not self.epochs or epoch > self.epochs[-1][0]:
            self.epochs.append((epoch, batch.base_offset))
        self.bases.append(batch.base_offset)
        self.batches.append(batch)
        self.data.append(data)
        self.positions.append(self.size)
        self.size += len(data)
        self.end_offset = batch.last_offset + 1
        return Append(self.segment, data)

    def truncate_to(self, offset: int) -> list[DiskOp]:
        """Drop every batch holding ``offset`` or later (divergence). Returns the disk ops."""
        if offset >= self.end_offset:
            return []
        offset = max(offset, self.start_offset)
        i = bisect_right(self.bases, offset) - 1
        if i < 0 or self.batches[i].last_offset < offset:
            i += 1
        if i >= len(self.bases):
            return []
        size = self.positions[i]
        new_end = self.bases[i]
        del self.bases[i:], self.batches[i:], self.data[i:], self.positions[i:]
        while self.epochs and self.epochs[-1][1] >= new_end:
            self.epochs.pop()
        self.end_offset = new_end
        self.size = size
        return [Truncate(self.segment, size)]

    def install_snapshot(self, snapshot: Snapshot) -> list[DiskOp]:
        """Keep ``snapshot`` as the latest and move the log start to its end offset.

        Returns the ops: write the snapshot file, drop the previous one, roll the segment.
        """
        ops: list[DiskOp] = [Replace(snapshot_path(*snapshot.snapshot_id), snapshot.data)]
        if self.snapshot is not None and self.snapshot.snapshot_id != snapshot.snapshot_id:
            ops.append(Delete(snapshot_path(*self.snapshot.snapshot_id)))
        self.snapshot = snapshot
        return ops + self._move_start(snapshot.end_offset, snapshot.epoch)

    def _move_start(self, offset: int, epoch: int) -> list[DiskOp]:
        """Start the log at ``offset``: batches from there on stay when they agree with the
        snapshot's epoch (one this replica took); otherwise (one fetched from the leader, or a
        log that diverges) the log restarts empty there. The segment is rewritten under its new
        name and the old one deleted."""
        keep = False
        if self.start_offset <= offset <= self.end_offset:
            if offset == self.start_offset:
                keep = self.start_epoch == epoch
            else:
                before = self.batch_at(offset - 1)
                keep = (before is not None and before.last_offset == offset - 1
                        and before.partition_leader_epoch == epoch)
        i = bisect_left(self.bases, offset) if keep else len(self.bases)
        batches, data = self.batches[i:], self.data[i:]
        old = self.segment
        self._reset(offset, epoch)
        for batch, raw in zip(batches, data):
            self.append(batch, raw)
        ops: list[DiskOp] = [Replace(self.segment, b"".join(data))]
        if old != self.segment:
            ops.append(Delete(old))
        return ops

    # ------------------------------------------------------------------ recovery

    @classmethod
    def recover(cls, files: Mapping[str, bytes]) -> tuple[RaftLog, list[DiskOp]]:
        """Rebuild the log from a disk; returns it and the ops that tidy the files.

        Tidying means: cutting a torn tail off the segment, removing snapshots older than the
        newest valid one (and invalid ones), and removing segments other than the newest.
        """
        ops: list[DiskOp] = []
        prefix = DIR + "/"
        snapshots = sorted((sid, name) for name in files if name.startswith(prefix)
                           and name.endswith(SUFFIX) and (sid := parse_file_name(name)))
        latest: Snapshot | None = None
        for (offset, epoch), name in reversed(snapshots):
            if latest is None:  # the newest must be whole: it is what the log starts from
                latest = decode_snapshot(offset, epoch, files[name], path=name)
                continue
            ops.append(Delete(name))
        segments = sorted((int(name[len(prefix):-4]), name) for name in files
                          if name.startswith(prefix) and name.endswith(".log")
                          and name[len(prefix):-4].isdigit())
        for _, name in segments[:-1]:
            ops.append(Delete(name))
        base = segments[-1][0] if segments else 0
        log = cls(base, 0)
        if segments:
            ops += log._load_segment(files[segments[-1][1]], segments[-1][1])
        else:
            ops.append(Replace(log.segment, b""))  # Kafka creates the (empty) segment with the log
        log.snapshot = latest
        if latest is not None:
            if latest.end_offset > log.start_offset:
                ops += log._move_start(latest.end_offset, latest.epoch)
            elif latest.end_offset == log.start_offset:
                log.start_epoch = latest.epoch
        return log, ops

    def _load_segment(self, data: bytes, name: str) -> list[DiskOp]:
        """Load every batch; only a partial batch at the very end (a torn write) is cut off.

        Anything else that is not a valid continuation (a bad CRC, a batch that does not follow
        the one before, an epoch going back) is damage, not a crash artefact: :class:`CorruptFile`
        names the file and byte offset, and the node does not start. Cutting the log there
        instead would silently drop records that may be committed.
        """
        pos = 0
        try:
            for pos, batch in iter_batches(data, allow_truncated_tail=True):
                problem = None
                if batch.base_offset != self.end_offset:
                    problem = (f"batch at log offset {batch.base_offset} does not continue the "
                               f"log at {self.end_offset}")
                elif batch.partition_leader_epoch < self.last_epoch:
                    problem = (f"batch at log offset {batch.base_offset} has leader epoch "
                               f"{batch.partition_leader_epoch}, older than {self.last_epoch}")
                elif not batch.records:
                    problem = f"batch at log offset {batch.base_offset} holds no records"
                if problem:
                    raise CorruptFile(name, problem, offset=pos)
                end = pos + 12 + _LENGTH.unpack_from(data, pos + 8)[0]
                self.append(batch, data[pos:end])
                pos = end
        except DecodeError as e:
            raise CorruptFile(name, f"corrupt record batch: {e.reason}",
                              offset=e.offset if e.offset is not None else pos) from None
        if self.size < len(data):
            return [Truncate(self.segment, self.size)]
        return []
