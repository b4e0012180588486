"""Which files a ``path`` names, and how to split them into partitions at batch boundaries.

A path may be a node directory (``controller-1000/`` or Kafka's log dir, holding
``__cluster_metadata-0``), the ``__cluster_metadata-0`` directory itself, one segment
(``*.log``) or one snapshot (``*.checkpoint``). Segments are read in base-offset order.
"""

from __future__ import annotations

import os
import re

from .errors import MetadataSourceError
from .rows import batch_spans, read_file_bytes

METADATA_DIR = "__cluster_metadata-0"
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
#: a partition gets at least this many bytes (small logs stay one partition)
MIN_PARTITION_BYTES = 1 << 20


def _metadata_dir(path: str) -> str:
    """The ``__cluster_metadata-0`` directory of ``path`` (a node directory or that dir)."""
    if os.path.basename(os.path.normpath(path)) == METADATA_DIR:
        return path
    inner = os.path.join(path, METADATA_DIR)
    if os.path.isdir(inner):
        return inner
    nodes = sorted(d for d in os.listdir(path)
                   if os.path.isdir(os.path.join(path, d, METADATA_DIR)))
    if nodes:
        raise MetadataSourceError(
            f"kraft-metadata: {path} holds several node directories ({', '.join(nodes)}); "
            f"point 'path' at one of them")
    if any(_SEGMENT.match(f) or _SNAPSHOT.match(f) for f in os.listdir(path)):
        return path
    raise MetadataSourceError(f"kraft-metadata: {path} is not a metadata log directory (no "
                              f"{METADATA_DIR}, no *.log segment, no *.checkpoint snapshot)")


def log_files(path: str, *, snapshot: bool = False) -> list[str]:
    """The files to read for ``path``: its segments in offset order, or with ``snapshot`` its
    latest ``.checkpoint``. :class:`MetadataSourceError` names a path that is missing or holds
    no log."""
    if not os.path.exists(path):
        raise MetadataSourceError(f"kraft-metadata: path {path} does not exist")
    if os.path.isfile(path):
        name = os.path.basename(path)
        if not (name.endswith(".log") or name.endswith(".checkpoint")):
            _check_looks_like_log(path)
        return [path]
    directory = _metadata_dir(path)
    names = os.listdir(directory)
    if snapshot:
        snaps = sorted((m.group(1), m.group(2), n) for n in names if (m := _SNAPSHOT.match(n)))
        if not snaps:
            raise MetadataSourceError(f"kraft-metadata: {directory} holds no *.checkpoint "
                                      f"snapshot (files=snapshot)")
        return [os.path.join(directory, snaps[-1][2])]
    segments = sorted(n for n in names if _SEGMENT.match(n))
    if not segments:
        raise MetadataSourceError(f"kraft-metadata: {directory} holds no *.log segment")
    return [os.path.join(directory, n) for n in segments]


def _check_looks_like_log(path: str) -> None:
    """A file not named like a segment must at least start like a record batch (magic 2)."""
    head = read_file_bytes(path, 0, 17)
    if len(head) < 17 or head[16] != 2:
        raise MetadataSourceError(f"kraft-metadata: {path} is not a Kafka log segment or "
                                  f"snapshot (no record batch with magic 2 at position 0)")


def plan(paths: list[str], parts: int) -> list[tuple[str, int, int]]:
    """``(path, position, end)`` chunks of whole batches: at most ``parts`` over all files, and
    none smaller than :data:`MIN_PARTITION_BYTES` unless a file is."""
    sizes = {p: os.path.getsize(p) for p in paths}
    total = sum(sizes.values())
    target = max(MIN_PARTITION_BYTES, -(-total // max(1, parts)))
    out = []
    for path in paths:
        if sizes[path] <= target:
            out.append((path, 0, sizes[path]))
            continue
        spans = batch_spans(read_file_bytes(path))
        begin = 0
        for pos, end, _ in spans:
            if end - begin >= target:
                out.append((path, begin, end))
                begin = end
        if begin < sizes[path]:
            out.append((path, begin, sizes[path]))
    return out
