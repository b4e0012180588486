"""Local replicas, replica fetches and ISR shrink/expand through AlterPartition."""

from __future__ import annotations

import itertools

import pytest
from broker_helpers import (
    CONTROLLER,
    E,
    Harness,
    alter_response,
    change_record,
    config,
    fetch_errors,
    fetch_request,
    make_image,
    partition_record,
    uid,
)

from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import rpc

EPOCHS = {1: 10, 2: 20, 3: 30}
_cids = itertools.count(5000)


def leader_image(**kw):
    """Broker 1 leads foo-0 (replicas 1, 2, 3; all in sync)."""
    parts = kw.pop("partitions", [partition_record(1, 0, [1, 2, 3])])
    return make_image(EPOCHS, topics={"foo": 1}, partitions=parts, **kw)


def running_leader(now: int = 1000, **kw) -> Harness:
    h = Harness(1, **kw)
    h.at(now)
    h.to_running(leader_image())
    return h


def fetch(h: Harness, follower: int, *, epoch: int | None = None, leader_epoch=None,
          topic_n: int = 1, partition: int = 0):
    """Deliver a replica fetch of foo-0 from ``follower``; returns its error code."""
    rep = h.broker.replica("foo", 0)
    le = (rep.leader_epoch if rep else 0) if leader_epoch is None else leader_epoch
    req = fetch_request(follower, EPOCHS.get(follower, 1) if epoch is None else epoch,
                        [(topic_n, partition, le)])
    h.deliver(follower, rpc.request(next(_cids), req))
    (_, resp), = h.take(M.FetchResponse, follower)
    return fetch_errors(resp.body)[(uid(topic_n), partition)]


def drive(h: Harness, until: int, fetchers: dict[int, int], alter=None) -> None:
    """Advance to ``until``: heartbeats answered, ``fetchers`` {broker: every ms} fetching foo-0,
    AlterPartition requests answered by ``alter(request body)`` (left in the outbox if None)."""
    due = {b: h.now for b in fetchers}
    while True:
        t = min([h.timer, *due.values()])
        if t > until:
            break
        h.at(t)
        h.heartbeat_ok()
        for b in sorted(due):
            if due[b] <= h.now:
                assert fetch(h, b) == E.NONE
                due[b] = h.now + fetchers[b]
        if alter is not None:
            for sent in h.take(M.AlterPartitionRequest):
                h.answer(sent, alter(sent[1].body))
    h.at(until)
    h.heartbeat_ok()


def isr_of(h: Harness) -> list[int]:
    return list(h.broker.replica("foo", 0).isr)


# ---------------------------------------------------------------- shrink and expand


def test_followers_that_fetch_stay_in_the_isr():
    h = running_leader()
    drive(h, 120_000, {2: 1000, 3: 1000})
    assert h.take(M.AlterPartitionRequest) == []
    assert isr_of(h) == [1, 2, 3]


def test_isr_shrinks_after_replica_lag_time_without_fetches():
    h = running_leader(1000)  # leader since 1000: followers in the ISR start caught up then
    drive(h, 45_999, {2: 1000})
    assert h.take(M.AlterPartitionRequest) == []  # the checks at 16000 and 31000 found 3 in time
    drive(h, 46_000, {2: 1000})  # the check every lag/2 finds 3 out of sync (45 s > 30 s)
    dst, req = h.take_one(M.AlterPartitionRequest)
    assert dst == CONTROLLER
    body = req.body
    assert body.broker_id == 1 and body.broker_epoch == 10
    (topic,) = body.topics
    assert topic.topic_id == uid(1)
    (p,) = topic.partitions
    assert p.partition_index == 0 and p.leader_epoch == 0 and p.partition_epoch == 0
    assert [(s.broker_id, s.broker_epoch) for s in p.new_isr_with_epochs] == [(1, 10), (2, 20)]
    assert p.leader_recovery_state == 0
    assert req.body.encode(3)  # the v3 shape is complete
    rep = h.broker.replica("foo", 0)
    assert rep.pending.kind == "shrink" and isr_of(h) == [1, 2, 3]  # committed: unchanged
    h.answer((dst, req), alter_response(body))
    assert isr_of(h) == [1, 2] and rep.partition_epoch == 1 and rep.pending is None
    assert "foo-0: ISR [1, 2, 3] -> [1, 2] (partition epoch 1)" in h.events()


def test_isr_expands_when_the_follower_fetches_again():
    h = running_leader(1000)
    drive(h, 46_000, {2: 1000}, alter=alter_response)
    assert isr_of(h) == [1, 2]
    h.advance(3000)
    h.heartbeat_ok()
    assert fetch(h, 3) == E.NONE
    dst, req = h.take_one(M.AlterPartitionRequest)
    (p,) = req.body.topics[0].partitions
    assert p.partition_epoch == 1
    assert [(s.broker_id, s.broker_epoch) for s in p.new_isr_with_epochs] == \
        [(1, 10), (2, 20), (3, 30)]
    h.answer((dst, req), alter_response(req.body))
    assert isr_of(h) == [1, 2, 3]
    assert h.broker.replica("foo", 0).partition_epoch == 2
    assert any("expand: [3] caught up" in t for t in h.events())


def test_a_pending_change_blocks_the_next_one():
    h = running_leader(1000)
    drive(h, 46_000, {2: 1000})
    assert len(h.take(M.AlterPartitionRequest)) == 1  # shrink sent, not answered
    assert fetch(h, 3) == E.NONE
    drive(h, 120_000, {2: 1000, 3: 1000})
    resent = {repr(m.body) for _, m in h.take(M.AlterPartitionRequest)}
    assert len(resent) == 1  # unanswered, the shrink is resent; no expand meanwhile
    assert h.broker.replica("foo", 0).pending.kind == "shrink"


def test_unanswered_alter_partition_is_resent():
    h = running_leader(1000)
    drive(h, 46_000, {2: 1000})
    first = h.take_one(M.AlterPartitionRequest)
    drive(h, 46_000 + 4500, {2: 1000})  # request timeout: broker.session.timeout.ms / 2
    second = h.take_one(M.AlterPartitionRequest)
    assert second[1].body == first[1].body
    assert second[1].correlation_id != first[1].correlation_id
    h.answer(first, alter_response(first[1].body))  # too late: not awaited any more
    assert h.broker.replica("foo", 0).pending is not None
    h.answer(second, alter_response(second[1].body))
    assert isr_of(h) == [1, 2]


def test_alter_partition_follows_the_active_controller():
    h = running_leader(1000)
    drive(h, 46_000, {2: 1000})
    h.take_one(M.AlterPartitionRequest)
    h.leader(CONTROLLER + 1, epoch=2)
    dst, req = h.take_one(M.AlterPartitionRequest)
    assert dst == CONTROLLER + 1
    h.answer((dst, req), alter_response(req.body))
    assert isr_of(h) == [1, 2]


# ---------------------------------------------------------------- AlterPartition errors


def _shrink_pending(**kw) -> tuple[Harness, tuple]:
    h = running_leader(1000, **kw)
    drive(h, 46_000, {2: 1000})
    return h, h.take_one(M.AlterPartitionRequest)


@pytest.mark.parametrize("error", [E.FENCED_LEADER_EPOCH, E.INVALID_UPDATE_VERSION,
                                   E.UNKNOWN_TOPIC_ID, E.NEW_LEADER_ELECTED])
def test_errors_that_wait_for_new_metadata(error):
    h, sent = _shrink_pending()
    h.answer(sent, alter_response(sent[1].body, error=error))
    rep = h.broker.replica("foo", 0)
    assert rep.pending is not None and isr_of(h) == [1, 2, 3]
    drive(h, 100_000, {2: 1000})
    assert h.take(M.AlterPartitionRequest) == []  # nothing until the metadata moves
    # the controller's newer state arrives: the partition epoch moved on
    h.metadata(leader_image(extra=[change_record(1, 0, isr=[1, 2, 3])], offset=20))
    assert rep.pending is None and rep.partition_epoch == 1
    drive(h, 106_000, {2: 1000})  # the next check proposes again, on the new epoch
    _, req = h.take_one(M.AlterPartitionRequest)
    assert req.body.topics[0].partitions[0].partition_epoch == 1
    assert any(f"({E(error).name}); waiting for newer metadata" in t for t in h.events())


@pytest.mark.parametrize("error", [E.OPERATION_NOT_ATTEMPTED, E.INELIGIBLE_REPLICA])
def test_errors_that_say_nothing_was_applied(error):
    h, sent = _shrink_pending()
    h.answer(sent, alter_response(sent[1].body, error=error))
    rep = h.broker.replica("foo", 0)
    assert rep.pending is None and isr_of(h) == [1, 2, 3]
    drive(h, 61_000, {2: 1000})  # the next check proposes the shrink again
    assert len(h.take(M.AlterPartitionRequest)) == 1


def test_unexpected_partition_errors_are_retried_at_once():
    h, sent = _shrink_pending()
    h.answer(sent, alter_response(sent[1].body, error=E.UNKNOWN_SERVER_ERROR))
    dst, again = h.take_one(M.AlterPartitionRequest)
    assert again.body == sent[1].body
    h.answer((dst, again), alter_response(again.body))
    assert isr_of(h) == [1, 2]


def test_top_level_errors_retry_after_50_ms():
    h, sent = _shrink_pending()
    h.answer(sent, alter_response(sent[1].body, top_error=E.NOT_CONTROLLER))
    assert h.take(M.AlterPartitionRequest) == []
    h.advance(49)
    assert h.take(M.AlterPartitionRequest) == []
    h.advance(1)
    assert h.take_one(M.AlterPartitionRequest)[1].body == sent[1].body


def test_answers_for_another_leader_epoch_are_ignored():
    h, sent = _shrink_pending()
    h.answer(sent, alter_response(sent[1].body, leader_epoch=5))
    rep = h.broker.replica("foo", 0)
    assert isr_of(h) == [1, 2, 3] and rep.pending is not None
    assert any("ignoring ISR [1, 2] for leader epoch 5" in t for t in h.events())


def test_controller_rewrite_of_the_isr_is_taken():
    h, sent = _shrink_pending()
    h.answer(sent, alter_response(sent[1].body, isr=[1]))  # e.g. a reassignment completed
    assert isr_of(h) == [1]


# ---------------------------------------------------------------- eligibility


@pytest.mark.parametrize("why", ["fenced", "controlled shutdown", "old broker epoch", "unknown"])
def test_ineligible_followers_do_not_rejoin(why):
    h = running_leader(1000)
    drive(h, 46_000, {2: 1000}, alter=alter_response)
    assert isr_of(h) == [1, 2]
    epoch = 30
    if why == "fenced":
        h.metadata(leader_image(fenced=[3], offset=30))
    elif why == "controlled shutdown":
        h.metadata(leader_image(extra=[M.BrokerRegistrationChangeRecord(
            broker_id=3, broker_epoch=30, in_controlled_shutdown=1)], offset=30))
    elif why == "old broker epoch":
        epoch = 29  # a previous incarnation still fetching
    else:
        h.metadata(make_image({1: 10, 2: 20}, topics={"foo": 1},
                              partitions=[partition_record(1, 0, [1, 2, 3])], offset=30))
    rep = h.broker.replica("foo", 0)
    rep.isr = (1, 2)  # keep the ISR the controller confirmed (the image above is older)
    assert fetch(h, 3, epoch=epoch) == E.NONE
    assert h.take(M.AlterPartitionRequest) == []


# ---------------------------------------------------------------- the leader's checks


def test_fetch_errors_as_kafka_answers_them():
    parts = [partition_record(1, 0, [1, 2, 3], leader_epoch=4),
             partition_record(1, 1, [2, 1, 3], leader_epoch=2)]
    h = Harness(1)
    h.at(1000)
    h.to_running(leader_image(partitions=parts))
    assert fetch(h, 2, leader_epoch=4) == E.NONE
    assert fetch(h, 2, leader_epoch=3) == E.FENCED_LEADER_EPOCH
    assert fetch(h, 2, leader_epoch=5) == E.UNKNOWN_LEADER_EPOCH
    assert fetch(h, 4, leader_epoch=4) == E.UNKNOWN_LEADER_EPOCH  # not a replica
    assert fetch(h, 4, leader_epoch=-1) == E.NOT_LEADER_OR_FOLLOWER
    assert fetch(h, 2, topic_n=9) == E.UNKNOWN_TOPIC_ID
    # foo-1 is led by broker 2: NOT_LEADER_OR_FOLLOWER, with the current leader (KIP-951)
    req = fetch_request(3, 30, [(1, 1, 2)])
    h.deliver(3, rpc.request(1, req))
    (_, resp), = h.take(M.FetchResponse, 3)
    part = resp.body.responses[0].partitions[0]
    assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (2, 2)
    assert resp.correlation_id == 1


def test_self_fenced_leader_refuses_fetches_and_changes_nothing():
    cfg = config(broker_heartbeat_timeout_ms=20_000, testkit_broker_self_fencing_enable=True)
    h = Harness(1, cfg=cfg)
    h.at(1000)
    h.to_running(leader_image())
    h.heartbeat_ok()
    h.at(1000 + 20_001)  # no heartbeat answered since: self-fenced
    assert h.broker.self_fenced
    assert fetch(h, 2) == E.NOT_LEADER_OR_FOLLOWER
    h.outbox.clear()
    h.at(120_000)  # way past the lag: still no ISR change
    assert h.take(M.AlterPartitionRequest) == []
    # back in touch and unfenced: followers in the ISR get a fresh lag window
    for sent in h.take(M.BrokerHeartbeatRequest):
        h.heartbeat_reply(sent, fenced=False)
    while h.broker.self_fenced:
        h.at(h.timer)
        h.heartbeat_ok()
    resumed = h.now
    assert fetch(h, 2) == E.NONE
    drive(h, resumed + 30_000, {2: 1000})
    assert h.take(M.AlterPartitionRequest) == []
    drive(h, resumed + 46_000, {2: 1000})
    (_, req), *_ = h.take(M.AlterPartitionRequest)  # 3 never came back
    assert [s.broker_id for s in req.body.topics[0].partitions[0].new_isr_with_epochs] == [1, 2]


# ---------------------------------------------------------------- the follower side


def test_followers_fetch_each_leader_every_backoff():
    parts = [partition_record(1, 0, [2, 1], leader_epoch=3),
             partition_record(1, 1, [3, 1], leader_epoch=1),
             partition_record(2, 0, [2, 1], leader_epoch=7),
             partition_record(2, 1, [1, 2])]
    image = make_image(EPOCHS, topics={"foo": 1, "bar": 2}, partitions=parts)
    h = Harness(1, cfg=config(replica_fetch_backoff_ms=700), rack="rack-a")
    h.at(100)
    h.to_running(image)
    sent = h.take(M.FetchRequest)
    assert [d for d, _ in sent] == [2, 3]
    by_leader = {d: m.body for d, m in sent}
    to2 = by_leader[2]
    assert (to2.replica_state.replica_id, to2.replica_state.replica_epoch) == (1, 10)
    assert to2.rack_id == "rack-a" and to2.encode(17)
    assert {(t.topic_id, p.partition, p.current_leader_epoch)
            for t in to2.topics for p in t.partitions} == {(uid(1), 0, 3), (uid(2), 0, 7)}
    assert [(p.partition, p.current_leader_epoch)
            for t in by_leader[3].topics for p in t.partitions] == [(1, 1)]
    h.advance(699)
    h.heartbeat_ok()
    assert h.take(M.FetchRequest) == []
    h.advance(1)
    assert [d for d, _ in h.take(M.FetchRequest)] == [2, 3]


def test_followers_record_successful_fetches():
    image = make_image(EPOCHS, topics={"foo": 1},
                       partitions=[partition_record(1, 0, [2, 1], leader_epoch=3)])
    h = Harness(1)
    h.at(100)
    h.to_running(image)
    dst, req = h.take_one(M.FetchRequest)
    assert h.broker.handles(dst, rpc.response(req.correlation_id, M.FetchResponse()))
    assert not h.broker.handles(dst, rpc.response(req.correlation_id + 1, M.FetchResponse()))
    h.advance(5)
    fs = M.FetchResponse
    ok = fs(responses=(fs.FetchableTopicResponse(topic_id=uid(1), partitions=(
        fs.PartitionData(partition_index=0, error_code=E.NONE),)),))
    h.answer((dst, req), ok)
    assert h.broker.replica("foo", 0).last_fetched_ms == 105


# ---------------------------------------------------------------- replicas and metadata


def test_recovery_deletes_strays_then_metadata_drives_the_replicas():
    local = [(uid(9), "gone", 0), (uid(1), "foo", 1), (uid(1), "foo", 0)]
    parts = [partition_record(1, 0, [1, 2]), partition_record(1, 1, [2, 3])]
    h = Harness(1, local_replicas=local)
    h.start()
    h.leader(CONTROLLER)
    h.metadata(leader_image(partitions=parts))
    assert h.broker.local_replicas() == ["foo-0", "foo-1", "gone-0"]  # nothing applied yet
    h.heartbeat_reply(h.register(), caught_up=True)
    assert h.broker.local_replicas() == ["foo-0"]
    texts = h.events()
    assert "recovery: deleted stray replica foo-1 (it is not assigned here)" in texts
    assert "recovery: deleted stray replica gone-0 (its topic is gone)" in texts
    # a new topic places a replica here; deleting foo removes its replica
    image = make_image(EPOCHS, topics={"bar": 2},
                       partitions=[partition_record(2, 0, [3, 1], leader_epoch=2)], offset=40)
    h.metadata(image)
    assert h.broker.local_replicas() == ["bar-0"]
    assert "created replica bar-0" in h.events()
    assert "deleted replica foo-0 (topic deleted)" in h.events()
    assert "following bar-0: leader 3 at epoch 2" in h.events()


def test_becoming_leader_resets_follower_state():
    parts = [partition_record(1, 0, [2, 1, 3], isr=[2, 1], leader_epoch=1)]
    h = Harness(1)
    h.at(500)
    h.to_running(leader_image(partitions=parts))
    h.advance(2000)
    h.heartbeat_ok()
    h.metadata(leader_image(partitions=parts, offset=30,
                            extra=[change_record(1, 0, leader=1)]))
    rep = h.broker.replica("foo", 0)
    assert rep.leader == 1 and rep.leader_epoch == 2
    assert rep.followers[2].last_caught_up_ms == 2500  # in the ISR: caught up now
    assert rep.followers[3].last_caught_up_ms == 0
    assert rep.followers[2].broker_epoch is None
    assert "leading foo-0 at leader epoch 2, ISR [2, 1]" in h.events()


def test_unchanged_registrations_keep_a_pending_change():
    h, sent = _shrink_pending()
    h.metadata(leader_image(offset=50, extra=[M.TopicRecord(name="other", topic_id=uid(5))]))
    assert h.broker.replica("foo", 0).pending is not None
    h.answer(sent, alter_response(sent[1].body))
    assert isr_of(h) == [1, 2]


def test_no_fetching_or_isr_changes_after_shutdown():
    h = running_leader(1000)
    h.feed(h.broker.shut_down(h.now, "test"))
    h.outbox.clear()
    h.at(200_000)
    assert h.outbox == []
    assert fetch(h, 2) == E.NOT_LEADER_OR_FOLLOWER


def test_superseded_changes_never_sent_are_dropped():
    h = running_leader(1000)
    drive(h, 45_000, {2: 1000})
    h.leader(None)  # between controllers
    drive(h, 46_000, {2: 1000})
    assert h.broker.replica("foo", 0).pending is not None
    assert h.take(M.AlterPartitionRequest) == []  # queued: no controller to send it to
    h.metadata(leader_image(extra=[change_record(1, 0, isr=[1, 2, 3])], offset=30))
    h.leader(CONTROLLER, epoch=2)
    assert h.take(M.AlterPartitionRequest) == []  # the stale proposal is gone
    drive(h, 61_000, {2: 1000})
    _, req = h.take_one(M.AlterPartitionRequest)  # the next check proposes on the new state
    p = req.body.topics[0].partitions[0]
    assert (p.leader_epoch, p.partition_epoch) == (0, 1)
