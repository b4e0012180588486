"""A tmpdir cluster's metadata log in Kafka's layout, through the public API: segments that roll
with their indexes (read by ``kraft-testkit dump-log``), snapshot retention by size and by age,
and a node that refuses to start on an unformatted folder."""

from __future__ import annotations

import io
import os
import shutil

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import StorageError
from kraft_testkit.protocol.log import iter_log
from kraft_testkit.raft.errors import CorruptFile
from kraft_testkit.tools.dump_log import dump_paths
from kraft_testkit.tools.metadata_image_loader import load_image

DIR = "__cluster_metadata-0"
TINY = {"internal.metadata.log.segment.bytes": 2_000,
        "log.index.interval.bytes": 300,
        "metadata.log.max.record.bytes.between.snapshots": 1_500}
RETAIN_SMALL = {**TINY, "metadata.max.retention.bytes": 6_000,
                "testkit.raft.log.clean.interval.ms": 1_000}


def assignments(c: Cluster) -> dict:
    return {t.name: (str(t.id), {p: tuple(part.replicas) for p, part in t.partitions.items()})
            for t in c.metadata.topics}


def files(folder) -> list[str]:
    return sorted(os.listdir(folder))


def busy(data_dir, configs, topics: int = 8, seed: int = 3) -> Cluster:
    c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=data_dir, configs=configs)
    for i in range(topics):
        c.create_topic(f"t{i}", partitions=3, replication_factor=3)
    c.run_for(5_000)
    return c


def test_segments_roll_with_indexes_dump_log_reads_and_reopen_recovers(tmp_path):
    c = busy(tmp_path, TINY)
    before = assignments(c)
    folder = tmp_path / "controller-1000" / DIR
    names = files(folder)
    logs = [n for n in names if n.endswith(".log")]
    assert len(logs) > 2 and logs[0] == f"{0:020d}.log"
    for log in logs:
        stem = log[:-4]
        assert f"{stem}.index" in names and f"{stem}.timeindex" in names
    paths = [str(folder / n) for n in names if n.endswith((".log", ".index", ".timeindex"))]
    out, err = io.StringIO(), io.StringIO()
    assert dump_paths(paths, out, err) == 0, err.getvalue()  # indexes match their segments
    assert "offset: " in out.getvalue() and "timestamp: " in out.getvalue()
    c.close()
    again = Cluster(3, 3, seed=8, storage="tmpdir", data_dir=tmp_path, configs=TINY)
    assert again.failed_nodes == {} and assignments(again) == before
    again.close()


def test_retention_by_size_deletes_old_snapshots_and_the_segments_below(tmp_path):
    c = busy(tmp_path, RETAIN_SMALL, topics=12)
    c.run_for(2_000)  # a cleaner round after the last snapshot
    for n in c.controller_ids + c.broker_ids:
        log = c.replica(n).log
        folder = tmp_path / os.path.basename(c.sim.process(n).disk.root) / DIR
        names = files(folder)
        snaps = [x for x in names if x.endswith(".checkpoint")]
        assert log.start_offset > 0 and log.start_offset == log.snapshots[0].end_offset
        assert len(snaps) == len(log.snapshots) >= 1
        size = log.size + sum(s.size for s in log.snapshots)
        # Kafka deletes while over the limit, keeping the newest snapshot
        assert size <= 6_000 or len(log.snapshots) == 1
        bases = sorted(int(x[:-4]) for x in names if x.endswith(".log"))
        assert bases[0] <= log.start_offset and all(b > log.start_offset for b in bases[1:])
    before = assignments(c)
    # the metadata shell reads the retained snapshot and the segments after it
    shell = load_image(tmp_path / "controller-1000")
    assert shell.snapshot is not None and len(shell.files) >= 2
    assert shell.image.topics.names() == c.metadata.topics.names()
    c.close()
    again = Cluster(3, 3, seed=5, storage="tmpdir", data_dir=tmp_path, configs=RETAIN_SMALL)
    assert again.failed_nodes == {} and assignments(again) == before


def test_retention_by_age_keeps_the_newest_snapshot(tmp_path):
    configs = {**TINY, "metadata.max.retention.ms": 20_000,
               "testkit.raft.log.clean.interval.ms": 1_000}
    c = busy(tmp_path, configs, topics=8)
    replica = c.replica(c.active_controller)
    assert len(replica.log.snapshots) > 1 and replica.log.start_offset == 0  # young enough
    c.run_for(30_000)  # older than 20 s now, but the newest stays, and the log from it
    for n in c.controller_ids:
        log = c.replica(n).log
        newest = log.snapshots[-1]
        assert log.start_offset > 0
        assert all(c.now_ms + c.raft_config.log_time_base_ms - s.timestamp <= 20_000
                   for s in log.snapshots[:-1])
        assert newest.end_offset >= log.start_offset
    c.create_topic("after", 1, 3)
    c.close()


def test_a_lagging_node_catches_up_from_the_snapshot_after_retention(tmp_path):
    c = busy(tmp_path, RETAIN_SMALL, topics=2)
    victim = next(h for h in c.controllers if h != c.active_controller)
    end = c.replica(victim).log.end_offset
    c.faults.kill(victim)
    for i in range(12):
        c.create_topic(f"late{i}", partitions=3, replication_factor=3)
    c.run_for(3_000)
    assert c.replica(c.active_controller).log.start_offset > end  # what it lacks is gone
    c.faults.start(victim)
    c.run_until(lambda c: c.controller_node(victim).controller.committed.offset
                >= c.metadata.offset, 20_000)
    log = c.replica(victim).log  # it fetched the snapshot and started its log there
    assert log.start_offset > end and log.snapshot.end_offset >= log.start_offset


def test_an_unformatted_node_folder_is_refused_naming_the_file(tmp_path):
    c = busy(tmp_path, {}, topics=2)
    before = assignments(c)
    c.close()
    os.remove(tmp_path / "broker-1" / "meta.properties")
    again = Cluster(3, 3, seed=4, storage="tmpdir", data_dir=tmp_path)
    failure = again.failed_nodes[1]
    assert isinstance(failure, StorageError)
    assert failure.file == str(tmp_path / "broker-1" / "meta.properties")
    assert "not formatted" in str(failure)
    assert assignments(again) == before and set(again.failed_nodes) == {1}
    # starting it again is refused the same way; a wiped (empty) disk is formatted anew
    with pytest.raises(StorageError):
        again.faults.start(again.node(1))
    again.faults.wipe_disk(again.node(1))
    again.run_until(lambda c: c.broker(1) is not None and c.broker(1).state_name == "RUNNING",
                    30_000)
    again.close()


def test_new_folders_are_formatted_by_the_kit_but_a_stray_controller_file_is_damage(tmp_path):
    Cluster(3, 1, seed=1, storage="tmpdir", data_dir=tmp_path).close()
    # a broker added on a reopen: its folder does not exist yet, the kit formats it
    again = Cluster(3, 2, seed=1, storage="tmpdir", data_dir=tmp_path)
    assert again.failed_nodes == {}
    assert (tmp_path / "broker-1" / "meta.properties").is_file()
    again.close()
    # a .log not named by its offset in a controller's metadata log: a typed error
    (tmp_path / "controller-1001" / DIR / "stray.log").write_bytes(b"")
    third = Cluster(3, 2, seed=1, storage="tmpdir", data_dir=tmp_path)
    failure = third.failed_nodes[1001]
    assert isinstance(failure, CorruptFile) and failure.file.endswith("stray.log")
    third.close()
    shutil.rmtree(tmp_path / "controller-1001" / DIR)


def test_readers_of_the_committed_log_get_batches_below_a_snapshot_too(tmp_path):
    """Below a snapshot a node took, the log keeps only the batches' bytes and offsets; dump_log
    (and the demo's and HTML timelines, which read the same way) still get every batch."""
    c = busy(tmp_path, TINY, topics=6)
    replica = c.replica(c.active_controller)
    assert replica.log.snapshot is not None and replica.log.start_offset == 0
    assert type(replica.log.batches[0]).__name__ == "SettledBatch"
    n = c.dump_log(tmp_path / "dump.log")
    batches = list(iter_log((tmp_path / "dump.log").read_bytes()))
    assert n == len(batches) and batches[0].batch.base_offset == 0
    assert batches[-1].batch.last_offset == replica.hw - 1
    offsets = [b.batch.base_offset for b in batches]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
