"""The transaction RPCs at a broker listener, with Kafka 4.2's checks and errors
(``TransactionCoordinator#handleInitProducerId``, ``#handleAddPartitionsToTransaction``,
``#endTransaction`` and the KafkaApis handlers that call them): FindCoordinator for a
transactional id, InitProducerId with a TransactionalId, AddPartitionsToTxn, AddOffsetsToTxn and
EndTxn. TxnOffsetCommit, which the group coordinator serves, is in :mod:`.offsets`.

Where Kafka answers CONCURRENT_TRANSACTIONS (a transition or markers still being written) and
the client retries, the gateway holds the request and retries it itself while virtual time
runs (stepping mode): the work the client waits on (a replicated write, markers) only happens
when virtual time moves, so a client retrying in wall time would wait forever. The answer is
the one the client's retry would get; CONCURRENT_TRANSACTIONS only when the work does not finish
within the wait bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from .. import autojump, producer_ids
from ..context import Pending, RequestContext
from ..coordinator_lookup import locate
from ..groups.coordinator import partition_for
from .coordinator import TxnCoordinator
from .state import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TXN_TOPIC,
    TxnMeta,
)

E = ErrorCode
BUSY = None   # an attempt's answer while the transaction is busy: wait and try again


class _Wait:
    """An attempt's answer when a write must commit first: ``answer(error)`` once decided."""

    def __init__(self, write: Any, answer: Callable[[int], Any]) -> None:
        self.write, self.answer = write, answer


def coordinator(ctx: RequestContext) -> TxnCoordinator:
    gateway = ctx.gateway
    if getattr(gateway, "txns", None) is None:
        gateway.txns = TxnCoordinator(gateway)
    gateway.txns.tick()
    return gateway.txns


def _fenced(code: int, version: int, first_new: int) -> int:
    """Clients before ``first_new`` know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED."""
    return E.INVALID_PRODUCER_EPOCH if code == E.PRODUCER_FENCED and version < first_new else code


def _serve(ctx: RequestContext, attempt: Callable[[], Any], failed: Callable[[int], Any]) -> Any:
    """Run ``attempt`` now and, while it says BUSY, again as virtual time moves. An attempt
    gives a response, BUSY, or a _Wait for a write."""
    coord = coordinator(ctx)
    state: dict[str, Any] = {}

    def poll() -> Any:
        coord.tick()
        if "write" not in state:
            got = attempt()
            if got is BUSY:
                return None
            if not isinstance(got, _Wait):
                return got
            state["write"], state["answer"] = got.write, got.answer
        code = state["write"].poll()
        return None if code is None else state["answer"](code)

    first = poll()
    if first is not None:
        return first
    return Pending(poll, lambda: failed(E.REQUEST_TIMED_OUT if "write" in state
                                        else E.CONCURRENT_TRANSACTIONS),
                   virtual_deadline_ms=ctx.now_ms + autojump.wait_bound_ms(ctx.cluster))


# ------------------------------------------------------------------ FindCoordinator


def find_coordinator(ctx: RequestContext, req: Any, keys: list[str], answer: Any) -> Any:
    """The leader of each transactional id's ``__transaction_state`` partition; the topic is
    created on first use (``answer(found)`` builds the response)."""
    return locate(ctx, coordinator(ctx), TXN_TOPIC, keys, answer)


# ------------------------------------------------------------------ InitProducerId


def init_producer_id(ctx: RequestContext, req: Any) -> Any:
    if req.transactional_id is None:
        return producer_ids.init_producer_id(ctx, req)
    R = M.InitProducerIdResponse

    def failed(code: int) -> Any:
        return R(throttle_time_ms=0, error_code=_fenced(code, ctx.version, 4), producer_id=-1,
                 producer_epoch=-1)
    tid = req.transactional_id
    coord = coordinator(ctx)
    if not tid:
        return failed(E.INVALID_REQUEST)
    if not 0 < req.transaction_timeout_ms <= coord.max_timeout_ms:
        return failed(E.INVALID_TRANSACTION_TIMEOUT)
    expected = (req.producer_id, req.producer_epoch) if ctx.version >= 3 and \
        req.producer_id >= 0 else None
    new_id: dict[str, Any] = {}

    def fresh_id() -> int | None:
        """A new producer id (None while the controller allocates a block)."""
        if "poll" not in new_id:
            new_id["poll"] = producer_ids.allocator(ctx)
        got = new_id["poll"]()
        if got is None:
            return None
        if got[0]:
            raise _Failed(got[0])
        return got[1]

    def attempt() -> Any:
        shard, code = coord.shard_for(ctx.node, tid)
        if shard is None:
            return failed(code)
        meta = shard.txns.get(tid)
        try:
            if meta is None:
                pid = fresh_id()
                if pid is None:
                    return BUSY
                meta = shard.txns[tid] = TxnMeta(tid, pid, timeout_ms=req.transaction_timeout_ms,
                                                 update_ms=ctx.now_ms)
            if meta.pending or meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
                return BUSY
            if expected is not None and not (
                    meta.producer_epoch < 0 or expected[0] == meta.producer_id or
                    (expected[0] == meta.prev_producer_id and expected[1] >= 32766)):
                return failed(E.PRODUCER_FENCED)
            if meta.state == ONGOING:
                # fence the producer: abort with the epoch bumped, then bump again (the retry)
                coord.end(shard, meta, False, meta.producer_epoch + 1, meta.client_tv)
                return BUSY
            if expected is not None and expected[0] == meta.producer_id and \
                    meta.producer_epoch >= 0 and expected[1] != meta.producer_epoch:
                return failed(E.PRODUCER_FENCED)
            if meta.epoch_exhausted:
                pid = fresh_id()
                if pid is None:
                    return BUSY
                new = meta.copy(prev_producer_id=meta.producer_id, producer_id=pid,
                                producer_epoch=0)
            else:
                new = meta.copy(producer_epoch=meta.producer_epoch + 1)
        except _Failed as e:
            return failed(e.code)
        new.timeout_ms = req.transaction_timeout_ms
        new.state, new.partitions, new.start_ms = EMPTY, set(), -1

        def answer(code: int) -> Any:
            if code:
                return failed(code)
            return R(throttle_time_ms=0, error_code=0, producer_id=meta.producer_id,
                     producer_epoch=meta.producer_epoch)
        return _Wait(coord.transit(shard, meta, new), answer)

    return _serve(ctx, attempt, failed)


class _Failed(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


# ------------------------------------------------------------------ AddPartitionsToTxn


def _check(meta: TxnMeta | None, pid: int, epoch: int) -> int | None:
    """The common checks of AddPartitions, AddOffsets and EndTxn (None: they pass, or BUSY is
    the caller's to decide)."""
    if meta is None or meta.producer_id != pid:
        return E.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != epoch:
        return E.PRODUCER_FENCED
    return None


def add_to_txn(ctx: RequestContext, tid: str, pid: int, epoch: int,
               partitions: set[tuple[str, int]], answer: Callable[[int], Any]) -> Any:
    """``handleAddPartitionsToTransaction``: the partitions join the transaction (it becomes
    Ongoing) once the new state is written."""
    coord = coordinator(ctx)
    if not tid:
        return answer(E.INVALID_REQUEST)

    def attempt() -> Any:
        shard, code = coord.shard_for(ctx.node, tid)
        if shard is None:
            return answer(code)
        meta = shard.txns.get(tid)
        if meta is not None and meta.pending:
            return BUSY
        code = _check(meta, pid, epoch)
        if code is not None:
            return answer(code)
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return BUSY
        if meta.state == ONGOING and partitions <= meta.partitions:
            return answer(E.NONE)
        new = meta.copy(state=ONGOING, partitions=meta.partitions | partitions)
        if meta.state != ONGOING:
            new.start_ms = ctx.now_ms
        return _Wait(coord.transit(shard, meta, new), answer)

    return _serve(ctx, attempt, answer)


def add_partitions_to_txn(ctx: RequestContext, req: Any) -> Any:
    R = M.AddPartitionsToTxnResponse
    if ctx.version >= 4:  # the broker-to-coordinator batch form; clients send one transaction
        if len(req.transactions) != 1 or req.transactions[0].verify_only:
            return R(throttle_time_ms=0, error_code=E.INVALID_REQUEST, results_by_transaction=())
        t = req.transactions[0]
        tid, pid, epoch, topics = t.transactional_id, t.producer_id, t.producer_epoch, t.topics
    else:
        tid, pid, epoch = req.v3_and_below_transactional_id, req.v3_and_below_producer_id, \
            req.v3_and_below_producer_epoch
        topics = req.v3_and_below_topics
    partitions = {(t.name, p) for t in topics for p in t.partitions}
    image = ctx.cluster.broker(ctx.node).image
    unknown = {(n, p) for n, p in partitions
               if image.topic(n) is None or p not in image.topic(n).partitions}

    def answer(code: int) -> Any:
        code = _fenced(code, ctx.version, 2)
        # Kafka: unknown partitions fail with UNKNOWN_TOPIC_OR_PARTITION, the rest
        # OPERATION_NOT_ATTEMPTED (KafkaApis#handleAddPartitionsToTxnRequest)
        def code_of(tp: tuple[str, int]) -> int:
            if unknown:
                return E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else \
                    E.OPERATION_NOT_ATTEMPTED
            return code
        results = tuple(R.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=tuple(
            R.AddPartitionsToTxnPartitionResult(partition_index=p,
                                                partition_error_code=code_of((t.name, p)))
            for p in t.partitions)) for t in topics)
        if ctx.version >= 4:
            return R(throttle_time_ms=0, error_code=0, results_by_transaction=(
                R.AddPartitionsToTxnResult(transactional_id=tid, topic_results=results),))
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=results)
    if unknown:
        return answer(E.NONE)
    return add_to_txn(ctx, tid, pid, epoch, partitions, answer)


def add_offsets_to_txn(ctx: RequestContext, req: Any) -> Any:
    """The group's ``__consumer_offsets`` partition joins the transaction, so its commit
    marker makes the TxnOffsetCommit offsets visible."""
    def answer(code: int) -> Any:
        return M.AddOffsetsToTxnResponse(throttle_time_ms=0,
                                         error_code=_fenced(code, ctx.version, 2))
    partition = partition_for(req.group_id, ctx.cluster.config.offsets_topic_num_partitions)
    return add_to_txn(ctx, req.transactional_id, req.producer_id, req.producer_epoch,
                      {("__consumer_offsets", partition)}, answer)


# ------------------------------------------------------------------ EndTxn


def end_txn(ctx: RequestContext, req: Any) -> Any:
    """``TransactionCoordinator#endTransaction``: Prepare{Commit,Abort} is written and answered;
    the markers follow. From EndTxn v5 (transaction.version 2, KIP-890) the epoch is bumped at
    every end and the answer carries it."""
    R = M.EndTxnResponse
    coord = coordinator(ctx)
    tv2 = ctx.version >= 5 and coord.transaction_version() >= 2
    tid, pid, epoch, commit = req.transactional_id, req.producer_id, req.producer_epoch, \
        req.committed

    def failed(code: int, meta: TxnMeta | None = None) -> Any:
        return R(throttle_time_ms=0, error_code=_fenced(code, ctx.version, 2),
                 producer_id=meta.producer_id if meta and not code else -1,
                 producer_epoch=meta.producer_epoch if meta and not code else -1)
    if not tid:
        return failed(E.INVALID_REQUEST)

    def attempt() -> Any:
        shard, code = coord.shard_for(ctx.node, tid)
        if shard is None:
            return failed(code)
        meta = shard.txns.get(tid)
        if meta is not None and meta.pending:
            return BUSY
        done = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        if tv2 and meta is not None and meta.producer_id == pid and \
                epoch == meta.producer_epoch - 1 and meta.state == done:
            return failed(E.NONE, meta)   # a retry of the end that bumped the epoch
        code = _check(meta, pid, epoch)
        if code is not None:
            return failed(code)
        if meta.state == ONGOING or (tv2 and not commit and meta.state in (
                EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)):
            write = coord.end(shard, meta, commit, epoch + 1 if tv2 else epoch,
                              2 if tv2 else meta.client_tv)
            return _Wait(write, lambda c: failed(c, meta))
        if meta.state == done:
            return failed(E.NONE, meta)
        if meta.state == (PREPARE_COMMIT if commit else PREPARE_ABORT):
            return BUSY
        return failed(E.INVALID_TXN_STATE)

    return _serve(ctx, attempt, failed)
