"""KafkaRaftClientTest (Kafka 4.2.1), ported: where a follower sends its Fetch, and the leader's
fetch purgatory.

A follower fetches from its leader until that request times out or the connection backs off
after an error; then it asks any ready bootstrap server (``maybeSendFetchToBestNode``,
``RequestManager#findReadyBootstrapServer``), which tells it who leads. Kafka's tests name the
bootstrap servers by addresses (nodes -2, -3, ...), so "not the leader's id" holds trivially
there; the kit's bootstrap servers are the voters by id, so the ports check that the Fetch went
to a bootstrap server and, where Kafka's connection state excludes the leader (backing off), that
it went elsewhere. Node 1 is the local replica; the context is Kafka's (request timeout 5 s,
retry backoff 50 ms, fetch wait 0).
"""

from __future__ import annotations

import pytest
from raft_context import (
    FENCED_LEADER_EPOCH,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    REQUEST_TIMEOUT_MS,
    RaftContext,
)

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.raft import rpc

BROKER_NOT_AVAILABLE = 8


def _fetches(ctx: RaftContext) -> list:
    return ctx.requests(M.FetchRequest)


def _assert_fetch(req, epoch: int, offset: int, last_epoch: int) -> None:
    """Kafka's ``assertFetchRequestData`` (epoch, fetch offset, last fetched epoch)."""
    p = rpc.fetch_partition(req.body)
    assert (p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch) == \
        (epoch, offset, last_epoch), p


def _follower(seed: int = 0) -> RaftContext:
    """Voters 1 (local), 2 (the leader) and 3, epoch 5; its first Fetch goes to the leader."""
    ctx = RaftContext(1, (1, 2, 3), elected=(5, 2), seed=seed)
    ((dst, fetch),) = _fetches(ctx)
    assert dst == 2
    _assert_fetch(fetch, 5, 0, 0)
    return ctx


def _observer(seed: int = 0) -> RaftContext:
    """Kafka's ``discoverLeaderAsObserver(leader 2, epoch 5)``: observer 1 of voters 2 and 3
    learns the leader from a bootstrap server's answer, then fetches from it."""
    ctx = RaftContext(1, (2, 3), seed=seed)
    ((dst, fetch),) = _fetches(ctx)
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 5, 2, 0))
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 5, 2)
    ctx.poll()
    ((dst, fetch),) = _fetches(ctx)
    assert dst == 2
    _assert_fetch(fetch, 5, 0, 0)
    return ctx


@pytest.mark.kafka("KafkaRaftClientTest#testFollowerLeaderRediscoveryAfterRequestTimeout")
def test_follower_leader_rediscovery_after_request_timeout():
    went = set()
    for seed in range(8):
        ctx = _follower(seed)
        ctx.drain()
        ctx.sleep(REQUEST_TIMEOUT_MS)
        ((dst, fetch),) = _fetches(ctx)
        assert dst in (2, 3)  # a bootstrap server (the voters), drawn at random
        _assert_fetch(fetch, 5, 0, 0)
        went.add(dst)
    assert went == {2, 3}  # not a retry to the leader: the leader's connection was reset


@pytest.mark.kafka("KafkaRaftClientTest#testFollowerLeaderRediscoveryAfterBrokerNotAvailableError")
def test_follower_leader_rediscovery_after_broker_not_available_error():
    ctx = _follower()
    ((_, fetch),) = _fetches(ctx)
    ctx.drain()
    ctx.respond(2, fetch, rpc.fetch_response(BROKER_NOT_AVAILABLE, 5, -1))
    ((dst, fetch2),) = _fetches(ctx)
    assert dst == 3  # the leader's connection backs off: the other bootstrap server
    _assert_fetch(fetch2, 5, 0, 0)
    ctx.drain()
    ctx.respond(3, fetch2, rpc.fetch_response(NOT_LEADER_OR_FOLLOWER, 5, 2))
    ctx.assert_elected_leader(5, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testObserverLeaderRediscoveryAfterBrokerNotAvailableError")
def test_observer_leader_rediscovery_after_broker_not_available_error():
    ctx = _observer()
    ((_, fetch),) = _fetches(ctx)
    ctx.drain()
    ctx.respond(2, fetch, rpc.fetch_response(BROKER_NOT_AVAILABLE, 5, -1))
    ((dst, fetch2),) = _fetches(ctx)
    assert dst == 3
    _assert_fetch(fetch2, 5, 0, 0)
    ctx.drain()
    ctx.respond(3, fetch2, rpc.fetch_response(NOT_LEADER_OR_FOLLOWER, 5, 2))
    assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 5, 2)


@pytest.mark.kafka("KafkaRaftClientTest#testObserverLeaderRediscoveryAfterRequestTimeout")
def test_observer_leader_rediscovery_after_request_timeout():
    went = set()
    for seed in range(8):
        ctx = _observer(seed)
        ctx.drain()
        ctx.sleep(REQUEST_TIMEOUT_MS)
        ((dst, fetch2),) = _fetches(ctx)
        assert dst in (2, 3)
        _assert_fetch(fetch2, 5, 0, 0)
        went.add(dst)
        ctx.drain()
        ctx.respond(dst, fetch2, rpc.fetch_response(FENCED_LEADER_EPOCH, 5, 2))
        assert (ctx.role, ctx.epoch, ctx.r.leader_id) == ("follower", 5, 2)
    assert went == {2, 3}


# ------------------------------------------------------------------ the leader's purgatory

OWN_HW = ("Kafka completes its purgatory before parking the fetch that moved the high watermark, "
          "and parks that one when its fetcher reports no high watermark (Long.MAX_VALUE); the "
          "kit's leader answers it with the others, which is what 4.2.1's own followers get (their "
          "v18 fetch reports their older high watermark). The kit's replicas report none, and "
          "the idle warp (fastforward/leader_model.py) models this order. No switch")


def _leader(voters=(1, 2)) -> RaftContext:
    ctx = RaftContext(1, voters, unknown_leader=4)
    ctx.unattached_to_leader()
    ctx.drain()
    return ctx


def _fetch_answers(ctx: RaftContext) -> list:
    return [rpc.fetch_response_partition(m.body) for _, m in ctx.sent
            if isinstance(m, rpc.Response) and type(m.body) is M.FetchResponse]


def _first_fetch_moves_hw(ctx: RaftContext) -> None:
    """The kit's side of ``OWN_HW``: the follower's first fetch at the epoch start commits it
    and is answered at once, with the new high watermark."""
    epoch = ctx.epoch
    p = rpc.fetch_response_partition(ctx.deliver(2, ctx.fetch_request(epoch, 2, 1, epoch, 500)))
    assert (p.error_code, p.high_watermark, len(bytes(p.records))) == (NONE, 1, 0)
    ctx.drain()


@pytest.mark.kafka("KafkaRaftClientTest#testPurgatoryFetchTimeout", deliberate=OWN_HW)
def test_purgatory_fetch_timeout():
    ctx = _leader()
    epoch = ctx.epoch
    _first_fetch_moves_hw(ctx)
    # Kafka's scenario from here: a fetch that cannot be satisfied waits out its max wait
    assert ctx.deliver(2, ctx.fetch_request(epoch, 2, 1, epoch, max_wait=500)) is None
    assert _fetch_answers(ctx) == []
    ctx.sleep(500)
    (p,) = _fetch_answers(ctx)
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NONE, epoch, 1)
    assert len(bytes(p.records)) == 0


@pytest.mark.kafka("KafkaRaftClientTest#testPurgatoryFetchSatisfiedByWrite", deliberate=OWN_HW)
def test_purgatory_fetch_satisfied_by_write():
    ctx = _leader()
    epoch = ctx.epoch
    _first_fetch_moves_hw(ctx)
    assert ctx.deliver(2, ctx.fetch_request(epoch, 2, 1, epoch, max_wait=500)) is None
    ctx.r.append([b"a", b"b", b"c"], ctx.now)
    ctx.poll()
    (p,) = _fetch_answers(ctx)
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NONE, epoch, 1)
    ((_, batch),) = iter_batches(bytes(p.records))
    assert [r.value for r in batch.records] == [b"a", b"b", b"c"]


@pytest.mark.kafka("KafkaRaftClientTest#testPurgatoryFetchCompletedByFollowerTransition",
                   deliberate=OWN_HW)
def test_purgatory_fetch_completed_by_follower_transition():
    ctx = _leader((1, 2, 3))
    epoch = ctx.epoch
    _first_fetch_moves_hw(ctx)
    cid = ctx.deliver_later(2, ctx.fetch_request(epoch, 2, 1, epoch, max_wait=500))
    assert ctx.response(2, cid) is None
    begin = ctx.deliver(3, ctx.begin_epoch_request(epoch + 1, 3))
    ctx.assert_elected_leader(epoch + 1, 3)
    ctx.assert_epoch_response(begin, NONE, epoch + 1, 3)
    p = rpc.fetch_response_partition(ctx.response(2, cid))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NOT_LEADER_OR_FOLLOWER, epoch + 1, 3)
    assert len(bytes(p.records)) == 0


# ------------------------------------------------------------------ Fetch v18 (KIP-1166)
# KafkaRaftClientFetchTest: voters 1 (local) and 2 at kraft.version 1, six records of epoch 2
# in the log; node 3 fetches as an observer. The fetch waits up to Integer.MAX_VALUE ms.

WAIT = 0x7FFFFFFF


def _hwm_leader() -> RaftContext:
    ctx = RaftContext(1, (1, 2), kraft_version=1, unknown_leader=2, log=[(2, 3), (2, 3)])
    ctx.unattached_to_leader()
    ctx.drain()
    return ctx


def _advance_hw_to_end(ctx: RaftContext) -> None:
    """Kafka's ``advanceLocalLeaderHighWatermarkToLogEndOffset``: voter 2 fetches at the end."""
    ctx.fetch_at_end(2)
    assert ctx.r.hw == ctx.r.log.end_offset
    ctx.drain()


def _deferred(ctx: RaftContext, cid: int) -> None:
    for _ in range(10):
        ctx.poll()
        assert ctx.response(3, cid) is None


@pytest.mark.kafka("KafkaRaftClientFetchTest#testDefaultHwmDeferred")
def test_default_hwm_deferred():
    ctx = _hwm_leader()
    _advance_hw_to_end(ctx)
    end = ctx.r.log.end_offset
    _deferred(ctx, ctx.deliver_later(3, ctx.fetch_request(ctx.epoch, 3, end, ctx.epoch, WAIT)))


@pytest.mark.kafka("KafkaRaftClientFetchTest#testUnknownHwmDeferredWhenLeaderDoesNotKnowHwm")
def test_unknown_hwm_deferred_when_leader_does_not_know_hwm():
    ctx = _hwm_leader()
    end = ctx.r.log.end_offset
    _deferred(ctx, ctx.deliver_later(3, ctx.fetch_request(ctx.epoch, 3, end, ctx.epoch, WAIT,
                                                          high_watermark=-1)))


@pytest.mark.kafka("KafkaRaftClientFetchTest#testOutdatedHwmCompletedWhenLeaderKnowsHwm")
def test_outdated_hwm_completed_when_leader_knows_hwm():
    ctx = _hwm_leader()
    _advance_hw_to_end(ctx)
    end = ctx.r.log.end_offset
    for reported in (-1, end - 1):
        resp = ctx.deliver(3, ctx.fetch_request(ctx.epoch, 3, end, ctx.epoch, WAIT,
                                                high_watermark=reported))
        p = rpc.fetch_response_partition(resp)
        assert (p.error_code, p.high_watermark, p.current_leader.leader_epoch) == \
            (NONE, end, ctx.epoch)


@pytest.mark.kafka("KafkaRaftClientFetchTest#testUnchangedHighWatermarkDeferred")
def test_unchanged_high_watermark_deferred():
    ctx = _hwm_leader()
    _advance_hw_to_end(ctx)
    end = ctx.r.log.end_offset
    _deferred(ctx, ctx.deliver_later(3, ctx.fetch_request(ctx.epoch, 3, end, ctx.epoch, WAIT,
                                                          high_watermark=end)))


@pytest.mark.kafka("KafkaRaftClientFetchTest#testUpdatedHighWatermarkCompleted")
def test_updated_high_watermark_completed():
    ctx = _hwm_leader()
    epoch = ctx.epoch
    p = rpc.fetch_response_partition(ctx.deliver(2, ctx.fetch_request(epoch, 2, 3, 2)))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NONE, epoch, 1)
    end = ctx.r.log.end_offset
    cid = ctx.deliver_later(3, ctx.fetch_request(epoch, 3, end, epoch, WAIT, high_watermark=end))
    _deferred(ctx, cid)
    voter = ctx.deliver(2, ctx.fetch_request(epoch, 2, end, epoch))  # the HW moves to the end
    for q in (rpc.fetch_response_partition(voter), rpc.fetch_response_partition(
            ctx.response(3, cid))):
        assert (q.error_code, q.high_watermark, q.current_leader.leader_epoch) == \
            (NONE, end, epoch)


@pytest.mark.kafka("KafkaRaftClientFetchTest#testHighWatermarkSentInFetchRequest",
                   deliberate="the kit's replicas send Fetch v18 without their high watermark "
                              "(Long.MAX_VALUE, 'not supported'): the idle warp models the "
                              "leader's answers to fetches that report none. No switch")
def test_high_watermark_sent_in_fetch_request():
    ctx = RaftContext(1, (1, 2), kraft_version=1, elected=(2, 2), log=[(2, 3), (2, 3)])
    ((dst, fetch),) = _fetches(ctx)
    _assert_fetch(fetch, 2, 6, 2)
    assert rpc.fetch_partition(fetch.body).high_watermark == rpc.NO_HIGH_WATERMARK
    ctx.drain()
    ctx.respond(dst, fetch, rpc.fetch_response(NONE, 2, 2, 6))
    assert ctx.r.hw == 6
    ((_, fetch),) = _fetches(ctx)
    _assert_fetch(fetch, 2, 6, 2)
    assert rpc.fetch_partition(fetch.body).high_watermark == rpc.NO_HIGH_WATERMARK


# ------------------------------------------------------------------ the leader's answers


@pytest.mark.kafka("KafkaRaftClientTest#testLeaderImmediatelySendsDivergingEpoch")
def test_leader_immediately_sends_diverging_epoch():
    ctx = RaftContext(1, (1, 2), unknown_leader=5, log=[(1, 3), (3, 3), (5, 3)])
    ctx.unattached_to_leader()
    epoch = ctx.epoch
    p = rpc.fetch_response_partition(ctx.deliver(2, ctx.fetch_request(epoch, 2, 6, 2, 500)))
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NONE, epoch, 1)
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (1, 3)


@pytest.mark.kafka("KafkaRaftClientTest#testFetchShouldBeTreatedAsLeaderAcknowledgement")
def test_fetch_should_be_treated_as_leader_acknowledgement():
    ctx = RaftContext(1, (1, 2), unknown_leader=4, jitter=0)
    ctx.unattached_to_leader()  # its BeginQuorumEpoch to 2 is lost ...
    epoch = ctx.epoch
    assert [d for d, _ in ctx.requests(M.BeginQuorumEpochRequest)] == [2]
    ctx.drain()
    resp = ctx.deliver(2, ctx.fetch_request(epoch, 2, 0, 0, 500))  # ... 2 fetches instead
    p = rpc.fetch_response_partition(resp)
    assert (p.error_code, p.current_leader.leader_epoch, p.current_leader.leader_id) == \
        (NONE, epoch, 1)
    ctx.drain()
    ctx.sleep(REQUEST_TIMEOUT_MS)  # the BeginQuorumEpoch times out: it is not sent again
    assert ctx.sent == []
