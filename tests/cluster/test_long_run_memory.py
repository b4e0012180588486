"""A long idle run keeps its memory: what an idle virtual hour adds to the structures that
grew with it (issue 24 section 3; benchmarks/README.md, "A long idle run's memory").

3 + 3 with one RF-3 topic, fast-forward on (the default): the second virtual hour is measured
against the first, structure by structure, with ``sys.getsizeof`` over the distinct objects
the metadata logs hold, the simulated disks' held bytes and the Raft invariants' record. Before
the bounds (2026-12-04) an idle hour added ~5 MB of disk bytes, ~14,000 decoded batches, ~2.5 MB
of per-batch log objects and ~1.3 MB of invariant record."""

from __future__ import annotations

import sys

from kraft_testkit.cluster import Cluster

HOUR = 3_600_000


def _held(c: Cluster) -> dict[str, int]:
    """Bytes (and counts) the long-run structures hold now."""
    disks = logs = decoded = 0
    seen: set[int] = set()
    pieces: set[int] = set()  # packed pieces the disks share, counted once
    for n in c.controller_ids + c.broker_ids:
        process = c.sim.process(n)
        disks += process.disk.held_bytes(pieces)
        log = process.machine.raft.log
        for column in (log.bases, log.batches, log.data, log.positions):
            logs += sys.getsizeof(column)
        for objects in (log.batches, log.data):
            for obj in objects:
                if id(obj) not in seen:
                    seen.add(id(obj))
                    logs += sys.getsizeof(obj)
                    decoded += type(obj).__name__ == "RecordBatch"
    record = c.invariants.raft._batches  # noqa: SLF001 - the committed-prefix record
    inv = sum(a.itemsize * len(a) for a in (record.bases, record.lasts, record.keys))
    return {"disks": disks, "logs": logs, "decoded": decoded, "invariants": inv}


def test_an_idle_virtual_hour_adds_little_memory():
    c = Cluster(3, 3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.run_for(HOUR)
    before = _held(c)
    end = c.replica(c.active_controller.id).log.end_offset
    c.run_for(HOUR)
    after = _held(c)
    batches = c.replica(c.active_controller.id).log.end_offset - end
    assert batches > 7_000  # the hour's NoOps (one every 500 ms), all kept as Kafka keeps them
    grew = {k: after[k] - before[k] for k in after}
    # the disks hold the six logs' 72-byte NoOp batches packed (~4x): ~0.75 MB an hour
    assert grew["disks"] < 1_000_000, grew
    # the decoded batches of an hour go once every node took its hourly snapshot past them
    assert grew["decoded"] < batches // 2, grew
    # per batch: one shared bytes object (121 B) and 4 slots of 8 bytes on each of 6 nodes
    # (list growth aside): ~2.5 MB an hour
    assert grew["logs"] < 400 * batches, grew
    # 24 bytes a committed batch
    assert grew["invariants"] <= 24 * batches + 4096, grew
