"""The small data plane: an in-memory log per replica that follows the brokers' replica model.

The brokers of the simulation keep no records (``broker/replicas.py`` models ISR movement only:
followers fetch from their leader every ``replica.fetch.backoff.ms`` and "read to the leader's
end"). The data plane puts records behind that model without touching it:

* A leader appends produced record batches to its log, stamping the base offset and its leader
  epoch (the CRC covers neither, so client batches are stored as they came).
* When a follower's replica fetch is answered without error (seen on the simulated network as
  the FetchResponse reaches the follower), the follower's log becomes the leader's log as it was
  when the leader handled that fetch. That is Kafka's fetch-and-truncate in one move: a follower
  that diverged (an old leader's unreplicated tail) loses the tail, as Kafka truncates it.
* A leader's high watermark is the smallest log end offset over its ISR (never going back);
  ``acks=all`` waits for it. The leader learns a follower's progress with the same fetch that
  carried the data (Kafka needs one more fetch: folded in, as the ISR model folds it).

Logs outlive process crashes (Kafka's log is on disk); a deleted topic's logs go.
Everything happens at simulator events (no wall clock, no randomness): same client requests at
the same virtual times, same logs.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import crc32c

from kraft_testkit.errors import KraftError
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc

_HEAD = struct.Struct(">qi")          # baseOffset, batchLength
_EPOCH_AT, _MAGIC_AT, _CRC_AT, _ATTRS_AT = 12, 16, 17, 21
_LAST_DELTA = struct.Struct(">i")     # at 23
_MAX_TS = struct.Struct(">q")         # at 35
BATCH_HEADER_BYTES = 61


class CorruptBatch(KraftError):
    """Produced bytes that are not valid v2 record batches (Kafka's CORRUPT_MESSAGE)."""


_PRODUCER = struct.Struct(">qhi")     # producerId, producerEpoch, baseSequence at 43
_ATTRS = struct.Struct(">h")          # attributes at 21
TRANSACTIONAL_ATTR, CONTROL_ATTR = 0x10, 0x20
#: Kafka keeps the last 5 batches of each producer to answer retried duplicates
PRODUCER_BATCHES_KEPT = 5


@dataclass(frozen=True)
class StoredBatch:
    """One record batch in a replica's log, as it is served to consumers."""

    base_offset: int
    last_offset: int
    epoch: int
    append_ms: int
    max_timestamp: int
    data: bytes
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    attributes: int = 0   # bit 4 transactional, bit 5 control (a transaction marker)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_ATTR)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_ATTR)

    @property
    def last_sequence(self) -> int:
        count = self.last_offset - self.base_offset
        return (self.base_sequence + count) & 0x7FFFFFFF


def producer_fields(raw: bytes) -> tuple[int, int, int]:
    """(producer id, producer epoch, base sequence) of a v2 batch (-1s when not idempotent)."""
    return _PRODUCER.unpack_from(raw, 43)


def split_batches(records: bytes) -> list[bytes]:
    """The v2 record batches a Produce request carries, checked (size, magic, CRC32C)."""
    out, pos = [], 0
    while pos < len(records):
        if len(records) - pos < BATCH_HEADER_BYTES:
            raise CorruptBatch(f"record batch at byte {pos} is truncated "
                               f"({len(records) - pos} bytes, a header needs {BATCH_HEADER_BYTES})")
        _, length = _HEAD.unpack_from(records, pos)
        end = pos + 12 + length
        if length < BATCH_HEADER_BYTES - 12 or end > len(records):
            raise CorruptBatch(f"record batch at byte {pos} claims {length} bytes; "
                               f"{len(records) - pos - 12} follow")
        if records[pos + _MAGIC_AT] != 2:
            raise CorruptBatch(f"record batch at byte {pos} has magic {records[pos + _MAGIC_AT]}"
                               ", only v2 batches are accepted")
        (crc,) = struct.unpack_from(">I", records, pos + _CRC_AT)
        if crc32c.crc32c(records[pos + _ATTRS_AT:end]) != crc:
            raise CorruptBatch(f"record batch at byte {pos} fails its CRC32C check")
        out.append(bytes(records[pos:end]))
        pos = end
    if not out:
        raise CorruptBatch("a produce request with no record batch")
    return out


_LAST_OFFSET = attrgetter("last_offset")


class PartitionLog:
    """One replica's log: batches in offset order, and the high watermark this replica knows."""

    def __init__(self) -> None:
        self.batches: list[StoredBatch] = []
        self._append_ms: list[int] = []
        self.high_watermark = 0
        self.log_start_offset = 0

    @property
    def log_end_offset(self) -> int:
        end = self.batches[-1].last_offset + 1 if self.batches else 0
        return end if end >= self.log_start_offset else self.log_start_offset

    def increment_log_start(self, offset: int) -> bool:
        """Move the log start offset up to ``offset`` (``UnifiedLog#maybeIncrementLogStartOffset``:
        never down; the caller checks the high watermark). The batches stay in memory: reads,
        timestamps and the epoch cache look only at and past the start, as Kafka's log keeps a
        segment the new start falls inside."""
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        return True

    def append(self, raw_batches: list[bytes], epoch: int, now_ms: int) -> int:
        """Append client batches as the leader at ``epoch``; returns the first offset."""
        first = self.log_end_offset
        for raw in raw_batches:
            base = self.log_end_offset
            (delta,) = _LAST_DELTA.unpack_from(raw, 23)
            (max_ts,) = _MAX_TS.unpack_from(raw, 35)
            pid, pepoch, seq = producer_fields(raw)
            (attrs,) = _ATTRS.unpack_from(raw, _ATTRS_AT)
            data = bytearray(raw)
            struct.pack_into(">q", data, 0, base)
            struct.pack_into(">i", data, _EPOCH_AT, epoch)
            self.batches.append(StoredBatch(base, base + delta, epoch, now_ms, max_ts,
                                            bytes(data), pid, pepoch, seq, attrs))
            self._append_ms.append(now_ms)
        return first

    def check_producer(self, raw: bytes) -> tuple[int, int]:
        """Kafka's idempotence check of one batch: (0, -1) to append, (0, offset) for a retried
        duplicate (answered with its first offset), or (error code, -1).

        The producer's state is read back from the log (its last batches), so it follows
        replication, truncation and leader changes as the log does.
        """
        pid, pepoch, seq = producer_fields(raw)
        if pid < 0:
            return 0, -1
        mine = []  # its last batches, newest first while collecting (a long log is not walked)
        marker_epoch = -1  # a transaction marker after them carries the producer's epoch
        for b in reversed(self.batches):
            if b.producer_id == pid:
                if b.is_control:
                    marker_epoch = max(marker_epoch, b.producer_epoch)
                    continue
                mine.append(b)
                if len(mine) == PRODUCER_BATCHES_KEPT:
                    break
        mine.reverse()
        current = max(marker_epoch, mine[-1].producer_epoch if mine else -1)
        if pepoch < current:
            return 47, -1   # INVALID_PRODUCER_EPOCH
        if not mine or pepoch > mine[-1].producer_epoch:
            return (0, -1) if seq == 0 else (45, -1)  # OUT_OF_ORDER_SEQUENCE_NUMBER
        (delta,) = _LAST_DELTA.unpack_from(raw, 23)
        last_seq = (seq + delta) & 0x7FFFFFFF
        for b in mine:
            if b.producer_epoch == pepoch and b.base_sequence == seq and \
                    b.last_sequence == last_seq:
                return 0, b.base_offset
        if seq != (mine[-1].last_sequence + 1) & 0x7FFFFFFF:
            return 45, -1
        return 0, -1

    def copy_from(self, leader: PartitionLog, upto_ms: int) -> None:
        """Become the leader's log as of ``upto_ms`` (fetch, truncating a divergent tail)."""
        n = bisect.bisect_right(leader._append_ms, upto_ms)
        have = len(self.batches)
        if have == n and (n == 0 or self.batches[-1] is leader.batches[n - 1]):
            return
        if 0 < have < n and self.batches[-1] is leader.batches[have - 1]:
            self.batches.extend(leader.batches[have:n])  # a prefix of the leader's: catch up
            self._append_ms.extend(leader._append_ms[have:n])
        else:
            self.batches = leader.batches[:n]
            self._append_ms = leader._append_ms[:n]
        self.high_watermark = min(self.high_watermark, self.log_end_offset)

    def read(self, offset: int, max_bytes: int, upto: int | None = None) -> bytes:
        """Whole committed batches from the one holding ``offset`` (at least one batch), below
        ``upto`` (the last stable offset for ``read_committed``; default the high watermark)."""
        i = bisect.bisect_right(self.batches, offset - 1, key=_LAST_OFFSET)
        limit = self.high_watermark if upto is None else min(upto, self.high_watermark)
        out, size = [], 0
        for b in self.batches[i:]:
            if b.last_offset >= limit:
                break
            if out and size + len(b.data) > max_bytes:
                break
            out.append(b.data)
            size += len(b.data)
        return b"".join(out)

    def epoch_entries(self, current_epoch: int = -1) -> list[tuple[int, int]]:
        """The leader-epoch cache: (epoch, start offset) per epoch, as Kafka's
        ``LeaderEpochFileCache`` holds it: one entry per epoch of the batches at or past the log
        start (the first cut to start at the log start: ``truncateFromStart``), plus the
        leader's own ``current_epoch`` at the log end it had when elected
        (``Partition#makeLeader`` assigns it) when it has appended nothing since."""
        start = self.log_start_offset
        i = bisect.bisect_right(self.batches, start - 1, key=_LAST_OFFSET)
        entries: list[tuple[int, int]] = []
        for b in self.batches[i:]:
            if not entries or b.epoch > entries[-1][0]:
                entries.append((b.epoch, max(b.base_offset, start)))
        if current_epoch >= 0 and (not entries or current_epoch > entries[-1][0]):
            entries.append((current_epoch, self.log_end_offset))
        return entries

    def end_offset_for_epoch(self, epoch: int, current_epoch: int) -> tuple[int, int]:
        """Kafka's OffsetForLeaderEpoch answer (``LeaderEpochFileCache#endOffsetFor``): for the
        latest epoch the log end; else the largest epoch <= ``epoch`` and the start of the next
        one (``epoch`` itself when it is older than every entry); (-1, -1) for an undefined or
        unknown newer epoch."""
        if epoch < 0:
            return -1, -1
        entries = self.epoch_entries(current_epoch)
        if entries and entries[-1][0] == epoch:
            return epoch, self.log_end_offset
        higher = next((e for e in entries if e[0] > epoch), None)
        if higher is None:
            return -1, -1
        floor = [e for e in entries if e[0] <= epoch]
        return (floor[-1][0] if floor else epoch), higher[1]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the first committed batch whose max timestamp >= ``timestamp``
        (-1, -1 when none): record-level precision would need decoding the batch."""
        start = self.log_start_offset
        i = bisect.bisect_right(self.batches, start - 1, key=_LAST_OFFSET)
        for b in self.batches[i:]:
            if b.last_offset >= self.high_watermark:
                break
            if b.max_timestamp >= timestamp:
                return b.max_timestamp, max(b.base_offset, start)
        return -1, -1

    def max_timestamp(self) -> tuple[int, int]:
        best = (-1, -1)
        i = bisect.bisect_right(self.batches, self.log_start_offset - 1, key=_LAST_OFFSET)
        for b in self.batches[i:]:
            if b.last_offset < self.high_watermark and b.max_timestamp > best[0]:
                best = (b.max_timestamp, b.last_offset)
        return best


Key = tuple[int, Uuid, int]


class DataPlane:
    """Every replica's log, kept in step with the simulated brokers' replica fetches."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.logs: dict[Key, PartitionLog] = {}
        self.enabled = True
        cluster.sim.network.on_deliver(self._on_deliver)

    def log(self, broker: int, topic_id: Uuid, partition: int) -> PartitionLog:
        key = (broker, topic_id, partition)
        log = self.logs.get(key)
        if log is None:
            log = self.logs[key] = PartitionLog()
        return log

    def leader_replica(self, broker: int, topic_id: Uuid, partition: int) -> Any:
        """The broker's LocalReplica of the partition when the broker is up (else None)."""
        machine = self.cluster.broker(broker)
        logic = getattr(machine, "logic", None)
        if logic is None:
            return None
        return logic.replicas.replicas.get((topic_id, partition))

    def appended(self, broker: int, topic_id: Uuid, partition: int) -> None:
        """Records were appended to the leader's log (or its high watermark or log start
        moved): the followers' next incremental fetch answers (KIP-227) carry the partition,
        as Kafka's carry a partition with data or a new high watermark or log start."""
        machine = self.cluster.broker(broker)
        logic = getattr(machine, "logic", None)
        if logic is not None:
            logic.replicas.partition_changed((topic_id, partition), data=True)

    def advance_high_watermark(self, broker: int, topic_id: Uuid, partition: int) -> int:
        """Move the leader's high watermark to the smallest log end over its ISR."""
        log = self.log(broker, topic_id, partition)
        rep = self.leader_replica(broker, topic_id, partition)
        if rep is None or rep.leader != broker:
            return log.high_watermark
        ends = [log.log_end_offset]
        for member in rep.isr:
            if member != broker:
                other = self.logs.get((member, topic_id, partition))
                ends.append(other.log_end_offset if other is not None else 0)
        hw = max(log.high_watermark, min(ends))
        if hw != log.high_watermark:
            log.high_watermark = hw
            self.appended(broker, topic_id, partition)  # an answer carries a new HW too
        return hw

    def forget_deleted(self, image: Any) -> None:
        for key in [k for k in self.logs if image.topics.by_id(k[1]) is None]:
            del self.logs[key]

    def _on_deliver(self, src: int, dst: int, msg: object) -> None:
        if not self.enabled or not isinstance(msg, rpc.Response):
            return
        body = msg.body
        if not isinstance(body, M.FetchResponse) or dst < 0:
            return
        for topic in body.responses:
            if topic.topic_id == Uuid.METADATA_TOPIC_ID:
                return
            for p in topic.partitions:
                if p.error_code == 0:
                    self._replicate(src, dst, topic.topic_id, p.partition_index)

    def _replicate(self, leader: int, follower: int, topic_id: Uuid, partition: int) -> None:
        source = self.logs.get((leader, topic_id, partition))
        rep = self.leader_replica(leader, topic_id, partition)
        if rep is None:
            return
        state = rep.followers.get(follower)
        if state is None or state.last_fetch_ms < 0:
            return
        mine = self.log(follower, topic_id, partition)
        if source is None:
            source = self.log(leader, topic_id, partition)
        mine.copy_from(source, state.last_fetch_ms)
        # the fetch answer carries the leader's log start; the follower moves its own up to it
        # (ReplicaFetcherThread#processPartitionData; below its log end Kafka's fetch is
        # OFFSET_OUT_OF_RANGE and the follower restarts empty there: truncateFullyAndStartAt)
        mine.increment_log_start(source.log_start_offset)
        hw = self.advance_high_watermark(leader, topic_id, partition)
        mine.high_watermark = max(mine.high_watermark, min(hw, mine.log_end_offset))

    def low_watermark(self, broker: int, topic_id: Uuid, partition: int) -> int:
        """The leader's low watermark (``Partition#lowWatermarkIfLeader``): the smallest log
        start offset over its own log and the replicas on live (unfenced) brokers, as the leader
        knows them from their fetches (-1 for one that never fetched)."""
        low = self.log(broker, topic_id, partition).log_start_offset
        machine = self.cluster.broker(broker)
        image = getattr(machine, "image", None)
        reg = None if image is None else image.partition(topic_id, partition)
        if reg is None:
            return low
        for member in reg.replicas:
            if member == broker:
                continue
            live = image.cluster.broker(member)
            if live is None or live.fenced:
                continue
            other = self.logs.get((member, topic_id, partition))
            low = min(low, other.log_start_offset if other is not None else -1)
        return low
