"""A batch of a run rebuilt from the run's first batch: a magic-2 batch with its base offset,
both timestamps and CRC32C set in place.

An idle KRaft log is runs of NoOp batches that differ only in these fields, so a run can be
held as its first batch and rebuilt on a read: the log's settled prefix (raft/log_runs.py),
the simulated disks' pieces (sim/batch_pieces.py) and the Raft invariants' record
(raft/committed_record.py) all do, with this one function.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from kraft_testkit.protocol.records import CRC_START, HEADER_SIZE

_OFFSET = struct.Struct(">q")  # baseOffset at 0
_TIMES = struct.Struct(">qq")  # baseTimestamp, maxTimestamp at 27
_CRC = struct.Struct(">I")  # crc at 17, over the batch from its attributes (CRC_START) on


def patch_batch(buf: bytearray, at: int, size: int, base_offset: int, timestamp: int) -> int:
    """Set the batch of ``size`` bytes at ``buf[at:]`` to ``base_offset``, both timestamps to
    ``timestamp``, and its CRC to what they give. Returns the CRC."""
    _OFFSET.pack_into(buf, at, base_offset)
    _TIMES.pack_into(buf, at + 27, timestamp, timestamp)
    with memoryview(buf) as view:
        crc = crc32c(view[at + CRC_START:at + size])
    _CRC.pack_into(buf, at + 17, crc)
    return crc


def run_template(data: bytes | None) -> bool:
    """Whether the batch ``data`` can be a run's first: one record (lastOffsetDelta 0), both
    timestamps equal, a whole header, a CRC that holds."""
    return (data is not None and len(data) > HEADER_SIZE and data[23:27] == b"\0\0\0\0"
            and data[27:35] == data[35:43]
            and _CRC.unpack_from(data, 17)[0] == crc32c(memoryview(data)[CRC_START:]))


def patched(template: bytes, base_offset: int, timestamp: int) -> bytearray:
    """A copy of the batch ``template`` at ``base_offset``, stamped ``timestamp``."""
    buf = bytearray(template)
    patch_batch(buf, 0, len(buf), base_offset, timestamp)
    return buf


__all__ = ["patch_batch", "patched", "run_template"]
