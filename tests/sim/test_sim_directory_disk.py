"""The directory-backed disk behaves exactly like the memory disk and mirrors it to real files."""

import random

import pytest

from kraft_testkit.sim.directory_disk import DirectoryDisk
from kraft_testkit.sim.disk import MemoryDisk
from kraft_testkit.sim.errors import DiskError
from kraft_testkit.sim.node import Append, Delete, Replace, Truncate

LOG = "__cluster_metadata-0/00000000000000000000.log"


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _script(seed):
    rng = random.Random(seed)
    ops = []
    for _ in range(40):
        kind = rng.choice(["append", "append", "replace", "truncate", "sync", "crash", "delete"])
        name = rng.choice([LOG, "quorum-state", "meta.properties"])
        ops.append((kind, name, bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))))
    return ops


def _run(disk, ops, seed):
    crash_rng = random.Random(seed)
    for kind, name, data in ops:
        files = disk.view()
        if kind == "append":
            disk.apply(Append(name, data))
        elif kind == "replace":
            disk.apply(Replace(name, data))
        elif kind == "truncate" and name in files:
            disk.apply(Truncate(name, len(files[name]) // 2))
        elif kind == "delete" and name in files:
            disk.apply(Delete(name))
        elif kind == "sync":
            disk.sync()
        elif kind == "crash":
            disk.crash(crash_rng, 0.5)
    return dict(disk.view())


@pytest.mark.parametrize("seed", range(25))
def test_same_semantics_as_memory_disk_and_files_mirror_it(tmp_path, seed):
    ops = _script(seed)
    directory = DirectoryDisk(tmp_path / "node-1")
    assert _run(directory, ops, seed) == _run(MemoryDisk(), ops, seed)
    assert _files(tmp_path / "node-1") == dict(directory.view())


def test_existing_files_load_as_durable(tmp_path):
    root = tmp_path / "data"
    (root / "__cluster_metadata-0").mkdir(parents=True)
    (root / LOG).write_bytes(b"abc")
    disk = DirectoryDisk(root)
    disk.apply(Append(LOG, b"def"))
    disk.crash(random.Random(1), 0.0)
    assert disk.view()[LOG] == b"abc"
    assert (root / LOG).read_bytes() == b"abc"


def test_wipe_empties_the_directory(tmp_path):
    disk = DirectoryDisk(tmp_path / "d")
    disk.apply(Append(LOG, b"x"))
    disk.sync()
    disk.wipe()
    assert dict(disk.view()) == {} and _files(tmp_path / "d") == {}


def test_bad_names_are_refused_before_touching_the_directory(tmp_path):
    disk = DirectoryDisk(tmp_path / "d")
    with pytest.raises(DiskError, match="inside the data directory"):
        disk.apply(Append("../escape", b"x"))
    assert not (tmp_path / "escape").exists()
