"""Simulated disks with fsync semantics.

A disk holds what a read sees now and remembers what is durable (synced). A crash forgets
everything that was never synced, except that a file which only grew since its last sync may keep
a random prefix of its unsynced tail: a torn write, cut at any byte. ``Replace`` is atomic
(write-temp-then-rename) and so never torn.

The :class:`Disk` protocol is deliberately small so a second backend can mirror the same files to a
real directory (Kafka's layout) without the simulator noticing.
"""

from __future__ import annotations

import hashlib
import lzma
import random
import sys
from collections.abc import Iterable
from types import MappingProxyType
from typing import Protocol

from kraft_testkit.sim.batch_pieces import BatchRunPiece, describe
from kraft_testkit.sim.errors import DiskError
from kraft_testkit.sim.node import Append, Delete, DiskOp, DiskView, Replace, Truncate

_BYTES = (bytes, bytearray, memoryview)
_OPS = (Append, Truncate, Replace, Delete)


def write_all(disk: Disk, writes: Iterable[DiskOp], sync: bool) -> None:
    """A node event's writes in order, then its fsync if it asked for one (what the process
    applies; the idle warp's node events and bulk NoOp runs write the same way)."""
    for op in writes:
        disk.apply(op)
    if sync:
        disk.sync()


class Disk(Protocol):
    """What the simulator needs from a disk backend."""

    def apply(self, op: DiskOp) -> None:
        """Perform one write; it is visible at once and durable only after :meth:`sync`."""

    def sync(self) -> None:
        """Make every write so far durable (fsync of all dirty files and their directory)."""

    def crash(self, rng: random.Random, torn_tail_probability: float) -> None:
        """Lose what was never synced; a grown file may keep a torn prefix of its unsynced tail."""

    def wipe(self) -> None:
        """Replace the disk by an empty one."""

    def view(self) -> DiskView:
        """Read-only snapshot of every file's current content, by name."""

    def durable(self) -> dict[str, bytes]:
        """What a crash is sure to keep (torn tails aside), by name."""


def check_file_name(name: object) -> str:
    """A relative path without ``..``: valid in memory and as a path under a data directory."""
    if type(name) is not str or not name or "\x00" in name:
        raise DiskError(f"file names are non-empty str without NUL, got {name!r}")
    if name.startswith("/") or ".." in name.split("/"):
        raise DiskError(f"file name {name!r} must be relative and stay inside the data directory")
    return name


def _check_data(op: Append | Replace) -> None:
    if not isinstance(op.data, _BYTES):
        raise DiskError(
            f"{type(op).__name__} to {op.file!r} needs bytes, got {type(op.data).__name__}"
        )


#: a file's synced prefix is packed (lzma) in pieces of this many bytes: a long run's metadata
#: log holds every NoOp batch (Kafka keeps them until retention, 7 days by default), and the
#: batches compress about 9x, the CRC and timestamps being all that differs between them
PACK_BYTES = 1 << 16
#: a file written whole (``Replace``) of at least this many bytes is packed whole when synced:
#: Kafka keeps a node's hourly snapshots for 7 days (2 KB each on an idle 3 + 3, 0.6 KB packed)
PACK_WHOLE_BYTES = 1 << 10


#: a packed piece: lzma's bytes, or the run of batches the piece is a stretch of
Piece = bytes | BatchRunPiece


def _pack_piece(raw: bytes | memoryview) -> Piece:
    """One piece packed: a stretch of a run of batches that differ only in offset, timestamps
    and CRC (an idle log's NoOps) as that run (sim/batch_pieces.py, ~200 bytes), anything else
    with lzma preset 1 (9.1x on such batches; zlib level 1 gave 4.2x, level 6 5.3x; ~28 ms a
    MB). Paid once per distinct piece (:class:`PieceStore`)."""
    return describe(raw) or lzma.compress(raw, format=lzma.FORMAT_ALONE, preset=1)


class _File:
    """One file: its current bytes and how to get back to its durable state.

    The content is ``packed`` (lzma pieces of ``PACK_BYTES`` each, ``packed_len`` bytes once
    unpacked: always part of the synced prefix, which nothing rewrote) followed by ``data``.
    While the file only grew since its last sync, the durable content is the first
    ``synced_len`` bytes and no copy is made (the hot case: a log appended to and synced over
    and over). The first other change saves the durable content in ``before`` (None: the file
    did not durably exist).
    """

    __slots__ = ("before", "data", "packed", "packed_len", "rewritten", "synced_len", "whole")

    def __init__(self) -> None:
        self.data: bytearray | None = bytearray()
        self.packed: list[Piece] = []
        self.packed_len = 0
        self.synced_len = 0
        self.rewritten = True
        self.before: bytes | None = None
        self.whole = False  # the content is what a Replace wrote, unchanged since

    def __len__(self) -> int:
        assert self.data is not None
        return self.packed_len + len(self.data)

    def content(self) -> bytes:
        """The whole current content."""
        assert self.data is not None
        if not self.packed:
            return bytes(self.data)
        return b"".join([_unpack(p) for p in self.packed] + [self.data])

    def unpack(self) -> None:
        """Bring the packed pieces back into ``data`` (before a change below their end)."""
        if self.packed:
            assert self.data is not None
            self.data = bytearray(self.content())
            self.packed, self.packed_len = [], 0

    def set(self, data: bytearray | None) -> None:
        """The content becomes ``data`` (None: deleted)."""
        self.data = data
        self.packed, self.packed_len = [], 0
        self.whole = False

    def save_durable(self) -> None:
        if not self.rewritten:
            self.before = self.content()[: self.synced_len]
            self.rewritten = True

    def mark_synced(self, pieces: PieceStore | None = None) -> None:
        assert self.data is not None
        self.synced_len = self.packed_len + len(self.data)
        self.rewritten = False
        self.before = None
        if len(self.data) >= PACK_BYTES:
            self._pack(pieces)
        elif self.whole and not self.packed and len(self.data) >= PACK_WHOLE_BYTES:
            # a snapshot, say: written once, read back on a restart; its own piece (not shared)
            self.packed = [_pack_piece(bytes(self.data))]
            self.packed_len = len(self.data)
            self.data = bytearray()

    def _pack(self, pieces: PieceStore | None) -> None:
        """Pack the synced bytes of ``data`` in whole pieces (what is left stays as it is)."""
        data = self.data
        assert data is not None
        n = len(data) // PACK_BYTES * PACK_BYTES
        view = memoryview(data)
        pack = _pack_piece if pieces is None else pieces.pack
        try:
            self.packed += [pack(view[i:i + PACK_BYTES]) for i in range(0, n, PACK_BYTES)]
        finally:
            view.release()
        del data[:n]
        self.packed_len += n

    def durable_content(self) -> bytes | None:
        if self.rewritten:
            return self.before
        return self.content()[: self.synced_len]


def _unpack(piece: Piece) -> bytes:
    if type(piece) is BatchRunPiece:
        return piece.raw()
    return lzma.decompress(piece, format=lzma.FORMAT_ALONE)  # type: ignore[arg-type]


def _held(piece: Piece) -> int:
    return piece.held_bytes() if type(piece) is BatchRunPiece else len(piece)  # type: ignore[arg-type]


class PieceStore:
    """Packed pieces shared by the disks of one simulation: every replica of the metadata log
    holds the same batches at the same file positions, so its pieces (cut at multiples of
    ``PACK_BYTES``) are equal on every node, and the disks keep one copy of each."""

    __slots__ = ("_by_raw", "_pieces", "_prune_at")

    def __init__(self) -> None:
        self._pieces: dict[Piece, bytes] = {}  # packed piece -> its raw bytes' digest
        self._by_raw: dict[bytes, Piece] = {}  # that digest -> the packed piece
        self._prune_at = 1024

    def __len__(self) -> int:
        return len(self._pieces)

    def pack(self, raw: bytes | memoryview) -> Piece:
        """``raw`` packed, as the store holds it: packed once for every disk that holds the
        same bytes (known by their SHA-256, as git knows its objects)."""
        digest = hashlib.sha256(raw).digest()
        kept = self._by_raw.get(digest)
        if kept is None:
            kept = _pack_piece(raw)
            self._by_raw[digest] = kept
            self._pieces[kept] = digest
            if len(self._pieces) >= self._prune_at:
                self._prune()
        return kept

    def _prune(self) -> None:
        """Forget the pieces no disk holds any more (deleted or truncated files): only this
        store refers to them. Memory only: a disk keeps its own references either way."""
        pieces, by_raw = self._pieces, self._by_raw
        for piece in list(pieces):
            if sys.getrefcount(piece) <= _STORE_REFS:
                del by_raw[pieces.pop(piece)]
        self._prune_at = max(1024, 2 * len(pieces))


def _store_refs() -> int:
    """References to a piece that only a :class:`PieceStore` holds, as ``_prune`` counts them."""
    store = PieceStore()
    store.pack(b"x" * 8)
    pieces = store._pieces  # noqa: SLF001
    for piece in list(pieces):  # the very loop of _prune
        return sys.getrefcount(piece)
    raise AssertionError("unreachable")


_STORE_REFS = _store_refs()


class MemoryDisk:
    """A disk in memory. Files are flat names (``"__cluster_metadata-0/0000.log"`` is one name)."""

    __slots__ = ("_dirty", "_files", "_pieces")

    def __init__(self, pieces: PieceStore | None = None) -> None:
        #: where packed pieces are shared with the simulation's other disks (None: not shared)
        self._pieces = pieces
        self._files: dict[str, _File] = {}
        self._dirty: dict[
            str, None
        ] = {}  # insertion-ordered: crashes draw randomness in a stable order

    def apply(self, op: DiskOp) -> None:
        if not isinstance(op, _OPS):
            raise DiskError(f"not a disk operation: {op!r} (use Append, Truncate, Replace, Delete)")
        name = op.file
        f = self._files.get(name)
        if isinstance(op, Append):
            _check_data(op)
            if f is None:
                f = self._files[check_file_name(name)] = _File()
            if f.data is None:  # deleted, and now created again
                f.set(bytearray())
            f.data += op.data  # type: ignore[operator]
            f.whole = False
        elif isinstance(op, Replace):
            _check_data(op)
            if f is None:
                f = self._files[check_file_name(name)] = _File()
            f.save_durable()
            f.set(bytearray(op.data))
            f.whole = True
        elif isinstance(op, Truncate):
            if f is None or f.data is None:
                raise DiskError(f"cannot truncate {name!r}: no such file")
            if type(op.size) is not int or not 0 <= op.size <= len(f):
                raise DiskError(
                    f"cannot truncate {name!r} ({len(f)} bytes) to {op.size!r} bytes"
                )
            if op.size < f.synced_len:
                f.save_durable()
            if op.size < f.packed_len:
                f.unpack()
            del f.data[op.size - f.packed_len :]
            f.whole = False
        else:
            if f is None or f.data is None:
                raise DiskError(f"cannot delete {name!r}: no such file")
            f.save_durable()
            f.set(None)
        self._dirty[name] = None

    def sync(self) -> None:
        files = self._files
        for name in self._dirty:
            f = files[name]
            if f.data is None:
                del files[name]
            else:
                f.mark_synced(self._pieces)
        self._dirty.clear()

    def crash(self, rng: random.Random, torn_tail_probability: float) -> None:
        files = self._files
        for name in self._dirty:
            f = files[name]
            if f.rewritten:
                if f.before is None:
                    del files[name]
                    continue
                f.set(bytearray(f.before))
            else:
                assert f.data is not None
                keep = f.synced_len
                unsynced = len(f) - keep
                if unsynced and torn_tail_probability and rng.random() < torn_tail_probability:
                    keep += rng.randint(1, unsynced)
                del f.data[keep - f.packed_len :]
            f.mark_synced(self._pieces)
        self._dirty.clear()

    def wipe(self) -> None:
        self._files.clear()
        self._dirty.clear()

    def view(self) -> DiskView:
        files = self._files
        return MappingProxyType(
            {name: f.content() for name in sorted(files) if (f := files[name]).data is not None}
        )

    def durable(self) -> dict[str, bytes]:
        out = {}
        for name in sorted(self._files):
            content = self._files[name].durable_content()
            if content is not None:
                out[name] = content
        return out

    def held_bytes(self, seen: set[int] | None = None) -> int:
        """Bytes the files take in memory: packed pieces as packed, the rest as they are (what
        a long run's memory grows by; benchmarks/bench_long_run.py). With ``seen``, a piece
        whose id is in it is not counted again (pieces shared with other disks), and the ids
        of the pieces counted are added to it."""
        total = 0
        for f in self._files.values():
            if f.data is None:
                continue
            total += len(f.data)
            for piece in f.packed:
                if seen is None or id(piece) not in seen:
                    total += _held(piece)
                    if seen is not None:
                        seen.add(id(piece))
        return total

    def __repr__(self) -> str:
        return f"MemoryDisk({len(self._files)} files, {len(self._dirty)} unsynced)"
