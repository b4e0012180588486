"""Kafka 4.2.1 ``BrokerHeartbeatTrackerTest`` and ``BrokerHeartbeatManagerTest``, ported: the
contact times per (id, epoch) (``kraft_testkit.controller.contact_times``) and the heartbeat
state of the brokers (``controller.heartbeats``).

Kafka's tests build the tracker on a ``MockTime`` whose nanosecond clock starts at 0 with a
10 ms session (``10_000_000`` ns); the kit counts milliseconds, so the same scenarios run with a
10 ms session and ``sleep(n)`` advancing n ms. ``isExpired`` takes any unit: its own tests pass
nanoseconds and a nanosecond timeout, as Kafka's do. Kafka's manager keeps each broker's fenced
flag itself (``register``/``touch``); the kit reads it from the image, so the state tests
replay the registration records that give each broker the flag Kafka's test touches in.
"""

from __future__ import annotations

import pytest
from controller_seam import MV, Seam, level

from kraft_testkit.controller.contact_times import BrokerHeartbeatTracker, is_expired
from kraft_testkit.controller.heartbeats import BrokerControlState, BrokerHeartbeatManager
from kraft_testkit.controller.result import record
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid

SESSION_MS = 10  # Kafka's tests: 10_000_000 ns
TEST_BROKERS = {(0, 0), (1, 100), (2, 200)}
FENCED, UNFENCED = BrokerControlState.FENCED, BrokerControlState.UNFENCED
CONTROLLED_SHUTDOWN, SHUTDOWN_NOW = (BrokerControlState.CONTROLLED_SHUTDOWN,
                                     BrokerControlState.SHUTDOWN_NOW)


def tracker_with(keys, at: int = 0) -> BrokerHeartbeatTracker:
    tracker = BrokerHeartbeatTracker(SESSION_MS)
    for broker_id, epoch in sorted(keys):
        tracker.update(broker_id, epoch, at)
    return tracker


# ------------------------------------------------------------------ BrokerHeartbeatTrackerTest


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testUpdateContactTime")
def test_update_contact_time():
    tracker = BrokerHeartbeatTracker(SESSION_MS)
    assert tracker.contact_time(1, 100) is None
    tracker.update(1, 100, 0)
    assert tracker.contact_time(1, 100) == 0


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testMaybeRemoveExpiredWithEmptyTracker")
def test_maybe_remove_expired_with_empty_tracker():
    assert BrokerHeartbeatTracker(SESSION_MS).maybe_remove_expired(0) is None


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testMaybeRemoveExpiredWithAllUpToDate")
def test_maybe_remove_expired_with_all_up_to_date():
    assert tracker_with(TEST_BROKERS).maybe_remove_expired(0) is None


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testMaybeRemoveExpiredWithAllExpired")
def test_maybe_remove_expired_with_all_expired():
    tracker = tracker_with(TEST_BROKERS)
    now = 11  # time.sleep(11)
    expired = set()
    while (key := tracker.maybe_remove_expired(now)) is not None:
        expired.add(key)
    assert expired == TEST_BROKERS
    assert len(tracker) == 0


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testHasValidSessionIsTrueForKnownBroker")
def test_has_valid_session_is_true_for_known_broker():
    assert tracker_with(TEST_BROKERS).has_valid_session(2, 200, 0)


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testHasValidSessionIsFalseForUnknownBroker")
def test_has_valid_session_is_false_for_unknown_broker():
    assert not tracker_with(TEST_BROKERS).has_valid_session(3, 300, 0)


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testHasValidSessionIsFalseForUnknownBrokerEpoch")
def test_has_valid_session_is_false_for_unknown_broker_epoch():
    assert not tracker_with(TEST_BROKERS).has_valid_session(2, 100, 0)


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testIsExpiredIsFalseForTheCurrentTime")
def test_is_expired_is_false_for_the_current_time():
    assert not is_expired(456, 456, 10_000_000)


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testIsExpiredIsFalseForTenNanosecondsAfter")
def test_is_expired_is_false_for_ten_nanoseconds_after():
    assert not is_expired(456, 466, 10_000_000)


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testIsExpiredIsTrueAfterExpirationTime")
def test_is_expired_is_true_after_expiration_time():
    assert is_expired(456, 456 + 10_000_001, 10_000_000)
    assert not is_expired(456, 456 + 10_000_000, 10_000_000)   # the bound itself: still valid


@pytest.mark.kafka("BrokerHeartbeatTrackerTest#testIsExpiredIsFalseForPreviousTime")
def test_is_expired_is_false_for_previous_time():
    assert not is_expired(456, 0, 10_000_000)


# ------------------------------------------------------------------ BrokerHeartbeatManagerTest


def _registered(*brokers: tuple[int, int, bool]) -> Seam:
    """A seam whose image holds ``(id, epoch, fenced)`` registrations (4.x metadata.version)."""
    mv = V.MINIMUM_VERSION_4X
    recs = [level(MV, mv)]
    for broker_id, epoch, fenced in brokers:
        recs.append(record(M.RegisterBrokerRecord(
            broker_id=broker_id, broker_epoch=epoch,
            incarnation_id=Uuid(bytes(15) + bytes([broker_id + 1])), fenced=fenced), V.register_broker_record_version(mv)))
    return Seam(*recs)


@pytest.mark.kafka("BrokerHeartbeatManagerTest#testHasValidSession")
def test_has_valid_session():
    manager = BrokerHeartbeatManager(SESSION_MS, 0)
    assert not manager.tracker.has_valid_session(0, 100, 0)
    manager.track(0, 100, 0)
    now = 5  # time.sleep(5)
    manager.track(1, 100, now)
    manager.track(2, 200, now)
    assert manager.tracker.has_valid_session(0, 100, now)
    assert not manager.tracker.has_valid_session(0, 200, now)
    assert manager.tracker.has_valid_session(1, 100, now)
    assert manager.tracker.has_valid_session(2, 200, now)
    assert not manager.tracker.has_valid_session(3, 300, now)


@pytest.mark.kafka("BrokerHeartbeatManagerTest#testControlledShutdownOffsetIsOnlyUpdatedOnce")
def test_controlled_shutdown_offset_is_only_updated_once():
    seam = _registered((2, 12, False), (3, 13, False))
    manager = BrokerHeartbeatManager(SESSION_MS, 0, seam.image)
    b2, b3 = seam.image.cluster.broker(2), seam.image.cluster.broker(3)
    assert not manager.session(b2).shutting_down
    manager.record_heartbeat(b2, 98, CONTROLLED_SHUTDOWN, batch_end_offset=98)
    assert manager.peek(2).controlled_shutdown_offset == 98
    manager.record_heartbeat(b2, 98, CONTROLLED_SHUTDOWN, batch_end_offset=99)
    assert manager.peek(2).controlled_shutdown_offset == 98
    assert not manager.session(b3).shutting_down
    manager.record_heartbeat(b3, 100, CONTROLLED_SHUTDOWN, batch_end_offset=101)
    assert manager.peek(3).controlled_shutdown_offset == 101
    manager.record_heartbeat(b3, 100, CONTROLLED_SHUTDOWN, batch_end_offset=102)
    assert manager.peek(3).controlled_shutdown_offset == 101


@pytest.mark.kafka("BrokerHeartbeatManagerTest#testCalculateNextBrokerState")
def test_calculate_next_broker_state():
    """Brokers 0 and 4 fenced, 1, 2, 3, 5 unfenced at offsets 98, 100, 100, 99; 5 in
    controlled shutdown from offset 99. Then broker 1 is fenced, and the lowest active offset
    (98, broker 1's) no longer holds broker 5 back."""
    seam = _registered((0, 10, True), (1, 11, False), (2, 12, False), (3, 13, False),
                       (4, 14, True), (5, 15, False))
    manager = BrokerHeartbeatManager(SESSION_MS, 0, seam.image)
    brokers = seam.image.cluster.brokers
    for b, offset in ((0, 100), (1, 98), (2, 100), (3, 100), (4, 100), (5, 99)):
        manager.session(brokers[b]).metadata_offset = offset
    manager.record_heartbeat(brokers[5], 99, CONTROLLED_SHUTDOWN, batch_end_offset=99)
    assert manager.lowest_active_offset(seam.image) == 98

    def nxt(b, *, fence=False, shut=False, offset=-1, leads=False):
        manager.session(brokers[b]).registration_offset = 100   # registerBrokerRecordOffset
        return manager.next_state(seam.image, brokers[b], want_fence=fence,
                                  want_shut_down=shut, current_metadata_offset=offset,
                                  has_leaderships=lambda: leads)

    assert nxt(0, shut=True) == (FENCED, SHUTDOWN_NOW)
    assert nxt(0, offset=100) == (FENCED, UNFENCED)
    assert nxt(0, offset=50) == (FENCED, FENCED)
    assert nxt(0, fence=True) == (FENCED, FENCED)

    assert nxt(1, shut=True, leads=True) == (UNFENCED, CONTROLLED_SHUTDOWN)
    assert nxt(1, shut=True) == (UNFENCED, SHUTDOWN_NOW)
    assert nxt(1) == (UNFENCED, UNFENCED)

    assert nxt(5, shut=True, leads=True) == (CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN)
    assert nxt(5, shut=True) == (CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN)
    # manager.fence(1): broker 1 fenced (the kit reads it from the image)
    seam.replay([record(M.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=11,
                                                          fenced=1), 0)])
    brokers = seam.image.cluster.brokers
    assert nxt(5, shut=True) == (CONTROLLED_SHUTDOWN, SHUTDOWN_NOW)
    assert nxt(5, shut=True, leads=True) == (CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN)
