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
    MAX_EPOCH,
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


class Op:
    """An attempt run now and, while it says BUSY, again as virtual time moves: ``poll()`` gives
    its answer, or None while it waits (the partition leader polls one for Produce v12's
    implicit add). An attempt gives an answer, BUSY, or a _Wait for a write."""

    def __init__(self, coord: TxnCoordinator, attempt: Callable[[], Any]) -> None:
        self.coord, self.attempt = coord, attempt
        self.write: Any = None
        self.answer: Callable[[int], Any] | None = None

    def poll(self) -> Any:
        self.coord.tick()
        if self.write is None:
            got = self.attempt()
            if got is BUSY:
                return None
            if not isinstance(got, _Wait):
                return got
            self.write, self.answer = got.write, got.answer
        code = self.write.poll()
        return None if code is None else self.answer(code)  # type: ignore[misc]

    def timeout_code(self) -> int:
        return E.REQUEST_TIMED_OUT if self.write is not None else E.CONCURRENT_TRANSACTIONS


def _serve(ctx: RequestContext, attempt: Callable[[], Any], failed: Callable[[int], Any]) -> Any:
    """Answer now, or a Pending that retries while virtual time runs (see the module doc)."""
    op = Op(coordinator(ctx), attempt)
    first = op.poll()
    if first is not None:
        return first
    return Pending(op.poll, lambda: failed(op.timeout_code()),
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
    fresh_id = _NewProducerId(ctx)

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
            # TransactionMetadata#prepareProducerIdRotation / #prepareIncrementProducerEpoch
            if meta.epoch_exhausted and (expected is None or expected[1] == meta.producer_epoch):
                pid = fresh_id()
                if pid is None:
                    return BUSY
                new = meta.copy(prev_producer_id=meta.producer_id, producer_id=pid,
                                producer_epoch=0, last_producer_epoch=-1 if expected is None
                                else meta.producer_epoch)
            elif expected is None:
                new = meta.copy(producer_epoch=meta.producer_epoch + 1, last_producer_epoch=-1)
            elif meta.producer_epoch < 0 or expected[1] == meta.producer_epoch:
                new = meta.copy(producer_epoch=meta.producer_epoch + 1,
                                last_producer_epoch=meta.producer_epoch)
            elif expected[1] == meta.last_producer_epoch:
                new = meta.copy()        # a retry of a call that succeeded: no bump
            else:
                return failed(E.PRODUCER_FENCED)
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


class _NewProducerId:
    """A new producer id from the controller, asked for once and polled until it comes (None
    while the controller allocates a block; a refusal raises ``_Failed``)."""

    def __init__(self, ctx: RequestContext) -> None:
        self._ctx = ctx
        self._poll: Callable[[], Any] | None = None

    def __call__(self) -> int | None:
        if self._poll is None:
            self._poll = producer_ids.allocator(self._ctx)
        got = self._poll()
        if got is None:
            return None
        if got[0]:
            raise _Failed(got[0])
        return got[1]


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


def add_attempt(coord: TxnCoordinator, node: int, tid: str, pid: int, epoch: int,
                partitions: set[tuple[str, int]], answer: Callable[[int], Any],
                client_tv: int = 0) -> Callable[[], Any]:
    """``handleAddPartitionsToTransaction`` at the coordinator on ``node``: the partitions join
    the transaction (it becomes Ongoing, ``prepareAddPartitions``) once the new state is
    written; ``client_tv`` 2 for AddPartitionsToTxn v4+ and Produce v12's implicit add."""
    def attempt() -> Any:
        shard, code = coord.shard_for(node, tid)
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
        new = meta.copy(state=ONGOING, partitions=meta.partitions | partitions,
                        client_tv=client_tv)
        if meta.state != ONGOING:
            new.start_ms = coord.cluster.now_ms
        return _Wait(coord.transit(shard, meta, new), answer)
    return attempt


def add_to_txn(ctx: RequestContext, tid: str, pid: int, epoch: int,
               partitions: set[tuple[str, int]], answer: Callable[[int], Any],
               client_tv: int = 0) -> Any:
    if not tid:
        return answer(E.INVALID_REQUEST)
    coord = coordinator(ctx)
    return _serve(ctx, add_attempt(coord, ctx.node, tid, pid, epoch, partitions, answer,
                                   client_tv), answer)


def verify(coord: TxnCoordinator, node: int, tid: str, pid: int, epoch: int,
           partitions: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """``handleVerifyPartitionsInTransaction`` (AddPartitionsToTxn v4+ with verifyOnly, KIP-890
    part 1): each partition's error, TRANSACTION_ABORTABLE for one the transaction lacks. The
    committed state is read, pending transitions are not waited for, as Kafka does."""
    def every(code: int) -> dict[tuple[str, int], int]:
        return {tp: code for tp in partitions}
    if not tid:
        return every(E.INVALID_REQUEST)
    shard, code = coord.shard_for(node, tid)
    if shard is None:
        return every(code)
    meta = shard.txns.get(tid)
    if meta is None or meta.producer_id != pid:
        return every(E.INVALID_PRODUCER_ID_MAPPING)
    if meta.producer_epoch != epoch:
        return every(E.PRODUCER_FENCED)
    if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return every(E.CONCURRENT_TRANSACTIONS)
    return {tp: E.NONE if tp in meta.partitions else E.TRANSACTION_ABORTABLE
            for tp in partitions}


def _results(R: Any, topics: Any, code_of: Callable[[tuple[str, int]], int]) -> tuple:
    return tuple(R.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=tuple(
        R.AddPartitionsToTxnPartitionResult(partition_index=p,
                                            partition_error_code=code_of((t.name, p)))
        for p in t.partitions)) for t in topics)


def _unknown(ctx: RequestContext, partitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
    image = ctx.cluster.broker(ctx.node).image
    return {(n, p) for n, p in partitions
            if image.topic(n) is None or p not in image.topic(n).partitions}


def add_partitions_to_txn(ctx: RequestContext, req: Any) -> Any:
    """``KafkaApis#handleAddPartitionsToTxnRequest``: v0-3 from a client (one transaction), v4+
    the batch form a partition leader sends (``AddPartitionsToTxnManager``): ``verify_only``
    checks the partitions are in the transaction (KIP-890 part 1), else they are added with
    the client's transaction version 2 (KIP-890 part 2). Unknown partitions fail with
    UNKNOWN_TOPIC_OR_PARTITION, the transaction's others OPERATION_NOT_ATTEMPTED."""
    R = M.AddPartitionsToTxnResponse
    if ctx.version >= 4:
        return _add_partitions_batch(ctx, req)
    tid, pid, epoch = req.v3_and_below_transactional_id, req.v3_and_below_producer_id, \
        req.v3_and_below_producer_epoch
    topics = req.v3_and_below_topics
    partitions = {(t.name, p) for t in topics for p in t.partitions}
    unknown = _unknown(ctx, partitions)

    def answer(code: int) -> Any:
        code = _fenced(code, ctx.version, 2)

        def code_of(tp: tuple[str, int]) -> int:
            if unknown:
                return E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else \
                    E.OPERATION_NOT_ATTEMPTED
            return code
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=_results(R, topics, code_of))
    if unknown:
        return answer(E.NONE)
    return add_to_txn(ctx, tid, pid, epoch, partitions, answer)


def _add_partitions_batch(ctx: RequestContext, req: Any) -> Any:
    R = M.AddPartitionsToTxnResponse
    coord = coordinator(ctx)
    done: dict[int, Any] = {}      # index -> AddPartitionsToTxnResult
    ops: dict[int, Any] = {}       # index -> Op adding partitions

    def result(t: Any, code_of: Callable[[tuple[str, int]], int]) -> Any:
        return R.AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                          topic_results=_results(R, t.topics, code_of))
    for i, t in enumerate(req.transactions):
        partitions = {(x.name, p) for x in t.topics for p in x.partitions}
        unknown = _unknown(ctx, partitions)
        if t.transactional_id is None:
            return R(throttle_time_ms=0, error_code=E.INVALID_REQUEST, results_by_transaction=())
        if unknown:
            done[i] = result(t, lambda tp, u=unknown: E.UNKNOWN_TOPIC_OR_PARTITION
                             if tp in u else E.OPERATION_NOT_ATTEMPTED)
        elif t.verify_only:
            codes = verify(coord, ctx.node, t.transactional_id, t.producer_id, t.producer_epoch,
                           partitions)
            done[i] = result(t, codes.__getitem__)
        elif not t.transactional_id:
            done[i] = result(t, lambda tp: E.INVALID_REQUEST)
        else:
            def answer(code: int, t: Any = t) -> Any:
                return result(t, lambda tp: code)
            ops[i] = Op(coord, add_attempt(coord, ctx.node, t.transactional_id, t.producer_id,
                                           t.producer_epoch, partitions, answer, client_tv=2))

    def build() -> Any:
        return R(throttle_time_ms=0, error_code=0,
                 results_by_transaction=tuple(done[i] for i in sorted(done)))

    def poll() -> Any:
        for i, op in list(ops.items()):
            got = op.poll()
            if got is not None:
                done[i] = got
                del ops[i]
        return None if ops else build()

    def expire() -> Any:
        for i, op in ops.items():
            done[i] = op.answer(op.timeout_code()) if op.answer else \
                result(req.transactions[i], lambda tp, c=op.timeout_code(): c)
        return build()
    first = poll()
    if first is not None:
        return first
    return Pending(poll, expire,
                   virtual_deadline_ms=ctx.now_ms + autojump.wait_bound_ms(ctx.cluster))


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
    the markers follow. A client's transaction version is its request's
    (``TransactionVersion#transactionVersionForEndTxn``: v5+ is TV2, KIP-890 part 2): then the
    epoch is bumped at every end, the answer carries the new producer id and epoch, and a retry
    is recognised by the bumped epoch (:func:`_end_tv2`)."""
    R = M.EndTxnResponse
    coord = coordinator(ctx)
    tv2 = ctx.version >= 5
    tid, pid, epoch, commit = req.transactional_id, req.producer_id, req.producer_epoch, \
        req.committed

    def failed(code: int, answer: tuple[int, int] = (-1, -1)) -> Any:
        return R(throttle_time_ms=0, error_code=_fenced(code, ctx.version, 2),
                 producer_id=answer[0] if not code else -1,
                 producer_epoch=answer[1] if not code else -1)
    if not tid:
        return failed(E.INVALID_REQUEST)
    next_id = _NewProducerId(ctx)  # for an end that exhausts the epoch

    def attempt() -> Any:
        shard, code = coord.shard_for(ctx.node, tid)
        if shard is None:
            return failed(code)
        meta = shard.txns.get(tid)
        if meta is not None and meta.pending:
            return BUSY
        if tv2:
            try:
                return _end_tv2(coord, shard, meta, pid, epoch, commit, failed, next_id)
            except _Failed as e:
                return failed(e.code)
        done = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        code = _check(meta, pid, epoch)
        if code is not None:
            return failed(code)
        if meta.state == ONGOING:
            write = coord.end(shard, meta, commit, epoch, 0)
            return _Wait(write, lambda c: failed(c, coord.after_end(meta)))
        if meta.state == done:
            return failed(E.NONE, (meta.producer_id, meta.producer_epoch))
        if meta.state == (PREPARE_COMMIT if commit else PREPARE_ABORT):
            return BUSY
        return failed(E.INVALID_TXN_STATE)

    return _serve(ctx, attempt, failed)


def _end_tv2(coord: TxnCoordinator, shard: Any, meta: TxnMeta | None, pid: int, epoch: int,
             commit: bool, failed: Callable[..., Any], next_id: Callable[[], int | None]) -> Any:
    """The TV2 checks of ``TransactionCoordinator#endTransaction``: a retry is an epoch one
    below the coordinator's (or the last of an exhausted producer id, now at epoch 0); an end
    from Empty or Complete* may abort (no partition added); every end bumps the epoch
    (``prepareAbortOrCommit``), with a new producer id once it reaches Short.MaxValue."""
    if meta is None:
        return failed(E.INVALID_PRODUCER_ID_MAPPING)
    retry_overflow = meta.prev_producer_id == pid and epoch == MAX_EPOCH - 1 and \
        meta.producer_epoch == 0
    retry_bump = meta.producer_epoch == epoch + 1
    if meta.producer_id != pid and not retry_overflow:
        return failed(E.INVALID_PRODUCER_ID_MAPPING)
    state = meta.state
    if state in (ONGOING, EMPTY):
        valid = epoch == meta.producer_epoch
    elif state in (PREPARE_COMMIT, PREPARE_ABORT):
        valid = retry_bump
    else:
        valid = retry_bump or retry_overflow or epoch == meta.producer_epoch
    if not valid:
        return failed(E.PRODUCER_FENCED)
    retry = retry_bump or retry_overflow

    def prepare(no_partition_added: bool) -> Any:
        next_pid = -1
        if meta.epoch_exhausted:
            next_pid = next_id()
            if next_pid is None:
                return BUSY
        write = coord.end(shard, meta, commit, meta.producer_epoch + 1, 2, next_pid,
                          coord.cluster.now_ms if no_partition_added else None)
        return _Wait(write, lambda c: failed(c, coord.after_end(meta)))
    current = (meta.producer_id, meta.producer_epoch)
    if state == ONGOING:
        return prepare(False)
    if state == COMPLETE_COMMIT:
        if commit:
            return failed(E.NONE, current) if retry else failed(E.INVALID_TXN_STATE)
        return failed(E.INVALID_TXN_STATE) if retry else prepare(True)
    if state == COMPLETE_ABORT:
        if not commit:
            return failed(E.NONE, current) if retry else prepare(True)
        return failed(E.INVALID_TXN_STATE)
    if state == (PREPARE_COMMIT if commit else PREPARE_ABORT):
        return BUSY                      # CONCURRENT_TRANSACTIONS: the client would retry
    if state == EMPTY and not commit:
        return prepare(True)
    return failed(E.INVALID_TXN_STATE)
