"""Record batch timestamps: the virtual clock mapped onto a real instant, not 1970.

Virtual time 0 is 2026-01-01T00:00:00Z unless ``testkit.log.time.base.ms`` says otherwise; the
snapshot header's LastContainedLogTimestamp follows. The base is fixed, so the same seed still
writes the same bytes.
"""

from __future__ import annotations

import datetime

import pytest

from kraft_testkit.cluster import DEFAULT_START_MS, Cluster
from kraft_testkit.errors import ConfigError

UTC = datetime.timezone.utc


def leader_batches(c: Cluster):
    node = c.sim.process(c.active_controller.id).machine
    return node.raft.log.batches_between(node.raft.log.start_offset, node.raft.log.end_offset)


def test_default_timestamps_start_at_2026_and_follow_virtual_time():
    c = Cluster(1, 1, seed=1)
    c.run_for(5_000)
    stamps = [b.max_timestamp for b in leader_batches(c)]
    assert datetime.datetime.fromtimestamp(DEFAULT_START_MS / 1000, UTC) == \
        datetime.datetime(2026, 1, 1, tzinfo=UTC)
    assert stamps == sorted(stamps)
    assert DEFAULT_START_MS <= stamps[0] and stamps[-1] <= DEFAULT_START_MS + c.now_ms
    assert stamps[-1] - stamps[0] >= 4_000          # NoOps every 500 virtual ms


def test_the_base_is_configurable_and_reaches_snapshots():
    base = int(datetime.datetime(2024, 6, 1, tzinfo=UTC).timestamp() * 1000)
    c = Cluster(1, 1, seed=2, configs={"testkit.log.time.base.ms": base,
                                       "metadata.log.max.snapshot.interval.ms": 3_000})
    c.run_for(5_000)
    assert all(base <= b.max_timestamp <= base + c.now_ms for b in leader_batches(c))
    node = c.sim.process(c.controller_ids[0]).machine
    snapshot = node.raft.log.snapshot
    assert snapshot is not None and base < snapshot.last_contained_log_timestamp <= base + c.now_ms


def test_same_seed_same_bytes():
    one, two = Cluster(1, 1, seed=3), Cluster(1, 1, seed=3)
    one.run_for(3_000)
    two.run_for(3_000)
    assert [b.crc for b in leader_batches(one)] == [b.crc for b in leader_batches(two)]


def test_a_bad_base_is_a_config_error():
    with pytest.raises(ConfigError, match="testkit.log.time.base.ms"):
        Cluster(1, 1, configs={"testkit.log.time.base.ms": -5}, boot=False)
