"""Bulk NoOp runs (kraft_testkit/fastforward/noop_run.py) against stepping, node by node.

Two identical clusters are stepped to an idle point. Cluster A steps on for a while (the real
per-batch paths); we record what it did: the leader's NoOp instants (from its log), every
node's log end and each commit's (instant, high watermark). Cluster B, still at the idle point,
gets the same run through the bulk calls. Then every node of B must equal its twin in A in
everything the run touches: all files byte for byte (and the data directory's real files),
the Raft log and its segments and indexes, high watermark, epoch cache, the controller's
committed image, metrics and NoOp schedule, the broker's image and its logic's metadata
state, the snapshot generator's counters. A planted bug (a timestamp off, an index entry
lost) must be caught.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward import noop_run
from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.fastforward.noop_run import (
    append_fetched_noops,
    append_leader_noops,
    apply_commit_run,
    apply_noop_stretch,
    build_noop_batches,
    noop_batches_in_log,
    run_log_cleaner,
)
from kraft_testkit.protocol.records import RecordBatch, encode_batch, iter_batches
from kraft_testkit.metadata.replay import NOOP_VALUE
from kraft_testkit.protocol.frames import encode_record
from kraft_testkit.raft.segments import Segment

#: heartbeats far apart, so a broker's own timer does not fall inside the runs compared here
#: (a heartbeat is not a NoOp commit: the warp steps or models it, not these primitives)
QUIET = {"broker.heartbeat.interval.ms": 60_000, "broker.session.timeout.ms": 200_000}


def _ids(c: Cluster) -> list[int]:
    return sorted({*c.controller_ids, *c.broker_ids})  # (combined nodes are both)


def _twins(seed: int, brokers: int, configs: dict | None = None, tmp: Path | None = None,
           **options) -> tuple[Cluster, Cluster]:
    made = []
    for name in ("a", "b"):
        kw = dict(options)
        kw.setdefault("fast_forward", False)  # stepped: one twin gets the bulk calls
        if tmp is not None:
            kw.update(storage="tmpdir", data_dir=tmp / name)
        c = Cluster(3, brokers, seed=seed, configs={**QUIET, **(configs or {})}, **kw)
        c.run_for(1_000)
        made.append(c)
    return made[0], made[1]


def _record_commits(c: Cluster) -> dict[int, list[tuple[int, int]]]:
    """Wrap every node's listener fan-out to note (instant, high watermark) of each commit."""
    seen: dict[int, list[tuple[int, int]]] = {}
    for nid in _ids(c):
        node = c.sim.process(nid).machine
        fan = node._fan_out
        pairs = seen[nid] = []

        def wrapped(batches, fan=fan, pairs=pairs, real=fan.handle_commit):
            pairs.append((fan.now_ms, batches[-1].last_offset + 1))
            return real(batches)
        fan.handle_commit = wrapped
    return seen


def _leader_submits(a: Cluster, b: Cluster) -> tuple[list[int], int]:
    """The NoOp instants of A's leader since B's point (from its log), and A's instant."""
    leader = a.active_controller.id
    ra, rb = a.replica(leader), b.replica(leader)
    cfg = ra.config
    out = []
    raw = ra.log.raw_between(rb.log_end_offset, ra.log_end_offset)  # (settled batches too)
    for _, batch in iter_batches(raw):
        assert batch.records[0].value == NOOP_VALUE and len(batch.records) == 1
        out.append(batch.max_timestamp - cfg.log_time_base_ms - cfg.append_linger_ms)
    qa = a.sim.process(leader).machine.controller
    if ra._lead.pending:  # submitted, lingering at A's instant
        out.append(qa.soft["noop.last_ms"])
    done = b.sim.process(leader).machine.controller.soft["noop.last_ms"]  # (B may hold it
    return [s for s in out if s > done], a.sim.scheduler.now_ms          # lingering)


def _bulk(a: Cluster, b: Cluster, commits: dict[int, list[tuple[int, int]]], *,
          through_snapshots: bool = False) -> dict[int, noop_run.CommitRun]:
    leader = a.active_controller.id
    submits, now = _leader_submits(a, b)
    _, done = apply_noop_stretch({n: b.sim.process(n) for n in _ids(b)}, leader, submits,
                                 until_ms=now,
                                 log_ends={n: a.replica(n).log_end_offset for n in _ids(a)},
                                 commits=commits, through_snapshots=through_snapshots)
    return done


def _encoded(image) -> tuple:
    """The image as its snapshot records' bytes, and where it stands."""
    return tuple(image.provenance), tuple(encode_record(r) for r in image.write())


def _segment_state(seg: Segment) -> tuple:
    return tuple(getattr(seg, f) for f in Segment.__slots__)


def _batch_view(b) -> tuple:
    return b.base_offset, b.last_offset, b.partition_leader_epoch, b.max_timestamp


def _differences(a: Cluster, b: Cluster, *, clocks: bool = False) -> list[str]:
    """Everything a NoOp run touches, node by node; empty when A and B agree."""
    out = []
    for nid in _ids(a):
        pa, pb = a.sim.process(nid), b.sim.process(nid)
        na, nb = pa.machine, pb.machine
        if dict(pa.disk.view()) != dict(pb.disk.view()):
            files = sorted(set(pa.disk.view()) | set(pb.disk.view()))
            bad = [f for f in files if pa.disk.view().get(f) != pb.disk.view().get(f)]
            out.append(f"{nid}: files differ: {bad}")
        if pa.disk.durable() != pb.disk.durable():
            out.append(f"{nid}: durable files differ")
        ra, rb = na.raft, nb.raft
        la, lb = ra.log, rb.log
        for f in ("start_offset", "end_offset", "bases", "data", "positions",
                  "epochs", "settled", "snapshots"):
            if getattr(la, f) != getattr(lb, f):
                out.append(f"{nid}: log.{f} differs")
        # a batch below a snapshot may be settled on one side and a shared NoOp batch on
        # the other (raft/log.py SHARED_RECORDS); what settling keeps must agree, and the
        # bytes (log.data) say the rest
        if list(map(_batch_view, la.batches)) != list(map(_batch_view, lb.batches)):
            out.append(f"{nid}: log.batches differs")
        if any(x.crc != y.crc for x, y in zip(la.batches, lb.batches)
               if hasattr(x, "crc") and hasattr(y, "crc")):
            out.append(f"{nid}: batch CRC fields differ")
        if list(map(_segment_state, la.segments)) != list(map(_segment_state, lb.segments)):
            out.append(f"{nid}: segments differ")
        for f in ("hw", "_next", "_epoch_file", "_epoch_sig", "_fired"):
            if getattr(ra, f) != getattr(rb, f):
                out.append(f"{nid}: raft.{f} {getattr(ra, f)} != {getattr(rb, f)}")
        if ra._lead is not None:
            me_a, me_b = ra._lead.voters[nid], rb._lead.voters[nid]
            if (me_a.end_offset, ra.acknowledged, ra._lead.pending, ra._lead.drain_at) != \
                    (me_b.end_offset, rb.acknowledged, rb._lead.pending, rb._lead.drain_at):
                out.append(f"{nid}: the leader's own progress or pending NoOp differs")
        if na.image.to_dict() != nb.image.to_dict() or na.image != nb.image or \
                _encoded(na.image) != _encoded(nb.image):
            out.append(f"{nid}: image differs")
        ga, gb = na.snapshots, nb.snapshots
        if (ga.bytes_since, ga.last_ms, ga.snapshots) != (gb.bytes_since, gb.last_ms,
                                                           gb.snapshots):
            out.append(f"{nid}: snapshot generator {ga.__dict__} != {gb.__dict__}")
        qa, qb = na.controller, nb.controller
        if qa is not None:
            ma, mb = qa.metrics, qb.metrics
            if (ma.last_committed_offset, ma.last_applied_offset, ma.committed_records,
                    ma.last_snapshot_offset, ma.fenced_broker_count, ma.active_broker_count) != \
                    (mb.last_committed_offset, mb.last_applied_offset, mb.committed_records,
                     mb.last_snapshot_offset, mb.fenced_broker_count, mb.active_broker_count):
                out.append(f"{nid}: controller metrics differ")
            if qa.committed != qb.committed or qa.image != qb.image:
                out.append(f"{nid}: controller images differ")
            if (qa.soft.get("noop.last_ms"), qa.last_write_ms, qa.written_offset) != \
                    (qb.soft.get("noop.last_ms"), qb.last_write_ms, qb.written_offset):
                out.append(f"{nid}: controller NoOp schedule or written offset differs")
            if clocks and qa.now_ms != qb.now_ms:
                out.append(f"{nid}: controller clock differs")
        if na.logic is not None:
            la_, lb_ = na.logic, nb.logic
            if (la_.image, la_.metadata_offset, la_.lifecycle.metadata_offset,
                    la_.replicas.image) != (lb_.image, lb_.metadata_offset,
                                            lb_.lifecycle.metadata_offset, lb_.replicas.image):
                out.append(f"{nid}: broker logic's metadata state differs")
        if clocks and na._fan_out.now_ms != nb._fan_out.now_ms:
            out.append(f"{nid}: listener clock differs")
    if a.data_dir is not None:
        for nid in _ids(a):
            da, db = Path(a.data_dir), Path(b.data_dir)
            files_a = {p.relative_to(da).as_posix(): p.read_bytes() for p in da.rglob("*")
                       if p.is_file()}
            files_b = {p.relative_to(db).as_posix(): p.read_bytes() for p in db.rglob("*")
                       if p.is_file()}
            if files_a != files_b:
                bad = sorted(k for k in files_a.keys() | files_b.keys()
                             if files_a.get(k) != files_b.get(k))
                out.append(f"data directories differ: {bad[:5]}")
            break
    return out


def _run_and_compare(a: Cluster, b: Cluster, ms: int, **kw) -> tuple[list[str], dict, dict]:
    commits = _record_commits(a)
    a.run_for(ms)
    results = _bulk(a, b, commits, **kw)
    for nid, r in results.items():
        assert r.applied == len(commits[nid]) and commits[nid], (nid, r)
    return _differences(a, b), results, commits


# ---------------------------------------------------------------------- the batches


def test_built_batches_equal_the_encoder() -> None:
    stamps = [1_700_000_000_000 + 500 * i + (i % 3) for i in range(50)]
    run = build_noop_batches(12_345, 7, stamps)
    for i, ts in enumerate(stamps):
        want = RecordBatch.build(12_345 + i, [NOOP_VALUE], timestamp_ms=ts, leader_epoch=7)
        assert run.data[i] == encode_batch(want)
        assert run.leader[i] == want and run.leader[i].crc == want.crc == 0
        assert run.replica[i] == want and run.replica[i].crc == int.from_bytes(
            run.data[i][17:21], "big")


# ---------------------------------------------------------------------- the differential


@pytest.mark.parametrize("seed,brokers", [(1, 3), (4, 10)])
def test_a_run_over_an_index_interval_equals_stepping(seed: int, brokers: int) -> None:
    """40 virtual seconds: ~80 NoOps, past the first ``.index`` entry (every 4,096 bytes)."""
    a, b = _twins(seed, brokers)
    diffs, results, commits = _run_and_compare(a, b, 40_000)
    assert diffs == []
    assert all(r.stopped is None and not r.stepped for r in results.values())
    for nid in results:  # the listeners' clock: the last commit's instant
        node = b.sim.process(nid).machine
        assert node._fan_out.now_ms == commits[nid][-1][0]
        assert node.controller is None or node.controller.now_ms == commits[nid][-1][0]
    for nid in results:  # every node crossed an index interval in the run
        assert len(b.replica(nid).log.segments[-1].offsets) >= 1
    assert b.replica(a.active_controller.id).hw > 70


@pytest.mark.parametrize("options", [{"combined": True}, {"kraft_version": 1}],
                         ids=["combined", "kraft-version-1"])
def test_combined_nodes_and_dynamic_voters_equal_stepping(options: dict) -> None:
    """Combined nodes (controller and broker listeners on one node, one generator) and a
    KIP-853 quorum (a VotersRecord in the log, the bootstrap checkpoint)."""
    a, b = _twins(10, 3, **options)
    diffs, results, commits = _run_and_compare(a, b, 20_000)
    assert diffs == [] and all(r.stopped is None for r in results.values())


def test_a_run_on_a_data_dir_equals_stepping(tmp_path: Path) -> None:
    a, b = _twins(2, 2, tmp=tmp_path)
    diffs, _, _ = _run_and_compare(a, b, 31_000)
    assert diffs == []
    log = Path(b.data_dir) / "node-1000"  # real files were written by the bulk calls too
    assert any(p.suffix == ".index" and p.stat().st_size for p in Path(b.data_dir).rglob("*")) \
        or log.exists()


def test_a_planted_timestamp_bug_is_caught(monkeypatch) -> None:
    a, b = _twins(3, 2)
    real = noop_run.build_noop_batches

    def off_by_one(base, epoch, stamps):
        stamps = list(stamps)
        stamps[len(stamps) // 2] += 1
        return real(base, epoch, stamps)
    monkeypatch.setattr(noop_run, "build_noop_batches", off_by_one)
    diffs, _, _ = _run_and_compare(a, b, 10_000)
    assert any("files differ" in d for d in diffs)
    assert any("log.batches differs" in d for d in diffs)


def test_a_planted_missing_index_entry_is_caught(monkeypatch) -> None:
    a, b = _twins(3, 2)
    real = Segment.add_run

    def lose_one(self, batches, size, config):
        index, timeindex = real(self, batches, size, config)
        return index[8:], timeindex
    monkeypatch.setattr(Segment, "add_run", lose_one)
    diffs, _, _ = _run_and_compare(a, b, 31_000)
    assert any("files differ" in d and ".index" in d for d in diffs)


# ---------------------------------------------------------------------- snapshots


def test_a_run_stops_where_a_snapshot_falls_due() -> None:
    """A snapshot interval of 10 s: each node's run stops at the pair of its first snapshot
    in stepping, and applies exactly the pairs before it."""
    cfg = {"metadata.log.max.snapshot.interval.ms": 10_000}
    a, b = _twins(5, 2, cfg)
    commits = _record_commits(a)
    taken: dict[int, list[int]] = {}
    for nid in _ids(a):
        node = a.sim.process(nid).machine
        gen = node.snapshots

        def on_commit(batches, now_ms, txn, gen=gen, nid=nid, real=gen.on_commit):
            reason = real(batches, now_ms, txn)
            if reason:
                taken.setdefault(nid, []).append(now_ms)
            return reason
        gen.on_commit = on_commit
    a.run_for(15_000)
    results = _bulk(a, b, commits)
    for nid, r in results.items():
        assert taken.get(nid), f"node {nid} took no snapshot in stepping"
        assert r.stopped is not None and "snapshot falls due by time" in r.stopped
        assert commits[nid][r.applied][0] == taken[nid][0]
        gb = b.sim.process(nid).machine.snapshots
        assert gb.snapshots == 0 and b.replica(nid).hw == commits[nid][r.applied - 1][1]
        # a run ending exactly at that pair stops there too, having applied the ones before
        again = apply_commit_run(b.sim.process(nid), commits[nid][r.applied:r.applied + 1])
        assert again.applied == 0 and "snapshot falls due" in again.stopped


@pytest.mark.parametrize("cfg", [
    {"metadata.log.max.snapshot.interval.ms": 10_000},
    {"metadata.log.max.record.bytes.between.snapshots": 72 * 25},
], ids=["by-time", "by-bytes"])
def test_a_run_through_snapshots_equals_stepping(cfg: dict) -> None:
    """With ``through_snapshots`` the pair where a snapshot falls due takes the real path:
    the snapshot files, the settled log and the counters equal stepping's."""
    a, b = _twins(6, 2, cfg)
    diffs, results, commits = _run_and_compare(a, b, 25_000, through_snapshots=True)
    assert diffs == []
    assert all(r.stepped and r.stopped is None for r in results.values())
    assert all(a.sim.process(n).machine.snapshots.snapshots >= 1 for n in results)


# ---------------------------------------------------------------------- refusals


def test_refusals_name_the_reason() -> None:
    a, b = _twins(7, 1)
    leader = b.active_controller.id
    qc = b.sim.process(leader).machine.controller
    last = qc.soft["noop.last_ms"]
    with pytest.raises(InexactFastForward, match="next is due"):
        append_leader_noops(b.sim.process(leader), [last + 499])
    follower = next(n for n in b.controller_ids if n != leader)
    with pytest.raises(InexactFastForward, match="not the active controller"):
        append_leader_noops(b.sim.process(follower), [last + 500])
    run = build_noop_batches(b.replica(follower).log_end_offset + 5, 1, [1, 2])
    with pytest.raises(InexactFastForward, match="log ends at"):
        append_fetched_noops(b.sim.process(follower), run)
    hw = b.replica(follower).hw
    with pytest.raises(InexactFastForward, match="beyond"):
        apply_commit_run(b.sim.process(follower), [(b.sim.scheduler.now_ms, hw + 100)])
    broker = b.broker_ids[0]
    wake = b.sim.process(broker).machine._logic_wake
    with pytest.raises(InexactFastForward, match="may act in the run"):
        apply_commit_run(b.sim.process(broker), [(wake, b.replica(broker).hw)])
    clean = b.replica(leader)._clean_at
    with pytest.raises(InexactFastForward, match="log cleaner"):
        append_leader_noops(b.sim.process(leader),
                            list(range(last + 500, clean + 500, 500)))


def test_runs_with_rolls_and_dense_indexes_equal_stepping() -> None:
    """Small segments (rolled by size and by age) and an index entry every ~4 batches: a run
    that would roll goes batch by batch, the others in bulk; the files equal stepping's."""
    cfg = {"internal.metadata.log.segment.bytes": 2_000,
           "metadata.log.segment.ms": 7_000, "log.index.interval.bytes": 300}
    a, b = _twins(8, 2, cfg)
    diffs, _, _ = _run_and_compare(a, b, 30_000)
    assert diffs == []
    assert len(b.replica(b.active_controller.id).log.segments) > 5


def test_a_run_split_at_the_log_cleaner_equals_stepping() -> None:
    """75 virtual seconds cross each node's first log-cleaner run (a minute after start): the
    runs stop before it, :func:`run_log_cleaner` runs it, the runs go on."""
    a, b = _twins(9, 2, {"broker.heartbeat.interval.ms": 100_000,
                         "broker.session.timeout.ms": 300_000})
    commits = _record_commits(a)
    a.run_for(74_000)
    cleaned = {n: a.replica(n)._clean_at - a.raft_config.log_clean_interval_ms
               for n in commits}
    leader = a.active_controller.id
    submits, now = _leader_submits(a, b)
    c = cleaned[leader]
    linger = a.raft_config.append_linger_ms
    pl = b.sim.process(leader)
    before = [p for p in commits[leader] if p[0] < c]
    run1 = append_leader_noops(pl, [s for s in submits if s < c], until_ms=c - 1)
    assert apply_commit_run(pl, before).applied == len(before)
    run_log_cleaner(pl, c)
    run2 = append_leader_noops(pl, [s for s in submits if s >= c], until_ms=now)
    assert apply_commit_run(pl, commits[leader][len(before):]).stopped is None
    assert run1.data and run2.data and all(s + linger != c for s in submits)
    for nid, pairs in commits.items():
        if nid == leader:
            continue
        p = b.sim.process(nid)
        append_fetched_noops(p, run1)
        append_fetched_noops(p, run2, a.replica(nid).log_end_offset)
        first = apply_commit_run(p, pairs)
        assert first.stopped and "log cleaner" in first.stopped
        assert first.applied == len([q for q in pairs if q[0] < cleaned[nid]])
        run_log_cleaner(p, cleaned[nid])
        rest = apply_commit_run(p, pairs[first.applied:])
        assert rest.applied == len(pairs) - first.applied and rest.stopped is None
    assert _differences(a, b) == []
    assert all(b.replica(n)._clean_at == a.replica(n)._clean_at for n in commits)


def test_a_planted_commit_bug_is_caught(monkeypatch) -> None:
    """The snapshot generator's byte count off by one per batch: caught."""
    a, b = _twins(3, 2)
    monkeypatch.setattr(noop_run, "batch_bytes", lambda batch: 73)
    diffs, _, _ = _run_and_compare(a, b, 5_000)
    assert any("snapshot generator" in d for d in diffs)


def test_noop_batches_in_a_log() -> None:
    """A leader's NoOps already in its log come back as a run, byte for byte; a range holding
    other records (the boot's registrations) is refused."""
    a, _ = _twins(12, 1)
    a.run_for(5_000)  # ten NoOps at the end
    log = a.replica(a.active_controller.id).log
    end = log.end_offset
    run = noop_batches_in_log(log, end - 5, end)
    assert run.data == log.data[-5:] and run.replica == log.batches[-5:]
    with pytest.raises(InexactFastForward, match="not NoOps"):
        noop_batches_in_log(log, 0, end)


def test_the_noop_value_is_the_encoded_noop_record():
    """delta.NOOP_VALUE (the replay's fast skip, the warp's and the bulk runs' test of a plain
    answer) is NoOpRecord v0 as the codec frames it."""
    from kraft_testkit.protocol import messages as M
    from kraft_testkit.protocol.frames import encode_metadata

    assert encode_metadata(M.NoOpRecord(), 0) == NOOP_VALUE


def test_a_snapshot_settles_the_shared_noop_batches_into_runs() -> None:
    """Settling below a snapshot (``RaftLog.settle``) moves the batches into the log's settled
    prefix (raft/log_runs.py), where a run of the warp's NoOp batches (``SHARED_RECORDS``) is
    one entry: read back, each is its bytes (``SettledBytes``, answering as a
    ``SettledBatch``), equal on every node; the other batches below the snapshot are
    ``SettledBatch``."""
    from kraft_testkit.raft.log import SettledBatch, SettledBytes
    c = Cluster(3, 3, seed=4, fast_forward=True,
                configs={"metadata.log.max.snapshot.interval.ms": 20_000})
    c.run_for(45_000)
    assert c.fast_forward_stats["stretches"] > 0
    logs = [c.replica(n).log for n in c.broker_ids + c.controller_ids]
    assert all(log.snapshots and log.settled > 0 for log in logs)
    kinds, shared = set(), 0
    for log in logs:
        assert log.cold is not None and log.cold.end <= log.settled
        assert len(log.cold.entries) < log.cold.count // 4  # runs, not a batch an entry
        for base, batch, data in zip(log.bases, log.batches, log.data):
            if base >= log.settled:
                break
            kinds.add(type(batch))
            if type(batch) is SettledBytes:
                shared += 1
                assert batch == data and (batch.base_offset, batch.last_offset) == (base, base)
    assert kinds == {SettledBatch, SettledBytes} and shared > 0  # the boot's, the warp's
    one, two = (dict(zip(log.bases, log.batches)) for log in logs[:2])
    settled = [base for base in one if type(one[base]) is SettledBytes]
    assert settled and all(one[base] == two[base] for base in settled if base in two)
    # still NoOps to the warp's model (fastforward/answers.py), as before they were settled:
    # a stretch over them is computed as it was, with the same trace
    from kraft_testkit.fastforward.answers import only_noops
    assert only_noops(logs[0], settled[0], settled[0] + 1)


def test_a_late_noop_is_taken_and_sets_the_next_one():
    """The controller's NoOp task runs in the leader's first event from its due instant on, so
    a NoOp may come late (never early): the run takes it, and the next is due an interval
    after it."""
    _, b = _twins(7, 1)
    leader = b.active_controller.id
    qc = b.sim.process(leader).machine.controller
    last = qc.soft["noop.last_ms"]
    late = last + 500 + 24
    append_leader_noops(b.sim.process(leader), [late])
    assert qc.soft["noop.last_ms"] == late
    with pytest.raises(InexactFastForward, match="next is due"):
        append_leader_noops(b.sim.process(leader), [late + 499])
