"""The broker's life with the active controller: registration, heartbeats, fencing, shutdown.

After Kafka's ``BrokerLifecycleManager`` (KIP-631), plus KIP-343's broker-side timeout:

* ``start`` moves NOT_RUNNING -> STARTING and sends a BrokerRegistrationRequest (a fresh
  incarnation id per process). Failures and timeouts (DUPLICATE_BROKER_REGISTRATION while an
  old incarnation's session lives, too) retry broker.heartbeat.interval.ms later, as Kafka
  4.2.1's ``scheduleNextCommunicationAfterFailure`` (no backoff, no jitter); without a
  successful registration within initial.broker.registration.timeout.ms the broker gives up:
  SHUTTING_DOWN.
* Registered, it heartbeats: right away, then every broker.heartbeat.interval.ms (10 ms while
  STARTING, as Kafka does to start quicker). ``WantFence`` stays true until the broker is ready to
  be unfenced (caught up and recovered). IsCaughtUp (once the broker holds some metadata) moves
  STARTING -> RECOVERY; IsFenced=false moves RECOVERY -> RUNNING.
* Controlled shutdown: PENDING_CONTROLLED_SHUTDOWN heartbeats with ``WantShutDown`` until the
  controller answers ShouldShutDown, then SHUTTING_DOWN (and NOT_RUNNING 1 ms later). Kafka
  caps the wait at 5 minutes; so do we.
* KIP-343, opt-in (``broker_self_fencing``; the seed document's proposal, not released Kafka): no
  successful heartbeat response for longer than broker.heartbeat.timeout.ms and the broker fences
  itself (``self_fenced``) until the controller unfences it again. By default, as released Kafka,
  a broker that cannot reach the controller keeps serving until the controller fences it and it
  learns so from the metadata log.

STALE_BROKER_EPOCH / BROKER_ID_NOT_REGISTERED on a heartbeat are retried an interval later, as
released Kafka's broker does (it never recovers: the process must restart). The kit's opt-in
``testkit.broker.reregister.on.stale.epoch=true`` makes the broker register again with the same
incarnation id instead (the controller treats that as an amendment).
A controller change re-sends the request in flight to the new controller, as Kafka's
controller channel does when it reconnects; a NOT_CONTROLLER answer sends it again at once to
the controller the broker knows of, as that channel does (``NodeToControllerRequestThread``).
Deviation, on purpose: a request supersedes the one in flight when the broker must speak at
once (Kafka sends both).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, NamedTuple

from kraft_testkit.config import NodeConfig
from kraft_testkit.metadata import Endpoint
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

from .channel import EventLog, Outbox
from .state import REPLICA_STATES, BrokerState

E = ErrorCode
_REG: Any = M.BrokerRegistrationRequest
_HB: Any = M.BrokerHeartbeatRequest
#: the controller's answer to a steady broker's heartbeat (``steady_answer``)
_STEADY_ANSWER: Any = M.BrokerHeartbeatResponse(error_code=ErrorCode.NONE, is_caught_up=True,
                                                is_fenced=False, should_shut_down=False)

STARTING_HEARTBEAT_MS = 10
"""Kafka heartbeats 10 ms after a STARTING answer, so a broker with nothing to recover starts fast."""
FIRST_SHUTDOWN_HEARTBEAT_MS = 50
"""...and 50 ms after the first answer to a controlled-shutdown heartbeat."""
SHUTDOWN_DURATION_MS = 1
"""SHUTTING_DOWN lasts this long before NOT_RUNNING: the work is instant, the state observable."""
CONTROLLED_SHUTDOWN_TIMEOUT_MS = 5 * 60 * 1000
"""How long Kafka's BrokerServer waits for the controller to approve a controlled shutdown."""
REREGISTER_ERRORS = frozenset({E.STALE_BROKER_EPOCH, E.BROKER_ID_NOT_REGISTERED})


#: the shutdown reason of a completed controlled shutdown (a clean shutdown)
APPROVED_SHUTDOWN = "the controller approved controlled shutdown"

class _InFlight(NamedTuple):
    """A registration or heartbeat on its way (``cid`` None: waiting for a known controller)."""

    kind: type
    body: Any
    cid: int | None
    dst: int | None
    deadline_ms: int
    retries: int = 0  # NOT_CONTROLLER answers it had (the controller channel re-sent it)


def _uuid_order(u: bytes) -> tuple[int, int]:
    """Kafka's Uuid.compareTo: the two halves as signed longs (registrations sort log dirs so)."""
    return (int.from_bytes(u[:8], "big", signed=True), int.from_bytes(u[8:], "big", signed=True))


class Lifecycle:
    """Registration, heartbeats and the broker state, as a pure state machine.

    The owner feeds it time (``tick``), controller changes, responses and the metadata offset,
    and reads what it queued on the shared :class:`Outbox` and :class:`EventLog`.
    """

    def __init__(self, broker_id: int, cluster_id: str, config: NodeConfig, rng: random.Random,
                 outbox: Outbox, events: EventLog, *, incarnation_id: Uuid,
                 listeners: Sequence[Endpoint],
                 rack: str | None, log_dirs: Sequence[Uuid],
                 features: dict[str, tuple[int, int]], previous_broker_epoch: int = -1,
                 request_timeout_ms: int | None = None,
                 controlled_shutdown_timeout_ms: int = CONTROLLED_SHUTDOWN_TIMEOUT_MS) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.config = config
        self._rng = rng
        self._out = outbox
        self._events = events
        self.incarnation_id = incarnation_id
        self.listeners = tuple(listeners)
        self.rack = rack
        self.log_dirs = tuple(sorted(log_dirs, key=_uuid_order))
        self.features = dict(features)
        self.previous_broker_epoch = previous_broker_epoch
        self.request_timeout_ms = (config.broker_session_timeout_ms // 2
                                   if request_timeout_ms is None else request_timeout_ms)
        self.controlled_shutdown_timeout_ms = controlled_shutdown_timeout_ms

        self.state = BrokerState.NOT_RUNNING
        self.broker_epoch = -1
        self.registered = False
        self.ready_to_unfence = False
        self.fenced = True
        """The controller's view, as the last successful heartbeat response told it."""
        self.self_fenced = False
        self.controller_id: int | None = None
        self.metadata_offset = -1
        """What heartbeats report as CurrentMetadataOffset; the owner keeps it current."""
        self.shutdown_reason: str | None = None

        self._started = False
        self._failed_attempts = 0
        self._inflight: _InFlight | None = None
        self._next_comm_ms: int | None = None
        self._registration_deadline_ms: int | None = None
        self._last_contact_ms: int | None = None
        self._got_shutdown_answer = False
        self._shutdown_deadline_ms: int | None = None
        self._stop_at_ms: int | None = None

    # ------------------------------------------------------------------ inputs

    def start(self, now_ms: int) -> None:
        if self._started:
            return
        self._started = True
        self._set_state(now_ms, BrokerState.STARTING,
                        f"incarnation {self.incarnation_id} of broker {self.broker_id} in cluster "
                        f"{self.cluster_id} is STARTING")
        self._registration_deadline_ms = now_ms + self.config.initial_broker_registration_timeout_ms
        self._communicate(now_ms)

    def on_controller_change(self, controller_id: int | None, now_ms: int) -> None:
        """The active controller (the Raft leader) is now ``controller_id`` (None: unknown)."""
        if controller_id == self.controller_id:
            return
        self.controller_id = controller_id
        f = self._inflight
        if controller_id is None or f is None or not self._active():
            return
        # Queued for a controller, or sent to one that is no more: (re)send to the new one.
        self._send(f.kind, f.body, now_ms)

    def on_response(self, cid: int | None, body: Any, now_ms: int) -> bool:
        """A registration or heartbeat response; False when it answers nothing in flight."""
        f = self._inflight
        if f is None or f.cid is None or type(body) is not _response_type(f.kind):
            return False
        if cid is not None and cid != f.cid:
            return False
        self._inflight = None
        if body.error_code == E.NOT_CONTROLLER:
            # Kafka's NodeToControllerRequestThread#handleResponse: the channel forgets that
            # controller and puts the request back first in its queue, then sends it at once to
            # the controller the broker knows of now (the Raft leader it follows; a change
            # re-sends it again: on_controller_change); the lifecycle manager never sees the
            # error, and the request keeps its deadline.
            if f.retries == 0:
                what = "registration" if f.kind is _REG else "heartbeat"
                self._events.add(now_ms, f"{what} answered NOT_CONTROLLER by controller "
                                 f"{f.dst}: sent again to the controller the broker knows of")
            self._send(f.kind, f.body, now_ms)
            if self._inflight is not None:
                self._inflight = self._inflight._replace(deadline_ms=f.deadline_ms,
                                                         retries=f.retries + 1)
            return True
        if f.kind is _REG:
            self._on_registration_response(body, now_ms)
        else:
            self._on_heartbeat_response(body, now_ms)
        return True

    def tick(self, now_ms: int) -> None:
        """Run whatever is due at ``now_ms``: timeouts, the next heartbeat, self-fencing."""
        if self.state is BrokerState.SHUTTING_DOWN:
            if self._stop_at_ms is not None and now_ms >= self._stop_at_ms:
                self._stop_at_ms = None
                self._set_state(now_ms, BrokerState.NOT_RUNNING, "stopped")
            return
        if not self._active():
            return
        if self._registration_deadline_ms is not None and now_ms >= self._registration_deadline_ms:
            self.shut_down(now_ms, "unable to register with the controller quorum within "
                           f"initial.broker.registration.timeout.ms "
                           f"({self.config.initial_broker_registration_timeout_ms} ms)")
            return
        if self._shutdown_deadline_ms is not None and now_ms >= self._shutdown_deadline_ms:
            self.shut_down(now_ms, "timed out waiting for the controller to approve "
                           "controlled shutdown")
            return
        f = self._inflight
        if f is not None and now_ms >= f.deadline_ms:
            self._inflight = None
            what = "registration" if f.kind is _REG else "heartbeat"
            where = "no known controller" if f.cid is None else f"controller {f.dst}"
            self._events.add(now_ms, f"{what} timed out ({where})")
            self._after_failure(now_ms)
        if self._next_comm_ms is not None and now_ms >= self._next_comm_ms:
            self._communicate(now_ms)
        deadline = self._self_fence_deadline() if self.config.broker_self_fencing else None
        if deadline is not None and now_ms >= deadline:
            self.self_fenced = True
            timeout = self.config.broker_heartbeat_timeout_ms
            self._events.add(now_ms, "self-fenced (KIP-343): no successful heartbeat for more "
                             f"than broker.heartbeat.timeout.ms ({timeout} ms); not serving "
                             "until the controller unfences it")

    def set_ready_to_unfence(self, now_ms: int) -> None:
        """Caught up and recovered: heartbeat with WantFence=false from now on."""
        if self.ready_to_unfence or not self._active():
            return
        self.ready_to_unfence = True
        self._communicate(now_ms)

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        """RUNNING -> PENDING_CONTROLLED_SHUTDOWN; in any other state, straight to shutdown."""
        if self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            self._events.add(now_ms, "already in PENDING_CONTROLLED_SHUTDOWN")
        elif self.state in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN):
            return
        elif self.state is BrokerState.RUNNING and self.config.controlled_shutdown_enable:
            self._set_state(now_ms, BrokerState.PENDING_CONTROLLED_SHUTDOWN,
                            "beginning controlled shutdown")
            self._got_shutdown_answer = False
            self._shutdown_deadline_ms = now_ms + self.controlled_shutdown_timeout_ms
            self._communicate(now_ms)
        elif not self.config.controlled_shutdown_enable:
            self.shut_down(now_ms, "controlled.shutdown.enable is false")
        else:
            self.shut_down(now_ms, f"skipping controlled shutdown in state {self.state}")

    def shut_down(self, now_ms: int, reason: str) -> None:
        """Stop talking to the controller: SHUTTING_DOWN now, NOT_RUNNING 1 ms later."""
        if not self._active():
            return
        self.shutdown_reason = reason
        self._inflight = None
        self._next_comm_ms = None
        self._registration_deadline_ms = None
        self._shutdown_deadline_ms = None
        self._stop_at_ms = now_ms + SHUTDOWN_DURATION_MS
        self._set_state(now_ms, BrokerState.SHUTTING_DOWN, f"shutting down: {reason}")

    # ------------------------------------------------------------------ queries

    def next_deadline(self) -> int | None:
        """The earliest time :meth:`tick` has something to do (None: nothing planned)."""
        if self.state is BrokerState.SHUTTING_DOWN:
            return self._stop_at_ms
        if not self._active():
            return None
        due = None  # the earliest of these (asked after every event of the broker)
        for t in (self._next_comm_ms, self._registration_deadline_ms, self._shutdown_deadline_ms,
                  self._self_fence_deadline() if self.config.broker_self_fencing else None,
                  None if self._inflight is None else self._inflight.deadline_ms):
            if t is not None and (due is None or t < due):
                due = t
        return due

    # ------------------------------------------------------------------ steady heartbeats

    def steady(self) -> bool:
        """RUNNING, registered and unfenced, with nothing in :meth:`next_deadline` but the
        heartbeats' own instants (no registration or shutdown deadline, no self-fencing to
        come): where :meth:`sent_steady_heartbeat` and :meth:`steady_answer` apply."""
        return self.state is BrokerState.RUNNING and self.registered and not self.fenced and \
            not self.self_fenced and self._registration_deadline_ms is None and \
            self._shutdown_deadline_ms is None and \
            (not self.config.broker_self_fencing or self._self_fence_deadline() is None)

    def sent_steady_heartbeat(self, now_ms: int, metadata_offset: int) -> None:
        """:meth:`tick` at a due heartbeat of a :meth:`steady` broker whose metadata offset was
        ``metadata_offset`` then, with the request's id counted but the request not queued:
        the idle warp holds such heartbeats and builds none of them
        (fastforward/held_events.py; tests/broker/test_broker_steady_heartbeats.py)."""
        self._next_comm_ms = None
        self._send(_HB, self._heartbeat_body(metadata_offset), now_ms, queue=False)

    def steady_answer(self, now_ms: int) -> None:
        """:meth:`on_response` of the controller's error-free, unfenced answer to the heartbeat
        in flight of a :meth:`steady` broker (the idle warp's held heartbeats)."""
        self._inflight = None
        self._on_heartbeat_response(_STEADY_ANSWER, now_ms)

    @property
    def last_contact_ms(self) -> int | None:
        """When the controller last answered a registration or heartbeat without error."""
        return self._last_contact_ms

    # ------------------------------------------------------------------ sending

    def _active(self) -> bool:
        return self.state not in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN)

    def _communicate(self, now_ms: int) -> None:
        """Send the next registration or heartbeat now (superseding one in flight)."""
        self._next_comm_ms = None
        if self.registered:
            self._send(_HB, self._heartbeat_body(self.metadata_offset), now_ms)
        else:
            self._send(_REG, self._registration_body(), now_ms)

    def _heartbeat_body(self, metadata_offset: int) -> Any:
        return _HB(broker_id=self.broker_id, broker_epoch=self.broker_epoch,
                   current_metadata_offset=metadata_offset,
                   want_fence=not self.ready_to_unfence,
                   want_shut_down=self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN)

    def _registration_body(self) -> Any:
        return _REG(
            broker_id=self.broker_id,
            cluster_id=self.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=tuple(_REG.Listener(name=e.name, host=e.host, port=e.port,
                                          security_protocol=e.security_protocol)
                            for e in self.listeners),
            features=tuple(_REG.Feature(name=name, min_supported_version=lo,
                                        max_supported_version=hi)
                           for name, (lo, hi) in sorted(self.features.items())),
            rack=self.rack,
            is_migrating_zk_broker=False,
            log_dirs=self.log_dirs,
            previous_broker_epoch=self.previous_broker_epoch,
        )

    def _send(self, kind: type, body: Any, now_ms: int, queue: bool = True) -> None:
        """``queue=False``: the request's id counted but the request not queued (the idle
        warp's held heartbeats)."""
        deadline = now_ms + self.request_timeout_ms
        if self.controller_id is None:  # queued until a controller is known, or times out
            self._inflight = _InFlight(kind, body, None, None, deadline)
            return
        cid = self._out.request(self.controller_id, body) if queue else self._out.next_cid()
        self._inflight = _InFlight(kind, body, cid, self.controller_id, deadline)

    def _schedule(self, now_ms: int, delay_ms: int) -> None:
        if delay_ms <= 0:
            self._communicate(now_ms)
        else:
            self._next_comm_ms = now_ms + delay_ms

    def _after_failure(self, now_ms: int) -> None:
        """Kafka 4.2.1 ``BrokerLifecycleManager#scheduleNextCommunicationAfterFailure``: the
        next try one heartbeat interval later (``_failed_attempts`` only counts them)."""
        self._failed_attempts += 1
        self._next_comm_ms = now_ms + self.config.broker_heartbeat_interval_ms

    # ------------------------------------------------------------------ responses

    def _on_registration_response(self, body: Any, now_ms: int) -> None:
        if body.error_code != E.NONE:
            self._events.add(now_ms, f"registration refused by controller: "
                             f"{_error_name(body.error_code)}")
            self._after_failure(now_ms)
            return
        self._failed_attempts = 0
        self.broker_epoch = body.broker_epoch
        self.registered = True
        self._registration_deadline_ms = None
        self._last_contact_ms = now_ms
        self._events.add(now_ms, f"registered with broker epoch {self.broker_epoch}")
        self._communicate(now_ms)  # heartbeat at once

    def _on_heartbeat_response(self, body: Any, now_ms: int) -> None:
        error = body.error_code
        if error in REREGISTER_ERRORS and self.config.broker_reregister_on_stale_epoch:
            self._events.add(now_ms, f"heartbeat refused: {_error_name(error)}; registering again")
            self.registered = False
            self._communicate(now_ms)
            return
        if error != E.NONE:
            self._events.add(now_ms, f"heartbeat failed: {_error_name(error)}")
            self._after_failure(now_ms)
            return
        self._failed_attempts = 0
        self._last_contact_ms = now_ms
        self.fenced = body.is_fenced
        if self.self_fenced and not body.is_fenced:
            self.self_fenced = False
            self._events.add(now_ms, "unfenced by the controller again: no longer self-fenced")
        state = self.state
        if state is BrokerState.STARTING:
            # Kafka also waits for the first metadata publish; the offset says one happened
            if body.is_caught_up and self.metadata_offset >= 0:
                self._set_state(now_ms, BrokerState.RECOVERY,
                                f"caught up with the metadata log (offset {self.metadata_offset})")
            self._schedule(now_ms, STARTING_HEARTBEAT_MS)
        elif state is BrokerState.RECOVERY:
            if not body.is_fenced:
                self._set_state(now_ms, BrokerState.RUNNING, "unfenced by the controller")
            self._schedule(now_ms, self.config.broker_heartbeat_interval_ms)
        elif state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if body.should_shut_down:
                self.shut_down(now_ms, APPROVED_SHUTDOWN)
                return
            delay = (self.config.broker_heartbeat_interval_ms if self._got_shutdown_answer
                     else FIRST_SHUTDOWN_HEARTBEAT_MS)
            self._got_shutdown_answer = True
            self._schedule(now_ms, delay)
        else:
            self._schedule(now_ms, self.config.broker_heartbeat_interval_ms)

    # ------------------------------------------------------------------ helpers

    def _self_fence_deadline(self) -> int | None:
        if (not self.config.broker_self_fencing or self.self_fenced
                or self._last_contact_ms is None or self.state not in REPLICA_STATES):
            return None
        return self._last_contact_ms + self.config.broker_heartbeat_timeout_ms + 1

    def _set_state(self, now_ms: int, state: BrokerState, why: str) -> None:
        old, self.state = self.state, state
        self._events.add(now_ms, f"{old} -> {state}: {why}")


def _response_type(kind: type) -> type:
    return M.BrokerRegistrationResponse if kind is _REG else M.BrokerHeartbeatResponse


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
