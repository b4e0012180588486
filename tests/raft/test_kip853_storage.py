"""KIP-853 on disk: the bootstrap checkpoint, snapshots carrying the voter set in their header
batch, quorum-state data_version 1, and a restart that takes its voter set from its files."""

from __future__ import annotations

import json

from kraft_testkit.protocol.frames import decode_control
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft.voters import snapshot_voters

BOOTSTRAP = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def _boot(**kw) -> Quorum:
    q = Quorum(kraft_version=1, **kw)
    q.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
    return q


def test_bootstrap_checkpoint_and_quorum_state_v1():
    q = _boot(voters=3, seed=2)
    new = q.add_controller()
    q.run_for(1_000)
    for n in q.voters:
        files = q.sim.process(n).disk.durable()
        version, voters = snapshot_voters(files[BOOTSTRAP])
        assert version == 1 and set(voters) == {1, 2, 3}
        state = json.loads(files["__cluster_metadata-0/quorum-state"])
        assert state["data_version"] == 1 and "currentVoters" not in state
        assert "votedDirectoryId" in state
    assert BOOTSTRAP not in q.sim.process(new).disk.durable()  # formatted with neither flag
    static = Quorum(voters=3, seed=2)
    static.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
    state = json.loads(static.sim.process(1).disk.durable()["__cluster_metadata-0/quorum-state"])
    assert state["data_version"] == 0 and len(state["currentVoters"]) == 3


def test_snapshot_header_carries_the_voter_set_and_a_restart_reads_it():
    q = _boot(voters=1, seed=3, config={"metadata.log.max.record.bytes.between.snapshots": 200})
    added = [q.add_controller() for _ in range(2)]
    for n in added:
        q.add_voter(n)
    for i in range(20):
        q.append([f"record-{i}".encode() * 4])
    leader = q.replica(q.leader_id)
    snap = leader.log.snapshot
    assert snap is not None and snap.end_offset > 0
    first = next(iter_batches(snap.data))[1]
    types = [decode_control(r.key, r.value).type_name for r in first.records]
    assert types[:3] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
    assert set(snapshot_voters(snap.data)[1]) == {1, *added}
    for n in q.nodes:
        q.faults.restart(n)
    q.converge()
    for r in q.replicas():
        assert set(r.voters) == {1, *added} and r.majority == 2
