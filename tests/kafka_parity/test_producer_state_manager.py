"""ProducerStateManagerTest (Kafka 4.2.1): a producer's state in one partition log, as the kit
keeps it (read back from the log's batches: ``PartitionLog#check_producer`` for data batches,
``gateway/txn/admin.marker_error`` for transaction markers, ``ProducerAppendInfo``'s
``checkProducerEpoch`` and ``checkCoordinatorEpoch``). Producer id 1, epoch 0, sequence 0 as
the Kafka test's defaults; an append the Kafka test expects to throw is the error code here."""

from __future__ import annotations

import pytest

from kraft_testkit.gateway.data_plane import PartitionLog
from kraft_testkit.gateway.txn import records
from kraft_testkit.gateway.txn.admin import marker_error
from kraft_testkit.protocol.error_codes import ErrorCode as E
from kraft_testkit.protocol.records import TRANSACTIONAL_FLAG, Record, RecordBatch

PID = 1
COMMIT, ABORT = True, False


def _client_batch(epoch: int, seq: int, transactional: bool) -> bytes:
    return RecordBatch(0, (Record(0, 0, None, b"v"),), -1,
                       TRANSACTIONAL_FLAG if transactional else 0, 0, 0, 0, PID, epoch,
                       seq).encode()


def append_client(log: PartitionLog, epoch: int, seq: int, transactional: bool) -> int:
    """``appendClientEntry``: the check, then the append when it passes; the error code."""
    raw = _client_batch(epoch, seq, transactional)
    code, _ = log.check_producer(raw)
    if code == E.NONE:
        log.append([raw], 0, 0)
    return code


def append_marker(log: PartitionLog, epoch: int, commit: bool, coordinator_epoch: int = 0,
                  tv: int = 0) -> int:
    """``appendEndTxnMarker``: the marker checks, then the control batch."""
    code = marker_error(log, PID, epoch, coordinator_epoch, tv)
    if code == E.NONE:
        log.append([records.marker_batch(PID, epoch, commit, coordinator_epoch, 0)], 0, 0)
    return code


def _marker_epoch(epoch: int, tv: int) -> int:
    """``markerEpochForTransactionVersion``: TV2 markers bump the epoch."""
    return epoch + 1 if tv >= 2 else epoch


@pytest.mark.kafka("ProducerStateManagerTest#testAppendTxnMarkerWithNoProducerState")
def test_append_txn_marker_with_no_producer_state():
    log = PartitionLog()
    assert append_marker(log, 2, COMMIT) == E.NONE
    # fencing still works with only the marker left; a non-zero sequence is out of order
    assert append_client(log, 0, 0, False) == E.INVALID_PRODUCER_EPOCH
    assert append_client(log, 2, 17, False) == E.OUT_OF_ORDER_SEQUENCE_NUMBER


@pytest.mark.kafka("ProducerStateManagerTest#testControlRecordBumpsProducerEpoch")
def test_control_record_bumps_producer_epoch():
    log = PartitionLog()
    assert append_client(log, 0, 0, False) == E.NONE
    assert append_marker(log, 1, ABORT) == E.NONE
    assert append_client(log, 1, 0, False) == E.NONE    # the new epoch, from sequence 0


@pytest.mark.kafka("ProducerStateManagerTest#testOutOfSequenceAfterControlRecordEpochBump")
def test_out_of_sequence_after_control_record_epoch_bump():
    log = PartitionLog()
    assert append_client(log, 0, 0, True) == E.NONE
    assert append_client(log, 0, 1, True) == E.NONE
    assert append_marker(log, 1, ABORT) == E.NONE
    assert append_client(log, 1, 2, True) == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert append_client(log, 2, 2, True) == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert append_client(log, 1, 0, True) == E.NONE


@pytest.mark.kafka("ProducerStateManagerTest#testOldEpochForControlRecord")
@pytest.mark.parametrize("tv", [0, 2])
def test_old_epoch_for_control_record(tv):
    log = PartitionLog()
    assert append_client(log, 5, 0, True) == E.NONE
    assert append_marker(log, 3, COMMIT, tv=tv) == E.INVALID_PRODUCER_EPOCH
    # TV2 needs a strictly newer epoch; TV0 takes the same one
    assert append_marker(log, 5, COMMIT, tv=tv) == (E.INVALID_PRODUCER_EPOCH if tv >= 2
                                                     else E.NONE)


@pytest.mark.kafka("ProducerStateManagerTest#testCoordinatorFencing")
@pytest.mark.parametrize("tv", [0, 2])
def test_coordinator_fencing(tv):
    log = PartitionLog()
    assert append_client(log, 5, 0, True) == E.NONE
    e1 = _marker_epoch(5, tv)
    assert append_marker(log, e1, COMMIT, coordinator_epoch=1, tv=tv) == E.NONE
    e2 = _marker_epoch(e1, tv)
    assert append_marker(log, e2, COMMIT, coordinator_epoch=1, tv=tv) == E.NONE  # same: fine
    e3 = _marker_epoch(e2, tv)
    assert append_marker(log, e3, COMMIT, coordinator_epoch=2, tv=tv) == E.NONE  # bumped: fine
    e4 = _marker_epoch(e3, tv)
    assert append_marker(log, e4, COMMIT, coordinator_epoch=1, tv=tv) == \
        E.TRANSACTION_COORDINATOR_FENCED


@pytest.mark.kafka("ProducerStateManagerTest#testIdempotentTransactionMarkerRetryTV2")
def test_idempotent_transaction_marker_retry_tv2():
    log = PartitionLog()
    assert append_client(log, 0, 0, True) == E.NONE
    assert append_marker(log, 1, COMMIT, tv=2) == E.NONE
    # the same marker again, the transaction already ended: a retry, written again
    assert append_marker(log, 1, COMMIT, tv=2) == E.NONE
    assert sum(b.is_control for b in log.batches) == 2
