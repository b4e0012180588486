"""One damaged node stops alone: every kind of damage x every role, on a reopened cluster.

A 3 + 3 cluster (and a combined 3-node one) is closed, one node's folder is damaged (the table
in damage_table.py), and the cluster is opened again. In every case only that node fails
(``failed_nodes``), with a typed error naming the file and the problem, or, where Kafka starts on
such a folder, it starts and catches up; the cluster opens and serves; nothing committed is lost.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import pytest
from damage_table import (
    DAMAGES,
    ROLES,
    Damage,
    Pristine,
    assignments,
    build,
    damaged_copy,
    folder_of,
    reopen,
)

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import StorageError
from kraft_testkit.sim.errors import DiskWriteError


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> dict[bool, Pristine]:
    return {combined: build(tmp_path_factory.mktemp(f"pristine-{combined}") / "data", combined)
            for combined in (False, True)}


def caught_up(c: Cluster, node: int) -> bool:
    """The node runs and holds the leader's whole log (a controller) or is RUNNING (a broker)."""
    handle = c.node(node)
    if node in c.broker_ids and (c.broker(node) is None or c.broker(node).state_name != "RUNNING"):
        return False
    if node in c.controller_ids:
        mine, leader = c.replica(handle), c.replica(c.active_controller)
        return mine is not None and mine.log.end_offset == leader.log.end_offset
    return True


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.name)
def test_one_damaged_node_stops_alone(pristine, tmp_path, damage: Damage, role: str):
    before = pristine[role == "combined node"]
    data_dir, victim = damaged_copy(before, tmp_path / "data", role, damage)
    c = reopen(data_dir, before)
    if damage.fails is None:  # Kafka starts on it: so does the kit, and the node catches up
        assert c.failed_nodes == {}
        c.run_until(lambda c: caught_up(c, victim), timeout_ms=30_000)
    else:
        assert set(c.failed_nodes) == {victim}
        failure = c.failed_nodes[victim]
        assert isinstance(failure, StorageError)
        assert failure.file.startswith(str(folder_of(data_dir, victim) / damage.fails)), failure
        assert damage.problem in str(failure), failure
    # the cluster serves, and every committed topic is there as it was
    c.create_topic("after", partitions=1, replication_factor=2)
    after = assignments(c)
    assert {name: after[name] for name in before.topics} == before.topics
    assert "after" in after
    c.close()


def test_every_meta_properties_removed_is_refused_naming_the_directory(pristine, tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(pristine[False].path, data_dir)
    for folder in data_dir.iterdir():
        (folder / "meta.properties").unlink()
    with pytest.raises(StorageError) as info:
        reopen(data_dir, pristine[False])
    assert info.value.file.endswith("meta.properties") and "unformatted" in str(info.value)
    assert str(data_dir) in str(info.value)
    assert not any((f / "meta.properties").exists() for f in data_dir.iterdir())  # nothing new


def test_folders_split_evenly_between_two_clusters_are_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    Cluster(1, 1, seed=1, storage="tmpdir", data_dir=a).close()
    Cluster(1, 1, seed=2, storage="tmpdir", data_dir=b).close()
    shutil.rmtree(b / "broker-0")
    shutil.move(a / "broker-0", b / "broker-0")
    with pytest.raises(StorageError, match="not one cluster"):
        Cluster(1, 1, seed=2, storage="tmpdir", data_dir=b)


# ------------------------------------------------------------------------------ a full disk

def fill(c: Cluster, until) -> int:
    """Create topics until ``until(c)``; returns how many."""
    for i in range(200):
        c.create_topic(f"x{i}", partitions=6, replication_factor=3)
        if until(c):
            return i + 1
    raise AssertionError("the disk never filled")


def check_full_disk_fails_alone(c: Cluster, victim: int, make_room) -> None:
    created = fill(c, lambda c: victim in c.failed_nodes)
    failure = c.failed_nodes[victim]
    assert isinstance(failure, DiskWriteError) and "no space left on device" in str(failure)
    assert f"-{victim}" in failure.file
    c.run_for(5_000)  # the rest go on: nothing raises, the failure stays with the node
    assert set(c.failed_nodes) == {victim}
    c.create_topic("while-down", partitions=1, replication_factor=2)
    try:  # still full: it fails again (at once, or at its first append), alone
        c.faults.start(c.node(victim))
    except DiskWriteError:
        pass
    c.run_until(lambda c: victim in c.failed_nodes, timeout_ms=10_000)
    assert set(c.failed_nodes) == {victim}
    make_room()
    c.faults.start(c.node(victim))
    c.run_until(lambda c: caught_up(c, victim), timeout_ms=30_000)
    assert c.failed_nodes == {}
    names = {t.name for t in c.metadata.topics}
    assert {f"x{i}" for i in range(created)} | {"while-down"} <= names


def test_a_full_disk_fails_its_node_alone_until_there_is_room(tmp_path, monkeypatch):
    """A simulated full disk: the real file system answers ENOSPC to one node's writes."""
    c = Cluster(3, 3, seed=3, storage="tmpdir", data_dir=tmp_path)
    victim = 1001
    root = str(folder_of(tmp_path, victim))
    full = {"on": False}
    real_open = open

    def small_disk_open(file, mode="r", *args, **kwargs):
        if full["on"] and "a" in mode and os.fspath(file).startswith(root):
            raise OSError(errno.ENOSPC, "No space left on device", os.fspath(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", small_disk_open)
    full["on"] = True
    check_full_disk_fails_alone(c, victim, make_room=lambda: full.update(on=False))
    c.close()


def _can_mount() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.mark.skipif(not _can_mount(), reason="mounting a small tmpfs needs root")
def test_a_full_tmpfs_fails_its_node_alone_until_it_grows(tmp_path):
    """A real full disk: one controller's folder on a 64 KiB tmpfs, grown to 4 MiB later."""
    data_dir = tmp_path / "data"
    Cluster(3, 3, seed=3, storage="tmpdir", data_dir=data_dir).close()
    victim = 1001
    folder = folder_of(data_dir, victim)
    saved = tmp_path / "saved"
    shutil.move(folder, saved)
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("this machine refuses to mount a tmpfs")
    try:
        shutil.copytree(saved, folder, dirs_exist_ok=True)
        c = Cluster(3, 3, seed=3, storage="tmpdir", data_dir=data_dir)
        check_full_disk_fails_alone(c, victim, make_room=lambda: subprocess.run(
            ["mount", "-o", "remount,size=4m", str(folder)], check=True))
        c.close()
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)

