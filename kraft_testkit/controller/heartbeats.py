"""Broker leases: the active controller's soft state about each broker (Kafka's
``BrokerHeartbeatManager`` and ``BrokerHeartbeatTracker``).

None of this is in the metadata log: it is what the active controller learns from heartbeats
(last contact, the metadata offset a broker has replayed, its controlled shutdown) and it is
dropped when the controller resigns. A new active controller starts every registered broker's
lease at the moment it became active, so a failover never fences a healthy broker at once.

Which brokers are fenced is *hard* state: it is read from the image (which includes the active
controller's own uncommitted records), never copied here, so the two cannot drift apart.

A lease follows the seeds (KIP-631: "a registration or a heartbeat is contact, even if the broker
is fenced") and released Kafka's current ``BrokerHeartbeatTracker`` (Kafka 3.7 gave fenced
brokers no session at all): contact is tracked per (broker id, broker epoch) for fenced brokers
too, so a live fenced broker still holds its id against a second incarnation.
Only unfenced brokers can *expire* into fencing, one per check, oldest contact first.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..metadata import BrokerRegistration, MetadataImage


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
    """Soft state of one broker incarnation (one broker epoch).

    ``registration_offset`` is where its latest RegisterBrokerRecord sits: the broker may be
    unfenced once it has replayed that far (for a fresh incarnation this is its epoch; an
    amended registration of the same incarnation is written later). ``controlled_shutdown_offset``
    is the end of the batch that started its controlled shutdown, -1 when not shutting down.
    """

    broker_id: int
    epoch: int
    last_contact_ms: int
    registration_offset: int
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1

    @property
    def shutting_down(self) -> bool:
        return self.controlled_shutdown_offset >= 0



def lease_end(last_contact_ms: int, session_timeout_ms: int) -> int:
    """The first instant a lease renewed at ``last_contact_ms`` has expired. Kafka expires a
    session once ``contact + timeout < now``: at exactly ``contact + timeout`` it is still
    valid (the idle warp's model computes leases with this too)."""
    return last_contact_ms + session_timeout_ms + 1

class BrokerHeartbeatManager:
    """Leases and heartbeat state of the brokers, for one term as active controller."""

    def __init__(self, session_timeout_ms: int, activated_at_ms: int) -> None:
        if session_timeout_ms <= 0:
            raise ValueError(f"session timeout must be positive, got {session_timeout_ms}")
        self.session_timeout_ms = session_timeout_ms
        self.activated_at_ms = activated_at_ms
        self._sessions: dict[int, BrokerSession] = {}

    # ------------------------------------------------------------- sessions

    def session(self, registration: BrokerRegistration) -> BrokerSession:
        """The soft state of this registration. A broker first seen here was registered before
        this controller became active: an unfenced one gets a lease from activation (so a
        failover never fences a healthy broker at once); a fenced one gets none (as in Kafka
        3.7): it may be a dead incarnation, and its restarted process must be able to register
        again at once rather than wait out a lease nobody renews."""
        s = self._sessions.get(registration.id)
        if s is None or s.epoch != registration.epoch:
            start = self.activated_at_ms
            if registration.fenced:
                start -= self.session_timeout_ms + 1  # already expired
            s = BrokerSession(registration.id, registration.epoch, start,
                              registration_offset=registration.epoch)
            self._sessions[registration.id] = s
        return s

    def peek(self, broker_id: int) -> BrokerSession | None:
        """The stored soft state of a broker, if any (for inspection and tests)."""
        return self._sessions.get(broker_id)

    def register(self, broker_id: int, epoch: int, now_ms: int,
                 registration_offset: int) -> BrokerSession:
        """A (re-)registration: a fresh session; any previous soft state of the id is gone
        (Kafka removes and re-registers the broker when it replays a RegisterBrokerRecord)."""
        s = BrokerSession(broker_id, epoch, now_ms, registration_offset=registration_offset)
        self._sessions[broker_id] = s
        return s

    def remove(self, broker_id: int) -> None:
        self._sessions.pop(broker_id, None)

    def touch(self, registration: BrokerRegistration, now_ms: int) -> BrokerSession:
        """Contact from the broker: its lease restarts now."""
        s = self.session(registration)
        s.last_contact_ms = max(s.last_contact_ms, now_ms)
        return s

    # ------------------------------------------------------------- leases

    def lease_end_ms(self, session: BrokerSession) -> int:
        """The first instant the lease has expired (:func:`lease_end`)."""
        return lease_end(session.last_contact_ms, self.session_timeout_ms)

    def has_valid_session(self, registration: BrokerRegistration, now_ms: int) -> bool:
        """True while this incarnation has been in contact within the session timeout."""
        return now_ms < self.lease_end_ms(self.session(registration))

    def _unfenced_sessions(self, image: MetadataImage) -> Iterator[BrokerSession]:
        for broker_id in image.cluster.unfenced_broker_ids():
            yield self.session(image.cluster.brokers[broker_id])

    def next_expiry_ms(self, image: MetadataImage) -> int | None:
        """When the next unfenced broker's lease runs out (None: no unfenced broker).

        Asked after every event of the active controller, so it is one pass over the brokers:
        no sort (the minimum needs no order), no generator, ``session()`` only for a broker
        whose session is missing or of another incarnation."""
        sessions = self._sessions
        oldest = None
        for broker_id, registration in image.cluster.brokers.items():
            if registration.fenced:
                continue
            s = sessions.get(broker_id)
            if s is None or s.epoch != registration.epoch:
                s = self.session(registration)
            if oldest is None or s.last_contact_ms < oldest:
                oldest = s.last_contact_ms
        return None if oldest is None else lease_end(oldest, self.session_timeout_ms)

    def find_one_stale(self, image: MetadataImage, now_ms: int) -> BrokerRegistration | None:
        """The unfenced broker whose lease ran out longest ago (ties: lowest id), if any."""
        oldest: BrokerSession | None = None
        for s in self._unfenced_sessions(image):
            if oldest is None or s.last_contact_ms < oldest.last_contact_ms:
                oldest = s
        if oldest is None or now_ms < self.lease_end_ms(oldest):
            return None
        return image.cluster.brokers[oldest.broker_id]

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

    def record_heartbeat(self, registration: BrokerRegistration, now_ms: int,
                         metadata_offset: int, next_state: BrokerControlState,
                         batch_end_offset: int) -> None:
        """Keep what a heartbeat taught: contact, replayed offset, controlled shutdown.

        ``batch_end_offset`` is the offset of the last record the heartbeat's result writes (or
        the last offset written before it, when it writes none): a broker entering controlled
        shutdown may finish once every active broker has replayed that far.
        """
        s = self.touch(registration, now_ms)
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
