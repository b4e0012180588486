"""What a partition's log says about transactions, as Kafka's ProducerStateManager and
transaction index keep it: the transactions still open (their first offset), the completed ones
(their marker's offset), the aborted ones a ``read_committed`` reader must skip, and the last
stable offset (``UnifiedLog#lastStableOffset``: the first offset of the earliest transaction not
yet decided and replicated, at most the high watermark).

Built from the log's batches, incrementally: the index remembers how far it read, and reads
again from the start only when the log was replaced (a follower's truncation).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.protocol.records import decode_batch

ABORT, COMMIT = 0, 1   # ControlRecordType of a transaction marker


@dataclass
class TxnIndex:
    batches: Any = None                   # the list object indexed (identity)
    scanned: int = 0
    last: Any = None                      # the last batch indexed
    ongoing: dict[int, int] = field(default_factory=dict)       # pid -> first offset
    #: (marker offset, pid, first offset, aborted), in marker order
    completed: list[tuple[int, int, int, bool]] = field(default_factory=list)
    aborted_last: list[int] = field(default_factory=list)        # marker offsets, aborted only
    aborted: list[tuple[int, int, int]] = field(default_factory=list)  # (marker, pid, first)


def marker_type(data: bytes) -> int:
    """ABORT or COMMIT, from a control batch's one record key (version int16, type int16)."""
    batch, _ = decode_batch(data, verify_crc=False)
    key = batch.records[0].key or b"\0\0\0\0"
    return int.from_bytes(key[2:4], "big", signed=True)


def index(log: Any) -> TxnIndex:
    idx: TxnIndex | None = getattr(log, "_txn_index", None)
    batches = log.batches
    if idx is None or idx.batches is not batches or idx.scanned > len(batches) or \
            (idx.scanned and batches[idx.scanned - 1] is not idx.last):
        idx = TxnIndex(batches=batches)
        log._txn_index = idx
    for b in batches[idx.scanned:]:
        if b.is_control:
            first = idx.ongoing.pop(b.producer_id, None)
            if first is not None:
                aborted = marker_type(b.data) == ABORT
                idx.completed.append((b.base_offset, b.producer_id, first, aborted))
                if aborted:
                    idx.aborted_last.append(b.base_offset)
                    idx.aborted.append((b.base_offset, b.producer_id, first))
        elif b.is_transactional and b.producer_id not in idx.ongoing:
            idx.ongoing[b.producer_id] = b.base_offset
    idx.scanned = len(batches)
    idx.last = batches[-1] if batches else None
    return idx


def last_stable_offset(log: Any, high_watermark: int) -> int:
    """The first offset of a transaction not decided, or decided by a marker the high watermark
    does not cover yet; else the high watermark."""
    idx = index(log)
    lso = high_watermark
    for first in idx.ongoing.values():
        lso = min(lso, first)
    for marker, _, first, _ in reversed(idx.completed):
        if marker < high_watermark:
            break
        lso = min(lso, first)
    return lso


def aborted_transactions(log: Any, start: int, upto: int) -> list[tuple[int, int]]:
    """(producer id, first offset) of the aborted transactions a read from ``start`` to below
    ``upto`` overlaps (``UnifiedLog#collectAbortedTransactions``)."""
    idx = index(log)
    i = bisect.bisect_left(idx.aborted_last, start)
    return [(pid, first) for _, pid, first in idx.aborted[i:] if first < upto]


def open_transaction(log: Any, pid: int) -> int | None:
    """The first offset of ``pid``'s open transaction in this log, or None."""
    return index(log).ongoing.get(pid)
