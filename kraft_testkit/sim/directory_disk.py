"""A disk whose files also live in a real directory, in the layout the node writes (Kafka's).

Why a mirror and not a second implementation: crash semantics (what an fsync keeps, torn tails)
must be identical in both storage modes or the same seed would give different runs. So the
simulated state is an inner :class:`MemoryDisk`, and every change is replayed on real files
under ``root``, where users, ``kraft-testkit dump-log`` and Spark jobs can read them. Reads by the
simulator come from memory, so a directory-backed run is as deterministic as a memory one.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
from pathlib import Path

from kraft_testkit.sim.disk import MemoryDisk, PieceStore, check_file_name
from kraft_testkit.sim.errors import DiskWriteError
from kraft_testkit.sim.node import Append, Delete, DiskOp, DiskView, Replace, Truncate


class DirectoryDisk:
    """A :class:`MemoryDisk` mirrored to files under ``root`` (created if missing).

    Files already under ``root`` when the disk is made are loaded as durable content, so a node
    can start from a data directory written earlier, by this kit or by Kafka itself.
    """

    def __init__(self, root: str | os.PathLike[str], pieces: PieceStore | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._mem = MemoryDisk(pieces)
        self._behind: set[str] | None = None  # files a crash could not mirror (a full disk)
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            name = path.relative_to(self.root).as_posix()
            self._mem.apply(Replace(check_file_name(name), path.read_bytes()))
        self._mem.sync()

    def _path(self, name: str) -> Path:
        return self.root / check_file_name(name)

    def apply(self, op: DiskOp) -> None:
        self._mem.apply(op)  # validates, and fails before anything touches the directory
        path = self._path(op.file)
        try:
            if isinstance(op, Append):
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "ab") as f:
                    f.write(op.data)
            elif isinstance(op, Replace):
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(path.name + ".tmp")
                tmp.write_bytes(op.data)
                os.replace(tmp, path)
            elif isinstance(op, Truncate):
                os.truncate(path, op.size)
            elif isinstance(op, Delete):
                path.unlink(missing_ok=True)
        except OSError as e:
            if isinstance(op, Replace):
                path.with_name(path.name + ".tmp").unlink(missing_ok=True)
            what = "no space left on device" if e.errno in (errno.ENOSPC, errno.EDQUOT) else \
                f"the file system refused it: {e.strerror or e}"
            raise DiskWriteError(str(path), f"{what} ({type(op).__name__} of "
                                            f"{len(getattr(op, 'data', b''))} bytes)") from e

    def sync(self) -> None:
        # The simulated fsync decides what survives a simulated crash; the real files are a
        # mirror for readers, so a real fsync would only cost time.
        self._mem.sync()
        if self._behind is not None:
            try:
                self._mirror(self._behind)
                self._behind = None
            except OSError:
                pass  # still full: tried again at the next sync

    def crash(self, rng: random.Random, torn_tail_probability: float) -> None:
        before = set(self._mem.view())
        self._mem.crash(rng, torn_tail_probability)
        try:
            self._mirror(before)
        except OSError:  # a full disk: the files show it once there is room (the next sync)
            self._behind = before

    def wipe(self) -> None:
        self._mem.wipe()
        for child in self.root.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()

    def view(self) -> DiskView:
        return self._mem.view()

    def durable(self) -> dict[str, bytes]:
        return self._mem.durable()

    def held_bytes(self, seen: set[int] | None = None) -> int:
        """Bytes the in-memory mirror holds (``MemoryDisk.held_bytes``)."""
        return self._mem.held_bytes(seen)

    def _mirror(self, names_before: set[str]) -> None:
        """Make the directory show exactly the in-memory files again (after a crash)."""
        now = self._mem.view()
        for name in names_before - set(now):
            self._path(name).unlink(missing_ok=True)
        for name, data in now.items():
            path = self._path(name)
            if not path.exists() or path.read_bytes() != data:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)

    def __repr__(self) -> str:
        return f"DirectoryDisk({str(self.root)!r})"
