"""KIP-630 snapshot files: ``<end offset:020d>-<epoch:010d>.checkpoint``.

A snapshot is a run of record batches like a log segment: a control batch with a
SnapshotHeaderRecord first, the state machine's records in data batches, and a control batch with
a SnapshotFooterRecord last. Batch offsets count from 0 inside the file and every batch carries
the snapshot's epoch, as Kafka writes them. A file without its footer is not a snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.codegen import Message
from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.frames import decode_control, encode_control
from kraft_testkit.protocol.records import RecordBatch, encode_batch, iter_batches
from kraft_testkit.raft.errors import CorruptFile

SUFFIX = ".checkpoint"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_BATCH_BYTES = 1 << 20
_HEADER_TYPE, _FOOTER_TYPE = 3, 4


def file_name(end_offset: int, epoch: int) -> str:
    """Kafka's name for the snapshot that ends at ``end_offset`` (exclusive) in ``epoch``."""
    return f"{end_offset:020d}-{epoch:010d}{SUFFIX}"


def parse_file_name(name: str) -> tuple[int, int] | None:
    """``(end offset, epoch)`` of a snapshot file name (the part after the last ``/``), or None."""
    m = _NAME.match(name.rpartition("/")[2])
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A whole snapshot: its id, its data batches and the file's bytes (what FetchSnapshot sends)."""

    end_offset: int
    epoch: int
    last_contained_log_timestamp: int
    batches: tuple[RecordBatch, ...]
    data: bytes

    @property
    def snapshot_id(self) -> tuple[int, int]:
        """``(end offset, epoch)``, the order Kafka's OffsetAndEpoch prints."""
        return (self.end_offset, self.epoch)

    def records(self) -> Iterator[bytes]:
        """The state machine's record values, in order."""
        for batch in self.batches:
            for r in batch.records:
                if r.value is not None:
                    yield r.value

    def __repr__(self) -> str:
        return (f"Snapshot(end_offset={self.end_offset}, epoch={self.epoch}, "
                f"{len(self.batches)} batches, {len(self.data)} bytes)")


def encode_snapshot(end_offset: int, epoch: int, values: Iterable[bytes],
                    timestamp_ms: int,
                    header_controls: Sequence[tuple[bytes, bytes]] = (), *,
                    last_contained_ms: int | None = None) -> Snapshot:
    """Build the snapshot file of ``values`` (record values as the state machine wrote them).

    ``header_controls``: more control records (key, value) for the header batch, after the
    SnapshotHeaderRecord: Kafka puts the KRaftVersionRecord and VotersRecord there (KIP-853).
    ``last_contained_ms``: the header's LastContainedLogTimestamp when it is not the batches'
    timestamp (Kafka's BatchFileWriter#open writes 0 there for ``bootstrap.checkpoint``)."""
    header_key, header_value = encode_control(
        M.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=timestamp_ms
                               if last_contained_ms is None else last_contained_ms), 0)
    keys = [header_key, *(k for k, _ in header_controls)]
    batches = [RecordBatch.build(0, [header_value, *(v for _, v in header_controls)], keys=keys,
                                 control=True, timestamp_ms=timestamp_ms, leader_epoch=epoch)]
    data_batches = []
    offset, chunk, size = len(keys), [], 0
    for v in values:
        chunk.append(bytes(v))
        size += len(v)
        if size >= _BATCH_BYTES:
            data_batches.append(RecordBatch.build(offset, chunk, timestamp_ms=timestamp_ms,
                                                  leader_epoch=epoch))
            offset += len(chunk)
            chunk, size = [], 0
    if chunk:
        data_batches.append(RecordBatch.build(offset, chunk, timestamp_ms=timestamp_ms,
                                              leader_epoch=epoch))
        offset += len(chunk)
    footer_key, footer_value = encode_control(M.SnapshotFooterRecord(version=0), 0)
    footer = RecordBatch.build(offset, [footer_value], keys=[footer_key], control=True,
                               timestamp_ms=timestamp_ms, leader_epoch=epoch)
    data = b"".join(encode_batch(b) for b in [*batches, *data_batches, footer])
    return Snapshot(end_offset, epoch, timestamp_ms, tuple(data_batches), data)


def decode_snapshot(end_offset: int, epoch: int, data: bytes, *, path: str | None = None) -> Snapshot:
    """Parse a snapshot file; :class:`CorruptFile` (naming ``path`` and the byte offset) unless
    every batch is whole and valid, with a header first and a footer last."""
    path = path or file_name(end_offset, epoch)
    try:
        batches = [b for _, b in iter_batches(bytes(data))]
    except DecodeError as e:
        raise CorruptFile(path, f"snapshot is corrupt: {e.reason}", offset=e.offset) from None
    if len(batches) < 2:
        raise CorruptFile(path, "snapshot lacks its header or footer", offset=len(data))
    header = _control(batches[0], _HEADER_TYPE, "header", path)
    _control(batches[-1], _FOOTER_TYPE, "footer", path)
    data_batches = tuple(b for b in batches[1:-1] if not b.is_control)
    return Snapshot(end_offset, epoch, header.last_contained_log_timestamp, data_batches,
                    bytes(data))


def _control(batch: RecordBatch, ctype: int, what: str, path: str) -> Message:
    if not batch.is_control or not batch.records:
        raise CorruptFile(path, f"expected the snapshot's {what} (a control batch) at log "
                                f"offset {batch.base_offset}")
    r = batch.records[0]
    try:
        record = decode_control(r.key, r.value)
    except DecodeError as e:
        raise CorruptFile(path, f"snapshot {what}: {e.reason}") from None
    if record.control_type != ctype:
        raise CorruptFile(path, f"expected the snapshot's {what} (control type {ctype}), "
                                f"found {record.type_name}")
    return record.message


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """What the cleaner needs of a retained snapshot: its id, size and header timestamp."""

    end_offset: int
    epoch: int
    size: int
    timestamp: int

    @property
    def snapshot_id(self) -> tuple[int, int]:
        return (self.end_offset, self.epoch)

    @classmethod
    def of(cls, snapshot: Snapshot) -> SnapshotInfo:
        return cls(snapshot.end_offset, snapshot.epoch, len(snapshot.data),
                   snapshot.last_contained_log_timestamp)


def read_snapshot_info(end_offset: int, epoch: int, data: bytes, *, path: str) -> SnapshotInfo:
    """Size and header timestamp of an older snapshot, reading only its first batch (Kafka opens
    retained snapshots lazily; the newest one is decoded whole by :func:`decode_snapshot`)."""
    try:
        first = next(iter_batches(bytes(data[:_first_batch_end(data)])), None)
    except DecodeError as e:
        raise CorruptFile(path, f"snapshot is corrupt: {e.reason}", offset=e.offset) from None
    if first is None:
        raise CorruptFile(path, "snapshot lacks its header", offset=0)
    header = _control(first[1], _HEADER_TYPE, "header", path)
    return SnapshotInfo(end_offset, epoch, len(data), header.last_contained_log_timestamp)


def _first_batch_end(data: bytes) -> int:
    if len(data) < 12:
        return len(data)
    return 12 + int.from_bytes(data[8:12], "big", signed=True)
