"""Kafka 4.2.1 ``ClusterControlManagerTest``'s sessions and re-registrations, ported: which
incarnation may take a broker id while another holds it (``registerBroker``'s
``hasValidSession`` check, no bypass), the contact times activation gives, and the epochs of
re-registrations, through the kit's ``controller.cluster`` over an image holding exactly the
records Kafka's test replays.

Kafka's ``MockTime(0, 20, 1000)`` starts its nanosecond clock at 1000; the kit's clock counts
milliseconds, so the activation instant is 1000 ms here (the contact time it gives is that
instant either way). ``newBrokerEpoch`` is the offset the registration is written at: the
seam's next offset.
"""

from __future__ import annotations

import pytest
from controller_seam import MV, Seam, level

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller import cluster
from kraft_testkit.controller.result import record
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

CLUSTER = "pjvUwj3ZTEeSVQmUiH3IJw"
LATEST = V.LATEST_PRODUCTION


def uuid(text: str) -> Uuid:
    return Uuid.parse(text)


def register_record(broker_id: int, epoch: int, log_dir: str, *, fenced: bool = True,
                    in_controlled_shutdown: bool = False) -> object:
    return record(M.RegisterBrokerRecord(
        broker_id=broker_id, broker_epoch=epoch, incarnation_id=Uuid(bytes(16)),
        log_dirs=(uuid(log_dir),), fenced=fenced,
        in_controlled_shutdown=in_controlled_shutdown), V.register_broker_record_version(LATEST))


def request(broker_id: int, incarnation: str, log_dir: str, *, max_mv: int = LATEST,
            previous_broker_epoch: int = -1) -> M.BrokerRegistrationRequest:
    cls = M.BrokerRegistrationRequest
    return cls(broker_id=broker_id, cluster_id=CLUSTER, incarnation_id=uuid(incarnation),
               rack=None, listeners=(), log_dirs=(uuid(log_dir),),
               previous_broker_epoch=previous_broker_epoch,
               features=(cls.Feature(name=MV, min_supported_version=V.MINIMUM_VERSION_4X,
                                     max_supported_version=max_mv),))


def seam_with(*records, session_ms: int = 1000, now_ms: int = 1000, mv: int = LATEST) -> Seam:
    config = NodeConfig.from_kafka({"broker.session.timeout.ms": session_ms,
                                    "broker.heartbeat.interval.ms": session_ms // 4})
    return Seam(level(MV, mv), *records, cluster_id=CLUSTER, config=config, now_ms=now_ms)


def register(seam: Seam, req, epoch: int | None = None) -> M.BrokerRegistrationResponse:
    """registerBroker(request, newBrokerEpoch = ``epoch``): the records replayed on success."""
    if epoch is not None:
        seam.next_offset = epoch
    return seam.run(cluster.register_broker(seam.ctx(), req))


@pytest.mark.kafka("ClusterControlManagerTest#testBrokerContactTimesAreUpdatedOnClusterControlActivation")
def test_broker_contact_times_are_updated_on_cluster_control_activation():
    seam = seam_with(register_record(0, 100, "Mj3CW3OSRi29cFeNJlXuAQ"),
                     register_record(1, 123, "TyNK6XSSQJaJc2q9uflNHg", fenced=False))
    seam.activate()
    manager = cluster.heartbeat_manager(seam.ctx())
    assert manager.contact_ms(0, 100) is None        # fenced: no contact time
    assert manager.contact_ms(1, 123) == 1000        # unfenced: the activation instant
    assert manager.contact_ms(1, 124) is None
    assert manager.contact_ms(2, 100) is None


@pytest.mark.kafka("ClusterControlManagerTest#testDuplicateBrokerRegistrationWithActiveOldBroker")
def test_duplicate_broker_registration_with_active_old_broker():
    seam = seam_with(register_record(0, 100, "Mj3CW3OSRi29cFeNJlXuAQ", fenced=False))
    seam.activate()
    assert cluster.heartbeat_manager(seam.ctx()).contact_ms(0, 100) == 1000
    newcomer = request(0, "0H4fUu1xQEKXFYwB1aBjhg", "TyNK6XSSQJaJc2q9uflNHg")
    seam.now_ms += 1000 // 2          # while the old broker's session is valid: refused
    assert register(seam, newcomer, 101).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    assert seam.last_records == []
    seam.now_ms += 1000               # expired: the new registration succeeds
    response = register(seam, newcomer, 101)
    assert response.error_code == ErrorCode.NONE and response.broker_epoch == 101


@pytest.mark.kafka("ClusterControlManagerTest#testDuplicateBrokerRegistrationWithInactiveBroker")
def test_duplicate_broker_registration_with_inactive_broker():
    """Broker 0 is fenced (no contact time after activation): another incarnation registers
    at once. Broker 1 is unfenced in controlled shutdown: its session holds the id."""
    seam = seam_with(register_record(0, 100, "Mj3CW3OSRi29cFeNJlXuAQ"),
                     register_record(1, 200, "TyNK6XSSQJaJc2q9uflNHg", fenced=False,
                                     in_controlled_shutdown=True))
    seam.activate()
    manager = cluster.heartbeat_manager(seam.ctx())
    manager.session(seam.image.cluster.broker(1)).controlled_shutdown_offset = 20002
    assert manager.contact_ms(0, 100) is None
    assert manager.contact_ms(1, 200) == 1000
    seam.now_ms += 1000 // 2
    response = register(seam, request(0, "0H4fUu1xQEKXFYwB1aBjhg", "yJGxmjfbQZSVFAlNM3uXZg"),
                        101)
    assert response.error_code == ErrorCode.NONE
    response = register(seam, request(1, "vZKYST0pSA2HO5x_6hoO2Q", "b66ybsWIQoygs01vdjH07A"),
                        201)
    assert response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION


@pytest.mark.kafka("ClusterControlManagerTest#testReRegistrationAndBrokerEpoch")
@pytest.mark.parametrize("new_incarnation_id", [False, True])
def test_re_registration_and_broker_epoch(new_incarnation_id):
    """A registration writes no contact time (only a heartbeat does), so a second incarnation
    registers at once over a first one that never heartbeat; the same incarnation amends and
    keeps its epoch (finalized metadata.version: MetadataVersion.MINIMUM_VERSION)."""
    seam = seam_with(mv=V.MINIMUM_VERSION_4X)
    seam.activate()
    first = request(1, "mISEfEFwQIuaD1gKCc5tzQ", "Vv1gzkM2QpuE-PPrIc6XEw",
                    max_mv=V.MINIMUM_VERSION_4X)
    assert register(seam, first, 100).error_code == ErrorCode.NONE
    second = request(1, "07OOcU7MQFeSmGAFPP2Zww" if new_incarnation_id
                     else "mISEfEFwQIuaD1gKCc5tzQ", "Vv1gzkM2QpuE-PPrIc6XEw",
                     max_mv=V.MINIMUM_VERSION_4X)
    assert register(seam, second, 111).error_code == ErrorCode.NONE
    broker = seam.image.cluster.broker(1)
    if new_incarnation_id:
        assert (broker.incarnation_id, broker.epoch) == (uuid("07OOcU7MQFeSmGAFPP2Zww"), 111)
    else:
        assert (broker.incarnation_id, broker.epoch) == (uuid("mISEfEFwQIuaD1gKCc5tzQ"), 100)


@pytest.mark.kafka("ClusterControlManagerTest#testUnregister")
def test_unregister():
    """A replayed registration (fenced by default, epoch 100) and its UnregisterBrokerRecord:
    the broker is gone from the registrations."""
    seam = Seam(level(MV, LATEST), cluster_id=CLUSTER)
    seam.activate()
    seam.replay([record(M.RegisterBrokerRecord(
        broker_id=1, broker_epoch=100, incarnation_id=uuid("fPZv1VBsRFmnlRvmGcOW9w"),
        rack="arack", end_points=(M.RegisterBrokerRecord.BrokerEndpoint(
            name="PLAINTEXT", host="example.com", port=9092, security_protocol=0),)), 0)])
    broker = seam.image.cluster.broker(1)
    assert (broker.id, broker.epoch, broker.rack, broker.fenced,
            broker.in_controlled_shutdown) == (1, 100, "arack", True, False)
    assert broker.incarnation_id == uuid("fPZv1VBsRFmnlRvmGcOW9w")
    seam.replay([record(M.UnregisterBrokerRecord(broker_id=1, broker_epoch=100), 0)])
    assert seam.image.cluster.broker(1) is None
