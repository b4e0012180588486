"""storage="tmpdir": every node's files in Kafka's layout under ``c.data_dir``, readable by
``read_log`` and by ``kraft-testkit dump-log``; a whole cluster restarts from them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cluster_scn_helpers import cluster_with_epoch_invariant, read_records

from kraft_testkit.cluster import Cluster

SEEDS = range(3)
SEGMENT = "00000000000000000000.log"


def properties(path: str) -> dict[str, str]:
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, _, v = line.partition("=")
                out[k] = v
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_files_in_kafka_layout(seed, tmp_path):
    c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=tmp_path)
    c.create_topic("orders", 2, 3)
    assert c.data_dir == os.fspath(tmp_path)
    for n in c.controller_ids + c.broker_ids:
        role = "controller" if n in c.controller_ids else "broker"
        root = tmp_path / f"{role}-{n}"
        log_dir = root / "__cluster_metadata-0"
        assert (log_dir / SEGMENT).is_file()
        meta = properties(root / "meta.properties")
        assert meta["node.id"] == str(n)
        assert meta["cluster.id"] == c.cluster_id
        assert meta["version"] == "1"
        assert meta["directory.id"] == str(c.directory_ids[n])
        state = json.loads((log_dir / "quorum-state").read_text())
        assert state["data_version"] == 0
        assert sorted(v["voterId"] for v in state["currentVoters"]) == c.controller_ids
        assert state["leaderId"] in c.controller_ids and state["leaderEpoch"] >= 1
        assert "topic_id: AAAAAAAAAAAAAAAAAAAAAQ" in (log_dir / "partition.metadata").read_text()
        # the segment is the committed log (a replica may hold a few uncommitted records more)
        records = read_records(log_dir / SEGMENT)
        assert records[0].type == "LeaderChangeMessage"
        topics = [r.msg.name for r in records if r.type == "TopicRecord"]
        if n in c.controller_ids:
            assert topics == ["orders"]
        assert all(r.offset == i for i, r in enumerate(records))  # no gaps from offset 0
    # the facade's dump is the committed prefix of every replica's segment
    assert c.dump_log(tmp_path / "dump.log") > 0
    dumped = read_records(tmp_path / "dump.log")
    active = tmp_path / f"controller-{c.active_controller.id}" / "__cluster_metadata-0" / SEGMENT
    on_disk = read_records(active)
    assert [(r.offset, r.type) for r in dumped] == [(r.offset, r.type)
                                                    for r in on_disk[:len(dumped)]]


@pytest.mark.parametrize("seed", range(2))
def test_dump_log_cli_reads_the_files(seed, tmp_path):
    c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=tmp_path)
    c.create_topic("orders", 2, 3)
    path = tmp_path / f"controller-{c.controller_ids[0]}" / "__cluster_metadata-0" / SEGMENT
    script = os.path.join(os.path.dirname(sys.executable), "kraft-testkit")
    command = [script] if os.path.exists(script) else [sys.executable, "-m",
                                                       "kraft_testkit.tools.cli"]
    out = subprocess.run([*command, "dump-log", "--cluster-metadata-decoder", str(path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "REGISTER_BROKER_RECORD" in out.stdout
    assert '"name":"orders"' in out.stdout.replace(" ", "")
    assert "LeaderChange" in out.stdout
    assert out.stdout.count("REGISTER_BROKER_RECORD") == 3


@pytest.mark.parametrize("seed", range(3))
def test_whole_cluster_restarts_from_its_files(seed, tmp_path):
    c = cluster_with_epoch_invariant(3, 3, seed=seed, storage="tmpdir", data_dir=tmp_path)
    c.create_topic("orders", 3, 3, configs={"retention.ms": "1234"})
    before = c.metadata
    for h in c.brokers + c.controllers:
        c.faults.kill(h)
    for h in c.controllers + c.brokers:
        c.faults.start(h)
    c.run_until(lambda c: c.active_controller is not None, 20_000)
    assert c.metadata.topic("orders").id == before.topic("orders").id
    assert dict(c.metadata.configs.topic("orders")) == {"retention.ms": "1234"}
    # the old incarnations' leases run out, the new ones register and run
    c.run_until(lambda c: all(not c.broker_state(b).fenced and c.broker_state(b).epoch
                              > before.cluster.broker(b).epoch for b in c.broker_ids), 60_000)
    c.run_until(lambda c: c.all_brokers_running(), 10_000)
    assert all(p.leader != -1 for p in c.metadata.topic("orders").partitions.values())


@pytest.mark.parametrize("seed", range(2))
def test_snapshot_files_on_disk(seed, tmp_path):
    c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=tmp_path,
                configs={"metadata.log.max.record.bytes.between.snapshots": 1000})
    for i in range(6):
        c.create_topic(f"t{i}", 3, 3)
    c.run_for(1_000)
    for n in c.controller_ids:
        log_dir = tmp_path / f"controller-{n}" / "__cluster_metadata-0"
        snaps = sorted(log_dir.glob("*.checkpoint"))
        assert snaps, f"no snapshot in {log_dir}"
        end = int(snaps[-1].name.split("-")[0])
        records = read_records(snaps[-1])
        assert records[0].type == "SnapshotHeaderRecord"
        assert records[-1].type == "SnapshotFooterRecord"
        assert {r.type for r in records} >= {"FeatureLevelRecord", "RegisterBrokerRecord",
                                            "TopicRecord", "PartitionRecord"}
        # the segment files now start at or before the snapshot, not necessarily at 0
        segments = sorted(log_dir.glob("*.log"))
        assert segments and int(segments[0].name.split(".")[0]) <= end


@pytest.mark.parametrize("combined,kraft_version,mv", [(False, 0, 29), (True, 1, "4.0-IV3")])
def test_format_writes_bootstrap_checkpoint_as_kafka_storage_format(combined, kraft_version,
                                                                    mv, tmp_path):
    """``kafka-storage format`` runs on every node and writes ``bootstrap.checkpoint`` in each
    log directory it formats (Kafka 4.2.1 ``Formatter#doFormat`` through
    ``BootstrapDirectory#writeBinaryFile``), controllers and brokers alike: the kit's
    formatting writes the storage tool's bytes for the same levels and instant, and a reopen
    starts on them (``KafkaRaftServer`` reads the file at every start)."""
    import struct

    from crc32c import crc32c

    from kraft_testkit.cluster import DEFAULT_START_MS
    from kraft_testkit.metadata import versions as V
    from kraft_testkit.tools.storage_tool import bootstrap_checkpoint

    c = Cluster(1, 2, seed=3, storage="tmpdir", data_dir=tmp_path, combined=combined,
                kraft_version=kraft_version, metadata_version=mv)
    expected = bootstrap_checkpoint(V.get(mv).level, {"kraft.version": kraft_version},
                                    DEFAULT_START_MS)
    folders = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == (2 if combined else 3)
    for folder in folders:
        assert (folder / "bootstrap.checkpoint").read_bytes() == expected
    c.close()
    # read apart by hand (record batch v2 framing): a header control batch at offset 0, one
    # batch of FeatureLevelRecords, a footer control batch; epoch 0, stamped at format time
    pos, batches = 0, []
    while pos < len(expected):
        base, length, epoch, magic, crc, attrs = struct.unpack_from(">qiibIh", expected, pos)
        body = expected[pos + 21:pos + 12 + length]
        stamp = struct.unpack_from(">q", expected, pos + 27)[0]
        assert (epoch, magic, crc, stamp) == (0, 2, crc32c(body), DEFAULT_START_MS)
        batches.append((base, bool(attrs & 0x20)))
        pos += 12 + length
    assert [control for _, control in batches] == [True, False, True]
    assert batches[0][0] == 0 and batches[1][0] == 1
    # BatchFileWriter#open: the header's LastContainedLogTimestamp is 0, not the format time
    records = read_records(folders[0] / "bootstrap.checkpoint")
    assert records[0].type == "SnapshotHeaderRecord" and records[-1].type == "SnapshotFooterRecord"
    assert records[0].msg.last_contained_log_timestamp == 0
    levels = [(r.msg.name, r.msg.feature_level) for r in records[1:-1]]
    assert levels[0] == ("metadata.version", V.get(mv).level)
    assert "kraft.version" not in dict(levels)  # it lives in the Raft log
    reopened = Cluster(1, 2, seed=4, storage="tmpdir", data_dir=tmp_path, combined=combined,
                       kraft_version=kraft_version, metadata_version=mv)
    try:
        assert reopened.failed_nodes == {}
        reopened.create_topic("after", 1, 1)
        for folder in folders:
            assert (folder / "bootstrap.checkpoint").read_bytes() == expected
    finally:
        reopened.close()
