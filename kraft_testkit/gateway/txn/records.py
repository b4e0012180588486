"""``__transaction_state`` records and transaction markers in Kafka's formats.

* A transaction log record: key = int16 type 0 (``CoordinatorRecordType.TRANSACTION_LOG``) +
  TransactionLogKey v0; value = int16 version + TransactionLogValue (``TransactionLog#
  valueToBytes``: v1 from transaction.version 1 on, v0 before); partitions null when Empty.
* A marker: a control batch (attributes transactional | control) of the producer's id and epoch,
  base sequence -1, one record whose key is (version 0, type: 0 abort, 1 commit) and whose value
  is int16 version 0 + EndTxnMarker (the coordinator epoch) (``EndTransactionMarker``,
  ``MemoryRecords#withEndTransactionMarker``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.records import (
    CONTROL_FLAG,
    TRANSACTIONAL_FLAG,
    Record,
    RecordBatch,
    iter_batches,
)

TRANSACTION_LOG_TYPE = 0
_I16 = struct.Struct(">h")
V = M.TransactionLogValue


def log_key(transactional_id: str) -> bytes:
    return _I16.pack(TRANSACTION_LOG_TYPE) + M.TransactionLogKey(
        transactional_id=transactional_id).encode(0)


def log_value(meta: Any, value_version: int) -> bytes:
    """The TransactionLogValue of ``meta`` (a TxnMeta) at ``value_version``."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = None if meta.state == 0 else tuple(
        V.PartitionsSchema(topic=t, partition_ids=tuple(p)) for t, p in by_topic.items())
    value = V(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
              transaction_timeout_ms=meta.timeout_ms, transaction_status=meta.state,
              transaction_partitions=parts,
              transaction_last_update_timestamp_ms=meta.update_ms,
              transaction_start_timestamp_ms=meta.start_ms,
              previous_producer_id=meta.prev_producer_id,
              client_transaction_version=meta.client_tv)
    return _I16.pack(value_version) + value.encode(value_version)


def log_batch(records: list[tuple[bytes, bytes | None]], leader_epoch: int, now_ms: int) -> bytes:
    return RecordBatch.build(0, [v for _, v in records], keys=[k for k, _ in records],
                             timestamp_ms=now_ms, leader_epoch=leader_epoch).encode()


def replay(raw_batches: Iterable[bytes]) -> dict[str, Any]:
    """transactional id -> its last TransactionLogValue (a tombstone removes it)."""
    out: dict[str, Any] = {}
    for raw in raw_batches:
        for _, b in iter_batches(raw):
            for r in b.records:
                if r.key is None or len(r.key) < 2 or \
                        _I16.unpack_from(r.key, 0)[0] != TRANSACTION_LOG_TYPE:
                    continue
                tid = M.TransactionLogKey.decode(r.key[2:], 0).transactional_id
                if r.value is None:
                    out.pop(tid, None)
                    continue
                (version,) = _I16.unpack_from(r.value, 0)
                out[tid] = V.decode(r.value[2:], version)
    return out


def marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 now_ms: int) -> bytes:
    """The control batch a partition leader appends for WriteTxnMarkers."""
    key = _I16.pack(0) + _I16.pack(1 if commit else 0)
    value = _I16.pack(0) + M.EndTxnMarker(coordinator_epoch=coordinator_epoch).encode(0)
    return RecordBatch(0, (Record(0, 0, key, value),), -1, TRANSACTIONAL_FLAG | CONTROL_FLAG, 0,
                       now_ms, now_ms, producer_id, producer_epoch, -1).encode()


def offsets_batch(records: list[tuple[bytes, bytes | None]], producer_id: int,
                  producer_epoch: int, now_ms: int) -> bytes:
    """TxnOffsetCommit's offset records: a transactional batch of the producer (its offsets
    count once its commit marker follows)."""
    recs = tuple(Record(i, 0, k, v) for i, (k, v) in enumerate(records))
    return RecordBatch(0, recs, -1, TRANSACTIONAL_FLAG, len(recs) - 1, now_ms, now_ms,
                       producer_id, producer_epoch, -1).encode()
