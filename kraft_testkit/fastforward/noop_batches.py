"""The NoOp batches of an idle stretch, built once for every node that appends them.

``build_noop_batches`` gives what ``RecordBatch.build`` and ``encode_batch`` give for each
NoOp batch of a run (one batch encoded, the rest patched: offset, timestamps, CRC32C), as
the leader builds them and as a replica decodes them; ``noop_batches_in_log`` reads a run a
leader's log already holds. Apart from noop_run.py, which appends and commits them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from crc32c import crc32c

from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.metadata.replay import NOOP_VALUE
from kraft_testkit.protocol.records import CRC_START, RecordBatch, encode_batch
from kraft_testkit.raft.log import SHARED_RECORDS, SettledBytes

_tuple_new = tuple.__new__
_OFFSET = struct.Struct(">q")  # baseOffset at 0
_EPOCH = struct.Struct(">i")  # partitionLeaderEpoch at 12
_CRC = struct.Struct(">I")  # crc at 17
_TIMES = struct.Struct(">qq")  # baseTimestamp, maxTimestamp at 27
_NOOP_RECORDS = RecordBatch.build(0, [NOOP_VALUE], timestamp_ms=0, leader_epoch=0).records
SHARED_RECORDS.add(id(_NOOP_RECORDS))  # every batch built here shares it: not settled per node


@dataclass(frozen=True)
class NoOpBatches:
    """A run of NoOp batches at offsets ``base_offset ...``, one record each.

    ``leader`` are the batches as the leader builds them (CRC field 0, as ``RecordBatch.build``
    leaves it), ``replica`` as a replica decodes them (CRC field set), ``data`` their bytes;
    all three are shared by every node that appends the run."""

    base_offset: int
    epoch: int
    timestamps: tuple[int, ...]
    leader: list[RecordBatch]
    replica: list[RecordBatch]
    data: list[bytes]

    @property
    def end_offset(self) -> int:
        return self.base_offset + len(self.data)


def build_noop_batches(base_offset: int, epoch: int, timestamps: Sequence[int]) -> NoOpBatches:
    """The batches ``base_offset, base_offset + 1, ...`` stamped ``timestamps`` (batch
    timestamps, log clock), in ``epoch``: byte for byte what ``encode_batch`` gives for each."""
    template = bytearray(encode_batch(RecordBatch.build(
        base_offset, [NOOP_VALUE], timestamp_ms=0, leader_epoch=epoch)))
    records = _NOOP_RECORDS
    leader, replica, data = [], [], []
    pack_offset, pack_times, pack_crc = _OFFSET.pack_into, _TIMES.pack_into, _CRC.pack_into
    covered = memoryview(template)[CRC_START:]  # what the CRC covers: not offset or epoch
    for i, ts in enumerate(timestamps):
        offset = base_offset + i
        pack_offset(template, 0, offset)
        pack_times(template, 27, ts, ts)
        crc = crc32c(covered)
        pack_crc(template, 17, crc)
        data.append(SettledBytes(template))  # shared by every node, settled in place
        fields = (offset, records, epoch, 0, 0, ts, ts, -1, -1, -1, 2)
        leader.append(_tuple_new(RecordBatch, fields + (0, True)))
        replica.append(_tuple_new(RecordBatch, fields + (crc, True)))
    return NoOpBatches(base_offset, epoch, tuple(timestamps), leader, replica, data)


def noop_batches_in_log(log: object, start: int, end: int) -> NoOpBatches:
    """The NoOp batches ``[start, end)`` a leader's log already holds, as a run (for replicas
    that have not fetched them yet); refused unless each is a NoOp batch of one epoch."""
    if not log.start_offset <= start <= end <= log.end_offset:  # type: ignore[attr-defined]
        raise InexactFastForward(f"[{start}, {end}) is not in the log "
                                 f"[{log.start_offset}, {log.end_offset})")  # type: ignore[attr-defined]
    i = log.index_left(start)  # type: ignore[attr-defined]
    held, held_data = log.batches_and_data(i, i + end - start)  # type: ignore[attr-defined]
    if not held:
        return build_noop_batches(start, 0, [])
    run = build_noop_batches(start, held[0].partition_leader_epoch,
                             [b.max_timestamp for b in held])
    if run.data != held_data:
        raise InexactFastForward(f"the log's batches in [{start}, {end}) are not NoOps of "
                                 "one epoch")
    # the leader's bytes objects, not equal copies: every node holds the same ones
    return NoOpBatches(run.base_offset, run.epoch, run.timestamps, run.leader, run.replica,
                       held_data)
