"""The Raft invariants' record of committed batches (raft/committed_record.py): every lookup
answers as a plain dict of ``base -> (last, key)`` would, whether the batch's CRC is stored or a
NoOp run rebuilds it, over NoOp runs (strides, breaks, epochs), data batches and out-of-order
batches; and an idle day's record stays small."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.noop_batches import build_noop_batches
from kraft_testkit.protocol.records import RecordBatch, encode_batch
from kraft_testkit.raft import committed_record
from kraft_testkit.raft.committed_record import CommittedRecord
from kraft_testkit.raft.invariants import _batch_key


def _stream(rng: random.Random) -> list[tuple[int, int, bytes]]:
    """``(base, last, bytes)`` of batches at consecutive offsets: NoOp runs with breaks
    (another stride, epoch or timestamp jump), data batches of one or more records."""
    out: list[tuple[int, int, bytes]] = []
    offset, ts, epoch = 0, 1_700_000_000_000, 1
    while len(out) < 3_000:
        kind = rng.random()
        if kind < 0.5:
            n, stride = rng.randrange(1, 400), rng.choice([500, 500, 0, 250, 499])
            run = build_noop_batches(offset, epoch, [ts + stride * i for i in range(n)])
            out += [(offset + i, offset + i, d) for i, d in enumerate(run.data)]
            offset, ts = offset + n, ts + stride * n + rng.randrange(0, 700)
        elif kind < 0.9:
            values = [rng.randbytes(rng.choice([8, 8, 20])) for _ in range(rng.choice([1, 1, 3]))]
            batch = RecordBatch.build(offset, values, timestamp_ms=ts, leader_epoch=epoch)
            out.append((offset, batch.last_offset, encode_batch(batch)))
            offset, ts = batch.last_offset + 1, ts + rng.randrange(0, 50)
        else:
            epoch += 1
    return out


@pytest.mark.parametrize("seed", range(12))
def test_every_lookup_answers_as_a_dict_would(monkeypatch, seed):
    monkeypatch.setattr(committed_record, "WINDOW", 64)  # most NoOp CRCs dropped and rebuilt
    monkeypatch.setattr(committed_record, "_TRIM_EVERY", 50)
    rng = random.Random(seed)
    record, model = CommittedRecord(), {}
    stream = _stream(rng)
    for i, (base, last, data) in enumerate(stream):
        key = _batch_key(data)
        record.add(base, last, key, data if rng.random() < 0.98 else None)
        model[base] = (last, key)
        if i % 97 == 0:  # a replica holding a batch below the newest run's (rare): extra
            old_base, old_last, old = stream[rng.randrange(0, i + 1)]
            if record.get(old_base) is None:
                record.add(old_base, old_last, _batch_key(old), old)
        for probe in (base, rng.randrange(0, base + 2), base + 1):
            assert record.get(probe) == model.get(probe), probe
    assert len(record) >= len(model)
    assert all(record.get(b) == v for b, v in model.items())
    assert len(record.crcs) < len(model)  # the NoOp runs' older CRCs were dropped


def test_a_broken_run_is_not_taken_for_a_noop_run():
    """A run of one-record batches of one length that are not one batch patched (data) keeps
    every CRC, and no template."""
    record = CommittedRecord()
    for i in range(100):
        batch = RecordBatch.build(i, [bytes([i % 256]) * 8], timestamp_ms=1_000 + i,
                                  leader_epoch=1)
        data = encode_batch(batch)
        record.add(i, i, _batch_key(data), data)
        assert record.get(i) == (i, _batch_key(data))
    assert not record.templates and len(record.crcs) == 100


def test_an_idle_days_record_holds_a_window_of_crcs_not_the_day():
    c = Cluster(3, 3, seed=3)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.run_for(3 * 3_600_000)
    record = c.invariants.raft._batches  # noqa: SLF001
    assert len(record) > 3 * 7_000
    assert len(record.crcs) < committed_record.WINDOW + committed_record._TRIM_EVERY + 200
    assert record.held_bytes() < 100_000  # 4 bytes a batch (86 KB for three hours) before
    # a restarted broker's committed prefix is compared again, batch by batch, from the runs
    broker = c.broker_ids[0]
    c.faults.kill(broker)
    c.run_for(60_000)
    c.faults.start(broker)
    c.run_for(60_000)
    assert c.replica(broker).hw >= c.replica(c.active_controller.id).log.end_offset - 200
