"""The transaction coordinator behind the gateway, placed as Kafka 4.2 places it
(``TransactionCoordinator``, ``TransactionStateManager``):

* a transactional id lives in partition ``abs(transactionalId.hashCode()) %
  transaction.state.log.num.partitions`` of the real topic ``__transaction_state`` (created on
  the first FindCoordinator, compacted, ``transaction.state.log.replication.factor`` replicas);
  its coordinator is that partition's leader, and the leader epoch is the coordinator epoch;
* every transition is a TransactionLogValue appended to the leader's log; it takes effect (and
  the client is answered) once the high watermark covers it, as Kafka's coordinator appends
  with acks=all; while it is in flight the transaction is *pending* (CONCURRENT_TRANSACTIONS);
* a broker that becomes leader replays its own replica: ongoing transactions go on, and the
  ones caught between Prepare and Complete have their markers written again
  (``TransactionStateManager#loadTransactionsForTxnTopicPartition``).

Markers (:mod:`.markers`) and expiry (``abortTimedOutTransactions``, every
``transaction.abort.timed.out.transaction.cleanup.interval.ms`` of virtual time) run from
:meth:`TxnCoordinator.tick`, which the gateway calls after every request it serves and while
a client waits on transaction work.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from ..groups.coordinator import CoordinatorShards, Write, partition_for
from . import records
from .markers import MarkerWriter
from .state import (
    ABORT_CHECK_INTERVAL_MS,
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TXN_TOPIC,
    TxnMeta,
    TxnShard,
)

E = ErrorCode
class TxnCoordinator(CoordinatorShards):
    """Every broker's transaction coordinator shards, kept by the gateway."""

    TOPIC = TXN_TOPIC

    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway
        self.cluster = gateway.cluster
        self.plane = gateway.data_plane
        self.shards: dict[tuple[int, int], TxnShard] = {}
        self.creating: Any = None
        self._seen_metadata: tuple = ()
        self._last_expiry_check = 0
        self.writes: list[Write] = []   # transitions in flight, polled by tick()
        self.markers = MarkerWriter(self)

    # ------------------------------------------------------------------ configuration

    @property
    def num_partitions(self) -> int:
        return self.cluster.config.transaction_state_log_num_partitions

    @property
    def max_timeout_ms(self) -> int:
        return self.cluster.config.transaction_max_timeout_ms

    def transaction_version(self) -> int:
        """The finalized transaction.version (Kafka 4.2 bootstraps 2)."""
        from kraft_testkit.controller.features import finalized_features
        return dict(finalized_features(self.cluster.metadata)).get("transaction.version", 0)

    def create_request(self) -> Any:
        """The CreateTopics for ``__transaction_state`` (``TransactionStateManager`` topic
        configs: compacted, min.insync.replicas 2, 100 MiB segments, no compression)."""
        R = M.CreateTopicsRequest
        rf = self.cluster.config.transaction_state_log_replication_factor
        configs = (("cleanup.policy", "compact"), ("compression.type", "uncompressed"),
                   ("min.insync.replicas", str(min(2, rf))),
                   ("segment.bytes", str(100 * 1024 * 1024)), ("unclean.leader.election.enable",
                                                               "false"))
        return R(topics=(R.CreatableTopic(
            name=TXN_TOPIC, num_partitions=self.num_partitions, replication_factor=rf,
            configs=tuple(R.CreatableTopicConfig(name=k, value=v) for k, v in configs)),),
            timeout_ms=30_000)

    # ------------------------------------------------------------------ shards

    def partition_of(self, transactional_id: str, partitions: int) -> int:
        return partition_for(transactional_id, partitions)

    def _load(self, broker: int, topic_id: Any, partition: int, epoch: int) -> TxnShard:
        """Become coordinator of a partition: replay this broker's replica of its log; the
        transactions left in Prepare* get their markers written again."""
        old = self.shards.pop((broker, partition), None)
        if old is not None:
            self.markers.forget(old)
        log = self.plane.log(broker, topic_id, partition)
        shard = TxnShard(broker, partition, topic_id, epoch)
        for tid, v in records.replay(b.data for b in log.batches).items():
            parts = {(p.topic, i) for p in (v.transaction_partitions or ()) for i in p.partition_ids}
            shard.txns[tid] = TxnMeta(tid, v.producer_id, v.producer_epoch,
                                      v.previous_producer_id, v.transaction_timeout_ms,
                                      v.transaction_status, parts,
                                      v.transaction_start_timestamp_ms,
                                      v.transaction_last_update_timestamp_ms,
                                      v.client_transaction_version)
        self.shards[(broker, partition)] = shard
        for meta in shard.txns.values():
            if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
                self.markers.start(shard, meta)
        return shard

    # ------------------------------------------------------------------ transitions

    def transit(self, shard: TxnShard, meta: TxnMeta, new: TxnMeta,
                then: Any = None) -> Write:
        """Write ``new`` as the transaction's state; it replaces ``meta`` once committed."""
        now = self.cluster.now_ms
        new.update_ms = now
        version = 1 if self.transaction_version() >= 1 else 0
        rec = (records.log_key(meta.transactional_id), records.log_value(new, version))
        log = self.plane.log(shard.broker, shard.topic_id, shard.partition)
        log.append([records.log_batch([rec], shard.leader_epoch, now)], shard.leader_epoch, now)
        self.plane.appended(shard.broker, shard.topic_id, shard.partition)  # KIP-227 answers
        meta.pending = True

        def commit() -> None:
            for name in ("producer_id", "producer_epoch", "prev_producer_id", "timeout_ms",
                         "state", "partitions", "start_ms", "update_ms", "client_tv",
                         "last_producer_epoch", "next_producer_id"):
                setattr(meta, name, getattr(new, name))
            meta.pending = False
            if then is not None:
                then()
        write = Write(self, shard, log.log_end_offset, commit)  # type: ignore[arg-type]
        if write.poll() is None:
            self.writes.append(write)
        return write

    def end(self, shard: TxnShard, meta: TxnMeta, commit: bool, epoch: int,
            client_tv: int, next_producer_id: int = -1, start_ms: int | None = None) -> Write:
        """Ongoing -> Prepare{Commit,Abort} at ``epoch``; markers once it is written. A TV2 end
        (``TransactionMetadata#prepareAbortOrCommit`` with epoch bump) passes the bumped epoch,
        remembers the one the client had, and the next producer id when it exhausts the epoch."""
        new = meta.copy(state=PREPARE_COMMIT if commit else PREPARE_ABORT, producer_epoch=epoch,
                        client_tv=client_tv, next_producer_id=next_producer_id)
        if client_tv >= 2:
            new.last_producer_epoch = meta.producer_epoch
        if start_ms is not None:     # TV2 abort with no partition added: start = now
            new.start_ms = start_ms
        return self.transit(shard, meta, new, lambda: self.markers.start(shard, meta))

    def complete(self, shard: TxnShard, meta: TxnMeta) -> None:
        """Every marker is written: Prepare* -> Complete*, partitions cleared
        (``TransactionMetadata#prepareComplete``: a TV2 end that exhausted the epoch moves to
        the next producer id at epoch 0)."""
        state = COMPLETE_COMMIT if meta.state == PREPARE_COMMIT else COMPLETE_ABORT
        new = meta.copy(state=state, partitions=set(), next_producer_id=-1)
        if meta.client_tv >= 2 and meta.next_producer_id >= 0:
            new.prev_producer_id, new.producer_id = meta.producer_id, meta.next_producer_id
            new.producer_epoch = 0
        self.transit(shard, meta, new)

    def after_end(self, meta: TxnMeta) -> tuple[int, int]:
        """The producer id and epoch an EndTxn answers once Prepare* is written: those Complete*
        will hold (the next producer id at epoch 0 after a TV2 overflow)."""
        if meta.client_tv >= 2 and meta.next_producer_id >= 0:
            return meta.next_producer_id, 0
        return meta.producer_id, meta.producer_epoch

    # ------------------------------------------------------------------ timers

    def tick(self) -> None:
        """Move markers along, load shards a broker came to lead, abort expired ones."""
        self._load_new_leaders()
        self.writes = [w for w in self.writes if w.poll() is None]
        self.markers.tick()
        for shard in list(self.shards.values()):
            if not self.is_current(shard):
                self.shards.pop((shard.broker, shard.partition), None)
                self.markers.forget(shard)
        now = self.cluster.now_ms
        if now // ABORT_CHECK_INTERVAL_MS > self._last_expiry_check // ABORT_CHECK_INTERVAL_MS:
            self._last_expiry_check = now
            self._abort_expired(now)

    def _abort_expired(self, now: int) -> None:
        """``TransactionCoordinator#abortTimedOutTransactions``: an Ongoing transaction past its
        timeout is aborted with its epoch bumped (the producer is fenced)."""
        for shard in list(self.shards.values()):
            for meta in list(shard.txns.values()):
                if meta.state == ONGOING and not meta.pending and \
                        meta.start_ms + meta.timeout_ms < now:
                    epoch = meta.producer_epoch + 1
                    self.end(shard, meta, False, epoch, meta.client_tv)

    def _load_new_leaders(self) -> None:
        """A broker that now leads a ``__transaction_state`` partition with state in its log
        loads it at once, as Kafka's coordinator does on election (checked when metadata
        moved)."""
        seen = tuple(getattr(self.cluster.broker(b), "metadata_offset", -1)
                     for b in self.cluster.broker_ids)
        if seen == self._seen_metadata:
            return
        self._seen_metadata = seen
        for broker in self.cluster.broker_ids:
            topic = self.topic(broker)
            if topic is None:
                continue
            for partition in topic.partitions:
                if (broker, partition) in self.shards or \
                        not self.leads(broker, topic.id, partition):
                    continue
                log = self.plane.logs.get((broker, topic.id, partition))
                if log is not None and log.batches:
                    self._shard(broker, topic, partition)

    def busy(self) -> bool:
        """True while markers or transitions are in flight (virtual time finishes them)."""
        return self.markers.busy() or bool(self.writes)
