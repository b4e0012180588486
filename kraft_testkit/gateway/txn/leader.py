"""The partition leader's side of KIP-890 for a transactional Produce (``ReplicaManager#
appendRecords`` → ``maybeSendPartitionsToTransactionCoordinator``, ``AddPartitionsToTxnManager``,
``UnifiedLog#maybeStartTransactionVerification``):

* a batch of a producer whose transaction is already open in this partition at this epoch
  (``UnifiedLog#hasOngoingTransaction``) is appended as it is;
* otherwise the leader asks the transaction coordinator, as its AddPartitionsToTxn v4+ would:
  Produce v11 and older (transaction.version 1 clients) *verify* the partition is in the
  transaction (``verifyOnly``; a partition the client never added fails with
  INVALID_TXN_STATE, so no hanging transaction can start); Produce v12 (transaction.version 2
  clients) *adds* it (``verifyOnly=false``, the transaction becomes Ongoing) before appending.

The coordinator is the one the leader's metadata names (the leader of the transactional id's
``__transaction_state`` partition) and is asked in-process: verification answers at once,
an add when its transaction-log write commits. Coordinator errors are mapped to the errors a
producer retries, as ``ReplicaManager#appendRecords``'s ``postVerificationCallback`` does.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol.error_codes import ErrorCode

from .. import autojump
from ..groups.coordinator import partition_for
from . import log_state
from .state import TXN_TOPIC

E = ErrorCode
#: ``AddPartitionsToTxnManager#produceRequestVersionToTransactionSupportedOperation``
DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED, ADD_PARTITION = range(3)


def operation(produce_version: int) -> int:
    if produce_version > 11:
        return ADD_PARTITION
    return GENERIC_ERROR_SUPPORTED if produce_version > 10 else DEFAULT_ERROR


def offsets_operation(txn_offset_commit_version: int) -> int:
    """``#txnOffsetCommitRequestVersionToTransactionSupportedOperation``."""
    if txn_offset_commit_version > 4:
        return ADD_PARTITION
    return GENERIC_ERROR_SUPPORTED if txn_offset_commit_version > 3 else DEFAULT_ERROR


def transactional(batches: list[Any]) -> tuple[int, int] | None:
    """(producer id, epoch) of the first transactional batch, or None."""
    from kraft_testkit.gateway.data_plane import producer_fields
    from kraft_testkit.protocol.records import TRANSACTIONAL_FLAG

    for raw in batches:
        attrs = int.from_bytes(raw[21:23], "big")
        pid, epoch, _ = producer_fields(raw)
        if pid >= 0 and attrs & TRANSACTIONAL_FLAG:
            return pid, epoch
    return None


def has_ongoing_transaction(log: Any, pid: int, epoch: int) -> bool:
    """``UnifiedLog#hasOngoingTransaction``: ``pid`` has an open transaction here and its
    latest epoch is ``epoch``."""
    if log_state.open_transaction(log, pid) is None:
        return False
    for b in reversed(log.batches):
        if b.producer_id == pid:
            return b.producer_epoch == epoch
    return False


def coordinator_node(ctx: Any, tid: str) -> int:
    """The transaction coordinator the leader's metadata names, -1 when none is alive
    (``AddPartitionsToTxnManager#getTransactionCoordinator``)."""
    topic = ctx.cluster.broker(ctx.node).image.topic(TXN_TOPIC)
    if topic is None or not topic.partitions:
        return -1
    leader = topic.partitions[partition_for(tid, len(topic.partitions))].leader
    return -1 if leader < 0 or autojump.down(ctx.cluster, leader) else leader


def map_error(code: int, op: int) -> int:
    """A coordinator's answer as the producer sees it (``AddPartitionsToTxnManager``'s handler
    and ``ReplicaManager#appendRecords``'s ``postVerificationCallback``)."""
    if code == E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    if code == E.TRANSACTION_ABORTABLE and op == DEFAULT_ERROR:
        return E.INVALID_TXN_STATE
    if code in (E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS,
                E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR):
        return E.NOT_ENOUGH_REPLICAS
    if code == E.CONCURRENT_TRANSACTIONS and op != ADD_PARTITION:
        return E.NOT_ENOUGH_REPLICAS
    return code


def map_offsets_error(code: int, op: int) -> int:
    """A coordinator's answer as TxnOffsetCommit gives it: ``AddPartitionsToTxnManager``'s
    mapping, then ``CoordinatorOperationExceptionHelper#handleOperationException``'s."""
    if code == E.PRODUCER_FENCED:
        code = E.INVALID_PRODUCER_EPOCH
    elif code == E.TRANSACTION_ABORTABLE and op == DEFAULT_ERROR:
        code = E.INVALID_TXN_STATE
    if code == E.NETWORK_EXCEPTION:
        return E.COORDINATOR_LOAD_IN_PROGRESS
    if code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if code in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    return code


def verify(ctx: Any, tid: str, pid: int, epoch: int, partitions: set[tuple[str, int]],
           op: int | None = None, mapper: Any = map_error) -> dict[tuple[str, int], int]:
    """Verification (verifyOnly) of ``partitions``: each one's mapped error (``op`` and
    ``mapper``: Produce's by default)."""
    from .apis import coordinator, verify as coordinator_verify

    op = operation(ctx.version) if op is None else op
    node = coordinator_node(ctx, tid)
    if node < 0:
        return {tp: mapper(E.COORDINATOR_NOT_AVAILABLE, op) for tp in partitions}
    codes = coordinator_verify(coordinator(ctx), node, tid, pid, epoch, partitions)
    return {tp: mapper(c, op) for tp, c in codes.items()}


def add(ctx: Any, tid: str, pid: int, epoch: int, partitions: set[tuple[str, int]],
        mapper: Any = map_error) -> Any:
    """The implicit add of Produce v12 and TxnOffsetCommit v5: an object whose ``poll()`` gives
    the mapped error once the coordinator has added the partitions (None while it works),
    ``timeout_code()`` after."""
    from .apis import Op, add_attempt, coordinator

    node = coordinator_node(ctx, tid)
    if node < 0:
        return _Now(mapper(E.COORDINATOR_NOT_AVAILABLE, ADD_PARTITION))
    coord = coordinator(ctx)
    return Op(coord, add_attempt(coord, node, tid, pid, epoch, partitions,
                                 lambda code: mapper(code, ADD_PARTITION), client_tv=2))


class _Now:
    def __init__(self, code: int) -> None:
        self.code = code

    def poll(self) -> int:
        return self.code

    def timeout_code(self) -> int:
        return self.code
