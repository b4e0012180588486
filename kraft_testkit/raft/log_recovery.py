"""Reading ``__cluster_metadata-0`` back at start, as Kafka's ``LogLoader`` and
``KafkaMetadataLog.recoverSnapshots`` do.

* Leftovers of an interrupted operation go: files ending ``.deleted``, ``.cleaned``, ``.swap``,
  ``.part`` or ``.tmp``, and an index whose ``.log`` is missing (an orphan).
* Every segment is read and its indexes rebuilt (Kafka's metadata log recovers every segment on
  every start); an index that differs from the rebuilt one (missing, torn, truncated, pointing
  past its segment) is rewritten, not an error.
* Only the last segment may end in a partial batch (a torn write); it is cut there. A ``.log``
  that is not named by a base offset, a segment that does not start where the one before ends,
  a bad CRC, a batch that does not follow the one before: :class:`CorruptFile` naming the file
  and byte offset, and the node does not start (cutting there could drop committed records).
* The log starts at the first segment's base offset. Snapshots below it are deleted; there must
  be a snapshot at or after it when it is above 0. The newest snapshot is decoded whole; if it is
  past the log, the log is truncated fully and starts at it (``truncateToLatestSnapshot``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kraft_testkit.protocol.errors import DecodeError
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.raft.errors import CorruptFile
from kraft_testkit.raft.log import DIR, RaftLog, snapshot_path
from kraft_testkit.raft.segments import LogConfig, Segment, file_names
from kraft_testkit.raft.snapshot import (
    SnapshotInfo,
    decode_snapshot,
    parse_file_name,
    read_snapshot_info,
)
from kraft_testkit.sim.node import Delete, DiskOp, Replace, Truncate

_LEFTOVER = (".deleted", ".cleaned", ".swap", ".part", ".tmp")
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_INDEX = re.compile(r"^(\d{20})\.(index|timeindex)$")


def recover_log(files: Mapping[str, bytes], config: LogConfig | None = None
                ) -> tuple[RaftLog, list[DiskOp]]:
    """Rebuild the log from a disk's files; returns it and the ops that tidy the files."""
    config = config or LogConfig()
    prefix = DIR + "/"
    ops: list[DiskOp] = []
    segments: list[tuple[int, str]] = []
    snapshots: list[tuple[tuple[int, int], str]] = []
    for name in files:
        if not name.startswith(prefix) or "/" in name[len(prefix):]:
            continue
        base = name[len(prefix):]
        if base.endswith(_LEFTOVER):
            ops.append(Delete(name))
        elif base.endswith(".log"):
            m = _SEGMENT.match(base)
            if m is None:
                raise CorruptFile(name, "a .log file in the metadata log directory must be "
                                        "named by its base offset (20 digits)")
            segments.append((int(m.group(1)), name))
        elif (m := _INDEX.match(base)) is not None:
            if file_names(DIR, int(m.group(1)))[0] not in files:
                ops.append(Delete(name))  # an orphaned index: Kafka deletes it
        elif (sid := parse_file_name(name)) is not None:
            snapshots.append((sid, name))
    segments.sort()
    snapshots.sort()

    log = RaftLog(segments[0][0] if segments else 0, 0, config=config)
    log.segments = []
    for k, (base, name) in enumerate(segments):
        if base != log.end_offset:
            raise CorruptFile(name, f"the segment starts at offset {base}, but the log before "
                                    f"it ends at {log.end_offset}", offset=0)
        ops += _load_segment(log, Segment(DIR, base), files, last=k == len(segments) - 1)
    if not log.segments:
        seg = Segment(DIR, log.start_offset)
        log.segments.append(seg)
        ops += [Replace(name, b"") for name in seg.files()]  # Kafka creates the log's segment

    kept: list[tuple[tuple[int, int], str]] = []
    for sid, name in snapshots:
        if sid[0] < log.start_offset:
            ops.append(Delete(name))
        else:
            kept.append((sid, name))
    if log.start_offset > 0 and not kept:
        raise CorruptFile(DIR, f"the log starts at offset {log.start_offset}, but no snapshot "
                               f"reaches it: the records before it are gone")
    if kept:
        (offset, epoch), name = kept[-1]
        latest = decode_snapshot(offset, epoch, files[name], path=name)
        log.snapshots = [read_snapshot_info(*sid, files[n], path=n) for sid, n in kept[:-1]]
        log.snapshots.append(SnapshotInfo.of(latest))
        log.snapshot = latest
        # the epoch before the log start: a snapshot's that ends there, else (a start inside
        # the epoch runs, after cleaning) the first batch's, so older epochs get the snapshot
        at_start = [s.epoch for s in log.snapshots if s.end_offset == log.start_offset]
        if at_start:
            log.start_epoch = at_start[-1]
        elif log.batches:
            log.start_epoch = log.batches[0].partition_leader_epoch
        ops += log.truncate_to_latest_snapshot()
        log.settle(latest.end_offset)  # the listener starts from the latest snapshot
        assert snapshot_path(offset, epoch) == name
    return log, ops


def _load_segment(log: RaftLog, seg: Segment, files: Mapping[str, bytes], *, last: bool
                  ) -> list[DiskOp]:
    """Load every batch of one segment into ``log``, rebuild its indexes and return the ops
    that repair its files. Only the last segment may end in a torn batch."""
    name = seg.log
    data = files[name]
    log.segments.append(seg)
    loaded = []
    pos = 0
    try:
        for pos, batch in iter_batches(data, allow_truncated_tail=True):
            problem = None
            if batch.base_offset != log.end_offset:
                problem = (f"batch at log offset {batch.base_offset} does not continue the "
                           f"log at {log.end_offset}")
            elif batch.partition_leader_epoch < log.last_epoch:
                problem = (f"batch at log offset {batch.base_offset} has leader epoch "
                           f"{batch.partition_leader_epoch}, older than {log.last_epoch}")
            elif not batch.records:
                problem = f"batch at log offset {batch.base_offset} holds no records"
            if problem:
                raise CorruptFile(name, problem, offset=pos)
            end = pos + 12 + int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
            _add(log, batch, data[pos:end], pos)
            loaded.append((pos, batch, end - pos))
            pos = end
    except DecodeError as e:
        raise CorruptFile(name, f"corrupt record batch: {e.reason}",
                          offset=e.offset if e.offset is not None else pos) from None
    valid = loaded[-1][0] + loaded[-1][2] if loaded else 0
    seg.rebuild(loaded, log.config)
    seg.size = valid
    ops: list[DiskOp] = []
    if valid < len(data):
        if not last:
            raise CorruptFile(name, "the segment ends in a partial batch, but later segments "
                                    "follow it", offset=valid)
        ops.append(Truncate(name, valid))
    return ops + seg.repair_ops(files)


def _add(log: RaftLog, batch, raw: bytes, position: int) -> None:
    """Append a recovered batch to the in-memory log (no disk ops: it is on disk already)."""
    epoch = batch.partition_leader_epoch
    if not log.epochs or epoch > log.epochs[-1][0]:
        log.epochs.append((epoch, batch.base_offset))
    log.hbases.append(batch.base_offset)
    log.hbatches.append(batch)
    log.hdata.append(raw)
    log.hpositions.append(position)
    log.end_offset = batch.last_offset + 1
