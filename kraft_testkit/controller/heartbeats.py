"""Broker leases: the active controller's soft state about each broker (Kafka 4.2.1's
``BrokerHeartbeatManager``, its ``BrokerHeartbeatTracker`` in :mod:`.contact_times`, and the
``maybeFenceStaleBroker`` periodic task's schedule).

None of this is in the metadata log: it is what the active controller learns from heartbeats
(contact times, the metadata offset a broker has replayed, its controlled shutdown) and it is
dropped when the controller resigns. A new active controller gives every registered *unfenced*
broker a contact time at the moment it became active (``ClusterControlManager#activate``), so a
failover never fences a healthy broker at once; a fenced one gets none, so a restarted process
of a dead fenced broker registers at once.

Which brokers are fenced is *hard* state: it is read from the image (which includes the active
controller's own uncommitted records), never copied here, so the two cannot drift apart.

Contact is tracked per (broker id, broker epoch), fenced or not, so a live fenced broker holds its
id against a second incarnation, and a cleanly stopped one holds it until its session expires
(``ClusterControlManager#registerBroker`` has no bypass). Sessions are sampled, not timed:
``QuorumController#maybeFenceStaleBrokerPeriodNs`` runs the check every session/8 (1125 ms by
default) from activation, and each check takes out at most one expired entry
(``ReplicationControlManager#maybeFenceOneStaleBroker``), 10 ms later again when it found one
(``PeriodicTask``'s immediate period). A broker is fenced 9-10.125 s after its last heartbeat.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..metadata import BrokerRegistration, MetadataImage
from .contact_times import BrokerHeartbeatTracker

NS_PER_MS = 1_000_000
#: ``PeriodicTask#DEFAULT_IMMEDIATE_PERIOD_NS``: the next run after one that did something
IMMEDIATE_PERIOD_NS = 10 * NS_PER_MS


def fence_check_period_ns(session_timeout_ms: int) -> int:
    """``QuorumController#maybeFenceStaleBrokerPeriodNs``: max(1 ms, session timeout / 8)."""
    return max(NS_PER_MS, session_timeout_ms * NS_PER_MS // 8)


def _ceil_ms(ns: int) -> int:
    return -(-ns // NS_PER_MS)


class BrokerControlState(enum.Enum):
    """Where a heartbeat leaves a broker (Kafka's ``BrokerControlState``)."""

    FENCED = (True, False, False)
    UNFENCED = (False, False, False)
    CONTROLLED_SHUTDOWN = (False, True, False)
    SHUTDOWN_NOW = (True, False, True)

    @property
    def fenced(self) -> bool:
        return self.value[0]

    @property
    def in_controlled_shutdown(self) -> bool:
        return self.value[1]

    @property
    def should_shut_down(self) -> bool:
        return self.value[2]


@dataclass(slots=True)
class BrokerSession:
    """Heartbeat state of one broker incarnation (Kafka's ``BrokerHeartbeatState``); its
    contact time is the tracker's.

    ``registration_offset`` is where its latest RegisterBrokerRecord sits: the broker may be
    unfenced once it has replayed that far (for a fresh incarnation this is its epoch; an
    amended registration of the same incarnation is written later). ``controlled_shutdown_offset``
    is the end of the batch that started its controlled shutdown, -1 when not shutting down.
    """

    broker_id: int
    epoch: int
    registration_offset: int
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1

    @property
    def shutting_down(self) -> bool:
        return self.controlled_shutdown_offset >= 0


def lease_end(last_contact_ms: int, session_timeout_ms: int) -> int:
    """The first instant a session renewed at ``last_contact_ms`` has expired. Kafka expires a
    session once ``contact + timeout < now``: at exactly ``contact + timeout`` it is still
    valid (the idle warp's model computes leases with this too)."""
    return last_contact_ms + session_timeout_ms + 1


class BrokerHeartbeatManager:
    """Leases and heartbeat state of the brokers, for one term as active controller.

    ``anchor_ns`` is when the fence check runs next *if* every check until then finds nothing:
    activation + period, or the run that last found something + 10 ms; the checks in between
    fall every period after it (:meth:`next_check_ms`). It changes only when a check finds an
    expired entry, so a check that finds nothing needs no event of its own.
    """

    def __init__(self, session_timeout_ms: int, activated_at_ms: int,
                 image: MetadataImage | None = None) -> None:
        if session_timeout_ms <= 0:
            raise ValueError(f"session timeout must be positive, got {session_timeout_ms}")
        self.session_timeout_ms = session_timeout_ms
        self.activated_at_ms = activated_at_ms
        self.tracker = BrokerHeartbeatTracker(session_timeout_ms)
        self.period_ns = fence_check_period_ns(session_timeout_ms)
        self.anchor_ns = activated_at_ms * NS_PER_MS + self.period_ns
        self._sessions: dict[int, BrokerSession] = {}
        if image is not None:  # ClusterControlManager#activate
            for broker_id in sorted(image.cluster.brokers):
                registration = image.cluster.brokers[broker_id]
                self.session(registration)
                if not registration.fenced:
                    self.tracker.update(broker_id, registration.epoch, activated_at_ms)

    # ------------------------------------------------------------- sessions

    def session(self, registration: BrokerRegistration) -> BrokerSession:
        """The heartbeat state of this registration (made on first use: Kafka registers every
        broker in the manager at activation and on every replayed registration)."""
        s = self._sessions.get(registration.id)
        if s is None or s.epoch != registration.epoch:
            s = BrokerSession(registration.id, registration.epoch,
                              registration_offset=registration.epoch)
            self._sessions[registration.id] = s
        return s

    def peek(self, broker_id: int) -> BrokerSession | None:
        """The stored heartbeat state of a broker, if any (for inspection and tests)."""
        return self._sessions.get(broker_id)

    def register(self, broker_id: int, epoch: int, registration_offset: int) -> BrokerSession:
        """A (re-)registration: fresh heartbeat state; any previous state of the id is gone
        (Kafka removes and re-registers the broker). No contact time: the tracker learns of
        the new incarnation from its first heartbeat."""
        s = BrokerSession(broker_id, epoch, registration_offset=registration_offset)
        self._sessions[broker_id] = s
        return s

    def remove(self, broker_id: int) -> None:
        """``BrokerHeartbeatManager#remove``: the heartbeat state only; the tracker keeps the
        contact time until it expires."""
        self._sessions.pop(broker_id, None)

    def track(self, broker_id: int, epoch: int, now_ms: int) -> None:
        """A heartbeat reached the active controller (``trackBrokerHeartbeat``: any id and
        epoch, before they are checked)."""
        self.tracker.update(broker_id, epoch, now_ms)

    def contact_ms(self, broker_id: int, epoch: int) -> int | None:
        return self.tracker.contact_time(broker_id, epoch)

    # ------------------------------------------------------------- leases

    def has_valid_session(self, registration: BrokerRegistration, now_ms: int) -> bool:
        """``hasValidSession`` of the registered incarnation: in contact within the timeout."""
        return self.tracker.has_valid_session(registration.id, registration.epoch, now_ms)

    def _next_check_ns(self, at_ms: int) -> int:
        anchor, period = self.anchor_ns, self.period_ns
        floor_ns = (at_ms - 1) * NS_PER_MS  # ceil(x / 1 ms) >= at_ms  <=>  x > floor_ns
        k = 0 if anchor > floor_ns else (floor_ns - anchor) // period + 1
        return anchor + k * period

    def next_check_ms(self, at_ms: int) -> int:
        """The first fence check at or after ``at_ms`` (the schedule's instants, rounded up
        to the millisecond: with a session not a multiple of 8 ms Kafka's fall between)."""
        return _ceil_ms(self._next_check_ns(at_ms))

    def check_due(self, now_ms: int) -> bool:
        """Whether a fence check runs at ``now_ms``."""
        return self.next_check_ms(now_ms) == now_ms

    def next_expiry_ms(self, image: MetadataImage | None = None) -> int | None:
        """The first check that finds an expired entry as things stand (None: no entries).
        Asked after every event of the active controller: one pass over the entries."""
        oldest = self.tracker.oldest_ms()
        if oldest is None:
            return None
        return self.next_check_ms(lease_end(oldest, self.session_timeout_ms))

    def remove_expired(self, now_ms: int) -> tuple[int, int] | None:
        """The check at ``now_ms``: the first expired (id, epoch) taken out (None: nothing
        expired); when it found one the next check is 10 ms later."""
        key = self.tracker.maybe_remove_expired(now_ms)
        if key is not None:
            run_ns = self._next_check_ns(now_ms)
            if _ceil_ms(run_ns) != now_ms:  # run off the schedule (a unit test's call)
                run_ns = now_ms * NS_PER_MS
            self.anchor_ns = run_ns + IMMEDIATE_PERIOD_NS
        return key

    def _unfenced_sessions(self, image: MetadataImage) -> Iterator[BrokerSession]:
        for broker_id in image.cluster.unfenced_broker_ids():
            yield self.session(image.cluster.brokers[broker_id])

    # ------------------------------------------------------------- controlled shutdown

    def lowest_active_offset(self, image: MetadataImage) -> int | None:
        """The lowest metadata offset reported by an active broker (unfenced, not shutting
        down); None when there is none. A broker in controlled shutdown may go once every
        active broker has replayed past the records that moved its leaders away."""
        offsets = [s.metadata_offset for s in self._unfenced_sessions(image)
                   if not s.shutting_down]
        return min(offsets) if offsets else None

    def current_state(self, registration: BrokerRegistration) -> BrokerControlState:
        if registration.fenced:
            return BrokerControlState.FENCED
        if self.session(registration).shutting_down:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.UNFENCED

    def next_state(self, image: MetadataImage, registration: BrokerRegistration, *,
                   want_fence: bool, want_shut_down: bool, current_metadata_offset: int,
                   has_leaderships: Callable[[], bool]) -> tuple[BrokerControlState,
                                                                 BrokerControlState]:
        """(current, next) state for a heartbeat, by Kafka's ``calculateNextBrokerState``."""
        current = self.current_state(registration)
        S = BrokerControlState
        if current is S.FENCED:
            if want_shut_down:
                return current, S.SHUTDOWN_NOW
            if not want_fence and \
                    current_metadata_offset >= self.session(registration).registration_offset:
                return current, S.UNFENCED
            return current, S.FENCED
        if current is S.UNFENCED:
            if want_fence:
                return current, S.SHUTDOWN_NOW if want_shut_down else S.FENCED
            if want_shut_down:
                return current, S.CONTROLLED_SHUTDOWN if has_leaderships() else S.SHUTDOWN_NOW
            return current, S.UNFENCED
        # CONTROLLED_SHUTDOWN: done once it leads nothing and every active broker has
        # replayed the records of its shutdown.
        if has_leaderships():
            return current, S.CONTROLLED_SHUTDOWN
        lowest = self.lowest_active_offset(image)
        shutdown_offset = self.session(registration).controlled_shutdown_offset
        if lowest is None or shutdown_offset <= lowest:
            return current, S.SHUTDOWN_NOW
        return current, S.CONTROLLED_SHUTDOWN

    def record_heartbeat(self, registration: BrokerRegistration,
                         metadata_offset: int, next_state: BrokerControlState,
                         batch_end_offset: int) -> None:
        """Keep what a heartbeat taught: replayed offset, controlled shutdown (its contact
        time is already tracked: :meth:`track`).

        ``batch_end_offset`` is the offset of the last record the heartbeat's result writes (or
        the last offset written before it, when it writes none): a broker entering controlled
        shutdown may finish once every active broker has replayed that far.
        """
        s = self.session(registration)
        s.metadata_offset = metadata_offset
        if next_state.fenced:
            s.controlled_shutdown_offset = -1  # a fenced broker leaves controlled shutdown
        elif next_state is BrokerControlState.CONTROLLED_SHUTDOWN and not s.shutting_down:
            s.controlled_shutdown_offset = batch_end_offset

    def on_fenced(self, broker_id: int) -> None:
        """The lease check fenced this broker: it leaves controlled shutdown, and its next
        heartbeat asking to shut down is answered at once."""
        s = self._sessions.get(broker_id)
        if s is not None:
            s.controlled_shutdown_offset = -1
