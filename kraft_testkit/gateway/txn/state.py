"""The coordinator's view of one transactional id (``TransactionMetadata``,
``TransactionState``) and of one ``__transaction_state`` partition."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TXN_TOPIC = "__transaction_state"
NO_PRODUCER_ID = -1
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
    #: the epoch the client last saw (``lastProducerEpoch``: a retried InitProducerId or a TV2
    #: EndTxn retry is recognised by it); kept in memory, as Kafka 4.2.1 does not log it
    last_producer_epoch: int = -1
    #: the producer id a TV2 end switches to when it exhausts the epoch (``nextProducerId``)
    next_producer_id: int = -1
    pending: bool = False      # a transition is being written
    markers: Any = None        # the MarkerJob while Prepare* markers are written

    def copy(self, **changes: Any) -> TxnMeta:
        out = TxnMeta(self.transactional_id, self.producer_id, self.producer_epoch,
                      self.prev_producer_id, self.timeout_ms, self.state, set(self.partitions),
                      self.start_ms, self.update_ms, self.client_tv,
                      self.last_producer_epoch, self.next_producer_id)
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
