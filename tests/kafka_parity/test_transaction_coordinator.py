"""TransactionCoordinatorTest (Kafka 4.2.1): the coordinator's EndTxn (transaction.version 2)
and verification checks, run on the kit's coordinator logic (``gateway/txn/apis``) against a
transaction in the state the Kafka test mocks (its ``TransactionMetadata``), with the
transaction-log write recorded instead of replicated, as the Kafka test mocks
``appendTransactionToLog``. Transactional id "known", producer id 10, epoch 1, producer id 2 =
11, as there. CONCURRENT_TRANSACTIONS is the coordinator's BUSY (the gateway holds the request
and retries it while virtual time runs, see docs/clients.md)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kraft_testkit.gateway.txn import apis
from kraft_testkit.gateway.txn.coordinator import TxnCoordinator
from kraft_testkit.gateway.txn.state import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    MAX_EPOCH,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TxnMeta,
    TxnShard,
)
from kraft_testkit.protocol.error_codes import ErrorCode as E

TID, PID, EPOCH, PID2 = "known", 10, 1, 11
NOW = 1_000
COMMIT, ABORT = True, False
PARTITIONS = {("topic1", 0)}


class Coordinator(TxnCoordinator):
    """The kit's coordinator with its log write recorded (``appendTransactionToLog`` mocked)."""

    def __init__(self) -> None:
        self.cluster = SimpleNamespace(now_ms=NOW)
        self.appended: list[TxnMeta] = []
        self.shard = TxnShard(0, 0, None, 0)

    def transit(self, shard, meta, new, then=None):
        self.appended.append(new)
        return SimpleNamespace(poll=lambda: None)

    def shard_for(self, broker, transactional_id):
        return self.shard, E.NONE


def _meta(state: int, *, pid=PID, prev=PID, next_pid=-1, epoch=EPOCH, last=EPOCH - 1,
          partitions=frozenset(), tv=2) -> TxnMeta:
    """``new TransactionMetadata(transactionalId, producerId, prevProducerId, nextProducerId,
    producerEpoch, lastProducerEpoch, txnTimeoutMs, state, partitions, start, update, tv)``."""
    return TxnMeta(TID, pid, epoch, prev, 1, state, set(partitions), 0, NOW, tv,
                   last_producer_epoch=last, next_producer_id=next_pid)


def end_txn(coord: Coordinator, meta: TxnMeta, epoch: int, commit: bool, pid: int = PID):
    """``handleEndTransaction`` with TV_2: (error, producer id, epoch) or "append" (the
    Prepare* transition written and, once committed, answered NONE) or CONCURRENT."""
    def failed(code, answer=(-1, -1)):
        return (code, *answer) if not code else (code, -1, -1)

    def next_id():
        return PID2
    got = apis._end_tv2(coord, coord.shard, meta, pid, epoch, commit, failed, next_id)
    if got is apis.BUSY:
        return E.CONCURRENT_TRANSACTIONS
    if isinstance(got, apis._Wait):
        return "append"
    return got


@pytest.mark.kafka("TransactionCoordinatorTest#testEndTxnWhenStatusIsCompleteCommitAndResultIsCommitInV2")
@pytest.mark.parametrize("retry", [False, True])
def test_end_txn_complete_commit_commit_v2(retry):
    coord = Coordinator()
    got = end_txn(coord, _meta(COMPLETE_COMMIT), EPOCH - 1 if retry else EPOCH, COMMIT)
    assert got[0] == (E.NONE if retry else E.INVALID_TXN_STATE)
    assert coord.appended == []


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReturnOkOnEndTxnWhenStatusIsCompleteAbortAndResultIsAbortInV2")
@pytest.mark.parametrize("retry", [False, True])
def test_end_txn_complete_abort_abort_v2(retry):
    coord = Coordinator()
    got = end_txn(coord, _meta(COMPLETE_ABORT), EPOCH - 1 if retry else EPOCH, ABORT)
    if retry:
        assert got[0] == E.NONE and coord.appended == []
    else:
        assert got == "append"
        (new,) = coord.appended
        assert (new.producer_epoch, new.start_ms, new.state) == (EPOCH + 1, NOW, PREPARE_ABORT)


@pytest.mark.kafka("TransactionCoordinatorTest#testEndTxnRequestWhenStatusIsCompleteCommitAndResultIsAbortInV2")
@pytest.mark.parametrize("retry", [False, True])
def test_end_txn_complete_commit_abort_v2(retry):
    coord = Coordinator()
    got = end_txn(coord, _meta(COMPLETE_COMMIT), EPOCH - 1 if retry else EPOCH, ABORT)
    if retry:
        assert got[0] == E.INVALID_TXN_STATE
    else:
        assert got == "append"
        assert (coord.appended[0].producer_epoch, coord.appended[0].start_ms) == (EPOCH + 1, NOW)


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort")
def test_end_txn_complete_abort_commit_v2():
    got = end_txn(Coordinator(), _meta(COMPLETE_ABORT), EPOCH - 1, COMMIT)  # requestEpoch(TV2)
    assert got[0] == E.INVALID_TXN_STATE


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReturnConcurrentTransactionsOnEndTxnRequestWhenStatusIsPrepareCommit")
def test_end_txn_prepare_commit_v2():
    assert end_txn(Coordinator(), _meta(PREPARE_COMMIT), EPOCH - 1, COMMIT) == \
        E.CONCURRENT_TRANSACTIONS


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsPrepareAbort")
def test_end_txn_prepare_abort_commit_v2():
    got = end_txn(Coordinator(), _meta(PREPARE_ABORT, last=-1), EPOCH - 1, COMMIT)
    assert got[0] == E.INVALID_TXN_STATE


@pytest.mark.kafka("TransactionCoordinatorTest#TestEndTxnRequestWhenEmptyTransactionStateForAbortInV2")
@pytest.mark.parametrize("retry", [False, True])
def test_end_txn_empty_abort_v2(retry):
    coord = Coordinator()
    got = end_txn(coord, _meta(EMPTY, last=-1), EPOCH - 1 if retry else EPOCH, ABORT)
    if retry:
        assert got[0] == E.PRODUCER_FENCED
    else:
        assert got == "append"
        assert (coord.appended[0].producer_epoch, coord.appended[0].start_ms) == (EPOCH + 1, NOW)


@pytest.mark.kafka("TransactionCoordinatorTest#TestEndTxnRequestWhenEmptyTransactionStateForCommitInV2")
@pytest.mark.parametrize("retry", [False, True])
def test_end_txn_empty_commit_v2(retry):
    got = end_txn(Coordinator(), _meta(EMPTY, last=-1), EPOCH - 1 if retry else EPOCH, COMMIT)
    assert got[0] == (E.PRODUCER_FENCED if retry else E.INVALID_TXN_STATE)


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReturnInvalidTxnRequestOnEndTxnV2IfNotEndTxnV2Retry")
def test_end_txn_v2_same_epoch_is_not_a_retry():
    assert end_txn(Coordinator(), _meta(PREPARE_COMMIT, last=-1), EPOCH, COMMIT)[0] == \
        E.PRODUCER_FENCED
    assert end_txn(Coordinator(), _meta(COMPLETE_COMMIT, last=-1), EPOCH, COMMIT)[0] == \
        E.INVALID_TXN_STATE


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReturnOkOnEndTxnV2IfEndTxnV2RetryEpochOverflow")
def test_end_txn_v2_retry_across_epoch_overflow():
    preparing = _meta(PREPARE_COMMIT, next_pid=PID2, epoch=MAX_EPOCH, last=MAX_EPOCH - 1)
    assert end_txn(Coordinator(), preparing, MAX_EPOCH - 1, COMMIT) == E.CONCURRENT_TRANSACTIONS
    done = _meta(COMPLETE_COMMIT, pid=PID2, prev=PID, epoch=0, last=-1)
    assert end_txn(Coordinator(), done, MAX_EPOCH - 1, COMMIT) == (E.NONE, PID2, 0)


@pytest.mark.kafka("TransactionCoordinatorTest#shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit")
def test_end_txn_ongoing_commit_v2_bumps_the_epoch():
    coord = Coordinator()
    assert end_txn(coord, _meta(ONGOING, partitions=PARTITIONS), EPOCH, COMMIT) == "append"
    (new,) = coord.appended
    assert (new.state, new.producer_epoch, new.last_producer_epoch, new.client_tv) == \
        (PREPARE_COMMIT, EPOCH + 1, EPOCH, 2)


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReplyWithInvalidPidMappingOnEndTxnWhenPidDoesntMatchMapped")
def test_end_txn_v2_other_producer_id():
    meta = _meta(ONGOING, epoch=0, last=-1, tv=0)
    assert end_txn(Coordinator(), meta, 0, COMMIT, pid=0)[0] == E.INVALID_PRODUCER_ID_MAPPING


@pytest.mark.kafka("TransactionCoordinatorTest#shouldReplyWithProducerFencedOnEndTxnWhenEpochIsNotSameAsTransaction")
def test_end_txn_v2_other_epoch():
    meta = _meta(ONGOING, tv=0)
    assert end_txn(Coordinator(), meta, 0, COMMIT)[0] == E.PRODUCER_FENCED


def _verify(meta: TxnMeta, pid: int, epoch: int, partitions=PARTITIONS) -> dict:
    coord = Coordinator()
    coord.shard.txns[TID] = meta
    return apis.verify(coord, 0, TID, pid, epoch, set(partitions))


@pytest.mark.kafka("TransactionCoordinatorTest#testVerifyPartitionHandling")
def test_verify_partition_handling():
    wrong_pid = _meta(PREPARE_COMMIT, pid=1, prev=0, epoch=0, last=-1, partitions=PARTITIONS,
                      tv=0)
    assert set(_verify(wrong_pid, 0, 0).values()) == {E.INVALID_PRODUCER_ID_MAPPING}
    old_epoch = _meta(PREPARE_COMMIT, pid=0, prev=0, epoch=0, last=-1, partitions=PARTITIONS,
                      tv=0)
    assert set(_verify(old_epoch, 0, 1).values()) == {E.PRODUCER_FENCED}
    assert set(_verify(old_epoch, 0, 0).values()) == {E.CONCURRENT_TRANSACTIONS}
    ongoing = _meta(ONGOING, pid=0, prev=0, epoch=0, last=-1, tv=0)
    ongoing.pending = True            # a pending transition does not matter
    assert set(_verify(ongoing, 0, 0).values()) == {E.TRANSACTION_ABORTABLE}


@pytest.mark.kafka("TransactionCoordinatorTest#shouldRespondWithErrorsNoneOnAddPartitionWhenOngoingVerifyOnlyAndPartitionsTheSame")
def test_verify_ongoing_same_partitions():
    meta = _meta(ONGOING, pid=0, prev=0, epoch=0, last=-1, partitions=PARTITIONS, tv=0)
    assert set(_verify(meta, 0, 0).values()) == {E.NONE}


@pytest.mark.kafka("TransactionCoordinatorTest#shouldRespondWithInvalidTxnStateWhenVerifyOnlyAndPartitionNotPresent")
def test_verify_partition_not_present():
    meta = _meta(EMPTY, pid=0, prev=0, epoch=0, last=-1, partitions=PARTITIONS, tv=0)
    got = _verify(meta, 0, 0, PARTITIONS | {("topic2", 0)})
    assert got == {("topic1", 0): E.NONE, ("topic2", 0): E.TRANSACTION_ABORTABLE}
