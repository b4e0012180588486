"""BrokerRegistration, ControllerRegistration and UnregisterBroker, as Kafka answers them."""

from __future__ import annotations

import pytest
from cluster_helpers import (
    CLUSTER_ID,
    CONTROLLER_ID,
    SESSION_MS,
    Harness,
    controller_registration,
    registration,
    types,
    uid,
)

from kraft_testkit.controller import cluster
from kraft_testkit.controller.result import ControllerContext, record
from kraft_testkit.metadata import DirectoryId, VersionRange
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode


def _register(h: Harness, request: M.BrokerRegistrationRequest) -> M.BrokerRegistrationResponse:
    return h.run(cluster.register_broker(h.ctx(), request))


# ---------------------------------------------------------------- a new incarnation


@pytest.mark.parametrize("mv, version", [(4, 0), (6, 0), (7, 1), (8, 2), (16, 2), (17, 3),
                                         (18, 3), (19, 3)])
def test_new_broker_gets_the_offset_of_its_record_as_epoch_and_starts_fenced(mv, version):
    h = Harness(mv)
    h.advance(10)
    offset = h.next_offset
    response = h.register(3, rack="r1")
    assert response.error_code == ErrorCode.NONE
    assert response.broker_epoch == offset
    (rec,) = h.last_records
    assert rec.version == version == V.register_broker_record_version(mv)
    msg = rec.message
    assert isinstance(msg, M.RegisterBrokerRecord)
    assert (msg.broker_id, msg.broker_epoch, msg.fenced, msg.rack) == (3, offset, True, "r1")
    assert msg.incarnation_id == uid(103)
    assert msg.log_dirs == ((uid(503),) if mv >= 17 else ())
    assert not msg.in_controlled_shutdown
    rec.message.encode(rec.version)  # every field fits the chosen version
    broker = h.image.cluster.broker(3)
    assert (broker.epoch, broker.fenced, broker.rack) == (offset, True, "r1")
    assert broker.supported_features["metadata.version"] == VersionRange(1, V.LATEST)
    assert h.image.cluster.fenced_broker_ids() == (3,)


def test_broker_epochs_grow_with_each_new_incarnation():
    h = Harness(18)
    epochs = []
    for n in range(4):
        h.advance(SESSION_MS + 1)  # the previous incarnation's lease has run out
        h.fence_stale()
        response = h.register(1, uid(n))
        assert response.error_code == 0
        epochs.append(response.broker_epoch)
        h.heartbeat(1)
    assert epochs == sorted(epochs) and len(set(epochs)) == 4
    assert h.image.cluster.broker(1).incarnation_id == uid(3)


def test_wrong_cluster_id_is_inconsistent_cluster_id():
    h = Harness(18)
    response = _register(h, registration(1, cluster_id="someOtherClusterIdAAA"))
    assert response.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert response.broker_epoch == -1
    assert h.last_records == [] and h.image.cluster.broker(1) is None


# ---------------------------------------------------------------- the same incarnation again


def test_retry_of_the_same_incarnation_keeps_epoch_and_state():
    h = Harness(18)
    epoch = h.start_broker(1)
    h.heartbeat(1)
    h.advance(100)
    response = h.register(1)  # same incarnation: a lost response, re-sent
    assert response.error_code == 0 and response.broker_epoch == epoch
    (rec,) = h.last_records
    assert rec.message.broker_epoch == epoch and rec.message.fenced is False
    broker = h.image.cluster.broker(1)
    assert broker.epoch == epoch and not broker.fenced


def test_retry_keeps_controlled_shutdown_state():
    h = Harness(18)
    h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[1, 2]])
    h.heartbeat(1, want_shut_down=True)
    assert h.image.cluster.broker(1).in_controlled_shutdown
    response = h.register(1)
    assert response.error_code == 0
    assert h.last_records[0].message.in_controlled_shutdown is True
    assert h.image.cluster.broker(1).in_controlled_shutdown


def test_retry_before_catching_up_waits_for_the_amended_record():
    """The unfence gate is the offset of the latest RegisterBrokerRecord (Kafka keeps the offset
    of the record it replayed), not the epoch, when the same incarnation registers again."""
    h = Harness(18)
    epoch = h.register(1).broker_epoch
    h.register(2)
    h.register(1)
    amended = h.end_offset
    assert h.image.cluster.broker(1).epoch == epoch
    response = h.heartbeat(1, offset=amended - 1)
    assert response.is_fenced and not response.is_caught_up
    response = h.heartbeat(1, offset=amended)
    assert not response.is_fenced and response.is_caught_up


# ---------------------------------------------------------------- another incarnation


def test_other_incarnation_is_refused_while_the_old_lease_lives():
    h = Harness(18)
    epoch = h.register(1).broker_epoch
    h.heartbeat(1, want_fence=True)   # alive, though fenced: contact all the same (4.x tracker)
    contact = h.now_ms
    h.advance(SESSION_MS)             # exactly at the end of the session: still valid
    response = h.register(1, uid(77))
    assert response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    assert response.broker_epoch == -1 and h.last_records == []
    h.advance(1)
    assert h.now_ms == contact + SESSION_MS + 1
    response = h.register(1, uid(77))
    assert response.error_code == ErrorCode.NONE and response.broker_epoch > epoch
    broker = h.image.cluster.broker(1)
    assert broker.incarnation_id == uid(77) and broker.fenced


def test_previous_broker_epoch_does_not_bypass_the_old_session():
    """Kafka 4.2.1 ClusterControlManager#registerBroker has no bypass: the clean-shutdown proof
    (PreviousBrokerEpoch == the registered epoch) does not take the id while the old
    incarnation's session is valid, fenced (as a controlled shutdown ends) or not; it gets
    DUPLICATE_BROKER_REGISTRATION until the session expires, then registers (the proof then
    only decides clean vs unclean shutdown for ELR)."""
    h = Harness(18)
    epoch = h.start_broker(1)         # unfenced and in contact
    proof = registration(1, uid(77)).replace(previous_broker_epoch=epoch)
    response = h.run(cluster.register_broker(h.ctx(), proof))
    assert response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    h.advance(100)
    h.heartbeat(1, want_fence=True)   # now fenced (as a controlled shutdown ends), last contact
    assert h.image.cluster.broker(1).fenced
    for cand in (registration(1, uid(78)), proof):
        response = h.run(cluster.register_broker(h.ctx(), cand))
        assert response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    h.advance(SESSION_MS)             # contact + timeout: still valid (isExpired is strict)
    assert h.run(cluster.register_broker(h.ctx(), proof)).error_code == \
        ErrorCode.DUPLICATE_BROKER_REGISTRATION
    h.advance(1)
    response = h.run(cluster.register_broker(h.ctx(), proof))
    assert response.error_code == ErrorCode.NONE and response.broker_epoch > epoch


def test_other_incarnation_replaces_an_unfenced_broker_whose_lease_expired():
    h = Harness(18)
    old = h.start_broker(1)
    h.advance(SESSION_MS + 1)          # no lease check ran yet: still unfenced in the image
    assert not h.image.cluster.broker(1).fenced
    response = h.register(1, uid(2))
    assert response.error_code == 0 and response.broker_epoch > old
    assert h.image.cluster.broker(1).fenced  # the new incarnation starts fenced


def test_heartbeats_of_a_live_unfenced_broker_keep_other_incarnations_out():
    h = Harness(18)
    h.start_broker(1)
    for _ in range(10):
        h.advance(SESSION_MS // 2)
        h.heartbeat(1)
        assert h.register(1, uid(5)).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION


def test_duplicate_is_checked_after_the_cluster_id():
    h = Harness(18)
    h.start_broker(1)
    wrong = registration(1, uid(9), cluster_id="x")
    assert _register(h, wrong).error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    unsupported = registration(1, uid(9), mv_range=(1, 3))
    assert _register(h, unsupported).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION


# ---------------------------------------------------------------- features


def test_broker_that_cannot_run_the_finalized_metadata_version_is_refused():
    h = Harness(18)
    response = _register(h, registration(1, mv_range=(1, 17)))
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert h.last_records == [] and h.image.cluster.broker(1) is None
    response = _register(h, registration(1, mv_range=(19, 19)))
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_broker_naming_no_metadata_version_is_an_invalid_registration():
    """Kafka 4.x's ClusterControlManager#registerBroker (KAFKA-18601): a request without a
    metadata.version range is INVALID_REGISTRATION, whatever the log's level."""
    for h in (Harness(18), Harness(None)):
        assert _register(h, registration(1, mv_range=None)).error_code == \
            ErrorCode.INVALID_REGISTRATION
        assert h.last_records == []


def test_every_finalized_feature_must_be_supported():
    h = Harness(18)
    h.append([record(M.FeatureLevelRecord(name="group.version", feature_level=1), 0)])
    silent = registration(1)  # does not name group.version: [0, 0]
    assert _register(h, silent).error_code == ErrorCode.UNSUPPORTED_VERSION
    too_low = registration(1, features=[("group.version", 0, 0)])
    assert _register(h, too_low).error_code == ErrorCode.UNSUPPORTED_VERSION
    ok = registration(1, features=[("group.version", 0, 1), ("unknown.feature", 0, 5)])
    assert _register(h, ok).error_code == ErrorCode.NONE
    names = [f.name for f in h.last_records[0].message.features]
    assert names == ["metadata.version", "group.version", "unknown.feature"]
    assert h.image.cluster.broker(1).supported_features["group.version"] == VersionRange(0, 1)


# ---------------------------------------------------------------- log directories


@pytest.mark.parametrize("dirs", [
    [],
    [uid(1), DirectoryId.UNASSIGNED],
    [DirectoryId.LOST],
    [uid(1), uid(1)],
])
def test_invalid_log_directories_are_refused_from_3_7_iv2(dirs):
    h = Harness(17)
    response = _register(h, registration(1, log_dirs=dirs))
    assert response.error_code == ErrorCode.INVALID_REGISTRATION
    old = Harness(16)     # before JBOD in KRaft: not checked, not recorded
    assert _register(old, registration(1, log_dirs=dirs)).error_code == 0
    assert old.last_records[0].message.log_dirs == ()


def test_a_directory_belongs_to_one_broker():
    h = Harness(18)
    h.register(1, log_dirs=[uid(1), uid(2)])
    response = _register(h, registration(2, log_dirs=[uid(3), uid(2)]))
    assert response.error_code == ErrorCode.INVALID_REGISTRATION
    assert h.register(1, log_dirs=[uid(2), uid(1)]).error_code == 0  # its own, again


def test_zk_brokers_are_not_registered():
    h = Harness(18)
    response = _register(h, registration(1, migrating=True))
    assert response.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED


# ---------------------------------------------------------------- controller registration


def test_controller_registration_writes_a_register_controller_record():
    h = Harness(18)
    request = controller_registration(CONTROLLER_ID, port=39081)
    response = h.run(cluster.register_controller(h.ctx(), request))
    assert response.error_code == ErrorCode.NONE
    (rec,) = h.last_records
    assert rec.version == 0 and isinstance(rec.message, M.RegisterControllerRecord)
    controller = h.image.cluster.controller(CONTROLLER_ID)
    assert controller.endpoints["CONTROLLER"].port == 39081
    assert controller.supported_features["metadata.version"] == VersionRange(1, V.LATEST)


@pytest.mark.parametrize("mv", [4, 8, 14])
def test_controller_registration_needs_3_7_iv0(mv):
    h = Harness(mv)
    response = h.run(cluster.register_controller(h.ctx(), controller_registration()))
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert h.last_records == []


# ---------------------------------------------------------------- unregistration


def test_unregistering_an_unknown_broker_is_broker_id_not_registered():
    h = Harness(18)
    response = h.run(cluster.unregister_broker(h.ctx(), M.UnregisterBrokerRequest(broker_id=4)))
    assert response.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED
    assert h.last_records == []


def test_unregistering_moves_partitions_off_then_removes_the_broker():
    h = Harness(18)
    epoch = h.start_broker(1)
    h.start_broker(2)
    h.add_topic("t", [[1, 2], [2, 1]])
    response = h.run(cluster.unregister_broker(h.ctx(), M.UnregisterBrokerRequest(broker_id=1)))
    assert response.error_code == ErrorCode.NONE
    assert types(h.last_records) == ["PartitionChangeRecord", "PartitionChangeRecord",
                                     "UnregisterBrokerRecord"]
    assert h.last_records[-1].message == M.UnregisterBrokerRecord(broker_id=1, broker_epoch=epoch)
    assert h.image.cluster.broker(1) is None
    for p in (0, 1):
        part = h.image.partition("t", p)
        assert part.leader == 2 and 1 not in part.isr
    assert h.leases.peek(1) is None
    # the id is free at once: a new incarnation registers without waiting
    assert h.register(1, uid(8)).error_code == 0


# ---------------------------------------------------------------- contract


def test_commands_need_an_active_controller():
    h = Harness(18, activate=False)
    with pytest.raises(cluster.ControllerNotActiveError):
        cluster.register_broker(h.ctx(), registration(1))
    cluster.on_become_active(h.ctx())
    assert h.register(1).error_code == 0
    cluster.on_resign(h.extra)
    with pytest.raises(cluster.ControllerNotActiveError):
        cluster.process_broker_heartbeat(h.ctx(), M.BrokerHeartbeatRequest(broker_id=1))


def test_commands_never_change_the_image_they_are_given():
    h = Harness(18)
    ctx: ControllerContext = h.ctx()
    before = ctx.image
    result = cluster.register_broker(ctx, registration(1))
    assert ctx.image is before and before.cluster.broker(1) is None
    assert result.records and result.atomic
    assert CLUSTER_ID == ctx.cluster_id


# ---------------------------------------------------------------- wire mode


def test_every_response_crosses_the_wire_at_every_version():
    """Responses go through Kafka's codec in wire mode: each must encode and decode intact."""
    h = Harness(18)
    responses = [
        h.register(1),
        _register(h, registration(2, cluster_id="other")),
        h.heartbeat(1),
        h.run(cluster.process_broker_heartbeat(h.ctx(), M.BrokerHeartbeatRequest(broker_id=9))),
        h.run(cluster.unregister_broker(h.ctx(), M.UnregisterBrokerRequest(broker_id=9))),
        h.run(cluster.unregister_broker(h.ctx(), M.UnregisterBrokerRequest(broker_id=1))),
        h.run(cluster.register_controller(h.ctx(), controller_registration())),
        h.run(cluster.register_controller(Harness(8).ctx(), controller_registration())),
    ]
    for response in responses:
        versions = type(response)._spec.versions
        for v in range(versions.lo, versions.hi + 1):
            assert type(response).decode(response.encode(v), v) == response
