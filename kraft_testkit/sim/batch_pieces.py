"""A disk piece held as the run of record batches it is a stretch of, not as its bytes.

An idle KRaft quorum appends a NoOp batch every 500 ms and Kafka keeps them on disk until
retention (100 MiB or 7 days): an idle day adds 12 MiB of such batches to every node's log
segment. They differ only in base offset, timestamps and CRC, which lzma cannot predict (the
CRC is 4 random bytes in 72): packed, an idle day still held 1.9 MB. A :class:`BatchRunPiece`
holds a piece of such a run as the first whole batch in it, where that batch starts, its offset,
timestamp and the run's timestamp stride: ~200 bytes for 64 KiB. :func:`describe` finds the run
and returns it only if rebuilding gives the piece back byte for byte; anything else is packed as
before (sim/disk.py).
"""

from __future__ import annotations

import struct

from kraft_testkit.protocol.batch_patch import patch_batch

_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_HEADER = 61  # a magic-2 batch header's length
_MAX_BATCH = 512  # longer batches are not looked for (an idle log's NoOps are 72 bytes)


class BatchRunPiece:
    """``size`` bytes of a run of batches of ``template``'s length, from byte ``skip`` of the
    batch at ``base - 1`` (``skip`` > 0) or from the batch at ``base`` on: batch ``base + k``
    is ``template`` with offset ``base + k``, both timestamps ``ts + k * stride`` and its CRC."""

    __slots__ = ("base", "size", "skip", "stride", "template", "ts")

    def __init__(self, template: bytes, base: int, ts: int, stride: int, skip: int,
                 size: int) -> None:
        self.template = template
        self.base = base
        self.ts = ts
        self.stride = stride
        self.skip = skip
        self.size = size

    def held_bytes(self) -> int:
        """What the piece takes in memory, about (for ``MemoryDisk.held_bytes``)."""
        return len(self.template) + 120

    def raw(self) -> bytes:
        """The piece's bytes, rebuilt."""
        n = len(self.template)
        first = -1 if self.skip else 0
        count = (self.skip + self.size + n - 1) // n
        buf = bytearray(self.template * count)
        for k in range(count):
            patch_batch(buf, k * n, n, self.base + first + k, self.ts + (first + k) * self.stride)
        return bytes(buf[self.skip:self.skip + self.size])


def _batch_at(raw: bytes | memoryview, p: int) -> int:
    """The length of a one-record magic-2 batch starting at ``p`` that the next batch of the
    same length follows, else 0."""
    if p + _HEADER > len(raw) or raw[p + 16] != 2:
        return 0
    n = _I.unpack_from(raw, p + 8)[0] + 12
    if not _HEADER < n <= _MAX_BATCH or p + 2 * n > len(raw) or raw[p + n + 16] != 2 \
            or _I.unpack_from(raw, p + n + 8)[0] + 12 != n \
            or _I.unpack_from(raw, p + 23)[0] != 0 \
            or _Q.unpack_from(raw, p + n)[0] != _Q.unpack_from(raw, p)[0] + 1:
        return 0
    return n


def describe(raw: bytes | memoryview) -> BatchRunPiece | None:
    """``raw`` as a :class:`BatchRunPiece` when it is a stretch of such a run (checked by
    rebuilding it), else None."""
    for p in range(min(len(raw), _MAX_BATCH)):
        n = _batch_at(raw, p)
        if not n:
            continue
        if p >= n:
            return None  # a whole batch before the run's first: not one run
        base = _Q.unpack_from(raw, p)[0]
        ts = _Q.unpack_from(raw, p + 27)[0]
        stride = _Q.unpack_from(raw, p + n + 27)[0] - ts
        piece = BatchRunPiece(bytes(raw[p:p + n]), base, ts, stride, (n - p) % n, len(raw))
        return piece if piece.raw() == raw else None
    return None


__all__ = ["BatchRunPiece", "describe"]
