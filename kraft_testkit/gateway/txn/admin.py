"""DescribeTransactions (65), ListTransactions (66) and WriteTxnMarkers (27) at a broker, with
Kafka 4.2.1's checks and errors:

* DescribeTransactions (``TransactionCoordinator#handleDescribeTransactions``): per id, its
  coordinator's state, or NOT_COORDINATOR, TRANSACTIONAL_ID_NOT_FOUND, INVALID_REQUEST; while
  markers are written only the partitions still without one are listed;
* ListTransactions (``TransactionStateManager#listTransactionStates``): the transactions this
  broker coordinates, filtered by state (unknown names come back in UnknownStateFilters),
  producer id, duration (v1: running longer than it) and transactional id pattern (v2, a
  whole-string regular expression; INVALID_REGULAR_EXPRESSION when it does not compile);
* WriteTxnMarkers (``KafkaApis#handleWriteTxnMarkersRequest``), the request a transaction
  coordinator sends partition leaders: a control batch per partition, appended by its leader
  with acks=all, after ``ProducerAppendInfo``'s checks (the producer epoch, strictly newer for
  a transaction.version 2 marker unless it repeats one already written; the coordinator epoch,
  TRANSACTION_COORDINATOR_FENCED when older than the last marker's). The kit's own coordinator
  writes its markers in-process (:mod:`.markers`); this is the same write, served.
"""

from __future__ import annotations

import re
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.records import decode_batch

from ..context import Pending, RequestContext
from . import log_state, records
from .apis import coordinator
from .state import PREPARE_ABORT, PREPARE_COMMIT, STATE_NAMES

E = ErrorCode
#: ``request.timeout.ms``: how long a marker append waits for its replicas
REQUEST_TIMEOUT_MS = 30_000


def describe_transactions(ctx: RequestContext, req: Any) -> Any:
    R = M.DescribeTransactionsResponse
    coord = coordinator(ctx)
    out = []
    for tid in req.transactional_ids:
        def failed(code: int, tid: str = tid) -> Any:
            return R.TransactionState(error_code=code, transactional_id=tid,
                                      transaction_state="", transaction_timeout_ms=0,
                                      transaction_start_time_ms=-1, producer_id=-1,
                                      producer_epoch=-1, topics=())
        if not tid:
            out.append(failed(E.INVALID_REQUEST))
            continue
        shard, code = coord.shard_for(ctx.node, tid)
        meta = None if shard is None else shard.txns.get(tid)
        if shard is None or meta is None:
            out.append(failed(code if shard is None else E.TRANSACTIONAL_ID_NOT_FOUND))
            continue
        partitions = meta.partitions
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT) and meta.markers is not None:
            partitions = meta.markers.todo   # the markers written are taken off the list
        by_topic: dict[str, list[int]] = {}
        for topic, p in sorted(partitions):
            by_topic.setdefault(topic, []).append(p)
        out.append(R.TransactionState(
            error_code=0, transactional_id=tid, transaction_state=STATE_NAMES[meta.state],
            transaction_timeout_ms=meta.timeout_ms, transaction_start_time_ms=meta.start_ms,
            producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
            topics=tuple(R.TopicData(topic=t, partitions=tuple(ps))
                         for t, ps in by_topic.items())))
    return R(throttle_time_ms=0, transaction_states=tuple(out))


def list_transactions(ctx: RequestContext, req: Any) -> Any:
    R = M.ListTransactionsResponse
    coord = coordinator(ctx)
    known = {name: i for i, name in enumerate(STATE_NAMES)}
    states = {known[s] for s in req.state_filters if s in known}
    unknown = tuple(s for s in req.state_filters if s not in known)
    pids = set(req.producer_id_filters)
    duration = req.duration_filter if ctx.version >= 1 else -1
    pattern = req.transactional_id_pattern if ctx.version >= 2 else None
    compiled = None
    if pattern:
        try:
            compiled = re.compile(pattern)
        except re.error:
            return R(throttle_time_ms=0, error_code=E.INVALID_REGULAR_EXPRESSION,
                     unknown_state_filters=(), transaction_states=())
    now = ctx.now_ms
    found = []
    for (broker, _), shard in sorted(coord.shards.items()):
        if broker != ctx.node or not coord.is_current(shard):
            continue
        for tid, meta in sorted(shard.txns.items()):
            if (pids and meta.producer_id not in pids) or \
                    (req.state_filters and meta.state not in states) or \
                    (duration >= 0 and now - meta.start_ms <= duration) or \
                    (compiled is not None and compiled.fullmatch(tid) is None):
                continue
            found.append(R.TransactionState(transactional_id=tid, producer_id=meta.producer_id,
                                            transaction_state=STATE_NAMES[meta.state]))
    return R(throttle_time_ms=0, error_code=0, unknown_state_filters=unknown,
             transaction_states=tuple(found))


# ------------------------------------------------------------------ WriteTxnMarkers


def marker_error(log: Any, pid: int, epoch: int, coordinator_epoch: int, tv: int) -> int:
    """``ProducerAppendInfo#appendEndTxnMarker``'s checks of a marker against the producer's
    state in ``log`` (its last batch and last marker)."""
    current, last_coordinator_epoch = -1, -1
    for b in reversed(log.batches):
        if b.producer_id != pid:
            continue
        current = max(current, b.producer_epoch)
        if b.is_control:
            batch, _ = decode_batch(b.data, verify_crc=False)
            value = batch.records[0].value or b"\0\0\0\0\0\0"
            last_coordinator_epoch = int.from_bytes(value[2:6], "big", signed=True)
            break
    open_txn = log_state.open_transaction(log, pid) is not None
    if tv >= 2:
        if epoch <= current and not (epoch == current and not open_txn):
            return E.INVALID_PRODUCER_EPOCH
    elif epoch < current:
        return E.INVALID_PRODUCER_EPOCH
    if coordinator_epoch < last_coordinator_epoch:
        return E.TRANSACTION_COORDINATOR_FENCED
    return E.NONE


def write_txn_markers(ctx: RequestContext, req: Any) -> Any:
    from ..data_apis import PartitionView
    from ..groups.coordinator import OFFSETS_TOPIC

    R = M.WriteTxnMarkersResponse
    image = ctx.cluster.broker(ctx.node).image
    now = ctx.now_ms
    results: list[dict[tuple[str, int], int]] = []
    waits: list[tuple[int, tuple[str, int], PartitionView, int, int]] = []
    for i, marker in enumerate(req.markers):
        tv = marker.transaction_version if ctx.version >= 2 else 0
        codes: dict[tuple[str, int], int] = {}
        results.append(codes)
        for t in marker.topics:
            topic = image.topics.by_name(t.name)
            for p in t.partition_indexes:
                view = PartitionView(ctx, topic, p)
                # a partition with no replica here: UNKNOWN_TOPIC_OR_PARTITION (onlinePartition)
                code = view.error() if view.rep is not None else E.UNKNOWN_TOPIC_OR_PARTITION
                if code == E.NONE:
                    code = marker_error(view.log, marker.producer_id, marker.producer_epoch,
                                        marker.coordinator_epoch, tv)
                codes[(t.name, p)] = code
                if code:
                    continue
                log = view.log
                log.append([records.marker_batch(marker.producer_id, marker.producer_epoch,
                                                 marker.transaction_result,
                                                 marker.coordinator_epoch, now)],
                           view.rep.leader_epoch, now)
                view.plane.appended(ctx.node, topic.id, p)
                groups = ctx.gateway.groups
                if t.name == OFFSETS_TOPIC and groups is not None:
                    groups.end_transaction(ctx.node, p, marker.producer_id,
                                           marker.transaction_result)
                waits.append((i, (t.name, p), view, log.log_end_offset, view.rep.leader_epoch))

    def build() -> Any:
        out = []
        for marker, codes in zip(req.markers, results):
            by_topic: dict[str, list[Any]] = {}
            for (name, p), code in codes.items():
                by_topic.setdefault(name, []).append(
                    R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=code))
            out.append(R.WritableTxnMarkerResult(producer_id=marker.producer_id, topics=tuple(
                R.WritableTxnMarkerTopicResult(name=n, partitions=tuple(ps))
                for n, ps in by_topic.items())))
        return R(markers=tuple(out))

    def poll() -> Any:
        for w in list(waits):
            i, tp, view, end, epoch = w
            fresh = PartitionView(ctx, view.topic, tp[1])
            if fresh.error() != E.NONE or fresh.rep.leader_epoch != epoch:
                results[i][tp] = E.NOT_LEADER_OR_FOLLOWER
            elif fresh.high_watermark() < end:
                continue
            waits.remove(w)
        return None if waits else build()

    def expire() -> Any:
        for i, tp, _, _, _ in waits:
            results[i][tp] = E.REQUEST_TIMED_OUT
        return build()
    first = poll()
    return first if first is not None else \
        Pending(poll, expire, virtual_deadline_ms=now + REQUEST_TIMEOUT_MS)
