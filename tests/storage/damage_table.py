"""The damage table: what one node's damaged files do to a reopened cluster, by kind of damage.

Each :class:`Damage` is one way a node's folder can be hurt between two runs (a deleted file, a
single flipped bit, a file from elsewhere) and what must follow: the node refuses to start with a
:class:`~kraft_testkit.errors.StorageError` naming the file and the problem (``fails``), or, where
Kafka starts on it, the node starts and catches up (``fails is None``). Used by
tests/storage/test_damaged_node.py and benchmarks/damage_table.py (the figures in docs/storage.md).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kraft_testkit.cluster import Cluster

METADATA = "__cluster_metadata-0"
#: small segments, so a node's log has several to lose one of
CONFIGS = {"internal.metadata.log.segment.bytes": 2_000}
ROLES = ("active controller", "follower controller", "broker", "combined node")


def flip(path: Path, find: bytes, at: int = 0, bit: int = 0) -> None:
    """Flip one bit of the byte ``at`` past the first ``find`` in the file (bit rot)."""
    data = bytearray(path.read_bytes())
    i = data.index(find) + at
    data[i] ^= 1 << bit
    path.write_bytes(bytes(data))


def segments(folder: Path) -> list[Path]:
    return sorted((folder / METADATA).glob("*.log"))


def delete_segment(folder: Path, which: int) -> None:
    """Delete one segment with its index files, as a careless ``rm`` would."""
    log = segments(folder)[which]
    for suffix in (".log", ".index", ".timeindex"):
        log.with_suffix(suffix).unlink(missing_ok=True)


def foreign_meta(folder: Path) -> None:
    """The node's meta.properties as another cluster's format wrote it (same node, other id)."""
    path = folder / "meta.properties"
    lines = path.read_text().splitlines()
    path.write_text("\n".join("cluster.id=MkU3OEVBNTcwNTJENDM2Qg" if line.startswith("cluster.id")
                              else line for line in lines) + "\n")


@dataclass(frozen=True)
class Damage:
    name: str
    apply: Callable[[Path], None]
    fails: str | None  # the file the node's error names; None: the node starts (as in Kafka)
    problem: str = ""  # words the error's message holds


DAMAGES = [
    Damage("quorum-state deleted", lambda f: (f / METADATA / "quorum-state").unlink(), None),
    Damage("quorum-state key votedId bit-flipped (votedjd)",
           lambda f: flip(f / METADATA / "quorum-state", b'"votedId"', 6, 0),
           f"{METADATA}/quorum-state", "field 'votedId' is missing"),
    Damage("quorum-state key data_version bit-flipped (data?version)",
           lambda f: flip(f / METADATA / "quorum-state", b"data_version", 4, 5),
           f"{METADATA}/quorum-state", "no data_version"),
    Damage("quorum-state first byte bit-flipped", lambda f: flip(f / METADATA / "quorum-state",
                                                                 b"{", 0, 2),
           f"{METADATA}/quorum-state", "not valid JSON"),
    Damage("meta.properties deleted", lambda f: (f / "meta.properties").unlink(),
           "meta.properties", "not formatted"),
    Damage("meta.properties key directory.id bit-flipped",
           lambda f: flip(f / "meta.properties", b"directory.id", 7, 4),
           "meta.properties", "directory.id is missing"),
    Damage("meta.properties key node.id bit-flipped",
           lambda f: flip(f / "meta.properties", b"node.id", 0, 0),
           "meta.properties", "node.id"),
    Damage("meta.properties cluster.id value bit-flipped",
           lambda f: flip(f / "meta.properties", b"cluster.id=", 11, 0),
           "meta.properties", "cluster.id is"),
    Damage("meta.properties version bit-flipped", lambda f: flip(f / "meta.properties",
                                                                 b"version=", 8, 1),
           "meta.properties", "version"),
    Damage("meta.properties of another cluster", foreign_meta, "meta.properties",
           "cluster.id is 'MkU3OEVBNTcwNTJENDM2Qg'"),
    Damage("first segment deleted", lambda f: delete_segment(f, 0), METADATA,
           "no snapshot reaches it"),
    Damage("a middle segment deleted", lambda f: delete_segment(f, 1), METADATA,
           "but the log before it ends at"),
    # the log just ends earlier, as after a crash that lost unsynced data; Kafka cannot tell
    # either: the node starts and fetches the rest from the leader
    Damage("last segment deleted", lambda f: delete_segment(f, -1), None),
]


@dataclass(frozen=True)
class Pristine:
    """A closed cluster's data_dir to copy for each trial, and what it committed."""

    path: Path
    combined: bool
    active: int
    follower: int
    topics: dict[str, tuple[str, dict[int, tuple[int, ...]]]]

    def victim(self, role: str) -> int:
        return {"active controller": self.active, "follower controller": self.follower,
                "broker": 1, "combined node": self.active}[role]


def assignments(c: Cluster) -> dict[str, tuple[str, dict[int, tuple[int, ...]]]]:
    """Topic ids and replica assignments: what a client relies on surviving a reopen."""
    return {t.name: (str(t.id), {p: tuple(part.replicas) for p, part in t.partitions.items()})
            for t in c.metadata.topics}


def build(path: Path, combined: bool, seed: int = 3) -> Pristine:
    c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=path, configs=CONFIGS,
                combined=combined)
    for i in range(6):
        c.create_topic(f"t{i}", partitions=3, replication_factor=3)
    c.run_for(3_000)
    active = c.active_controller.id
    follower = next(n for n in c.controller_ids if n != active)
    pristine = Pristine(path, combined, active, follower, assignments(c))
    c.close()
    return pristine


def folder_of(data_dir: Path, node: int) -> Path:
    return next(p for p in data_dir.iterdir() if p.name.endswith(f"-{node}"))


def damaged_copy(pristine: Pristine, into: Path, role: str, damage: Damage) -> tuple[Path, int]:
    """A copy of the pristine data_dir with ``damage`` done to the node in ``role``."""
    shutil.copytree(pristine.path, into)
    victim = pristine.victim(role)
    damage.apply(folder_of(into, victim))
    return into, victim


def reopen(data_dir: Path, pristine: Pristine, seed: int = 5) -> Cluster:
    return Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=data_dir, configs=CONFIGS,
                   combined=pristine.combined)


def relative(path: str, data_dir: Path) -> str:
    return os.path.relpath(path, data_dir)
