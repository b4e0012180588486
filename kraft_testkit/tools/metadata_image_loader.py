"""Load the metadata image a data directory (or one file) holds, as Kafka's metadata shell does.

The newest snapshot (``<offset>-<epoch>.checkpoint``) is replayed first, then the log segments'
batches after it; a damaged snapshot is an error (never silently replaced by an older state).
The shell reads what the files hold, committed or not (the high watermark is not stored on
disk); a torn tail (a crash cut the last batch) is skipped, as a
restarting node skips it. Anything else that does not decode is a :class:`KraftError` naming
the file and the byte offset.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import KraftError
from ..metadata import MetadataImage
from ..metadata.replay import replay_log
from ..protocol.errors import DecodeError
from ..protocol.log import iter_log

METADATA_DIR = "__cluster_metadata-0"
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_NODE_ORDER = ("controller", "combined", "broker")


class MetadataLoadError(KraftError, ValueError):
    """A path that holds no metadata log, or a file that does not decode (names it)."""


@dataclass(frozen=True)
class LoadedImage:
    """The image and where it came from."""

    image: MetadataImage
    source: Path                 # the metadata directory or the file that was read
    files: tuple[Path, ...]      # what was replayed, in order
    snapshot: str | None = None  # the snapshot file name the replay started from


def find_metadata_dir(path: str | os.PathLike) -> Path:
    """``__cluster_metadata-0`` of a node directory, the directory itself, or (for a kit
    cluster's data directory) the first controller's, then combined's, then broker's."""
    root = Path(path)
    if not root.exists():
        raise MetadataLoadError(f"{root}: does not exist")
    if root.name == METADATA_DIR or any(_SEGMENT.match(f.name) or _SNAPSHOT.match(f.name)
                                        for f in root.iterdir()):
        return root
    if (root / METADATA_DIR).is_dir():
        return root / METADATA_DIR
    children = sorted((p for p in root.iterdir() if (p / METADATA_DIR).is_dir()),
                      key=lambda p: (_rank(p.name), p.name))
    if children:
        return children[0] / METADATA_DIR
    raise MetadataLoadError(f"{root}: no metadata log here (no {METADATA_DIR}/ with .log or "
                            f".checkpoint files)")


def _rank(name: str) -> int:
    for i, prefix in enumerate(_NODE_ORDER):
        if name.startswith(prefix):
            return i
    return len(_NODE_ORDER)


def load_image(path: str | os.PathLike, *, prerelease: bool = False) -> LoadedImage:
    """The metadata image of a directory, a segment (``.log``) or a snapshot (``.checkpoint``)."""
    p = Path(path)
    if p.is_file():
        return LoadedImage(_replay_file(p, MetadataImage.EMPTY, 0, prerelease), p, (p,),
                           p.name if _SNAPSHOT.match(p.name) else None)
    directory = find_metadata_dir(p)
    snapshots = sorted((f for f in directory.iterdir() if _SNAPSHOT.match(f.name)),
                       key=lambda f: f.name, reverse=True)
    image, start, files, used = MetadataImage.EMPTY, 0, [], None
    for snap in snapshots[:1]:  # a damaged newest snapshot is an error, never skipped: the
        # log may have been cleaned up to it, and an older state would pass for the current one
        image = _replay_file(snap, MetadataImage.EMPTY, 0, prerelease)
        start, used = int(snap.name[:20]), snap.name
        files.append(snap)
        image = image.with_provenance((start - 1, int(snap.name[21:31])))
        break
    segments = sorted(f for f in directory.iterdir() if _SEGMENT.match(f.name))
    for seg in segments:
        image = _replay_file(seg, image, start, prerelease, tolerate_torn_tail=seg == segments[-1])
        files.append(seg)
    if not files:
        raise MetadataLoadError(f"{directory}: no .log or .checkpoint file to read")
    return LoadedImage(image, directory, tuple(files), used)


def _replay_file(path: Path, image: MetadataImage, start: int, prerelease: bool,
                 tolerate_torn_tail: bool = False) -> MetadataImage:
    data = path.read_bytes()
    try:
        batches = [b for b in iter_log(data, prerelease=prerelease,
                                       allow_truncated_tail=tolerate_torn_tail)
                   if b.batch.last_offset >= start or _SNAPSHOT.match(path.name)]
    except DecodeError as e:
        hint = "" if prerelease else " (a log from Kafka trunk of late 2023? try --prerelease)"
        raise MetadataLoadError(f"{path}: {e}{hint}") from None
    try:
        return replay_log(batches, image)
    except KraftError as e:
        raise MetadataLoadError(f"{path}: {e}") from None
