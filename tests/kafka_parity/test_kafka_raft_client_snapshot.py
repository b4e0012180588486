"""KafkaRaftClientSnapshotTest (Kafka 4.2.1), ported: FetchSnapshot served and fetched.

Kafka's ``client.createSnapshot(id)`` is :meth:`raft_context.RaftContext.create_snapshot`
(the kit's replica takes its snapshots when its listener returns them; the snapshot written is
the same file). Each Kafka test runs once, with static voters, unless it says otherwise.
"""

from __future__ import annotations

from raft_context import (
    FENCED_LEADER_EPOCH,
    INCONSISTENT_CLUSTER_ID,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_LEADER_EPOCH,
    RaftContext,
)
import pytest

from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc
from kraft_testkit.raft.snapshot import encode_snapshot

BOOTSTRAP = (0, 0)


def _part(resp):
    return rpc.snapshot_partition(resp)


def _leader_with_snapshot(records=(b"foo", b"bar")) -> tuple[RaftContext, bytes]:
    """A leader whose log holds one record of epoch 1 and a snapshot (1, 1) of it."""
    ctx = RaftContext(1, (1, 2), log=[(1, 1)])
    ctx.unattached_to_leader()
    ctx.fetch_at_end(2)  # advanceLocalLeaderHighWatermarkToLogEndOffset
    assert ctx.r.hw == ctx.r.log.end_offset
    return ctx, ctx.create_snapshot(1, 1, records)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestMissingSnapshot")
def test_fetch_snapshot_request_missing_snapshot():
    ctx = RaftContext(1, (1, 2), unknown_leader=3)
    ctx.unattached_to_leader()
    resp = ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch, BOOTSTRAP, 0))
    assert _part(resp).error_code == E.SNAPSHOT_NOT_FOUND


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestBootstrapSnapshot")
def test_fetch_snapshot_request_bootstrap_snapshot():
    ctx = RaftContext(0, (0, 1), kraft_version=1, unknown_leader=3)
    ctx.unattached_to_leader()
    assert ctx.r.log.snapshot is not None  # the bootstrap checkpoint is there ...
    resp = ctx.deliver(1, ctx.fetch_snapshot_request(ctx.epoch, BOOTSTRAP, 0, replica=1))
    assert _part(resp).error_code == E.SNAPSHOT_NOT_FOUND  # ... but never served


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestUnknownPartition")
def test_fetch_snapshot_request_unknown_partition():
    ctx = RaftContext(1, (1, 2), unknown_leader=3)
    ctx.unattached_to_leader()
    body = ctx.fetch_snapshot_request(ctx.epoch, BOOTSTRAP, 0)
    body = body.replace(topics=(body.topics[0].replace(name="unknown"),))
    resp = ctx.deliver(2, body)
    assert resp.error_code == NONE
    (topic,) = resp.topics
    assert topic.partitions[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestAsLeader")
def test_fetch_snapshot_request_as_leader():
    ctx, data = _leader_with_snapshot()
    resp = ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch, (1, 1), 0))
    p = _part(resp)
    assert (p.error_code, p.size, p.position) == (NONE, len(data), 0)
    assert bytes(p.unaligned_records) == data


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testPartialFetchSnapshotRequestAsLeader")
def test_partial_fetch_snapshot_request_as_leader():
    ctx, data = _leader_with_snapshot()
    half = len(data) // 2
    p = _part(ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch, (1, 1), 0, max_bytes=half)))
    assert (p.error_code, p.size, p.position) == (NONE, len(data), 0)
    assert bytes(p.unaligned_records) == data[:half]
    p = _part(ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch, (1, 1), half)))
    assert (p.error_code, p.size, p.position) == (NONE, len(data), half)
    assert bytes(p.unaligned_records) == data[half:]


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestAsFollower")
def test_fetch_snapshot_request_as_follower():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    p = _part(ctx.deliver(2, ctx.fetch_snapshot_request(2, BOOTSTRAP, 0)))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NOT_LEADER_OR_FOLLOWER, 2, 2)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestWithInvalidPosition")
def test_fetch_snapshot_request_with_invalid_position():
    ctx, data = _leader_with_snapshot()
    for position in (-1, len(data)):
        p = _part(ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch, (1, 1), position)))
        assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
            (E.POSITION_OUT_OF_RANGE, ctx.epoch, 1)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestWithOlderEpoch")
def test_fetch_snapshot_request_with_older_epoch():
    ctx = RaftContext(1, (1, 2), unknown_leader=1)
    ctx.unattached_to_leader()
    p = _part(ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch - 1, BOOTSTRAP, 0)))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (FENCED_LEADER_EPOCH, ctx.epoch, 1)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestWithNewerEpoch")
def test_fetch_snapshot_request_with_newer_epoch():
    ctx = RaftContext(1, (1, 2), unknown_leader=1)
    ctx.unattached_to_leader()
    p = _part(ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch + 1, BOOTSTRAP, 0)))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (UNKNOWN_LEADER_EPOCH, ctx.epoch, 1)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotRequestClusterIdValidation")
def test_fetch_snapshot_request_cluster_id_validation():
    ctx = RaftContext(1, (1, 2), unknown_leader=4)
    ctx.unattached_to_leader()
    for cluster in (ctx_cluster := "raft-parity-cluster", None):
        resp = ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch, BOOTSTRAP, 0,
                                                         cluster_id=cluster))
        assert resp.error_code == NONE and _part(resp) is not None
    assert ctx_cluster
    for bad in ("", "invalid-uuid"):
        resp = ctx.deliver(2, ctx.fetch_snapshot_request(ctx.epoch, BOOTSTRAP, 0, cluster_id=bad))
        assert resp.error_code == INCONSISTENT_CLUSTER_ID


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchResponseWithSnapshotId")
def test_fetch_response_with_snapshot_id():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    p = rpc.fetch_partition(fetch.body)
    assert (dst, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 2, 0, 0)
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=(100, 1)))
    ((_, snap_req),) = ctx.requests(M.FetchSnapshotRequest)
    q = rpc.snapshot_partition(snap_req.body)
    assert snap_req.body.replica_id == 1
    assert ((q.snapshot_id.end_offset, q.snapshot_id.epoch), q.position) == ((100, 1), 0)
    data = encode_snapshot(100, 1, [b"foo", b"bar"], 0).data
    ctx.drain()
    ctx.respond(2, snap_req, rpc.fetch_snapshot_response(NONE, 2, 2, (100, 1), len(data), 0,
                                                         data))
    ctx.poll()
    ((_, fetch),) = ctx.requests(M.FetchRequest)
    p = rpc.fetch_partition(fetch.body)
    assert (p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 100, 1)
    assert ctx.r.log.snapshot.snapshot_id == (100, 1) and ctx.r.log.snapshot.data == data


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotResponsePartialData")
def test_fetch_snapshot_response_partial_data():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=(100, 1)))
    ((_, first),) = ctx.requests(M.FetchSnapshotRequest)
    data = encode_snapshot(100, 1, [b"foo", b"bar"], 0).data
    half = len(data) // 2
    ctx.drain()
    ctx.respond(2, first, rpc.fetch_snapshot_response(NONE, 2, 2, (100, 1), len(data), 0,
                                                      data[:half]))
    ctx.poll()
    ((_, second),) = ctx.requests(M.FetchSnapshotRequest)
    q = rpc.snapshot_partition(second.body)
    assert ((q.snapshot_id.end_offset, q.snapshot_id.epoch), q.position) == ((100, 1), half)
    ctx.drain()
    ctx.respond(2, second, rpc.fetch_snapshot_response(NONE, 2, 2, (100, 1), len(data), half,
                                                       data[half:]))
    ctx.poll()
    ((_, fetch),) = ctx.requests(M.FetchRequest)
    assert rpc.fetch_partition(fetch.body).fetch_offset == 100
    assert ctx.r.log.snapshot.data == data


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotResponseFromOlderEpoch")
def test_fetch_snapshot_response_from_older_epoch():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=(100, 1)))
    ((_, snap_req),) = ctx.requests(M.FetchSnapshotRequest)
    ctx.drain()
    ctx.respond(2, snap_req, rpc.fetch_snapshot_response(FENCED_LEADER_EPOCH, 1, 1))
    ctx.poll()
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 2, 2)  # ignored
    ((_, again),) = ctx.requests(M.FetchSnapshotRequest)  # it keeps fetching the snapshot
    q = rpc.snapshot_partition(again.body)
    assert ((q.snapshot_id.end_offset, q.snapshot_id.epoch), q.position) == ((100, 1), 0)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotResponseFromNewerEpochLeader")
def test_fetch_snapshot_response_from_newer_epoch_leader():
    ctx = RaftContext(1, (1, 2, 3), elected=(2, 2))
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=(100, 1)))
    ((_, snap_req),) = ctx.requests(M.FetchSnapshotRequest)
    ctx.drain()
    ctx.respond(2, snap_req, rpc.fetch_snapshot_response(FENCED_LEADER_EPOCH, 3, 3))
    ctx.poll()
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 3, 3)
    ((dst, fetch),) = ctx.requests(M.FetchRequest)  # the new leader: a Fetch from the start
    p = rpc.fetch_partition(fetch.body)
    assert (dst, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (3, 3, 0, 0)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotResponseFromNewerEpochNotLeader")
def test_fetch_snapshot_response_from_newer_epoch_not_leader():
    ctx = RaftContext(1, (1, 2, 3), elected=(2, 2))
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=(100, 1)))
    ((_, snap_req),) = ctx.requests(M.FetchSnapshotRequest)
    ctx.drain()
    ctx.respond(2, snap_req, rpc.fetch_snapshot_response(FENCED_LEADER_EPOCH, 3, -1))
    ctx.poll()
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("unattached", 3, None)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotResponseWithInvalidId")
def test_fetch_snapshot_response_with_invalid_id():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    data = encode_snapshot(100, 1, [b"foo"], 0).data
    for bad in ((-1, 1), (100, -1)):  # a negative id: the download starts over with a Fetch
        ((dst, fetch),) = ctx.requests(M.FetchRequest)[-1:]
        p = rpc.fetch_partition(fetch.body)
        assert (p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 0, 0)
        ctx.drain()
        ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=(100, 1)))
        ((_, snap_req),) = ctx.requests(M.FetchSnapshotRequest)
        q = rpc.snapshot_partition(snap_req.body)
        assert ((q.snapshot_id.end_offset, q.snapshot_id.epoch), q.position) == ((100, 1), 0)
        ctx.drain()
        ctx.respond(2, snap_req, rpc.fetch_snapshot_response(NONE, 2, 2, bad, len(data), 0,
                                                             data))
        ctx.poll()
        assert ctx.r.log.snapshot is None
    ((_, fetch),) = ctx.requests(M.FetchRequest)[-1:]
    p = rpc.fetch_partition(fetch.body)
    assert (p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 0, 0)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchResponseWithInvalidSnapshotId")
def test_fetch_response_with_invalid_snapshot_id():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    for bad in ((-1, 1), (1, -1), (-1, -1)):
        ((dst, fetch),) = [r for r in ctx.requests(M.FetchRequest)][-1:]
        ctx.drain()
        ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=bad))
        ctx.sleep(50)  # retry backoff: it fetches again, not a snapshot
        assert not ctx.requests(M.FetchSnapshotRequest)
        assert ctx.requests(M.FetchRequest)
