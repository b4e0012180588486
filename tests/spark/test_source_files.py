"""``kraft-metadata`` batch reads of files: real Kafka logs (tests/golden), our tmpdir clusters,
every kind of path, offsets, and the errors for bad input."""

from __future__ import annotations

import json
import shutil

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.log import read_log
from kraft_testkit.spark import files
from kraft_testkit.spark.rows import COLUMNS
from kraft_testkit.tools.dump_log import payload_json

B = "B_mv18_3brokers_restart"
C = "C_mv18_3brokers"
A = "A_mv16_3brokers"
SEGMENT = "__cluster_metadata-0/00000000000000000000.log"


def _read(spark, path, **options):
    return spark.read.format("kraft-metadata").options(**options).load(str(path))


def _expected(path, prerelease=False):
    """(offset, type, json) of every record, by the kit's own reader and dump-log's JSON."""
    return [(r.offset, None if r.payload is None else r.payload.type_name,
             payload_json(r.payload))
            for b in read_log(path, prerelease=prerelease) for r in b.records]


def test_golden_kafka_log_rows_match_the_codec_and_dump_log(spark, golden):
    rows = _read(spark, golden / B).orderBy("offset").collect()
    assert [c for c in rows[0].asDict()] == COLUMNS
    assert [(r.offset, r.record_type, r.value_json) for r in rows] == _expected(golden / B / SEGMENT)
    assert len(rows) == 26
    # the second LeaderChangeMessage (controller restart, epoch 2) at offset 25, a control record
    last = rows[-1]
    assert (last.offset, last.is_control, last.record_type, last.leader_epoch) == \
        (25, True, "LEADER_CHANGE", 2)
    assert json.loads(last.value_json)["leaderId"] == 1000
    reg = [r for r in rows if r.record_type == "REGISTER_BROKER_RECORD"][0]
    assert (reg.api_key, reg.record_version) == (0, 3)
    assert json.loads(reg.value_json)["data"]["logDirs"]  # Kafka's field names
    assert bytes(reg.value)[:3] == bytes([1, 0, 3])  # frame 1, type 0, version 3: the raw value


def test_every_kind_of_path_gives_the_same_rows(spark, golden):
    node_dir = golden / C
    counts = {p: _read(spark, p).count()
              for p in (node_dir, node_dir / "__cluster_metadata-0", node_dir / SEGMENT)}
    assert set(counts.values()) == {24}


def test_prerelease_golden_log_reads_with_the_option(spark, golden):
    df = _read(spark, golden / A, prerelease="true")
    assert df.count() == 94
    types = {r.record_type for r in df.select("record_type").distinct().collect()}
    assert {"PARTITION_RECORD", "TOPIC_RECORD", "REGISTER_BROKER_RECORD"} <= types


def test_offsets_bound_a_batch_read(spark, golden):
    df = _read(spark, golden / B, startingOffsets="5", endingOffsets="9")
    assert [r.offset for r in df.orderBy("offset").collect()] == [5, 6, 7, 8]
    df = _read(spark, golden / B, startingOffsets='{"__cluster_metadata":{"0":24}}')
    assert [r.offset for r in df.orderBy("offset").collect()] == [24, 25]


def test_tmpdir_cluster_log_and_snapshot(spark, tmp_path):
    c = Cluster(controllers=1, brokers=2, seed=3, storage="tmpdir", data_dir=tmp_path,
                configs={"metadata.log.max.record.bytes.between.snapshots": 1_000})
    for i in range(4):
        c.create_topic(f"t{i}", partitions=3, replication_factor=2)
    node = tmp_path / "controller-1000"
    meta = node / "__cluster_metadata-0"
    for i in range(200):  # filler records until the controller writes a snapshot
        if list(meta.glob("*.checkpoint")):
            break
        c.alter_client_quota({"user": "filler"}, {"producer_byte_rate": float(i % 2 + 1)})
    expected = [row for seg in sorted(meta.glob("*.log")) for row in _expected(seg)]
    rows = _read(spark, node).orderBy("offset").collect()
    assert [(r.offset, r.record_type, r.value_json) for r in rows] == expected
    snap = _read(spark, node, files="snapshot")
    latest = sorted(meta.glob("*.checkpoint"))[-1]
    assert snap.count() == len(_expected(latest)) > 0
    assert _read(spark, latest).count() == snap.count()  # a .checkpoint file as the path
    topics = {r.topic for r in snap.selectExpr(
        "get_json_object(value_json, '$.data.name') AS topic").where(
        "record_type = 'TOPIC_RECORD'").collect()}
    assert "t0" in topics and topics <= {"t0", "t1", "t2", "t3"}


def test_data_dir_of_several_nodes_asks_for_one(spark, tmp_path):
    Cluster(controllers=1, brokers=1, seed=1, storage="tmpdir", data_dir=tmp_path)
    with pytest.raises(Exception, match=r"holds several node directories \(broker-0, "
                                        r"controller-1000\)"):
        _read(spark, tmp_path).count()


def test_missing_path_is_named(spark, tmp_path):
    with pytest.raises(Exception, match=r"kraft-metadata: path .*nowhere does not exist"):
        _read(spark, tmp_path / "nowhere").count()


def test_a_file_that_is_not_a_log_is_named(spark, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello, this is not a record batch\n")
    with pytest.raises(Exception, match=r"notes.txt is not a Kafka log segment"):
        _read(spark, bad).count()


def test_damaged_batch_names_the_file_and_position(spark, golden, tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    data = bytearray((golden / C / SEGMENT).read_bytes())
    spans = files.batch_spans(bytes(data))
    pos = spans[3][0]
    data[pos + 70] ^= 0xFF  # inside the fourth batch's records: its CRC no longer verifies
    seg.write_bytes(bytes(data))
    with pytest.raises(Exception) as info:
        _read(spark, seg).count()
    text = str(info.value)
    assert "kraft-metadata" in text and str(seg) in text
    assert "CRC" in text or "crc" in text
    assert f"byte offset {pos + 17}" in text  # the batch's CRC field, counted in the file


def test_undecodable_record_names_the_offset(spark, golden):
    # folder A's PartitionRecords are a pre-release v1 layout: without the option they fail
    with pytest.raises(Exception, match=r"A_mv16_3brokers.*record at offset \d+"):
        _read(spark, golden / A).count()


def test_unknown_option_is_named_with_the_allowed_ones(spark, golden):
    with pytest.raises(Exception, match=r"unknown option\(s\) \['startingoffset'\]; allowed"):
        _read(spark, golden / B, startingOffset="3").count()


def test_plan_splits_large_files_at_batch_boundaries(golden, tmp_path, monkeypatch):
    seg = tmp_path / "00000000000000000000.log"
    data = (golden / C / SEGMENT).read_bytes()
    seg.write_bytes(data)
    monkeypatch.setattr(files, "MIN_PARTITION_BYTES", 1)
    chunks = files.plan([str(seg)], 4)
    assert len(chunks) == 4
    bounds = {pos for pos, _, _ in files.batch_spans(data)} | {len(data)}
    assert chunks[0][1] == 0 and chunks[-1][2] == len(data)
    for (_, a, b), (_, c, _) in zip(chunks, chunks[1:]):
        assert b == c and a in bounds and b in bounds


def test_copy_of_a_golden_log_reads_as_the_original(spark, golden, tmp_path):
    shutil.copytree(golden / B, tmp_path / "node")
    assert _read(spark, tmp_path / "node").count() == 26


def test_without_value_json_the_other_columns_are_the_same(spark, golden):
    full = _read(spark, golden / B).drop("value_json").orderBy("offset").collect()
    lite = _read(spark, golden / B, valueJson="false").orderBy("offset")
    assert lite.where("value_json IS NOT NULL").count() == 0
    assert lite.drop("value_json").collect() == full
    with pytest.raises(Exception, match="option 'valuejson' must be true or false"):
        _read(spark, golden / B, valueJson="maybe").count()
