"""KafkaRaftClientReconfigTest (Kafka 4.2.1), ported: KIP-853 voter changes at one leader.

The local replica 1 and a follower 2 are the bootstrap voters (``withBootstrapSnapshot``, so
kraft.version 1) unless a test says static voters; 3 is the replica to add. Kafka's leader first
asks the new voter for ApiVersions (``completeApiVersionsForAddVoter``); the kit's replicas all
support kraft.version 0..1, so its leader adds at once (docs/fidelity.md) and those steps have
no counterpart here.
"""

from __future__ import annotations

import pytest
from raft_context import NONE, NOT_LEADER_OR_FOLLOWER, RaftContext

from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E


def _leader(voters=(1, 2), kraft_version: int = 1) -> RaftContext:
    ctx = RaftContext(1, voters, kraft_version=kraft_version, unknown_leader=3)
    ctx.unattached_to_leader()
    return ctx


def _prepare_add(ctx: RaftContext, new: int = 3) -> None:
    """Kafka's ``prepareLeaderToReceiveAddVoter``: a high watermark, the observer caught up."""
    assert not ctx.is_voter(new)
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(new)


def _error(body) -> int:
    return body.error_code


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoter")
def test_add_voter():
    ctx = _leader()
    _prepare_add(ctx)
    cid = ctx.deliver_later(3, ctx.add_voter_request(3))
    assert ctx.response(3, cid) is None  # answered once committed
    assert ctx.is_voter(3)
    ctx.fetch_at_end(2)  # the follower's fetch commits the new voter set
    assert _error(ctx.response(3, cid)) == NONE


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterCompletesEarlyWithAckWhenCommittedFalse")
def test_add_voter_completes_early_with_ack_when_committed_false():
    ctx = _leader()
    _prepare_add(ctx)
    hw = ctx.r.hw
    cid = ctx.deliver_later(3, ctx.add_voter_request(3, ack_when_committed=False))
    assert _error(ctx.response(3, cid)) == NONE  # answered once written ...
    assert ctx.r.hw == hw  # ... before it commits
    assert ctx.is_voter(3)
    ctx.fetch_at_end(2)
    assert ctx.r.hw > hw
    assert [d for d, m in ctx.sent if getattr(m, "correlation_id", None) == cid] == [3]  # once


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterInvalidClusterId")
def test_add_voter_invalid_cluster_id():
    ctx = _leader()
    for bad in ("", "invalid-uuid"):
        assert _error(ctx.deliver(3, ctx.add_voter_request(3, cluster_id=bad))) == \
            E.INCONSISTENT_CLUSTER_ID
    assert not ctx.is_voter(3)


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterToNotLeader")
def test_add_voter_to_not_leader():
    ctx = RaftContext(1, (1, 2), kraft_version=1, unknown_leader=3)
    assert _error(ctx.deliver(3, ctx.add_voter_request(3))) == NOT_LEADER_OR_FOLLOWER


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithMissingDefaultListener")
def test_add_voter_with_missing_default_listener():
    ctx = _leader()
    body = ctx.add_voter_request(3, listener="NOT_THE_DEFAULT_LISTENER")
    assert _error(ctx.deliver(3, body)) == E.INVALID_REQUEST


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithKraftVersion0")
def test_add_voter_with_kraft_version_0():
    ctx = _leader(kraft_version=0)
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    assert _error(ctx.deliver(3, ctx.add_voter_request(3))) == E.UNSUPPORTED_VERSION


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithExistingVoter")
def test_add_voter_with_existing_voter():
    ctx = _leader()
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(2)
    assert _error(ctx.deliver(2, ctx.add_voter_request(2))) == E.DUPLICATE_VOTER


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithMissingDirectoryId")
def test_add_voter_with_missing_directory_id():
    ctx = _leader()
    _prepare_add(ctx)
    assert _error(ctx.deliver(3, ctx.add_voter_request(3, directory=Uuid.ZERO))) == \
        E.INVALID_REQUEST


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithPendingAddVoter")
def test_add_voter_with_pending_add_voter():
    ctx = _leader()
    _prepare_add(ctx)
    first = ctx.deliver_later(3, ctx.add_voter_request(3))
    assert ctx.response(3, first) is None
    ctx.fetch_at_end(4)
    assert _error(ctx.deliver(4, ctx.add_voter_request(4))) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithoutFencedPreviousLeaders")
def test_add_voter_without_fenced_previous_leaders():
    ctx = _leader()
    ctx.fetch_at_end(3)  # the observer catches up, but no voter fetched: no high watermark
    assert _error(ctx.deliver(3, ctx.add_voter_request(3))) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithLaggingNewVoter")
def test_add_voter_with_lagging_new_voter():
    ctx = _leader()
    ctx.fetch_at_end(2)
    ctx.deliver(3, ctx.fetch_request(ctx.epoch, 3, 0, 0))  # fetches from the start: lagging
    assert _error(ctx.deliver(3, ctx.add_voter_request(3))) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterFailsWhenLosingLeadership")
def test_add_voter_fails_when_losing_leadership():
    ctx = _leader()
    _prepare_add(ctx)
    cid = ctx.deliver_later(3, ctx.add_voter_request(3))
    assert ctx.response(3, cid) is None
    ctx.deliver(2, ctx.begin_epoch_request(ctx.epoch + 1, 2))  # a new leader
    assert _error(ctx.response(3, cid)) == NOT_LEADER_OR_FOLLOWER


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterTimeout")
def test_add_voter_timeout():
    ctx = _leader()
    _prepare_add(ctx)
    cid = ctx.deliver_later(3, ctx.add_voter_request(3, timeout_ms=10_000))
    assert ctx.response(3, cid) is None
    ctx.sleep(10_000)
    assert _error(ctx.response(3, cid)) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoter")
def test_remove_voter():
    ctx = _leader((1, 2, 3))
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    cid = ctx.deliver_later(3, ctx.remove_voter_request(3))
    assert ctx.response(3, cid) is None
    assert not ctx.is_voter(3)
    ctx.fetch_at_end(2)
    assert _error(ctx.response(3, cid)) == NONE


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterIsLeader")
def test_remove_voter_is_leader():
    ctx = _leader((1, 2, 3))
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    cid = ctx.deliver_later(2, ctx.remove_voter_request(1))
    assert not ctx.is_voter(1) and ctx.role == "leader"
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    assert _error(ctx.response(2, cid)) == NONE
    assert ctx.role == "resigned"  # then it resigns


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterInvalidClusterId")
def test_remove_voter_invalid_cluster_id():
    ctx = _leader((1, 2, 3))
    for bad in ("", "invalid-uuid"):
        assert _error(ctx.deliver(3, ctx.remove_voter_request(3, cluster_id=bad))) == \
            E.INCONSISTENT_CLUSTER_ID
    assert ctx.is_voter(3)


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterToNotLeader")
def test_remove_voter_to_not_leader():
    ctx = RaftContext(1, (1, 2, 3), kraft_version=1, unknown_leader=3)
    assert _error(ctx.deliver(3, ctx.remove_voter_request(3))) == NOT_LEADER_OR_FOLLOWER


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterWithPendingRemoveVoter")
def test_remove_voter_with_pending_remove_voter():
    ctx = _leader((1, 2, 3))
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    ctx.deliver_later(3, ctx.remove_voter_request(3))
    assert _error(ctx.deliver(2, ctx.remove_voter_request(2))) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterWithoutFencedPreviousLeaders")
def test_remove_voter_without_fenced_previous_leaders():
    ctx = _leader((1, 2, 3))
    assert _error(ctx.deliver(3, ctx.remove_voter_request(3))) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterWithKraftVersion0")
def test_remove_voter_with_kraft_version_0():
    ctx = _leader((1, 2, 3), kraft_version=0)
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    assert _error(ctx.deliver(3, ctx.remove_voter_request(3))) == E.UNSUPPORTED_VERSION


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterWithNoneVoter")
def test_remove_voter_with_none_voter():
    ctx = _leader((1, 2, 3))
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    body = ctx.remove_voter_request(3, directory=Uuid(b"\x55" * 16))  # another directory
    assert _error(ctx.deliver(3, body)) == E.VOTER_NOT_FOUND


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterWithNoneVoterId")
def test_remove_voter_with_none_voter_id():
    ctx = _leader((1, 2, 3))
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    body = ctx.remove_voter_request(4, directory=Uuid(b"\x44" * 16))
    assert _error(ctx.deliver(3, body)) == E.VOTER_NOT_FOUND


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterToEmptyVoterSet")
def test_remove_voter_to_empty_voter_set():
    ctx = RaftContext(1, (1,), kraft_version=1)
    assert ctx.role == "leader"
    assert _error(ctx.deliver(2, ctx.remove_voter_request(1))) == E.VOTER_NOT_FOUND


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testAddVoterWithPendingRemoveVoter")
def test_add_voter_with_pending_remove_voter():
    ctx = _leader((1, 2, 3))
    ctx.fetch_at_end(2)
    ctx.fetch_at_end(3)
    ctx.deliver_later(3, ctx.remove_voter_request(3))
    ctx.fetch_at_end(4)
    assert _error(ctx.deliver(4, ctx.add_voter_request(4))) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testRemoveVoterWithPendingAddVoter")
def test_remove_voter_with_pending_add_voter():
    ctx = _leader()
    _prepare_add(ctx)
    ctx.deliver_later(3, ctx.add_voter_request(3))
    assert _error(ctx.deliver(2, ctx.remove_voter_request(2))) == E.REQUEST_TIMED_OUT


def _update_error(body) -> int:
    return body.error_code


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterInvalidClusterId")
def test_update_voter_invalid_cluster_id():
    ctx = _leader()
    ctx.fetch_at_end(2)
    for bad in ("", "invalid-uuid"):
        body = ctx.update_voter_request(2, ctx.epoch, cluster_id=bad, port=1234)
        assert _update_error(ctx.deliver(2, body)) == E.INCONSISTENT_CLUSTER_ID


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterOldEpoch")
def test_update_voter_old_epoch():
    ctx = _leader()
    ctx.fetch_at_end(2)
    body = ctx.update_voter_request(2, ctx.epoch - 1, port=1234)
    assert _update_error(ctx.deliver(2, body)) == E.FENCED_LEADER_EPOCH


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterNewEpoch")
def test_update_voter_new_epoch():
    ctx = _leader()
    ctx.fetch_at_end(2)
    body = ctx.update_voter_request(2, ctx.epoch + 1, port=1234)
    assert _update_error(ctx.deliver(2, body)) == E.UNKNOWN_LEADER_EPOCH


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterToNotLeader")
def test_update_voter_to_not_leader():
    ctx = RaftContext(1, (1, 2), kraft_version=1, unknown_leader=3)
    body = ctx.update_voter_request(2, ctx.epoch, port=1234)
    assert _update_error(ctx.deliver(2, body)) == NOT_LEADER_OR_FOLLOWER


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterWithoutFencedPreviousLeaders")
def test_update_voter_without_fenced_previous_leaders():
    ctx = _leader()
    body = ctx.update_voter_request(2, ctx.epoch, port=1234)
    assert _update_error(ctx.deliver(2, body)) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterWithNoneVoter")
def test_update_voter_with_none_voter():
    ctx = _leader()
    ctx.fetch_at_end(2)
    body = ctx.update_voter_request(2, ctx.epoch, directory=Uuid(b"\x55" * 16), port=1234)
    assert _update_error(ctx.deliver(2, body)) == E.VOTER_NOT_FOUND


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterWithNoneVoterId")
def test_update_voter_with_none_voter_id():
    ctx = _leader()
    ctx.fetch_at_end(2)
    body = ctx.update_voter_request(4, ctx.epoch, directory=Uuid(b"\x44" * 16), port=1234)
    assert _update_error(ctx.deliver(2, body)) == E.VOTER_NOT_FOUND


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterWithPendingAddVoter")
def test_update_voter_with_pending_add_voter():
    ctx = _leader()
    _prepare_add(ctx)
    ctx.deliver_later(3, ctx.add_voter_request(3))
    body = ctx.update_voter_request(2, ctx.epoch, port=1234)
    assert _update_error(ctx.deliver(2, body)) == E.REQUEST_TIMED_OUT


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoter")
def test_update_voter():
    ctx = _leader()
    ctx.fetch_at_end(2)
    end = ctx.r.log.end_offset
    body = ctx.update_voter_request(2, ctx.epoch, port=1234)
    resp = ctx.deliver(2, body)
    assert _update_error(resp) == NONE
    assert resp.current_leader.leader_id == 1 and resp.current_leader.leader_epoch == ctx.epoch
    assert ctx.r.log.end_offset == end + 1  # the new VotersRecord
    voter = ctx.r.history.latest.voters[2]
    assert ("CONTROLLER", "localhost", 1234) in voter.endpoints


@pytest.mark.kafka("KafkaRaftClientReconfigTest#testUpdateVoterWithKraftVersion0",
                   deliberate="Kafka's leader keeps UpdateRaftVoter endpoints in memory at "
                              "kraft.version 0 for a later upgrade and answers NONE; the kit's "
                              "upgrade writes the static voters at once, so it answers "
                              "UNSUPPORTED_VERSION; no switch")
def test_update_voter_with_kraft_version_0():
    ctx = _leader(kraft_version=0)
    ctx.fetch_at_end(2)
    body = ctx.update_voter_request(2, ctx.epoch, port=1234)
    assert _update_error(ctx.deliver(2, body)) == E.UNSUPPORTED_VERSION
