"""Controller snapshots: with a small metadata.log.max.record.bytes.between.snapshots a
``.checkpoint`` file appears on every controller, retention (tiny here) moves the log start to
it, and a controller
with a wiped disk, a restarted one, or a broker starting from nothing catches up from it."""

from __future__ import annotations

import pytest
from cluster_scn_helpers import Spy, cluster_with_epoch_invariant

from kraft_testkit.cluster import Cluster
from kraft_testkit.metadata import MetadataImage
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import MetadataRecord
from kraft_testkit.protocol.log import iter_log

SNAP = {"metadata.log.max.record.bytes.between.snapshots": 1_000,
        # Kafka keeps 100 MiB of log and snapshots; here retention moves the log start at once
        "metadata.max.retention.bytes": 0, "testkit.raft.log.clean.interval.ms": 100}
SEEDS = range(5)


def checkpoints(c: Cluster, node: int) -> list[str]:
    """The snapshots (not the root's bootstrap.checkpoint, which format writes)."""
    return sorted(n for n in c.sim.process(node).disk.view()
                  if n.startswith("__cluster_metadata-0/") and n.endswith(".checkpoint"))


def snapshot_end_offset(file_name: str) -> int:
    # 00000000000000000031-0000000001.checkpoint: end offset (exclusive) - epoch
    return int(file_name.rsplit("/", 1)[-1].split("-")[0])


def read_snapshot(c: Cluster, node: int, file_name: str) -> list:
    data = c.sim.process(node).disk.view()[file_name]
    return [r.payload for b in iter_log(data) for r in b.records]


def comparable(image: MetadataImage) -> dict:
    """The image as a dict, without the filler quota (see :func:`fill_until_snapshotted`)."""
    d = image.to_dict(provenance=False)
    d["client_quotas"] = {k: v for k, v in d["client_quotas"].items() if k != "user=filler"}
    return d


def snapshotted(c: Cluster, offset: int) -> bool:
    return all(checkpoints(c, n) and snapshot_end_offset(checkpoints(c, n)[-1]) > offset
               for n in c.controller_ids)


def fill_until_snapshotted(c: Cluster, offset: int) -> None:
    """Write filler records (a quota of user "filler" flipping between two values) until every
    controller has a snapshot past ``offset``: NoOps alone take minutes to reach the threshold.
    (Controllers count snapshot bytes on their own, so their snapshots need not coincide.)"""
    for i in range(200):
        if snapshotted(c, offset):
            c.run_for(150)  # the snapshot cleaner's next round moves the log start
            return
        c.alter_client_quota({"user": "filler"}, {"producer_byte_rate": float(i % 2 + 1)})
        last = c.metadata.offset
        # every controller applies it (followers learn the high watermark a fetch later)
        c.run_until(lambda c, last=last: all(c.controller_node(n).controller.committed.offset
                                             >= last for n in c.controller_ids), 5_000)
    raise AssertionError(f"no snapshot past offset {offset}")


def busy_cluster(seed: int, **kwargs) -> Cluster:
    c = Cluster(3, 3, seed=seed, configs=SNAP, **kwargs)
    c.alter_client_quota({"user": "filler"}, {"producer_byte_rate": 1.0})
    for i in range(5):
        c.create_topic(f"t{i}", 3, 3, configs={"retention.ms": str(1000 + i)})
    c.alter_client_quota({"user": "u"}, {"producer_byte_rate": 1.0})
    fill_until_snapshotted(c, c.metadata.offset)
    return c


@pytest.mark.parametrize("seed", SEEDS)
def test_snapshot_files_appear_and_the_log_start_moves(seed):
    c = busy_cluster(seed)
    m = c.controller_metrics()
    assert m.last_snapshot_offset >= 0
    assert m.snapshot_offset_lag == m.last_committed_offset - m.last_snapshot_offset
    for n in c.controller_ids:
        name = checkpoints(c, n)[-1]
        end = snapshot_end_offset(name)
        replica = c.replica(n)
        assert replica.log.start_offset > 0, "the log was truncated up to a snapshot"
        assert replica.log.start_offset <= end
        payloads = read_snapshot(c, n, name)
        kinds = [type(p.message).__name__ for p in payloads]
        assert kinds[0] == "SnapshotHeaderRecord" and kinds[-1] == "SnapshotFooterRecord"
        records = [p for p in payloads if isinstance(p, MetadataRecord)]
        image = MetadataImage.from_snapshot(records, (end - 1, 1))
        # nothing but NoOps since: the snapshot holds the whole current state
        assert comparable(image) == comparable(c.metadata)
        assert image.topics.names() == [f"t{i}" for i in range(5)]
        # no record type the snapshot does not need (no NoOps, no transactions)
        assert "NoOpRecord" not in kinds and "BeginTransactionRecord" not in kinds


@pytest.mark.parametrize("seed", SEEDS)
def test_controller_with_a_wiped_disk_catches_up_from_the_snapshot(seed):
    c = busy_cluster(seed)
    spy = Spy(c)
    wiped = [h for h in c.controllers if h != c.active_controller][seed % 2]
    c.faults.wipe_disk(wiped)
    target = c.metadata

    def caught_up(c: Cluster) -> bool:
        m = c.controller_node(wiped)
        return m is not None and m.controller.committed.offset >= target.offset

    c.run_until(caught_up, 30_000)
    assert spy.delivered(M.FetchSnapshotRequest, src=wiped.id), "it fetched the snapshot"
    m = c.controller_node(wiped)
    assert comparable(m.controller.committed) == comparable(c.metadata)
    assert checkpoints(c, wiped.id), "the fetched snapshot is on its disk"
    assert c.replica(wiped).log.start_offset > 0
    # and the cluster still works
    c.create_topic("after", 1, 3)
    c.run_until(lambda c: c.controller_node(wiped).controller.committed.topic("after") is not None,
                5_000)


@pytest.mark.parametrize("seed", SEEDS)
def test_restarted_controller_loads_its_snapshot(seed):
    c = busy_cluster(seed)
    node = c.active_controller
    c.faults.kill(node)
    c.run_until(lambda c: c.active_controller not in (None, node), 20_000)
    c.faults.start(node)
    m = c.controller_node(node)
    # right at start, before any fetch: the image is the snapshot's (plus its own log)
    assert m.controller.committed.topics.names() == [f"t{i}" for i in range(5)]
    c.run_until(lambda c: c.controller_node(node).controller.committed.offset
                >= c.metadata.offset, 10_000)
    assert comparable(c.controller_node(node).controller.committed) == comparable(c.metadata)


@pytest.mark.parametrize("seed", range(4))
def test_broker_starting_from_nothing_catches_up_from_the_snapshot(seed):
    c = cluster_with_epoch_invariant(3, 3, seed=seed, configs=SNAP)
    for i in range(5):
        c.create_topic(f"t{i}", 3, 3)
    fill_until_snapshotted(c, c.metadata.offset)
    spy = Spy(c)
    b = seed % 3
    c.faults.wipe_disk(b)
    c.run_until(lambda c: c.broker_state(b).state == "RUNNING" and not c.broker_state(b).fenced,
                40_000)
    assert spy.delivered(M.FetchSnapshotRequest, src=b), "the broker fetched a snapshot"
    image = c.broker(b).image
    assert image.topics.names() == [f"t{i}" for i in range(5)]
    assert image.offset >= c.broker_state(b).epoch
    # it hosts its replicas again and rejoins the ISRs
    c.run_until(lambda c: all(b in p.isr for t in c.metadata.topics
                              for p in t.partitions.values() if b in p.replicas), 60_000)
