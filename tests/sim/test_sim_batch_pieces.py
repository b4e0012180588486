"""Disk pieces held as the run of batches they are a stretch of (sim/batch_pieces.py): rebuilt
byte for byte at every phase, refused (packed with lzma instead) on any other bytes, and what an
idle cluster's disks hold of a long NoOp log."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.noop_batches import build_noop_batches
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.sim import disk as disk_mod
from kraft_testkit.sim.batch_pieces import BatchRunPiece, describe
from kraft_testkit.sim.disk import MemoryDisk, PieceStore
from kraft_testkit.sim.node import Append

PIECE = 1 << 16


def _noop_log(base: int = 1_000, count: int = 3_000, stride: int = 500) -> bytes:
    run = build_noop_batches(base, 7, [1_700_000_000_000 + stride * i for i in range(count)])
    return b"".join(run.data)


@pytest.mark.parametrize("start", [0, 1, 16, 27, 60, 71, 72, 73, 4_000, 65_536])
def test_a_stretch_of_noop_batches_is_rebuilt_byte_for_byte_at_every_phase(start):
    raw = _noop_log()[start:start + PIECE]
    piece = describe(memoryview(raw))
    assert isinstance(piece, BatchRunPiece)
    assert piece.raw() == raw
    assert piece.held_bytes() < 300  # against ~7 KB packed with lzma


@pytest.mark.parametrize("stride", [0, 1, 500, -3])
def test_any_timestamp_stride_is_rebuilt(stride):
    raw = _noop_log(stride=stride)[100:100 + PIECE]
    assert describe(raw).raw() == raw


def test_any_other_bytes_are_refused_never_rebuilt_wrong():
    blob = _noop_log()
    rng = random.Random(5)
    for _ in range(200):  # one flipped bit anywhere: no run (the disk packs it with lzma)
        start = rng.randrange(0, 1_000)
        raw = bytearray(blob[start:start + 8_192])
        raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        piece = describe(bytes(raw))
        assert piece is None or piece.raw() == raw
    # a stride that changes, an epoch that changes, a gap in offsets, a batch of another size
    a = build_noop_batches(0, 1, [500 * i for i in range(400)]).data
    b = build_noop_batches(400, 1, [200_000 + 700 * i for i in range(400)]).data
    c = build_noop_batches(400, 2, [500 * (400 + i) for i in range(400)]).data
    d = build_noop_batches(401, 1, [500 * (400 + i) for i in range(400)]).data
    for tail in (b, c, d):
        raw = b"".join(a + tail)[24_000:34_000]  # across the change at 28,800
        assert describe(raw) is None
    assert describe(b"\0" * PIECE) is None and describe(b"") is None


def test_a_disk_reads_back_a_long_noop_log_exactly_and_holds_little_of_it():
    log = _noop_log(count=40_000)  # 2.7 MiB: 43 pieces
    disk = MemoryDisk(PieceStore())
    for i in range(0, len(log), 7_000):
        disk.apply(Append("m/0.log", log[i:i + 7_000]))
        disk.sync()
    assert disk.view()["m/0.log"] == log
    assert disk.durable()["m/0.log"] == log
    assert disk.held_bytes() < PIECE + 43 * 300
    pieces = disk._files["m/0.log"].packed  # noqa: SLF001
    assert len(pieces) == len(log) // PIECE
    assert all(type(p) is BatchRunPiece for p in pieces)


def test_an_idle_cluster_keeps_its_log_segments_as_runs_and_reads_them_back(monkeypatch):
    """Every log segment an idle cluster wrote, read back from the pieces, decodes as Kafka's
    batches: whole, in order, CRCs valid; the pieces are the runs' (lzma only where a run
    broke), and the cluster reopens from those files."""
    monkeypatch.setattr(disk_mod, "PACK_BYTES", 8_192)  # many pieces in a short run
    c = Cluster(3, 3, seed=4)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.run_for(1_800_000)
    runs = others = 0
    for n in c.controller_ids + c.broker_ids:
        disk = c.sim.process(n).disk
        for name, f in disk._files.items():  # noqa: SLF001
            if name.endswith(".log"):
                runs += sum(type(p) is BatchRunPiece for p in f.packed)
                others += sum(type(p) is not BatchRunPiece for p in f.packed)
                data = disk.view()[name]
                offsets = [b.base_offset for _, b in iter_batches(data)]
                assert offsets == sorted(offsets) and len(offsets) > 1_000
                assert all(b.crc_valid for _, b in iter_batches(data))
    assert runs > 20 * 6 and others <= runs // 5, (runs, others)
    end = c.replica(c.active_controller.id).log.end_offset
    c.faults.kill(c.broker_ids[0])  # it reads its segments back from the pieces
    c.faults.start(c.broker_ids[0])
    c.run_for(10_000)
    assert c.replica(c.broker_ids[0]).log.end_offset > end
