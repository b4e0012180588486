"""KafkaRaftClientAutoJoinTest (Kafka 4.2.1), ported: ``controller.quorum.auto.join.enable``.

The local replica observes a quorum of 1 (leader, epoch 1) and 2 at kraft.version 1 and, once it
has fetched from the leader and a fetch timeout has passed, asks to join (AddRaftVoter with
AckWhenCommitted false, as 4.2's ``buildAddVoterRequest``) or first to remove the entry of its
id with an older directory id. The kit's replicas send these at most once per fetch timeout
after a successful fetch (Kafka: once its update-voter-set timer of one fetch timeout expires).
"""

from __future__ import annotations

import pytest
from raft_context import DIRS, NONE, RaftContext, kafka_config

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc

FETCH_TIMEOUT = 50_000


def _context(local: int, *, auto_join: bool = True, can_become_voter: bool = True,
             kraft_version: int = 1, local_dir: Uuid | None = None) -> RaftContext:
    return RaftContext(local, (1, 2), kraft_version=kraft_version, elected=(1, 1),
                       config=kafka_config(auto_join=auto_join), local_dir=local_dir,
                       can_become_voter=can_become_voter)


def _complete_fetch(ctx: RaftContext) -> None:
    """Kafka's ``advanceTimeAndCompleteFetch``: a fetch timeout less 1 ms, then the leader
    answers the fetch in flight."""
    ctx.sleep(FETCH_TIMEOUT - 1)
    fetches = ctx.requests(M.FetchRequest)  # Kafka's assertSentFetchRequest: to the leader,
    assert fetches, "no fetch"              # or a bootstrap server once it timed out
    dst, req = fetches[-1]
    p = rpc.fetch_partition(req.body)
    assert (p.current_leader_epoch, p.fetch_offset) == (1, ctx.r.log.end_offset)
    ctx.drain()
    ctx.respond(dst, req, rpc.fetch_response(NONE, 1, 1, ctx.r.log.end_offset))
    ctx.poll()


def _sent(ctx: RaftContext, body_type: type) -> list:
    return [m for _, m in ctx.requests(body_type, dst=1)]


@pytest.mark.kafka("KafkaRaftClientAutoJoinTest#testAutoAddNewVoter")
def test_auto_add_new_voter():
    ctx = _context(3)
    _complete_fetch(ctx)
    ctx.sleep(1)
    (add,) = _sent(ctx, M.AddRaftVoterRequest)
    body = add.body
    assert (body.voter_id, body.voter_directory_id) == (3, DIRS[3])
    assert [(li.name, li.host, li.port) for li in body.listeners] == list(ctx.r.endpoints)
    assert body.ack_when_committed is False
    assert M.AddRaftVoterRequest.decode(body.encode(1), 1).ack_when_committed is False
    ctx.respond(1, add, M.AddRaftVoterResponse(error_code=NONE))
    _complete_fetch(ctx)  # the voter set did not change: after its timer, it asks again
    ctx.sleep(1)
    assert len(_sent(ctx, M.AddRaftVoterRequest)) == 1


@pytest.mark.kafka("KafkaRaftClientAutoJoinTest#testAutoRemoveOldVoter")
def test_auto_remove_old_voter():
    ctx = _context(2, local_dir=Uuid(b"\x66" * 16))  # node 2 with a replaced disk
    assert ctx.r.is_observer
    _complete_fetch(ctx)
    ctx.sleep(1)
    (remove,) = _sent(ctx, M.RemoveRaftVoterRequest)
    assert (remove.body.voter_id, remove.body.voter_directory_id) == (2, DIRS[2])
    ctx.respond(1, remove, M.RemoveRaftVoterResponse(error_code=NONE))
    _complete_fetch(ctx)
    ctx.sleep(1)
    assert len(_sent(ctx, M.RemoveRaftVoterRequest)) == 1  # asked again


@pytest.mark.kafka("KafkaRaftClientAutoJoinTest#testObserversDoNotAutoJoin")
def test_observers_do_not_auto_join():
    ctx = _context(3, can_become_voter=False)
    _complete_fetch(ctx)
    ctx.sleep(FETCH_TIMEOUT - 1)
    assert not _sent(ctx, M.AddRaftVoterRequest)
    assert ctx.requests(M.FetchRequest, dst=1)


@pytest.mark.kafka("KafkaRaftClientAutoJoinTest#testObserverDoesNotAddItselfWhenAutoJoinDisabled")
def test_observer_does_not_add_itself_when_auto_join_disabled():
    ctx = _context(3, auto_join=False)
    _complete_fetch(ctx)
    ctx.sleep(FETCH_TIMEOUT - 1)
    assert not _sent(ctx, M.AddRaftVoterRequest)
    assert ctx.requests(M.FetchRequest, dst=1)


@pytest.mark.kafka("KafkaRaftClientAutoJoinTest#testObserverDoesNotAutoJoinWithKRaftVersion0")
def test_observer_does_not_auto_join_with_kraft_version_0():
    ctx = _context(3, kraft_version=0)
    _complete_fetch(ctx)
    ctx.sleep(FETCH_TIMEOUT - 1)
    assert not _sent(ctx, M.AddRaftVoterRequest)
    assert ctx.requests(M.FetchRequest, dst=1)
