"""Sending ISR changes to the active controller (Kafka's ``DefaultAlterPartitionManager``).

At most one queued change per partition (a second one is refused, as Kafka completes it with
OPERATION_NOT_ATTEMPTED) and one AlterPartition request in flight, carrying every queued change.
A top-level error leaves the changes queued and retries 50 ms later; a partition missing from
the response stays queued for the next request. Kafka never times an AlterPartition out (its
controller channel reconnects and resends); here a request unanswered for the request timeout,
or one sent to a controller that lost leadership, is sent again.

Requests use AlterPartition v3's shape: topic ids and ISR members with their broker epochs
(KIP-903), plus the leader's own broker epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

from .channel import EventLog, Outbox

_REQ: Any = M.AlterPartitionRequest
RETRY_BACKOFF_MS = 50
"""Kafka's delay before resending after a top-level AlterPartition error."""


class IsrChange(NamedTuple):
    """One partition's proposed ISR: what AlterPartition carries for it."""

    topic_id: Uuid
    topic_name: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[tuple[int, int], ...]
    """(broker id, broker epoch) per member, in ISR order; -1 = epoch unknown."""
    proposal: object
    """The partition's pending state this change proposes: results are matched against it."""

    @property
    def key(self) -> tuple[Uuid, int]:
        return (self.topic_id, self.partition)


class IsrChangeResult(NamedTuple):
    """The controller's answer for one change: an error, or the partition state it committed."""

    change: IsrChange
    error: int
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


class _InFlight(NamedTuple):
    cid: int
    dst: int
    changes: tuple[IsrChange, ...]
    deadline_ms: int


class AlterPartitionManager:
    """Queues ISR changes and sends them to the active controller, one request at a time."""

    def __init__(self, broker_id: int, outbox: Outbox, events: EventLog,
                 broker_epoch: Callable[[], int], request_timeout_ms: int) -> None:
        self.broker_id = broker_id
        self._out = outbox
        self._events = events
        self._broker_epoch = broker_epoch
        self.request_timeout_ms = request_timeout_ms
        self.controller_id: int | None = None
        self.unsent: dict[tuple[Uuid, int], IsrChange] = {}
        self._inflight: _InFlight | None = None
        self._retry_at_ms: int | None = None

    # ------------------------------------------------------------------ inputs

    def submit(self, change: IsrChange, now_ms: int) -> bool:
        """Queue a change; False if one for that partition is already queued (not attempted)."""
        if change.key in self.unsent:
            return False
        self.unsent[change.key] = change
        self._maybe_send(now_ms)
        return True

    def on_controller_change(self, controller_id: int | None, now_ms: int) -> None:
        if controller_id == self.controller_id:
            return
        self.controller_id = controller_id
        if self._inflight is not None and controller_id is not None:
            self._inflight = None  # its answer, if any, is no longer awaited
            self._retry_at_ms = None
        self._maybe_send(now_ms)

    def on_response(self, cid: int | None, body: Any, now_ms: int) -> list[IsrChangeResult] | None:
        """Results per change sent; None when this response answers nothing in flight."""
        f = self._inflight
        if f is None or (cid is not None and cid != f.cid):
            return None
        self._inflight = None
        if body.error_code != ErrorCode.NONE:
            self._events.add(now_ms, f"AlterPartition failed: {_name(body.error_code)}; "
                             f"retrying in {RETRY_BACKOFF_MS} ms")
            self._retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return []
        answers = {}
        for topic in body.topics:
            for p in topic.partitions:
                answers[(topic.topic_id, p.partition_index)] = p
        results = []
        for change in f.changes:
            p = answers.get(change.key)
            if p is None:
                continue  # stays queued: it goes out again with the next request
            if self.unsent.get(change.key) is change:
                del self.unsent[change.key]
            results.append(IsrChangeResult(change, p.error_code, p.leader_id, p.leader_epoch,
                                           tuple(p.isr), p.partition_epoch))
        self._maybe_send(now_ms)
        return results

    def tick(self, now_ms: int) -> None:
        f = self._inflight
        if f is not None and now_ms >= f.deadline_ms:
            self._inflight = None
            self._events.add(now_ms, f"AlterPartition to controller {f.dst} timed out; resending")
        if self._retry_at_ms is not None and now_ms >= self._retry_at_ms:
            self._retry_at_ms = None
        self._maybe_send(now_ms)

    def forget(self, key: tuple[Uuid, int], proposal: object | None = None) -> None:
        """Drop the change queued for a partition (only if it proposes ``proposal``, if given):
        the partition is gone, or new metadata superseded the proposal."""
        change = self.unsent.get(key)
        if change is not None and (proposal is None or change.proposal is proposal):
            del self.unsent[key]

    def clear(self) -> None:
        self.unsent.clear()
        self._inflight = None
        self._retry_at_ms = None

    # ------------------------------------------------------------------ queries

    def next_deadline(self) -> int | None:
        if self._inflight is not None:
            return self._inflight.deadline_ms
        if self.unsent and self._retry_at_ms is not None:
            return self._retry_at_ms
        return None

    @property
    def in_flight(self) -> bool:
        return self._inflight is not None

    # ------------------------------------------------------------------ sending

    def _maybe_send(self, now_ms: int) -> None:
        if (not self.unsent or self._inflight is not None or self.controller_id is None
                or self._retry_at_ms is not None):
            return
        changes = tuple(self.unsent.values())
        cid = self._out.request(self.controller_id, self._request(changes))
        self._inflight = _InFlight(cid, self.controller_id, changes,
                                   now_ms + self.request_timeout_ms)

    def _request(self, changes: tuple[IsrChange, ...]) -> Any:
        by_topic: dict[Uuid, list[IsrChange]] = {}
        for c in changes:
            by_topic.setdefault(c.topic_id, []).append(c)
        topics = []
        for topic_id, items in by_topic.items():
            parts = tuple(_REQ.PartitionData(
                partition_index=c.partition, leader_epoch=c.leader_epoch,
                new_isr_with_epochs=tuple(_REQ.BrokerState(broker_id=b, broker_epoch=e)
                                          for b, e in c.isr),
                leader_recovery_state=0, partition_epoch=c.partition_epoch) for c in items)
            topics.append(_REQ.TopicData(topic_name=items[0].topic_name, topic_id=topic_id,
                                         partitions=parts))
        return _REQ(broker_id=self.broker_id, broker_epoch=self._broker_epoch(),
                    topics=tuple(topics))


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
