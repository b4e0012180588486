"""``dump-log`` for ``.index`` and ``.timeindex`` files, as Kafka's dump tool prints them.

An offset index holds 8-byte entries (offset relative to the segment's base offset as int32,
byte position in the ``.log`` as int32); a time index 12-byte entries (timestamp int64, relative
offset int32), all big-endian. Kafka preallocates index files, so a crash can leave zero entries
at the end: the dump stops at the first entry (after the first) that points back at the base
offset, as Kafka's does. A file whose size is not a whole number of entries is damaged (a torn
write): a :class:`DumpLogError` naming the byte offset of the partial entry. When the segment's
``.log`` sits beside the index, every entry is checked against it (Kafka's "Mismatches in").
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import TextIO

from ..errors import KraftError
from ..protocol.errors import DecodeError
from ..protocol.log import iter_log

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_NAME = re.compile(r"^(\d{20})\.(index|timeindex)$")


class DumpLogError(KraftError):
    """A file dump-log cannot print: not record batches from its first byte, or an index file
    that is torn or badly named (defined here, below :mod:`.dump_log`, which uses it too)."""


def is_index_file(path: str | os.PathLike) -> bool:
    return _NAME.match(Path(path).name) is not None


def read_index(path: str | os.PathLike) -> list[tuple[int, int]]:
    """The live entries: ``(offset, position)`` of an ``.index``, ``(timestamp, offset)`` of a
    ``.timeindex`` (absolute offsets); DumpLogError for a torn file or a bad name."""
    p = Path(path)
    m = _NAME.match(p.name)
    if m is None:
        raise DumpLogError("not an index file name (<20-digit base offset>.index or .timeindex)")
    base, kind = int(m.group(1)), m.group(2)
    entry = _OFFSET_ENTRY if kind == "index" else _TIME_ENTRY
    data = p.read_bytes()
    whole = len(data) - len(data) % entry.size
    if whole != len(data):
        raise DumpLogError(f"corrupt {kind}: {len(data)} bytes is not a whole number of "
                           f"{entry.size}-byte entries (a partial entry at byte offset {whole})")
    out: list[tuple[int, int]] = []
    for i, (a, b) in enumerate(entry.iter_unpack(data)):
        relative = a if kind == "index" else b
        if relative == 0 and i > 0:
            break  # preallocated, never written
        out.append((base + a, b) if kind == "index" else (a, base + b))
    return out


def dump_index(path: str | os.PathLike, out: TextIO) -> list[str]:
    """Print an index file's entries; returns the mismatches against its ``.log`` (if any)."""
    p = Path(path)
    out.write(f"Dumping {path}\n")
    entries = read_index(p)
    if not entries:
        out.write(f"{path} is empty.\n")
        return []
    kind = p.suffix[1:]
    batches = _batches_beside(p)
    problems: list[str] = []
    previous = None
    for a, b in entries:
        offset = a if kind == "index" else b
        if previous is not None and offset <= previous:
            problems.append(f"  Index offset: {offset} is not above the entry before, {previous}")
        previous = offset
        if kind == "index":
            out.write(f"offset: {a} position: {b}\n")
            if batches is not None:
                last = batches.get(b)
                if last != a:
                    problems.append(f"  Index offset: {a}, log offset: "
                                    f"{-1 if last is None else last}")
        else:
            out.write(f"timestamp: {a} offset: {b}\n")
    if problems:
        out.write(f"Mismatches in :{p.resolve()}\n" + "\n".join(problems) + "\n")
    return problems


def _batches_beside(index: Path) -> dict[int, int] | None:
    """``{byte position: last offset}`` of the batches of the sibling ``.log``, if it exists."""
    log = index.with_suffix(".log")
    if not log.is_file():
        return None
    try:
        return {b.position: b.batch.last_offset
                for b in iter_log(log.read_bytes(), decode=False, allow_truncated_tail=True)}
    except DecodeError:
        return None  # the .log's own damage is for dump-log on the .log to report
