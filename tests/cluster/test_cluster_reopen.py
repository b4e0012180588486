"""Reopening a cluster on its directories, and damaged files on one node.

A ``Cluster`` made on a ``data_dir`` that already holds a cluster is that cluster again: every
committed record is back (the topics and their assignments), whether the last run ended cleanly,
with a killed controller, or with every node crashed mid-write (torn tails). A node whose files
are damaged does not start (as a Kafka node stops on a corrupt metadata log) and the rest go on;
no committed record disappears from the cluster because one node's file is damaged.
"""

from __future__ import annotations

import os

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import StorageError
from kraft_testkit.raft.errors import CorruptFile

SNAPSHOTS = {"metadata.log.max.record.bytes.between.snapshots": 2_000}
SEGMENT_DIR = "__cluster_metadata-0"


def assignments(c: Cluster) -> dict[str, tuple[str, dict[int, tuple[int, ...]]]]:
    """What a client can rely on surviving a restart: topic ids and replica assignments."""
    image = c.metadata
    return {t.name: (str(t.id), {p: tuple(part.replicas) for p, part in t.partitions.items()})
            for t in image.topics}


def busy_cluster(seed: int, data_dir, topics: int = 5) -> Cluster:
    c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=data_dir, configs=SNAPSHOTS)
    for i in range(topics):
        c.create_topic(f"t{i}", partitions=3, replication_factor=3)
    c.run_for(5_000)
    return c


def has_snapshot(data_dir, node: str) -> bool:
    return any(f.endswith(".checkpoint") for f in os.listdir(os.path.join(data_dir, node, SEGMENT_DIR)))


@pytest.mark.parametrize("how", ["close", "kill-active", "crash-all"])
@pytest.mark.parametrize("seed", range(4))
def test_reopen_serves_every_committed_record(seed, how, tmp_path):
    c = busy_cluster(seed, tmp_path)
    before = assignments(c)
    assert has_snapshot(tmp_path, "controller-1000")  # the case that used to fail
    if how == "kill-active":
        c.faults.kill(c.active_controller)
    elif how == "crash-all":
        for n in c.nodes:  # unsynced writes lost, torn tails possible
            c.faults.kill(n)
    c.close()
    again = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=tmp_path, configs=SNAPSHOTS)
    assert again.failed_nodes == {}
    assert assignments(again) == before
    again.create_topic("after", partitions=1, replication_factor=3)  # and it goes on working
    assert set(assignments(again)) == set(before) | {"after"}


def test_reopen_with_another_seed_is_the_same_cluster(tmp_path):
    c = busy_cluster(1, tmp_path, topics=2)
    before, cluster_id, dirs = assignments(c), c.cluster_id, dict(c.directory_ids)
    c.close()
    again = Cluster(3, 3, seed=99, storage="tmpdir", data_dir=tmp_path)
    assert again.cluster_id == cluster_id and again.directory_ids == dirs
    assert assignments(again) == before


def test_a_folder_of_another_cluster_fails_its_node_alone(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    Cluster(3, 1, seed=1, storage="tmpdir", data_dir=a).close()
    Cluster(3, 1, seed=2, storage="tmpdir", data_dir=b).close()
    os.rename(b / "controller-1002", tmp_path / "x")
    os.rename(a / "controller-1002", b / "controller-1002")
    again = Cluster(3, 1, seed=2, storage="tmpdir", data_dir=b)
    failure = again.failed_nodes[1002]
    assert set(again.failed_nodes) == {1002} and isinstance(failure, StorageError)
    assert "controller-1002" in failure.file and "cluster.id" in str(failure)


def test_damaged_segment_on_one_controller_when_reopening(tmp_path):
    c = busy_cluster(2, tmp_path)
    before = assignments(c)
    c.close()
    folder = tmp_path / "controller-1001" / SEGMENT_DIR
    segment = next(f for f in sorted(os.listdir(folder)) if f.endswith(".log"))
    data = bytearray((folder / segment).read_bytes())
    assert len(data) > 100
    data[90] ^= 0x55  # inside the first batch's CRC-covered bytes
    (folder / segment).write_bytes(bytes(data))

    again = Cluster(3, 3, seed=2, storage="tmpdir", data_dir=tmp_path, configs=SNAPSHOTS)
    failure = again.failed_nodes[1001]
    assert isinstance(failure, CorruptFile) and failure.file == str(folder / segment)
    assert failure.offset is not None and "CRC" in str(failure)
    assert not again.node(1001).up
    assert assignments(again) == before  # nothing committed is lost; two voters carry on
    again.create_topic("after", partitions=1, replication_factor=3)


@pytest.mark.parametrize("seed", range(3))
def test_damaged_log_in_a_run_stops_only_that_node(seed):
    """Kill a controller, rot a byte of a committed batch in its segment: it refuses to start
    (naming file and offset), the others commit on; a fresh disk brings the node back (as an
    observer: KIP-853 would be needed to make it a voter again) and it catches up."""
    c = Cluster(3, 3, seed=seed)
    c.create_topic("a", partitions=3, replication_factor=3)
    victim = next(n for n in c.controllers if n != c.active_controller)
    c.faults.kill(victim)
    segment = f"{SEGMENT_DIR}/00000000000000000000.log"
    c.faults.damage(victim, segment, 200)
    with pytest.raises(CorruptFile) as info:
        c.faults.start(victim)
    assert info.value.file == segment and info.value.offset is not None
    assert c.failed_nodes.keys() == {victim.id} and not victim.up
    c.create_topic("b", partitions=3, replication_factor=3)
    c.faults.kill(c.active_controller)  # the last two voters must still hold everything
    c.faults.start(next(n for n in c.controllers if not n.up and n != victim))
    c.run_until(lambda c: c.active_controller is not None, timeout_ms=30_000)
    assert {"a", "b"} <= set(assignments(c))
    c.faults.wipe_disk(victim)
    assert c.failed_nodes == {}
    c.run_until(lambda c: c.replica(victim) is not None
                and c.replica(victim).hw >= c.replica(c.active_controller).hw, timeout_ms=30_000)


def test_damage_is_only_for_a_down_node_and_names_what_is_there():
    c = Cluster(1, 1, seed=0)
    with pytest.raises(StorageError.__mro__[1]) as info:  # a KraftError: node is up
        c.faults.damage(c.controllers[0], "meta.properties", 0)
    assert "stop or kill it first" in str(info.value)
    c.faults.kill(c.controllers[0])
    with pytest.raises(Exception) as info:
        c.faults.damage(c.controllers[0], "nope", 0)
    assert "meta.properties" in str(info.value)  # lists the files it has


def test_leader_epoch_checkpoint_follows_the_log(tmp_path):
    from kraft_testkit.raft.log import decode_epoch_checkpoint

    c = busy_cluster(3, tmp_path, topics=2)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=20_000)
    c.run_for(2_000)
    active = c.active_controller
    path = tmp_path / f"controller-{active.id}" / SEGMENT_DIR / "leader-epoch-checkpoint"
    assert tuple(decode_epoch_checkpoint(path.read_bytes())) == c.replica(active).log.epoch_entries()
    assert decode_epoch_checkpoint(path.read_bytes())[-1][0] == c.replica(active).epoch
    # a damaged one stops its node, naming the file and line
    c.faults.kill(active)
    c.faults.damage(active, f"{SEGMENT_DIR}/leader-epoch-checkpoint", 0)
    with pytest.raises(CorruptFile, match="leader-epoch-checkpoint"):
        c.faults.start(active)


def test_reopening_with_other_controllers_is_refused(tmp_path):
    from kraft_testkit.errors import ConfigError

    Cluster(3, 1, seed=1, storage="tmpdir", data_dir=tmp_path).close()
    with pytest.raises(ConfigError, match=r"controllers are \[1000, 1001, 1002\].*controllers=3"):
        Cluster(5, 1, seed=1, storage="tmpdir", data_dir=tmp_path)
    with pytest.raises(ConfigError, match="the voter set is static"):
        Cluster(3, 1, seed=1, storage="tmpdir", data_dir=tmp_path, combined=True)
    again = Cluster(3, 2, seed=1, storage="tmpdir", data_dir=tmp_path)  # a broker more is fine
    assert again.all_brokers_running()
