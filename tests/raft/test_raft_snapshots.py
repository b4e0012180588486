"""KIP-630 snapshots: taken at committed offsets, moving the log start, sent to lagging replicas in
chunks, and loaded again on restart."""

from __future__ import annotations

import pytest

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import decode_control
from kraft_testkit.protocol.log import iter_log
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft import rpc
from kraft_testkit.raft.errors import LogError
from kraft_testkit.raft.log import DIR, segment_name
from kraft_testkit.raft.snapshot import decode_snapshot, encode_snapshot, file_name, parse_file_name

SMALL = {"metadata.log.max.record.bytes.between.snapshots": 200,
         "testkit.raft.fetch.snapshot.max.bytes": 64,
         # Kafka keeps snapshots and the log up to 100 MiB; here retention cleans at once
         "metadata.max.retention.bytes": 0, "testkit.raft.log.clean.interval.ms": 100}
TINY_SEGMENTS = {"internal.metadata.log.segment.bytes": 300}


def disk_files(q: Quorum, node: int) -> dict[str, bytes]:
    return dict(q.sim.process(node).disk.view())


def test_snapshot_file_round_trip_and_name():
    snap = encode_snapshot(42, 7, [b"a", b"bb", b""], timestamp_ms=1234)
    assert file_name(42, 7) == "00000000000000000042-0000000007.checkpoint"
    assert parse_file_name(f"{DIR}/{file_name(42, 7)}") == (42, 7)
    assert parse_file_name("00000000000000000042.log") is None
    back = decode_snapshot(42, 7, snap.data)
    assert list(back.records()) == [b"a", b"bb", b""]
    assert back.last_contained_log_timestamp == 1234 and back.snapshot_id == (42, 7)
    # Kafka's layout: a header control record first, a footer last, the snapshot's epoch
    batches = [b for _, b in iter_batches(snap.data)]
    types = [decode_control(r.key, r.value).type_name
             for r in batches[0].records + batches[-1].records]
    assert types == ["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"]
    assert {b.partition_leader_epoch for b in batches} == {7}
    with pytest.raises(LogError, match="footer"):
        decode_snapshot(42, 7, snap.data[: len(snap.data) - len(batches[-1].encode())])


def test_retention_moves_the_log_start_to_the_snapshot_on_every_replica():
    q = Quorum(3, seed=3, config={**SMALL, **TINY_SEGMENTS})
    q.run_until(lambda q: q.active_controller is not None)
    for i in range(40):
        q.append([b"record-%03d" % i])
    q.run_until(Quorum.converged)
    q.run_for(500)  # the cleaner's next round
    for r in q.replicas():
        snap = r.log.snapshot
        assert snap is not None and r.log.start_offset == snap.end_offset > 0
        assert [s.snapshot_id for s in r.log.snapshots] == [snap.snapshot_id]
        files = disk_files(q, r.id)
        checkpoints = [n for n in files if n.endswith(".checkpoint")]
        assert checkpoints == [f"{DIR}/{file_name(snap.end_offset, snap.epoch)}"]
        bases = sorted(int(n[len(DIR) + 1:-4]) for n in files if n.endswith(".log"))
        assert bases[0] > 0 and bases == [s.base for s in r.log.segments]
        # Kafka deletes the segments wholly below the log start, and only those
        assert bases[0] <= r.log.start_offset and all(b > r.log.start_offset for b in bases[1:])
        for b in bases:
            assert f"{DIR}/{b:020d}.index" in files and f"{DIR}/{b:020d}.timeindex" in files
        batches = [b for n in sorted(n for n in files if n.endswith(".log"))
                   for b in iter_log(files[n], decode=False)]
        assert batches[-1].last_offset == r.log.end_offset - 1
    assert len({r.listener.state() for r in q.replicas()}) == 1


def test_without_retention_pressure_snapshots_accumulate_and_the_log_stays():
    """Kafka's defaults (100 MiB, 7 days): snapshots are taken, none deleted, the log starts at 0."""
    config = {k: v for k, v in SMALL.items() if k != "metadata.max.retention.bytes"}
    q = Quorum(3, seed=3, config=config)
    q.run_until(lambda q: q.active_controller is not None)
    for i in range(40):
        q.append([b"record-%03d" % i])
    q.run_until(Quorum.converged)
    q.run_for(500)
    for r in q.replicas():
        assert r.log.start_offset == 0 and len(r.log.snapshots) > 1
        files = disk_files(q, r.id)
        assert len([n for n in files if n.endswith(".checkpoint")]) == len(r.log.snapshots)


def test_lagging_follower_gets_the_snapshot_in_chunks():
    q = Quorum(3, seed=11, config=SMALL)
    q.run_until(lambda q: q.active_controller is not None)
    lagging = next(n for n in q.voters if n != q.active_controller)
    q.faults.kill(lagging)
    for i in range(40):
        q.append([b"while-away-%03d" % i])
    leader = q.replica(q.active_controller)
    assert leader.log.start_offset > 0
    chunks: list[int] = []
    q.sim.network.on_deliver(lambda s, d, m: d == lagging and isinstance(
        getattr(m, "body", None), M.FetchSnapshotResponse) and chunks.append(
        len(rpc.snapshot_partition(m.body).unaligned_records)))
    q.faults.start(lagging)
    q.run_until(Quorum.converged, 20_000)
    back = q.replica(lagging)
    assert len(chunks) > 1 and max(chunks) <= 64
    assert back.listener.snapshots_loaded >= 1
    assert back.listener.state() == leader.listener.state()
    assert back.log.snapshot is not None and back.log.start_offset == back.log.snapshot.end_offset


def test_restart_loads_the_latest_snapshot_then_the_log():
    q = Quorum(3, seed=5, config=SMALL)
    q.run_until(lambda q: q.active_controller is not None)
    for i in range(30):
        q.append([b"restart-%020d" % i])
    q.run_until(Quorum.converged)
    states = {n: q.listener(n).state() for n in q.nodes}
    for n in q.nodes:
        q.faults.kill(n)
    for n in q.nodes:
        q.faults.start(n)
        r = q.replica(n)
        assert r.listener.snapshots_loaded == 1  # handed over at start, before any commit
        assert r.listener.offset == r.log.snapshot.end_offset >= r.log.start_offset
    q.run_until(Quorum.converged, 20_000)
    for n in q.nodes:
        assert q.listener(n).count >= states[n][1]


def test_snapshot_download_restarts_when_the_leader_moves_on():
    """A snapshot deleted mid-download (SNAPSHOT_NOT_FOUND) makes the follower start over."""
    q = Quorum(3, seed=2, config={**SMALL, "testkit.raft.fetch.snapshot.max.bytes": 8})
    q.run_until(lambda q: q.active_controller is not None)
    lagging = next(n for n in q.voters if n != q.active_controller)
    q.faults.kill(lagging)
    for i in range(30):
        q.append([b"before-%020d" % i])
    q.faults.start(lagging)
    q.run_until(lambda q: q.replica(lagging)._download is not None, 5_000)
    for i in range(30):  # new snapshots replace the one being fetched
        q.append([b"during-%020d" % i])
    q.run_until(Quorum.converged, 30_000)
    assert q.listener(lagging).state() == q.listener(q.leader_id).state()
