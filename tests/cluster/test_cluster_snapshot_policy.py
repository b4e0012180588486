"""Metadata snapshots on every node, as Kafka's SnapshotGenerator takes them.

Kafka snapshots on controllers *and* brokers, after
``metadata.log.max.record.bytes.between.snapshots`` (20 MiB) of committed batches or after
``metadata.log.max.snapshot.interval.ms`` (1 hour; 0 = never by time), named
``<end offset:020d>-<epoch:010d>.checkpoint``.
"""

from __future__ import annotations

import re

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.config import NodeConfig
from kraft_testkit.metadata.snapshot_generator import SnapshotGenerator, batch_bytes
from kraft_testkit.protocol.frames import encode_record
from kraft_testkit.protocol.records import Record, RecordBatch, encode_batch

KAFKA_NAME = re.compile(r"^(.*/)?\d{20}-\d{10}\.checkpoint$")


def checkpoints(c: Cluster, node: int) -> list[str]:
    """The snapshots (not the root's bootstrap.checkpoint, which format writes)."""
    return sorted(n for n in c.sim.process(node).disk.view()
                  if n.startswith("__cluster_metadata-0/") and n.endswith(".checkpoint"))


def test_defaults_are_kafkas():
    config = NodeConfig()
    assert config.snapshot_max_new_record_bytes == 20 * 1024 * 1024
    assert config.snapshot_max_interval_ms == 3_600_000


def test_batch_bytes_is_the_encoded_batch_size():
    from kraft_testkit.controller.bootstrap import bootstrap_records

    values = [encode_record(r) for r in bootstrap_records(29)]
    batch = RecordBatch(0, tuple(Record(i, 0, None, v) for i, v in enumerate(values)),
                        partition_leader_epoch=1, last_offset_delta=len(values) - 1,
                        base_timestamp=0, max_timestamp=0)
    assert batch_bytes(batch) == len(encode_batch(batch))


@pytest.mark.parametrize("seed", range(2))
def test_every_node_snapshots_by_interval(seed):
    c = Cluster(3, 3, seed=seed, configs={"metadata.log.max.snapshot.interval.ms": 60_000})
    c.run_for(65_000)
    for node in c.controller_ids + c.broker_ids:
        names = checkpoints(c, node)
        assert names, f"node {node} took no snapshot in 65 s with a 60 s interval"
        assert all(KAFKA_NAME.match(n) for n in names), names


def test_brokers_snapshot_by_bytes():
    c = Cluster(1, 2, seed=3, configs={"metadata.log.max.record.bytes.between.snapshots": 3_000})
    for i in range(30):
        c.alter_client_quota({"user": "filler"}, {"producer_byte_rate": float(i % 2 + 1)})
    c.run_for(2_000)
    for node in c.controller_ids + c.broker_ids:
        assert checkpoints(c, node), f"node {node} has no snapshot"


def test_no_snapshot_before_the_interval_or_the_bytes():
    c = Cluster(1, 1, seed=5, configs={"metadata.log.max.snapshot.interval.ms": 0})
    c.run_for(30_000)
    assert checkpoints(c, c.controller_ids[0]) == [] and checkpoints(c, 0) == []


def test_the_generator_counts_bytes_then_time_and_waits_for_a_transaction_to_end():
    batch = RecordBatch(0, (Record(0, 0, None, b"x" * 100),), last_offset_delta=0)
    g = SnapshotGenerator(max_bytes=500, max_interval_ms=1_000)   # each batch: 168 bytes
    assert batch_bytes(batch) == 168
    assert g.on_commit([batch], 0, False) is None           # 168
    assert g.on_commit([batch], 10, True) is None           # 336
    assert g.on_commit([batch], 20, True) is None           # 504: due, but mid-transaction
    assert "bytes" in g.on_commit([batch], 30, False)       # 672: taken, counters reset
    assert g.bytes_since == 0 and g.last_ms == 30
    assert g.on_commit([batch], 1_029, False) is None
    assert "minute" in g.on_commit([batch], 1_030, False)
