"""One broker's logic, minus the metadata log: lifecycle, replicas, ISR, what clients see.

A broker node is "Raft observer + this": the observer fetches ``__cluster_metadata`` from the
quorum and its listener hands the broker each committed image (:meth:`BrokerLogic.on_metadata`)
and each leader change (:meth:`BrokerLogic.on_leader_change`; the Raft leader is the active
controller). Everything else that reaches a broker goes to :meth:`BrokerLogic.on_message`;
:meth:`BrokerLogic.handles` tells which messages those are.

Every entry point takes ``now_ms`` and returns an :class:`~kraft_testkit.sim.node.Effects` with
``sends`` (``(node id, message)``; requests and responses travel in :mod:`kraft_testkit.raft.rpc`
envelopes) and ``timer_ms``: the absolute time the broker next wants :meth:`on_timer` (``NEVER``
when nothing is planned). Calling :meth:`on_timer` early or late is harmless: it runs what is
due. The broker writes nothing to disk.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from kraft_testkit.config import NodeConfig
from kraft_testkit.metadata import Endpoint, MetadataImage
from kraft_testkit.metadata import versions as V
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc
from kraft_testkit.sim.node import NEVER, Effects

from .alter_partition import AlterPartitionManager
from .channel import EventLog, Outbox
from .lifecycle import CONTROLLED_SHUTDOWN_TIMEOUT_MS, Lifecycle
from .metadata_view import DEFAULT_LISTENER, metadata_response
from .replicas import LocalReplica, ReplicaManager
from .state import SERVING_STATES, BrokerState

_LIFECYCLE_RESPONSES = (M.BrokerRegistrationResponse, M.BrokerHeartbeatResponse)
_BROKER_REQUESTS = (M.FetchRequest, M.MetadataRequest)
_OWN_BODIES = (*_LIFECYCLE_RESPONSES, M.AlterPartitionResponse, M.MetadataRequest)
METADATA_TOPIC_ID = Uuid.METADATA_TOPIC_ID
_SESSION_ERRORS = (70, 71, 106)  # FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, ..._TOPIC_ID_ERROR


def default_listeners(broker_id: int) -> tuple[Endpoint, ...]:
    """One PLAINTEXT listener named after the broker (security protocol 0 = PLAINTEXT)."""
    return (Endpoint(DEFAULT_LISTENER, f"broker-{broker_id}", 9092, 0),)


class BrokerLogic:
    """The broker above its metadata observer: a pure state machine (see the module doc).

    ``rng`` is the broker's own ``random.Random``: it draws the incarnation id, then the log
    directory ids (unless given), then backoff jitter and the controller id MetadataResponses
    report. Same seed and inputs, same broker.
    """

    def __init__(self, broker_id: int, cluster_id: str, config: NodeConfig, rng: random.Random,
                 *, listeners: Sequence[Endpoint] | None = None, rack: str | None = None,
                 log_dirs: Sequence[Uuid] | None = None,
                 local_replicas: Iterable[tuple[Uuid, str, int]] = (),
                 previous_broker_epoch: int = -1,
                 metadata_versions: tuple[int, int] | None = None,
                 request_timeout_ms: int | None = None,
                 controlled_shutdown_timeout_ms: int = CONTROLLED_SHUTDOWN_TIMEOUT_MS) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.config = config
        self.rng = rng
        self.events = EventLog()
        self._out = Outbox()
        incarnation_id = Uuid.random(rng)
        dirs = tuple(log_dirs) if log_dirs is not None else (Uuid.random(rng),)
        self.listeners = tuple(listeners) if listeners is not None else default_listeners(broker_id)
        self.lifecycle = Lifecycle(
            broker_id, cluster_id, config, rng, self._out, self.events,
            incarnation_id=incarnation_id, listeners=self.listeners, rack=rack, log_dirs=dirs,
            features=_supported_features(config, metadata_versions),
            previous_broker_epoch=previous_broker_epoch, request_timeout_ms=request_timeout_ms,
            controlled_shutdown_timeout_ms=controlled_shutdown_timeout_ms)
        self.alter = AlterPartitionManager(broker_id, self._out, self.events,
                                           lambda: self.lifecycle.broker_epoch,
                                           self.lifecycle.request_timeout_ms)
        self.replicas = ReplicaManager(broker_id, config, self._out, self.events, self.alter,
                                       lambda: self.lifecycle.broker_epoch, rack,
                                       random.Random(f"fetch-sessions-{incarnation_id}"))
        self.replicas.load(local_replicas)
        self.image = MetadataImage.EMPTY
        self.metadata_offset = -1
        self.controller_epoch = -1
        self._recovered = False
        self._stopped = False

    # ------------------------------------------------------------------ inputs

    def start(self, now_ms: int) -> Effects:
        """NOT_RUNNING -> STARTING: register with the active controller."""
        self.lifecycle.start(now_ms)
        return self._done(now_ms)

    def on_leader_change(self, leader_id: int | None, epoch: int, now_ms: int) -> Effects:
        """The metadata quorum's leader, i.e. the active controller (None or -1: unknown)."""
        controller = None if leader_id is None or leader_id < 0 else leader_id
        self.controller_epoch = epoch
        self.lifecycle.on_controller_change(controller, now_ms)
        self.alter.on_controller_change(controller, now_ms)
        return self._done(now_ms)

    def on_metadata(self, image: MetadataImage, now_ms: int, offset: int | None = None) -> Effects:
        """A newly committed image; ``offset`` is the last metadata offset applied (default:
        the image's own), which heartbeats report as CurrentMetadataOffset."""
        self.image = image
        self.metadata_offset = image.offset if offset is None else offset
        self.lifecycle.metadata_offset = self.metadata_offset
        self.replicas.on_metadata(image, now_ms)
        return self._done(now_ms)

    def on_message(self, src: int, msg: object, now_ms: int) -> Effects:
        """A request or response from node ``src`` (envelope or bare body)."""
        if isinstance(msg, rpc.Request) or isinstance(_body(msg), _BROKER_REQUESTS):
            return self.on_request(src, msg, now_ms)
        return self.on_response(src, msg, now_ms)

    def on_response(self, src: int, msg: object, now_ms: int) -> Effects:
        cid = msg.correlation_id if isinstance(msg, rpc.Response) else None
        body = _body(msg)
        if isinstance(body, _LIFECYCLE_RESPONSES):
            self.lifecycle.on_response(cid, body, now_ms)
        elif isinstance(body, M.AlterPartitionResponse):
            results = self.alter.on_response(cid, body, now_ms)
            if results:
                self.replicas.on_alter_results(results, now_ms)
        elif isinstance(body, M.FetchResponse):
            self.replicas.on_fetch_response(src, cid, body, now_ms)
        return self._done(now_ms)

    def on_request(self, src: int, msg: object, now_ms: int) -> Effects:
        """A replica FetchRequest from a follower, or a client's MetadataRequest."""
        cid = msg.correlation_id if isinstance(msg, rpc.Request) else None
        body: Any = _body(msg)
        if _is(body, M.FetchRequest):
            self._out.respond(src, cid, self.replicas.handle_fetch(body, now_ms))
        elif _is(body, M.MetadataRequest):
            topics = None
            if body.topics is not None:
                topics = [t.name if t.name is not None else t.topic_id for t in body.topics]
            self._out.respond(src, cid, self.metadata_response(topics))
        return self._done(now_ms)

    def on_timer(self, now_ms: int) -> Effects:
        return self._done(now_ms)

    def begin_controlled_shutdown(self, now_ms: int) -> Effects:
        """Ask the controller to move leaders away, then shut down (Kafka's SIGTERM path)."""
        self.lifecycle.begin_controlled_shutdown(now_ms)
        return self._done(now_ms)

    def shut_down(self, now_ms: int, reason: str = "shutdown requested") -> Effects:
        """Stop at once, without controlled shutdown."""
        self.lifecycle.shut_down(now_ms, reason)
        return self._done(now_ms)

    # ------------------------------------------------------------------ routing

    def handles(self, src: int, msg: object) -> bool:
        """Whether ``msg`` is for this logic rather than the metadata observer beside it."""
        # asked for every message a broker gets: loops, not generators (same answers)
        body: Any = _body(msg)
        if isinstance(body, _OWN_BODIES):
            return True
        if _is(body, M.FetchRequest):
            for t in body.topics:
                if t.topic_id == METADATA_TOPIC_ID:
                    return False
            return True
        if _is(body, M.FetchResponse):
            if isinstance(msg, rpc.Response) \
                    and self.replicas.owns_fetch_response(src, msg.correlation_id):
                return True
            # replica fetch answers name their partitions or carry a fetch session (KIP-227:
            # an incremental answer can be empty; a session error has no session); the
            # metadata log's never name anything but __cluster_metadata
            if body.session_id != 0 or body.error_code in _SESSION_ERRORS:
                return True
            if not body.responses:
                return False
            for t in body.responses:
                if t.topic_id == METADATA_TOPIC_ID:
                    return False
            return True
        return False

    # ------------------------------------------------------------------ state

    @property
    def state(self) -> BrokerState:
        return self.lifecycle.state

    @property
    def broker_epoch(self) -> int:
        return self.lifecycle.broker_epoch

    @property
    def incarnation_id(self) -> Uuid:
        return self.lifecycle.incarnation_id

    @property
    def controller_id(self) -> int | None:
        return self.lifecycle.controller_id

    @property
    def fenced(self) -> bool:
        """Fenced in the controller's eyes, as its last heartbeat response said."""
        return self.lifecycle.fenced

    @property
    def self_fenced(self) -> bool:
        """KIP-343: fenced by its own heartbeat timeout."""
        return self.lifecycle.self_fenced

    @property
    def serving(self) -> bool:
        """RUNNING (or in controlled shutdown) and not self-fenced."""
        return self.lifecycle.state in SERVING_STATES and not self.lifecycle.self_fenced

    @property
    def shutdown_reason(self) -> str | None:
        return self.lifecycle.shutdown_reason

    def local_replicas(self) -> list[str]:
        """``topic-partition`` names of the replicas hosted here, sorted."""
        return sorted(r.name for r in self.replicas.replicas.values())

    def replica(self, topic: str, partition: int) -> LocalReplica | None:
        return self.replicas.get(topic, partition)

    def metadata_response(self, topics: Iterable[str | Uuid] | None = None,
                          listener: str = DEFAULT_LISTENER) -> Any:
        """What this broker answers a MetadataRequest with (itself fenced while self-fenced)."""
        fenced = (self.broker_id,) if self.lifecycle.self_fenced else ()
        return metadata_response(self.image, cluster_id=self.cluster_id, topics=topics,
                                 listener=listener, fenced=fenced, rng=self.rng)

    def next_wakeup_ms(self) -> int:
        wake = None  # the earliest deadline of the three parts (asked after every event)
        for t in (self.lifecycle.next_deadline(), self.alter.next_deadline(),
                  self.replicas.next_deadline()):
            if t is not None and (wake is None or t < wake):
                wake = t
        return NEVER if wake is None else wake

    # ------------------------------------------------------------------ internals

    def _done(self, now_ms: int) -> Effects:
        """Run what is due, let the parts react to each other, and say what to send."""
        self._react(now_ms)
        lc = self.lifecycle
        seen = (lc.state, lc.shutdown_reason, lc.self_fenced)  # all _react reads of it
        lc.tick(now_ms)
        if (lc.state, lc.shutdown_reason, lc.self_fenced) != seen:
            self._react(now_ms)  # (unchanged: the first _react did all there was to do)
        self.alter.tick(now_ms)
        self.replicas.tick(now_ms)
        return Effects([], False, self._out.drain(), self.next_wakeup_ms())

    def _react(self, now_ms: int) -> None:
        lc = self.lifecycle
        if lc.state is BrokerState.RECOVERY and not self._recovered:
            self._recovered = True
            self.replicas.activate(self.image, now_ms)
            lc.set_ready_to_unfence(now_ms)
        if lc.state in (BrokerState.SHUTTING_DOWN, BrokerState.NOT_RUNNING) \
                and lc.shutdown_reason is not None and not self._stopped:
            self._stopped = True
            self.replicas.stop()
        self.replicas.set_leader_serving(not lc.self_fenced, now_ms)


def _is(body: Any, cls: type) -> bool:
    """isinstance, without letting the type checker narrow ``body`` to the Message base."""
    return isinstance(body, cls)


def _body(msg: object) -> Any:
    return msg.body if isinstance(msg, (rpc.Request, rpc.Response)) else msg


def _supported_features(config: NodeConfig, metadata_versions: tuple[int, int] | None
                        ) -> dict[str, tuple[int, int]]:
    """What this broker announces: Kafka 4.2's features at their production levels (testing
    levels too with unstable.feature.versions.enable); ``metadata_versions`` overrides the
    metadata.version range."""
    from ..controller.features import supported_ranges_of

    out = supported_ranges_of(config)
    if metadata_versions is not None:
        out[V.FEATURE_NAME] = tuple(metadata_versions)
    return out
