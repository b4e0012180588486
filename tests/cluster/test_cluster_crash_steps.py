"""A kill at every disk operation of the multi-file steps of the metadata log: a segment roll
(the old segment's last time-index entry, three new files, the batch, its index entries), a
snapshot, and a retention clean (segments and older snapshots deleted). The same seed runs once
to find the step, then once per operation with ``faults.crash_in_writes`` armed to strike right
there; the node comes back, catches up, and the whole cluster is reopened from its directories:
nothing committed is lost, no node refuses its files, invariants on throughout."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import KraftError
from kraft_testkit.sim.node import Append, Delete, Replace

CONFIGS = {"internal.metadata.log.segment.bytes": 700,
           "log.index.interval.bytes": 150,
           "metadata.log.max.record.bytes.between.snapshots": 1_200,
           "metadata.max.retention.bytes": 0, "testkit.raft.log.clean.interval.ms": 300}
SEED = 5
STEPS = {
    "roll": lambda op: type(op) is Append and op.file.endswith(".log") and op.data == b"",
    "snapshot": lambda op: type(op) is Replace and op.file.endswith(".checkpoint")
    and op.file != "bootstrap.checkpoint",
    "clean": lambda op: type(op) is Delete and op.file.endswith(".checkpoint"),
}


class RecordingDisk:
    """The node's disk, noting every operation applied to it (the simulator sees no change)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.ops: list = []
        self.syncs: list[int] = [0]  # how many ops were applied at each fsync

    def apply(self, op) -> None:
        self.ops.append(op)
        self.inner.apply(op)

    def sync(self) -> None:
        self.syncs.append(len(self.ops))
        self.inner.sync()

    def __getattr__(self, name):
        return getattr(self.inner, name)


def assignments(c: Cluster) -> dict:
    return {t.name: (str(t.id), {p: tuple(part.replicas) for p, part in t.partitions.items()})
            for t in c.metadata.topics}


def boot(data_dir) -> tuple[Cluster, int]:
    c = Cluster(3, 1, seed=SEED, storage="tmpdir", data_dir=data_dir, configs=CONFIGS)
    follower = next(h.id for h in c.controllers if h != c.active_controller)
    return c, follower


def workload(c: Cluster) -> None:
    for i in range(6):
        try:
            c.create_topic(f"t{i}", partitions=2, replication_factor=1)
        except KraftError:
            pass
        c.run_for(400)


def find_step(tmp_path, kind: str) -> range:
    """The operations (counted from the end of boot) between the fsyncs around the first step
    of ``kind`` on the follower: a kill before each of them, and after the last."""
    c, node = boot(tmp_path / "find")
    process = c.sim.process(node)
    recorder = process.disk = RecordingDisk(process.disk)
    workload(c)
    c.close()
    hits = [i for i, op in enumerate(recorder.ops) if STEPS[kind](op)]
    assert hits, f"no {kind} on node {node} in the workload"
    start = max(n for n in recorder.syncs if n <= hits[0])
    end = min(n for n in recorder.syncs if n > hits[0])
    return range(start, end + 1)


@pytest.mark.parametrize("kind", sorted(STEPS))
def test_a_kill_at_every_operation_of_the_step_loses_nothing(kind, tmp_path):
    for k in find_step(tmp_path, kind):  # every operation of the step, and the fsync after
        data_dir = tmp_path / f"k{k}"
        c, node = boot(data_dir)
        c.faults.crash_in_writes(node, k)
        workload(c)
        assert not c.node(node).up, f"the crash at op {k} did not strike"
        c.faults.start(c.node(node))
        c.run_until(lambda c, node=node: c.controller_node(node) is not None
                    and c.controller_node(node).controller.committed.offset
                    >= c.metadata.offset, 20_000)
        before = assignments(c)
        c.close()
        again = Cluster(3, 1, seed=SEED + 1, storage="tmpdir", data_dir=data_dir,
                        configs=CONFIGS)
        assert again.failed_nodes == {}, f"crash at op {k}: {again.failed_nodes}"
        assert assignments(again) == before, f"crash at op {k} lost committed topics"
        again.close()
