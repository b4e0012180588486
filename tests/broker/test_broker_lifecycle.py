"""Broker states, registration, heartbeats, controlled shutdown and KIP-343 self-fencing."""

from __future__ import annotations

import itertools

import pytest
from broker_helpers import CLUSTER, CONTROLLER, E, Harness, config, make_image, uid

from kraft_testkit.broker import BrokerState
from kraft_testkit.metadata import Endpoint
from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import rpc

S = BrokerState
IMAGE = make_image({1: 10, 2: 11})


# ---------------------------------------------------------------- registration


def test_start_registers_with_the_active_controller():
    h = Harness(4, rack="r1", listeners=[Endpoint("INTERNAL", "b4", 9093, 0)],
                log_dirs=[uid(3), uid(1)], previous_broker_epoch=7)
    assert h.broker.state is S.NOT_RUNNING
    h.start()
    assert h.broker.state is S.STARTING
    assert h.outbox == []  # no controller known yet: the registration waits
    h.leader(CONTROLLER, epoch=5)
    dst, req = h.take_one(M.BrokerRegistrationRequest)
    assert dst == CONTROLLER and isinstance(req, rpc.Request)
    body = req.body
    assert body.broker_id == 4 and body.cluster_id == CLUSTER
    assert body.incarnation_id == h.broker.incarnation_id
    assert [(x.name, x.host, x.port, x.security_protocol) for x in body.listeners] == \
        [("INTERNAL", "b4", 9093, 0)]
    # Kafka 4.2.1's BrokerFeatures#defaultSupportedFeatures: metadata.version [3.3-IV3, 4.2-IV1],
    # every production feature [minimumProduction, latestProduction], kraft.version [0, 1]
    assert [(f.name, f.min_supported_version, f.max_supported_version)
            for f in body.features] == [("eligible.leader.replicas.version", 0, 1),
                                        ("group.version", 0, 1), ("kraft.version", 0, 1),
                                        ("metadata.version", 7, 29),
                                        ("share.version", 0, 1), ("streams.version", 0, 1),
                                        ("transaction.version", 0, 2)]
    assert body.rack == "r1" and body.is_migrating_zk_broker is False
    assert body.log_dirs == (uid(1), uid(3))  # sorted as Kafka sorts uuids
    assert body.previous_broker_epoch == 7


def test_registration_success_heartbeats_at_once_wanting_fence():
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    h.metadata(IMAGE, offset=42)
    _, hb = h.register(epoch=17)
    assert h.broker.broker_epoch == 17
    assert hb.body.broker_id == 1 and hb.body.broker_epoch == 17
    assert hb.body.current_metadata_offset == 42
    assert hb.body.want_fence is True and hb.body.want_shut_down is False
    assert "registered with broker epoch 17" in h.events()


def test_registration_errors_retry_one_heartbeat_interval_later():
    """Kafka 4.2.1 BrokerLifecycleManager#scheduleNextCommunicationAfterFailure: every failed
    registration is tried again broker.heartbeat.interval.ms (2000) later, no backoff, no
    jitter (3.x's ExponentialBackoff(100, 2, session, 0.02) is gone)."""
    h = Harness(cfg=config(initial_broker_registration_timeout_ms=600_000))
    h.start()
    h.leader(CONTROLLER)
    delays = []
    for _ in range(10):
        sent = h.take_one(M.BrokerRegistrationRequest)
        h.answer(sent, M.BrokerRegistrationResponse(error_code=E.DUPLICATE_BROKER_REGISTRATION))
        before = h.now
        h.at(h.timer)
        delays.append(h.now - before)
    assert delays == [2000] * 10
    assert "registration refused by controller: DUPLICATE_BROKER_REGISTRATION" in h.events()


def test_not_controller_waits_for_the_next_controller():
    """NodeToControllerRequestThread#handleResponse: NOT_CONTROLLER is the controller channel's
    to retry (the request goes back first in its queue and out again to the controller the
    broker knows of), not a failed registration: no interval's wait."""
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    first = h.take_one(M.BrokerRegistrationRequest)
    h.answer(first, M.BrokerRegistrationResponse(error_code=E.NOT_CONTROLLER))
    again = h.take_one(M.BrokerRegistrationRequest)   # at once, to the controller it knows of
    assert again[0] == CONTROLLER
    assert any("registration answered NOT_CONTROLLER" in e for e in h.events())
    h.leader(CONTROLLER + 1)                           # a new controller: sent there
    moved = h.take_one(M.BrokerRegistrationRequest)
    assert moved[0] == CONTROLLER + 1
    h.answer(moved, M.BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=7))
    assert h.broker.broker_epoch == 7


def test_unanswered_registration_times_out_and_is_sent_again():
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    first = h.take_one(M.BrokerRegistrationRequest)
    h.at(4499)
    assert h.take(M.BrokerRegistrationRequest) == []
    h.at(4500)  # broker.session.timeout.ms / 2: Kafka's controller channel gives up
    assert "registration timed out (controller 100)" in h.events()
    h.at(4500 + 1999)   # onTimeout -> scheduleNextCommunicationAfterFailure: an interval later
    assert h.take(M.BrokerRegistrationRequest) == []
    h.at(4500 + 2000)
    second = h.take_one(M.BrokerRegistrationRequest)
    assert second[1].correlation_id != first[1].correlation_id
    # the late answer to the first one is not expected any more
    h.answer(first, M.BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=3))
    assert h.broker.broker_epoch == -1
    h.answer(second, M.BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=4))
    assert h.broker.broker_epoch == 4


def test_registration_gives_up_after_the_initial_timeout():
    h = Harness(cfg=config(initial_broker_registration_timeout_ms=20_000))
    h.start()
    h.leader(CONTROLLER)
    h.at(19_999)
    assert h.broker.state is S.STARTING
    h.fire(20_000)
    assert h.broker.state is S.SHUTTING_DOWN
    assert "unable to register" in h.broker.shutdown_reason
    h.at(20_000)
    assert h.broker.state is S.SHUTTING_DOWN and h.timer == 20_001
    h.at(20_001)
    assert h.broker.state is S.NOT_RUNNING
    assert h.timer >= 1 << 60  # nothing planned any more
    h.outbox.clear()
    h.at(100_000)
    assert h.outbox == []


def test_controller_change_resends_the_request_in_flight():
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    old = h.take_one(M.BrokerRegistrationRequest)
    h.advance(5)
    h.leader(CONTROLLER + 1, epoch=2)
    dst, new = h.take_one(M.BrokerRegistrationRequest)
    assert dst == CONTROLLER + 1 and new.body == old[1].body
    h.answer(old, M.BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=1))
    assert not h.broker.lifecycle.registered  # stale answer from the old controller
    h.answer((dst, new), M.BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=2))
    assert h.broker.broker_epoch == 2


# ---------------------------------------------------------------- heartbeats and states


def test_starting_waits_for_is_caught_up():
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    hb = h.register()
    h.heartbeat_reply(hb, caught_up=False)
    assert h.broker.state is S.STARTING
    h.at(h.now + 9)
    assert h.take(M.BrokerHeartbeatRequest) == []
    h.advance(1)  # Kafka heartbeats 10 ms after a STARTING answer
    hb = h.take_one(M.BrokerHeartbeatRequest)
    assert hb[1].body.want_fence is True
    h.metadata(IMAGE)
    h.heartbeat_reply(hb, caught_up=True)
    assert h.broker.state is S.RECOVERY
    # recovery is instant here: the next heartbeat leaves at once with WantFence=false
    hb = h.take_one(M.BrokerHeartbeatRequest)
    assert hb[1].body.want_fence is False
    assert hb[1].body.current_metadata_offset == IMAGE.offset
    h.heartbeat_reply(hb, fenced=True)
    assert h.broker.state is S.RECOVERY and h.broker.fenced
    h.advance(2000)
    hb = h.take_one(M.BrokerHeartbeatRequest)
    h.heartbeat_reply(hb, fenced=False)
    assert h.broker.state is S.RUNNING and not h.broker.fenced and h.broker.serving
    texts = h.events()
    assert [t.split(":")[0] for t in texts if "->" in t and ":" in t and t[0].isupper()] == [
        "NOT_RUNNING -> STARTING", "STARTING -> RECOVERY", "RECOVERY -> RUNNING"]


def test_running_heartbeats_every_interval():
    h = Harness(cfg=config(broker_heartbeat_interval_ms=1500))
    h.to_running(IMAGE)
    times = []
    for _ in range(4):
        h.at(h.timer)
        sent = h.take(M.BrokerHeartbeatRequest)
        if sent:
            times.append(h.now)
            h.heartbeat_reply(sent[0], fenced=False)
    assert [b - a for a, b in itertools.pairwise(times)] == [1500, 1500, 1500]


@pytest.mark.parametrize("error", [E.STALE_BROKER_EPOCH, E.BROKER_ID_NOT_REGISTERED])
def test_stale_epoch_is_retried_one_interval_later_as_kafka_does(error):
    """Kafka 4.2.1's BrokerLifecycleManager: any heartbeat error -> scheduleNextCommunication
    AfterFailure (the same heartbeat, broker.heartbeat.interval.ms later); no new registration."""
    h = Harness()
    h.to_running(IMAGE, epoch=10)
    h.advance(2000)
    h.heartbeat_reply(h.take_one(M.BrokerHeartbeatRequest), error=error)
    assert h.take(M.BrokerRegistrationRequest) == []
    assert h.take(M.BrokerHeartbeatRequest) == []           # not at once: an interval later
    assert h.timer == h.now + 2000
    h.at(h.timer)
    _, hb = h.take_one(M.BrokerHeartbeatRequest)
    assert hb.body.broker_epoch == 10 and h.broker.state is S.RUNNING


@pytest.mark.parametrize("error", [E.STALE_BROKER_EPOCH, E.BROKER_ID_NOT_REGISTERED])
def test_stale_epoch_makes_the_broker_register_again_when_asked(error):
    h = Harness(cfg=config(testkit_broker_reregister_on_stale_epoch=True))
    h.to_running(IMAGE, epoch=10)
    incarnation = h.broker.incarnation_id
    h.advance(2000)
    h.heartbeat_reply(h.take_one(M.BrokerHeartbeatRequest), error=error)
    sent = h.take_one(M.BrokerRegistrationRequest)
    assert sent[1].body.incarnation_id == incarnation
    assert h.broker.state is S.RUNNING
    h.answer(sent, M.BrokerRegistrationResponse(error_code=E.NONE, broker_epoch=25))
    _, hb = h.take_one(M.BrokerHeartbeatRequest)
    assert hb.body.broker_epoch == 25 and hb.body.want_fence is False
    assert any("registering again" in t for t in h.events())


def test_other_heartbeat_errors_retry_one_interval_later():
    """BrokerHeartbeatResponseEvent: an error -> scheduleNextCommunicationAfterFailure, the
    heartbeat interval (Kafka 4.2.1 has no backoff there)."""
    h = Harness()
    h.to_running(IMAGE)
    h.advance(2000)
    h.heartbeat_reply(h.take_one(M.BrokerHeartbeatRequest), error=E.UNKNOWN_SERVER_ERROR)
    assert h.take(M.BrokerRegistrationRequest) == []
    h.advance(1999)
    assert h.take(M.BrokerHeartbeatRequest) == []
    h.advance(1)
    assert len(h.take(M.BrokerHeartbeatRequest)) == 1


def test_stale_heartbeat_answers_are_ignored():
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    dst, hb = h.register()
    h.deliver(dst, rpc.response(hb.correlation_id + 1000, M.BrokerHeartbeatResponse(
        is_caught_up=True, is_fenced=False)))
    assert h.broker.state is S.STARTING


# ---------------------------------------------------------------- controlled shutdown


def test_controlled_shutdown_sequence():
    h = Harness()
    h.to_running(IMAGE)
    h.advance(300)
    h.feed(h.broker.begin_controlled_shutdown(h.now))
    assert h.broker.state is S.PENDING_CONTROLLED_SHUTDOWN
    hb = h.take_one(M.BrokerHeartbeatRequest)  # at once
    assert hb[1].body.want_shut_down is True and hb[1].body.want_fence is False
    h.heartbeat_reply(hb, fenced=False, shut_down=False)
    h.advance(50)  # the first answer is followed up after 50 ms
    hb = h.take_one(M.BrokerHeartbeatRequest)
    assert hb[1].body.want_shut_down is True
    h.heartbeat_reply(hb, fenced=False, shut_down=False)
    h.advance(1999)
    assert h.take(M.BrokerHeartbeatRequest) == []
    h.advance(1)
    hb = h.take_one(M.BrokerHeartbeatRequest)
    assert h.broker.serving  # still serving while leaders move away
    h.heartbeat_reply(hb, fenced=True, shut_down=True)
    assert h.broker.state is S.SHUTTING_DOWN and not h.broker.serving
    assert h.broker.shutdown_reason == "the controller approved controlled shutdown"
    h.advance(1)
    assert h.broker.state is S.NOT_RUNNING
    h.outbox.clear()
    h.advance(60_000)
    assert h.outbox == []


def test_controlled_shutdown_outside_running_shuts_down_at_once():
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    h.feed(h.broker.begin_controlled_shutdown(h.now))
    assert h.broker.state is S.SHUTTING_DOWN
    assert "skipping controlled shutdown in state STARTING" in h.broker.shutdown_reason


def test_controlled_shutdown_disabled():
    h = Harness(cfg=config(controlled_shutdown_enable=False))
    h.to_running(IMAGE)
    h.feed(h.broker.begin_controlled_shutdown(h.now))
    assert h.broker.state is S.SHUTTING_DOWN
    assert h.broker.shutdown_reason == "controlled.shutdown.enable is false"


def test_controlled_shutdown_times_out():
    h = Harness(controlled_shutdown_timeout_ms=10_000)
    h.to_running(IMAGE)
    h.feed(h.broker.begin_controlled_shutdown(h.now))
    for _ in range(20):
        h.heartbeat_ok()
        h.at(h.timer)
        if h.broker.state is not S.PENDING_CONTROLLED_SHUTDOWN:
            break
    assert h.broker.state is S.SHUTTING_DOWN and h.now == 10_000
    assert "timed out waiting for the controller" in h.broker.shutdown_reason


# ---------------------------------------------------------------- KIP-343 (opt-in)


def test_self_fencing_after_heartbeat_timeout_and_recovery():
    cfg = config(broker_session_timeout_ms=9000, broker_heartbeat_timeout_ms=18000,
                 testkit_broker_self_fencing_enable=True)
    h = Harness(cfg=cfg)
    h.to_running(IMAGE)
    last_contact = h.now
    # the controller stops answering: heartbeats time out, back off, and are sent again
    while h.now < last_contact + 18_000:
        h.outbox.clear()
        h.at(min(h.timer, last_contact + 18_000))
    assert not h.broker.self_fenced and h.broker.serving
    h.at(last_contact + 18_001)
    assert h.broker.self_fenced and not h.broker.serving
    assert h.broker.state is S.RUNNING
    assert any(t.startswith("self-fenced (KIP-343)") for t in h.events())
    view = h.broker.metadata_response()
    assert 1 not in [b.node_id for b in view.brokers]
    # contact resumes, but the controller has fenced the broker meanwhile
    while not h.outbox:
        h.at(h.timer)
    hb = h.take_one(M.BrokerHeartbeatRequest)
    assert hb[1].body.want_fence is False
    h.heartbeat_reply(hb, fenced=True)
    assert h.broker.self_fenced and h.broker.fenced
    h.at(h.timer)
    h.heartbeat_reply(h.take_one(M.BrokerHeartbeatRequest), fenced=False)
    assert not h.broker.self_fenced and h.broker.serving
    assert 1 in [b.node_id for b in h.broker.metadata_response().brokers]
    assert "unfenced by the controller again: no longer self-fenced" in h.events()


def test_error_answers_do_not_count_as_contact():
    h = Harness(cfg=config(broker_heartbeat_timeout_ms=12_000, testkit_broker_self_fencing_enable=True))
    h.to_running(IMAGE)
    start = h.now
    while h.now <= start + 12_000:
        for sent in h.take(M.BrokerHeartbeatRequest):
            h.heartbeat_reply(sent, error=E.UNKNOWN_SERVER_ERROR)
        h.at(h.timer)
    assert h.broker.self_fenced


def test_released_kafka_never_fences_itself():
    """The default, as released Kafka: cut off from the controller for a minute, the broker
    keeps serving (it learns of fencing from the metadata log, not from a timeout)."""
    h = Harness()
    h.to_running(IMAGE)
    start = h.now
    while h.now < start + 60_000:
        h.outbox.clear()
        h.at(h.timer)
    assert not h.broker.self_fenced and h.broker.serving and h.broker.state is S.RUNNING
    assert not any("self-fenced" in t for t in h.events())


def test_no_self_fencing_before_recovery():
    h = Harness(cfg=config(testkit_broker_self_fencing_enable=True))
    h.start()
    h.leader(CONTROLLER)
    h.register()
    h.at(60_000 - 1)
    assert not h.broker.self_fenced


# ---------------------------------------------------------------- determinism


def _run(seed: int) -> tuple[list, list]:
    h = Harness(seed=seed, cfg=config(initial_broker_registration_timeout_ms=30_000))
    h.start()
    h.leader(CONTROLLER)
    for _ in range(6):
        for sent in h.take(M.BrokerRegistrationRequest):
            h.answer(sent, M.BrokerRegistrationResponse(error_code=E.NOT_CONTROLLER))
        h.at(h.timer)
    return list(h.broker.events), [(d, repr(m)) for d, m in h.outbox]


def test_same_seed_same_broker():
    assert _run(3) == _run(3)
    a, b = _run(3), _run(4)
    assert a != b  # other incarnation id, other jitter


def test_caught_up_needs_metadata_in_hand():
    h = Harness()
    h.start()
    h.leader(CONTROLLER)
    hb = h.register()
    h.heartbeat_reply(hb, caught_up=True)  # no image published to the broker yet
    assert h.broker.state is S.STARTING
    h.metadata(IMAGE)
    h.advance(10)
    h.heartbeat_reply(h.take_one(M.BrokerHeartbeatRequest), caught_up=True)
    assert h.broker.state is S.RECOVERY


def test_routing_between_broker_logic_and_the_metadata_observer():
    from kraft_testkit.raft import rpc as R

    b = Harness().broker
    assert b.handles(CONTROLLER, R.response(1, M.BrokerHeartbeatResponse()))
    assert b.handles(CONTROLLER, R.response(1, M.AlterPartitionResponse()))
    assert b.handles(5, R.request(1, M.MetadataRequest()))
    raft_fetch = R.fetch_response(0, 1, CONTROLLER)
    assert not b.handles(CONTROLLER, R.response(1, raft_fetch))
    assert not b.handles(CONTROLLER, R.response(1, M.FetchResponse(error_code=E.NOT_LEADER_OR_FOLLOWER)))
    assert not b.handles(CONTROLLER, R.response(1, M.VoteResponse()))
    fs = M.FetchResponse
    replica_fetch = fs(responses=(fs.FetchableTopicResponse(topic_id=uid(1)),))
    assert b.handles(2, R.response(1, replica_fetch))
    fq = M.FetchRequest
    assert b.handles(2, R.request(1, fq(topics=(fq.FetchTopic(topic_id=uid(1)),))))
