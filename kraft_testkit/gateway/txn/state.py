"""The coordinator's view of one transactional id (``TransactionMetadata``,
``TransactionState``) and of one ``__transaction_state`` partition."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TXN_TOPIC = "__transaction_state"
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT = range(6)
STATE_NAMES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
               "CompleteAbort")
ABORT_CHECK_INTERVAL_MS = 10_000     # transaction.abort.timed.out.transaction.cleanup.interval.ms
MAX_EPOCH = 32767                     # Short.MaxValue


@dataclass
class TxnMeta:
    """``TransactionMetadata``: one transactional id's state at its coordinator."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = -1
    prev_producer_id: int = -1
    timeout_ms: int = 60_000
    state: int = EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    client_tv: int = 0
    pending: bool = False      # a transition is being written
    markers: Any = None        # the MarkerJob while Prepare* markers are written

    def copy(self, **changes: Any) -> TxnMeta:
        out = TxnMeta(self.transactional_id, self.producer_id, self.producer_epoch,
                      self.prev_producer_id, self.timeout_ms, self.state, set(self.partitions),
                      self.start_ms, self.update_ms, self.client_tv)
        for k, v in changes.items():
            setattr(out, k, v)
        return out

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1


@dataclass
class TxnShard:
    """The coordinator state of one ``__transaction_state`` partition on its leader."""

    broker: int
    partition: int
    topic_id: Any
    leader_epoch: int
    txns: dict[str, TxnMeta] = field(default_factory=dict)
