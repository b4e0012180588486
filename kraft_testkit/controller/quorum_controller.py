"""The quorum controller: the Raft listener that turns controller RPCs into metadata records.

KIP-631's shape, as Kafka's QuorumController has it:

* **Commands produce records; only replay changes state.** A request goes to a control module
  (``cluster``, ``replication``, ``configs`` ...) with the latest image; the module returns
  records and a response. The active controller appends the records to the Raft log and replays
  them into its *pending* image at once, so the next command sees them, but the response waits
  until the records are committed.
* **Future state is reverted on leadership loss.** The pending image is the committed one plus the
  controller's own uncommitted records; when another node becomes leader it falls back to the
  committed image and answers every waiting request NOT_CONTROLLER.
* **Every controller replays the committed log** (handed over by the Raft replica, in order), so
  a new active controller starts from exactly the committed state.

The controller is pure: time comes in as ``now_ms``, randomness from the node's seeded RNG,
and what it sends goes out through :meth:`take_sends`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import NodeConfig
from ..metadata import MetadataImage, replay_batches
from ..protocol import messages as M
from ..protocol.codegen import Message
from ..protocol.error_codes import ErrorCode
from ..protocol.frames import MetadataRecord, decode_metadata, encode_record
from ..protocol.records import RecordBatch
from ..raft import rpc
from ..raft.snapshot import Snapshot
from .result import ControllerContext, ControllerResult

NEVER = 1 << 62

#: request class -> handler(controller, ctx, request) -> ControllerResult
Handler = Callable[["QuorumController", ControllerContext, Message], ControllerResult]
HANDLERS: dict[type, Handler] = {}


def handles(*request_types: type) -> Callable[[Handler], Handler]:
    """Register a handler for request types (the control modules' entry points)."""
    def register(fn: Handler) -> Handler:
        for t in request_types:
            HANDLERS[t] = fn
        return fn
    return register


@dataclass(slots=True)
class _Waiting:
    """A response held until the log is committed up to ``offset``."""

    offset: int
    dest: int | None  # None: an internal event (a timer), nobody to answer
    correlation_id: int
    response: Message
    appended_ms: int
    on_commit: Callable[[], None] | None = None


@dataclass(slots=True)
class ControllerMetrics:
    """Kafka's controller metrics, as numbers a test can assert on."""

    active: bool = False
    last_committed_offset: int = -1
    last_applied_offset: int = -1
    commit_latency_ms: list[int] = field(default_factory=list)
    committed_records: int = 0
    last_snapshot_offset: int = -1
    fenced_broker_count: int = 0
    active_broker_count: int = 0

    @property
    def metadata_lag(self) -> int:
        """Records appended but not yet committed (MetadataLag on the active controller)."""
        return max(0, self.last_applied_offset - self.last_committed_offset)

    @property
    def snapshot_offset_lag(self) -> int:
        """MetadataSnapshotOffsetLag: committed offsets not yet covered by a snapshot."""
        return self.last_committed_offset - self.last_snapshot_offset

    @property
    def commit_latency_avg_ms(self) -> float:
        lat = self.commit_latency_ms
        return sum(lat) / len(lat) if lat else 0.0

    def commit_rate_per_sec(self, window_ms: int) -> float:
        return self.committed_records * 1000.0 / window_ms if window_ms else 0.0

    def to_kafka(self, uptime_ms: int) -> dict[str, float | int]:
        """The values under the names Kafka's controller reports them (KIP-631's metrics)."""
        return {
            "ActiveControllerCount": int(self.active),
            "MetadataLag": self.metadata_lag,
            "LastCommittedRecordOffset": self.last_committed_offset,
            "LastAppliedRecordOffset": self.last_applied_offset,
            "MetadataCommitLatencyMs": self.commit_latency_avg_ms,
            "MetadataCommitRatePerSec": self.commit_rate_per_sec(uptime_ms),
            "MetadataSnapshotOffsetLag": self.snapshot_offset_lag,
            "FencedBrokerCount": self.fenced_broker_count,
            "ActiveBrokerCount": self.active_broker_count,
        }


class QuorumController:
    """One controller node's metadata state machine (see the module docstring).

    ``raft`` is the node's :class:`~kraft_testkit.raft.replica.RaftReplica`; the node wires it
    after building both (the replica takes this object as its listener).
    """

    def __init__(self, node_id: int, *, cluster_id: str, config: NodeConfig,
                 rng: random.Random, bootstrap: Callable[[MetadataImage], list[MetadataRecord]],
                 timers: Sequence[Callable[["QuorumController", int], int | None]] = (),
                 on_activate: Sequence[Callable[["QuorumController", int], None]] = (),
                 on_resign: Sequence[Callable[["QuorumController"], None]] = ()) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.config = config
        self.rng = rng
        self.raft: Any = None
        self.committed = MetadataImage.EMPTY
        self.image = MetadataImage.EMPTY  # committed + our own uncommitted records when active
        self.active = False
        self.epoch = -1
        self.leader_id: int | None = None
        self.metrics = ControllerMetrics()
        self.soft: dict[str, Any] = {}  # per-module soft state (heartbeat leases ...)
        self._bootstrap = bootstrap
        self._timers = list(timers)
        self._on_activate = list(on_activate)
        self._on_resign = list(on_resign)
        self._waiting: deque[_Waiting] = deque()
        self._sends: list[tuple[int, object]] = []
        self._next_offset = 0
        self._last_write_ms = 0
        self.now_ms = 0
        self._pending_bootstrap = False

    # ------------------------------------------------------------- Raft listener

    def handle_commit(self, batches: Sequence[RecordBatch]) -> list[bytes] | None:
        self.committed = replay_batches(self.committed, batches)
        count = 0
        for batch in batches:
            if not batch.is_control:
                count += len(batch.records)
        last = batches[-1].last_offset
        self.metrics.last_committed_offset = last
        self.metrics.committed_records += count
        if not self.active:
            self.image = self.committed
            self.metrics.last_applied_offset = last
        self._release(last)
        self._count_brokers()
        return None  # the node's SnapshotGenerator decides snapshots (node.py)

    def note_snapshot(self, last_offset: int) -> None:
        """The node snapshotted the committed image up to ``last_offset`` (for the metrics)."""
        self.metrics.last_snapshot_offset = last_offset

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        records = (decode_metadata(v) for v in snapshot.records())  # streamed: less GC
        self.committed = MetadataImage.from_snapshot(
            records, (snapshot.end_offset - 1, snapshot.epoch))
        self.image = self.committed
        self.metrics.last_committed_offset = snapshot.end_offset - 1
        self.metrics.last_snapshot_offset = snapshot.end_offset - 1
        self._count_brokers()

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        was_active = self.active
        self.leader_id, self.epoch = leader_id, epoch
        # a restarted ex-leader hears "leader = me" from its stored state while its replica is
        # only resigned: active means leading *now*
        self.active = leader_id == self.node_id and (self.raft is None or self.raft.is_leader)
        self.metrics.active = self.active
        if was_active and not self.active:
            self._resign()
        elif self.active and not was_active:
            self.image = self.committed
            self._next_offset = self.raft.log_end_offset if self.raft is not None else 0
            self._pending_bootstrap = True  # done at the next event, when we may append

    # ------------------------------------------------------------- requests

    def handle_request(self, src: int, request: rpc.Request, now_ms: int) -> None:
        """Run a controller RPC; its response is sent once its records are committed."""
        self.now_ms = now_ms
        self._maybe_bootstrap(now_ms)
        body = request.body
        handler = HANDLERS.get(type(body))
        if handler is None:
            return  # not a controller RPC: the node routes only ours here
        if not self.active:
            self._reply(src, request.correlation_id, _not_controller(body))
            return
        result = handler(self, self.context(now_ms), body)
        self.submit(result, src, request.correlation_id, now_ms)

    def context(self, now_ms: int) -> ControllerContext:
        return ControllerContext(self.image, now_ms, self.rng, self.config, self.cluster_id,
                                 self.node_id, self._next_offset, self.soft)

    def submit(self, result: ControllerResult, dest: int | None, correlation_id: int,
               now_ms: int, on_commit: Callable[[], None] | None = None) -> int:
        """Append ``result``'s records and hold its response until they commit.

        Returns the offset the response waits for. ``dest`` None: an internal event (a timer),
        no response is sent. Used by the timers too (lease expiry, NoOps).
        """
        wait_for = self._next_offset - 1
        if result.records:
            values = [encode_record(r) for r in result.records]
            last = self.raft.append(values, now_ms)
            self.image = self.image.replay(result.records)
            self._next_offset = last + 1
            self._last_write_ms = now_ms
            wait_for = last
            self.metrics.last_applied_offset = last
        if dest is not None or on_commit is not None:
            w = _Waiting(wait_for, dest, correlation_id, result.response, now_ms, on_commit)
            if wait_for <= self.metrics.last_committed_offset:
                self._deliver(w)
            else:
                self._waiting.append(w)
        return wait_for

    # ------------------------------------------------------------- timers

    def on_timer(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self._maybe_bootstrap(now_ms)

    def next_wakeup(self, now_ms: int) -> int:
        """Run the periodic tasks that are due; return when they next need to run."""
        if self.active or self._pending_bootstrap:  # else _maybe_bootstrap has nothing to do
            self._maybe_bootstrap(now_ms)
        if not self.active:
            return NEVER
        wake = NEVER
        for task in self._timers:
            at = task(self, now_ms)
            if at is not None:
                wake = min(wake, at)
        return wake

    @property
    def written_offset(self) -> int:
        """The last offset this controller wrote (still lingering in Raft included): what a
        response submitted now waits to see committed."""
        return self._next_offset - 1

    @property
    def last_write_ms(self) -> int:
        return self._last_write_ms

    def take_sends(self) -> list[tuple[int, object]]:
        sends, self._sends = self._sends, []
        return sends

    # ------------------------------------------------------------- internals

    def _maybe_bootstrap(self, now_ms: int) -> None:
        if self.active and not self.raft.is_leader:  # lost leadership without being told yet
            self.active = self.metrics.active = False
            self._resign()
        if not self._pending_bootstrap or not self.active:
            return
        self._pending_bootstrap = False
        self._next_offset = max(self._next_offset, self.raft.log_end_offset)
        for hook in self._on_activate:
            hook(self, now_ms)
        records = self._bootstrap(self.image)
        if records:
            self.submit(ControllerResult(tuple(records), None), None, 0, now_ms)

    def _release(self, committed: int) -> None:
        while self._waiting and self._waiting[0].offset <= committed:
            self._deliver(self._waiting.popleft())

    def _deliver(self, w: _Waiting) -> None:
        if w.appended_ms <= self.now_ms:
            self.metrics.commit_latency_ms.append(self.now_ms - w.appended_ms)
            if len(self.metrics.commit_latency_ms) > 1000:
                del self.metrics.commit_latency_ms[:500]
        if w.on_commit is not None:
            w.on_commit()
        if w.dest is not None and w.response is not None:
            self._reply(w.dest, w.correlation_id, w.response)

    def _resign(self) -> None:
        for hook in self._on_resign:
            hook(self)
        self.image = self.committed
        self.metrics.last_applied_offset = self.metrics.last_committed_offset
        waiting, self._waiting = self._waiting, deque()
        for w in waiting:
            if w.dest is not None and w.response is not None:
                self._reply(w.dest, w.correlation_id, _not_controller_response(w.response))

    def _reply(self, dest: int, correlation_id: int, body: Message) -> None:
        self._sends.append((dest, rpc.response(correlation_id, body)))

    def _count_brokers(self) -> None:
        cluster = self.committed.cluster
        self.metrics.fenced_broker_count = len(cluster.fenced_broker_ids())
        self.metrics.active_broker_count = len(cluster.unfenced_broker_ids())


# ------------------------------------------------------------- NOT_CONTROLLER answers


def _not_controller(request: Message) -> Message:
    """The response a non-active controller gives: NOT_CONTROLLER at the top level, or for every
    item of the request when the response carries errors per item (as Kafka answers)."""
    response_cls = M.RESPONSES[type(request)._spec.api_key]
    per_item = _PER_ITEM.get(type(request))
    if per_item is not None:
        return per_item(request, response_cls, ErrorCode.NOT_CONTROLLER)
    return _with_error(response_cls(), ErrorCode.NOT_CONTROLLER)


def _per_topic(request, R, code):
    return R(topics=[R.CreatableTopicResult(name=t.name, error_code=code) for t in request.topics])


def _per_deleted(request, R, code):
    names = [t.name for t in request.topics] or list(request.topic_names)
    return R(responses=[R.DeletableTopicResult(name=n, error_code=code) for n in names])


def _per_partitions(request, R, code):
    return R(results=[R.CreatePartitionsTopicResult(name=t.name, error_code=code)
                      for t in request.topics])


def _per_resource(request, R, code):
    return R(responses=[R.AlterConfigsResourceResponse(
        error_code=code, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in request.resources])


def _per_acl(request, R, code):
    return R(results=[R.AclCreationResult(error_code=code) for _ in request.creations])


def _per_quota(request, R, code):
    return R(entries=[R.EntryData(error_code=code, entity=[
        R.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in request.entries])


def _per_user(request, R, code):
    users = [u.name for u in (*request.deletions, *request.upsertions)]
    return R(results=[R.AlterUserScramCredentialsResult(user=u, error_code=code)
                      for u in dict.fromkeys(users)])


_PER_ITEM = {
    M.CreateTopicsRequest: _per_topic,
    M.DeleteTopicsRequest: _per_deleted,
    M.CreatePartitionsRequest: _per_partitions,
    M.IncrementalAlterConfigsRequest: _per_resource,
    M.CreateAclsRequest: _per_acl,
    M.AlterClientQuotasRequest: _per_quota,
    M.AlterUserScramCredentialsRequest: _per_user,
}


def _not_controller_response(response: Message) -> Message:
    return _with_error(response, ErrorCode.NOT_CONTROLLER)


def _with_error(response: Message, code: int) -> Message:
    """Set the top-level error code if the response has one, else every per-item error code."""
    names = type(response)._names
    if "error_code" in names:
        return response.replace(error_code=code)
    changes = {}
    for name, value in zip(names, response):
        if isinstance(value, tuple) and value and isinstance(value[0], Message):
            changes[name] = tuple(_with_error(v, code) for v in value)
    return response.replace(**changes) if changes else response
