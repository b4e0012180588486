"""KafkaRaftClientSnapshotTest (Kafka 4.2.1), ported: what a leader holding snapshots answers a
Fetch (``KafkaRaftClient#tryCompleteFetchRequest``, ``ReplicatedLog#validateOffsetAndEpoch``).

A fetch at offset 0 gets the latest (non-bootstrap) snapshot's id; otherwise the latest snapshot's
id answers a fetch below the log start, at the log start in another epoch than the oldest
snapshot's, or in an epoch older than the oldest snapshot's; else the log decides (valid, or
diverging). Kafka's ``client.createSnapshot(id)`` is :meth:`raft_context.RaftContext.create_snapshot`
and ``advanceLocalLeaderHighWatermarkToLogEndOffset`` a voter's fetch at the log end.
"""

from __future__ import annotations

import pytest
from raft_context import INVALID_REQUEST, NONE, RaftContext

from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc

OLDEST = (3, 2)  # Kafka's oldestSnapshotId: offset 3, epoch 2


def _answer(ctx: RaftContext, offset: int, last_epoch: int, replica: int = 2):
    p = rpc.fetch_response_partition(ctx.deliver(replica, ctx.fetch_request(
        ctx.epoch, replica, offset, last_epoch)))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NONE, ctx.epoch, 1), p
    return p


def _snapshot_id(p) -> tuple[int, int]:
    return (p.snapshot_id.end_offset, p.snapshot_id.epoch)


def _leader_with_oldest(log, voters=(1, 2, 3)) -> RaftContext:
    """Kafka's setup: ``log`` appended, elected leader in the next epoch, the high watermark
    at the log end, then the snapshot ``OLDEST``."""
    ctx = RaftContext(1, voters, log=log)
    ctx.unattached_to_leader()
    assert ctx.epoch == log[-1][0] + 1
    ctx.fetch_at_end(2)
    ctx.create_snapshot(*OLDEST, [b"a", b"b", b"c"])
    ctx.poll()
    ctx.drain()
    return ctx


def _leader_with_own_snapshot() -> tuple[RaftContext, tuple[int, int]]:
    """A leader that appended a, b, c in its epoch, committed them and snapshotted its log end."""
    ctx = RaftContext(1, (1, 2))
    ctx.unattached_to_leader()
    ctx.r.append([b"a", b"b", b"c"], ctx.now)
    ctx.poll()
    end = ctx.r.log.end_offset
    assert end >= 3
    ctx.fetch_at_end(2)
    sid = (end, ctx.epoch)
    ctx.create_snapshot(*sid, [b"a", b"b", b"c"])
    ctx.drain()
    return ctx, sid


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchRequestOffsetAtZero")
def test_fetch_request_offset_at_zero():
    ctx, sid = _leader_with_own_snapshot()
    assert ctx.r.log.start_offset == 0  # the log still starts at 0: the snapshot all the same
    p = _answer(ctx, 0, 0)
    assert _snapshot_id(p) == sid


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchRequestOffsetLessThanLogStart")
def test_fetch_request_offset_less_than_log_start():
    ctx, sid = _leader_with_own_snapshot()
    ops = ctx.r.log.delete_before_snapshot(sid)
    assert ops is not None and ctx.r.log.start_offset == sid[0]
    p = _answer(ctx, sid[0] - 2, sid[1])
    assert _snapshot_id(p) == sid


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchRequestWithLargerLastFetchedEpoch")
def test_fetch_request_with_larger_last_fetched_epoch():
    ctx = _leader_with_oldest([(2, 3), (2, 3)], voters=(1, 2))
    ctx.r.append([b"g", b"h", b"i"], ctx.now)
    ctx.poll()
    p = rpc.fetch_response_partition(ctx.deliver(2, ctx.fetch_request(
        ctx.epoch, 2, OLDEST[0] + 1, ctx.epoch + 1)))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (INVALID_REQUEST, ctx.epoch, 1)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchRequestTruncateToLogStart")
def test_fetch_request_truncate_to_log_start():
    ctx = _leader_with_oldest([(2, 3), (4, 3)])
    p = _answer(ctx, OLDEST[0] + 1, OLDEST[1] + 1)
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (OLDEST[1], OLDEST[0])


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchRequestAtLogStartOffsetWithValidEpoch")
def test_fetch_request_at_log_start_offset_with_valid_epoch():
    ctx = _leader_with_oldest([(2, 3), (2, 3), (4, 3)])
    p = _answer(ctx, OLDEST[0], OLDEST[1])
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (-1, -1)
    assert _snapshot_id(p) == (-1, -1)


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchRequestAtLogStartOffsetWithInvalidEpoch")
def test_fetch_request_at_log_start_offset_with_invalid_epoch():
    ctx = _leader_with_oldest([(2, 3), (2, 3), (4, 3)])
    assert ctx.r.log.delete_before_snapshot(OLDEST) is not None
    p = _answer(ctx, OLDEST[0], OLDEST[1] + 1)
    assert _snapshot_id(p) == OLDEST


@pytest.mark.kafka(
    "KafkaRaftClientSnapshotTest#testFetchRequestWithLastFetchedEpochLessThanOldestSnapshot")
def test_fetch_request_with_last_fetched_epoch_less_than_oldest_snapshot():
    ctx = _leader_with_oldest([(2, 3), (2, 3), (4, 3)])
    assert ctx.r.log.start_offset == 0  # the records are still there: the snapshot all the same
    p = _answer(ctx, ctx.r.log.end_offset, OLDEST[1] - 1)
    assert _snapshot_id(p) == OLDEST


@pytest.mark.kafka("KafkaRaftClientSnapshotTest#testFetchSnapshotResponseMissingSnapshot")
def test_fetch_snapshot_response_missing_snapshot():
    ctx = RaftContext(1, (1, 2), elected=(2, 2))
    ((dst, fetch),) = ctx.requests(M.FetchRequest)
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 200, snapshot_id=(100, 1)))
    ((_, snap_req),) = ctx.requests(M.FetchSnapshotRequest)
    q = rpc.snapshot_partition(snap_req.body)
    assert ((q.snapshot_id.end_offset, q.snapshot_id.epoch), q.position) == ((100, 1), 0)
    ctx.drain()
    ctx.respond(2, snap_req, rpc.fetch_snapshot_response(E.SNAPSHOT_NOT_FOUND, 2, 2))
    ctx.poll()
    ((dst, fetch),) = ctx.requests(M.FetchRequest)  # back to fetching the log from the start
    p = rpc.fetch_partition(fetch.body)
    assert (dst, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == (2, 2, 0, 0)
