"""A segment's index entries held as arithmetic runs (raft/segments.py ``IndexEntries``): read,
compared and truncated as the list of pairs they stand for, and equal to Kafka's ``.index`` and
``.timeindex`` files an idle cluster writes."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.raft.segments import OFFSET_ENTRY, TIME_ENTRY, IndexEntries


@pytest.mark.parametrize("seed", range(40))
def test_runs_read_as_the_pairs_they_stand_for(seed):
    rng = random.Random(seed)
    pairs: list[tuple[int, int]] = []
    x, y = rng.randrange(100), rng.randrange(100)
    for _ in range(rng.randrange(0, 60)):
        if rng.random() < 0.3:  # a step that breaks the run
            x, y = x + rng.randrange(1, 5), y + rng.randrange(-3, 9)
        else:
            x, y = x + 57, y + 4_104
        pairs.append((x, y))
    entries = IndexEntries(pairs)
    assert list(entries) == pairs and len(entries) == len(pairs)
    assert bool(entries) is bool(pairs) and entries == pairs == IndexEntries(pairs)
    assert [entries[i] for i in range(-len(pairs), len(pairs))] == pairs + pairs
    with pytest.raises(IndexError):
        entries[len(pairs)]
    cut = rng.randrange(0, 200)
    assert list(IndexEntries(e for e in entries if e[0] < cut)) == [e for e in pairs if e[0] < cut]


def test_an_idle_hour_of_entries_is_a_few_runs_equal_to_the_index_files():
    c = Cluster(3, 3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    c.run_for(3_600_000)
    for n in c.controller_ids + c.broker_ids:
        log = c.replica(n).log
        files = c.sim.process(n).disk.view()
        for seg in log.segments:
            offsets = [(o + seg.base, p) for o, p in OFFSET_ENTRY.iter_unpack(files[seg.index])]
            times = [(t, o + seg.base) for t, o in TIME_ENTRY.iter_unpack(files[seg.timeindex])]
            assert list(seg.offsets) == offsets and list(seg.times) == times
        entries = sum(len(s.offsets) for s in log.segments)
        runs = sum(len(s.offsets.a) for s in log.segments)
        assert entries > 100 and runs <= 12, (entries, runs)
