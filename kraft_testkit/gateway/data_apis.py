"""Produce, Fetch, ListOffsets and OffsetForLeaderEpoch, served by the partition leader from the
data plane's logs, with Kafka's checks (see ``ReplicaManager`` and ``Partition`` in Kafka):

* the broker must lead the partition and serve (a self-fenced or shut-down leader does not):
  NOT_LEADER_OR_FOLLOWER, with the leader it knows (Fetch v12+, Produce v10+);
* a client's ``current_leader_epoch`` older than the leader's: FENCED_LEADER_EPOCH; newer:
  UNKNOWN_LEADER_EPOCH;
* ``acks=all`` needs ``min.insync.replicas`` in the ISR (NOT_ENOUGH_REPLICAS) and answers when
  the high watermark covers the batch, REQUEST_TIMED_OUT after ``timeout_ms``, and
  NOT_LEADER_OR_FOLLOWER when leadership moved meanwhile;
* consumers read up to the high watermark; an offset past the log end is OFFSET_OUT_OF_RANGE;
  a fetch with nothing to return waits up to ``max_wait_ms`` (a long poll in wall time);
  a client's fetch session (KIP-227) picks what is served and what the answer keeps
  (``gateway/fetch_sessions.py``).
"""

from __future__ import annotations

import time
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from . import fetch_sessions
from .context import Pending, RequestContext
from .data_plane import CorruptBatch, split_batches
from .txn import leader, log_state

E = ErrorCode
_PR, _FR = M.ProduceResponse, M.FetchResponse
_LR, _OR = M.ListOffsetsResponse, M.OffsetForLeaderEpochResponse
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
READ_COMMITTED = 1   # IsolationLevel of Fetch and ListOffsets
#: a stepping gateway answers an empty fetch after at most this long (clients poll again)
LONG_POLL_CAP_S = 0.5


def _min_insync(image: Any, topic: str) -> int:
    for configs in (image.configs.topic(topic), image.configs.broker("")):
        value = configs.get("min.insync.replicas")
        if value is not None:
            return int(value)
    return 1


#: ``message.max.bytes`` / ``max.message.bytes`` default: 1 MiB plus the log overhead
MAX_MESSAGE_BYTES_DEFAULT = 1024 * 1024 + 12


def _max_message_bytes(image: Any, topic: str) -> int:
    """The largest record batch the topic takes (its ``max.message.bytes``, else the cluster's
    ``message.max.bytes``), as Kafka's UnifiedLog checks each appended batch."""
    value = image.configs.topic(topic).get("max.message.bytes")
    if value is None:
        value = image.configs.broker("").get("message.max.bytes")
    return MAX_MESSAGE_BYTES_DEFAULT if value is None else int(value)


class PartitionView:
    """One partition as the serving broker sees it: its local replica and its leader epoch."""

    def __init__(self, ctx: RequestContext, topic: Any, partition: int) -> None:
        self.ctx = ctx
        self.topic = topic
        self.partition = partition
        self.plane = ctx.gateway.data_plane
        self.rep = None if topic is None else \
            self.plane.leader_replica(ctx.node, topic.id, partition)

    def error(self, current_leader_epoch: int = -1) -> int:
        """Kafka's order (``Partition#getLocalLog``): a hosted replica checks the client's
        leader epoch against its own first (a follower too), then whether it leads."""
        if self.topic is None or self.partition not in self.topic.partitions:
            return E.UNKNOWN_TOPIC_OR_PARTITION
        rep = self.rep
        machine = self.ctx.cluster.broker(self.ctx.node)
        if machine is None or rep is None:
            return E.NOT_LEADER_OR_FOLLOWER
        if current_leader_epoch >= 0 and current_leader_epoch < rep.leader_epoch:
            return E.FENCED_LEADER_EPOCH
        if current_leader_epoch > rep.leader_epoch:
            return E.UNKNOWN_LEADER_EPOCH
        if rep.leader != self.ctx.node or not machine.logic.replicas.leader_serving or \
                not machine.logic.serving:
            return E.NOT_LEADER_OR_FOLLOWER
        return E.NONE

    @property
    def log(self) -> Any:
        return self.plane.log(self.ctx.node, self.topic.id, self.partition)

    def high_watermark(self) -> int:
        return self.plane.advance_high_watermark(self.ctx.node, self.topic.id, self.partition)

    def known_leader(self) -> tuple[int, int]:
        """(leader id, leader epoch) from this broker's metadata, (-1, -1) when unknown."""
        if self.topic is None or self.partition not in self.topic.partitions:
            return -1, -1
        reg = self.topic.partitions[self.partition]
        return reg.leader, reg.leader_epoch


def _image(ctx: RequestContext) -> Any:
    return ctx.cluster.broker(ctx.node).image


# ------------------------------------------------------------------ Produce


def produce(ctx: RequestContext, req: Any) -> Any:
    image = _image(ctx)
    answers: dict[tuple[str, int], Any] = {}
    todo: list[tuple[str, int, PartitionView, list[bytes]]] = []
    for t in req.topic_data:
        topic = image.topics.by_name(t.name)
        for p in t.partition_data:
            view = PartitionView(ctx, topic, p.index)
            code = E.INVALID_REQUIRED_ACKS if req.acks not in (0, 1, -1) else view.error()
            if code == E.NONE and req.acks == -1 and \
                    len(view.rep.isr) < _min_insync(image, t.name):
                code = E.NOT_ENOUGH_REPLICAS
            if code == E.NONE:
                try:
                    batches = split_batches(p.records or b"")
                except CorruptBatch as e:
                    ctx.gateway.log_line(f"node {ctx.node}: produce to {t.name}-{p.index}: {e}")
                    code = E.CORRUPT_MESSAGE
                else:
                    limit = _max_message_bytes(image, t.name)
                    if any(len(b) > limit for b in batches):
                        code = E.MESSAGE_TOO_LARGE
            if code != E.NONE:
                answers[(t.name, p.index)] = _produce_answer(ctx, view, code, -1)
                continue
            todo.append((t.name, p.index, view, batches))
    waits: list[tuple[str, int, PartitionView, int, int]] = []
    gate = _transaction_gate(ctx, req, todo, answers)

    def append_all() -> None:
        """Append what passed every check (``ReplicaManager#appendRecords``)."""
        now = ctx.now_ms
        for name, index, view, batches in todo:
            if (name, index) in answers:
                continue
            fresh = PartitionView(ctx, view.topic, index)
            code = fresh.error()
            if code != E.NONE:           # leadership moved while the coordinator added it
                answers[(name, index)] = _produce_answer(ctx, fresh, code, -1)
                continue
            log = fresh.log
            code, base = _idempotence(log, batches)
            if code != E.NONE:
                answers[(name, index)] = _produce_answer(ctx, fresh, code, -1)
                continue
            if base < 0:
                base = log.append(batches, fresh.rep.leader_epoch, now)
                fresh.plane.appended(ctx.node, fresh.topic.id, fresh.partition)
            if req.acks == -1:
                waits.append((name, index, fresh, log.log_end_offset, fresh.rep.leader_epoch))
            answers[(name, index)] = _produce_answer(ctx, fresh, E.NONE, base)

    def build() -> Any:
        by_topic: dict[str, list] = {}
        for (name, _), answer in answers.items():
            by_topic.setdefault(name, []).append(answer)
        return _PR(responses=tuple(_PR.TopicProduceResponse(name=n, partition_responses=tuple(a))
                                   for n, a in by_topic.items()), throttle_time_ms=0)

    def acks_zero() -> Any:
        if any(a.error_code for a in answers.values()):
            # Kafka's way to tell an acks=0 producer: close the connection
            ctx.connection.close_after_write = True
            ctx.gateway.log_line(f"node {ctx.node}: acks=0 produce failed; closing")
        return None

    def poll() -> Any:
        if gate:
            code = gate[0].poll()
            if code is None:
                return None
            _gate_failed(ctx, todo, answers, code, gate.pop().partitions)
            append_all()
        for name, index, view, end, epoch in list(waits):
            fresh = PartitionView(ctx, view.topic, index)
            if fresh.error() != E.NONE or fresh.rep.leader_epoch != epoch:
                answers[(name, index)] = _produce_answer(ctx, fresh, E.NOT_LEADER_OR_FOLLOWER, -1)
            elif fresh.high_watermark() >= end:
                pass
            else:
                continue
            waits.remove((name, index, view, end, epoch))
        return build() if not waits else None

    def expire() -> Any:
        if gate:
            _gate_failed(ctx, todo, answers, gate[0].timeout_code(), gate[0].partitions)
        for name, index, view, _, _ in waits:
            answers[(name, index)] = _produce_answer(ctx, view, E.REQUEST_TIMED_OUT, -1)
        return build()

    if not gate:
        append_all()
        if req.acks == 0:
            return acks_zero()
        if not waits:
            return build()
    else:
        first = poll()
        if first is not None:
            return acks_zero() if req.acks == 0 else first
        if req.acks == 0:   # no answer to wait for: an acks=0 append the coordinator held is lost
            ctx.gateway.log_line(f"node {ctx.node}: acks=0 transactional produce dropped")
            return None
    return Pending(poll, expire, virtual_deadline_ms=ctx.now_ms + max(req.timeout_ms, 0))


def _transaction_gate(ctx: RequestContext, req: Any, todo: list, answers: dict) -> list:
    """KIP-890 at the leader (:mod:`.txn.leader`): transactional batches whose transaction is not
    open here are verified now (Produce v11 and older; failures answered in ``answers``) or
    added by the coordinator first (v12: the one-element list holds that add)."""
    tid = getattr(req, "transactional_id", None)
    if not tid:
        return []
    need: set[tuple[str, int]] = set()
    producer = None
    for name, index, view, batches in todo:
        got = leader.transactional(batches)
        if got is None or leader.has_ongoing_transaction(view.log, *got):
            continue
        producer = got
        need.add((name, index))
    if producer is None:
        return []
    if leader.operation(ctx.version) == leader.ADD_PARTITION:
        return [_GateAdd(leader.add(ctx, tid, *producer, need), need)]
    for tp, code in leader.verify(ctx, tid, *producer, need).items():
        if code:
            view = next(v for n, i, v, _ in todo if (n, i) == tp)
            answers[tp] = _produce_answer(ctx, view, code, -1)
    return []


class _GateAdd:
    def __init__(self, op: Any, partitions: set[tuple[str, int]]) -> None:
        self.op, self.partitions = op, partitions

    def poll(self) -> Any:
        return self.op.poll()

    def timeout_code(self) -> int:
        return self.op.timeout_code()


def _gate_failed(ctx: RequestContext, todo: list, answers: dict, code: int,
                 partitions: set[tuple[str, int]]) -> None:
    """The implicit add failed: its partitions answer ``code`` (none of them is appended)."""
    if not code:
        return
    for name, index, view, _ in todo:
        if (name, index) in partitions and (name, index) not in answers:
            answers[(name, index)] = _produce_answer(ctx, view, code, -1)


def _idempotence(log: Any, batches: list[bytes]) -> tuple[int, int]:
    """(error, -1), (0, first offset of an earlier identical append), or (0, -1) to append."""
    if len(batches) == 1:
        return log.check_producer(batches[0])
    for raw in batches:  # several batches of one producer in one request: checked in order
        code, _ = log.check_producer(raw)
        if code:
            return code, -1
    return 0, -1


def _produce_answer(ctx: RequestContext, view: PartitionView, code: int, base: int) -> Any:
    leader, epoch = view.known_leader() if code == E.NOT_LEADER_OR_FOLLOWER else (-1, -1)
    return _PR.PartitionProduceResponse(
        index=view.partition, error_code=code, base_offset=base, log_append_time_ms=-1,
        log_start_offset=view.log.log_start_offset if code == E.NONE else -1,
        current_leader=_PR.LeaderIdAndEpoch(
            leader_id=leader, leader_epoch=epoch))


# ------------------------------------------------------------------ Fetch


def fetch(ctx: RequestContext, req: Any) -> Any:
    # the client's fetch session (KIP-227): what to serve, and how to shape the answer
    session, req = fetch_sessions.open_session(ctx, req)
    if session.context.kind == "error":
        return fetch_sessions.shape(ctx, session, _FR(throttle_time_ms=0, responses=()))
    shaped: list[Any] = []

    def done(response: Any) -> Any:  # once: the session moves with the answer it gives
        if not shaped:
            shaped.append(fetch_sessions.shape(ctx, session, response))
        return shaped[0]

    first = _fetch_once(ctx, req)
    if req.max_wait_ms <= 0 or _fetched_bytes(first) >= max(req.min_bytes, 1) or \
            _has_error(first):
        return done(first)
    wait_s = req.max_wait_ms / 1000.0
    speed = ctx.gateway.speed
    wait_s = wait_s / speed if speed else min(wait_s, LONG_POLL_CAP_S)

    def poll() -> Any:
        if ctx.cluster.broker(ctx.node) is None:
            return None  # died meanwhile: the gateway closes the connection
        if shaped:
            return shaped[0]
        if ctx.gateway.txns is not None and req.isolation_level == READ_COMMITTED:
            ctx.gateway.txns.tick()   # markers move the last stable offset
        answer = _fetch_once(ctx, req)
        return done(answer) if _fetched_bytes(answer) >= max(req.min_bytes, 1) or \
            _has_error(answer) else None

    def expire() -> Any:
        return shaped[0] if shaped else done(_fetch_once(ctx, req))

    if speed:
        return Pending(poll, expire, wall_deadline=time.monotonic() + wait_s)
    # stepping: while records past the fetch offset wait for replication, virtual time runs
    # for them (up to max_wait_ms, Kafka's long-poll bound); at the log end it waits for a
    # producer, in wall time
    return Pending(poll, expire, wall_deadline=time.monotonic() + wait_s,
                   virtual_deadline_ms=ctx.now_ms + req.max_wait_ms,
                   wants_time=lambda: _uncommitted_ahead(ctx, req))


def _uncommitted_ahead(ctx: RequestContext, req: Any) -> bool:
    """True when a fetched partition has records at or past the fetch offset that its high
    watermark does not cover yet: replication (virtual time) will bring them."""
    if ctx.cluster.broker(ctx.node) is None:
        return False
    image = _image(ctx)
    for t in req.topics:
        topic = image.topics.by_id(t.topic_id) if ctx.version >= 13 else \
            image.topics.by_name(t.topic)
        for fp in t.partitions:
            view = PartitionView(ctx, topic, fp.partition)
            if view.error(fp.current_leader_epoch) != E.NONE:
                continue
            end = view.log.log_end_offset
            if fp.fetch_offset >= end:
                continue
            if req.isolation_level != READ_COMMITTED or view.high_watermark() < end:
                return True
            txns = ctx.gateway.txns   # an open transaction ends only when its producer says
            if txns is not None and txns.busy():
                return True
    return False


def _fetched_bytes(response: Any) -> int:
    return sum(len(p.records or b"") for t in response.responses for p in t.partitions)


def _has_error(response: Any) -> bool:
    return any(p.error_code for t in response.responses for p in t.partitions)


def _fetch_once(ctx: RequestContext, req: Any) -> Any:
    image = _image(ctx)
    topics = []
    for t in req.topics:
        by_id = ctx.version >= 13
        topic = image.topics.by_id(t.topic_id) if by_id else image.topics.by_name(t.topic)
        parts = []
        for fp in t.partitions:
            view = PartitionView(ctx, topic, fp.partition)
            code = view.error(fp.current_leader_epoch)
            if code == E.UNKNOWN_TOPIC_OR_PARTITION and by_id and topic is None:
                code = E.UNKNOWN_TOPIC_ID
            parts.append(_fetch_partition(view, fp, code, req.isolation_level))
        topics.append(_FR.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id,
                                                 partitions=tuple(parts)))
    return _FR(throttle_time_ms=0, error_code=0, session_id=0, responses=tuple(topics))


def _fetch_partition(view: PartitionView, fp: Any, code: int, isolation: int = 0) -> Any:
    """One partition's data; ``read_committed`` (isolation 1) reads below the last stable
    offset and gets the aborted transactions in that range (``UnifiedLog#read``,
    ``collectAbortedTransactions``)."""
    P = _FR.PartitionData
    if code == E.NONE:
        log = view.log
        hw = view.high_watermark()
        lso = log_state.last_stable_offset(log, hw)
        if fp.fetch_offset > log.log_end_offset or fp.fetch_offset < log.log_start_offset:
            code = E.OFFSET_OUT_OF_RANGE
        else:
            committed = isolation == READ_COMMITTED
            aborted = None
            if committed:
                aborted = tuple(_FR.AbortedTransaction(producer_id=pid, first_offset=first)
                                for pid, first in log_state.aborted_transactions(
                                    log, fp.fetch_offset, lso))
            return P(partition_index=fp.partition, error_code=0, high_watermark=hw,
                     last_stable_offset=lso, log_start_offset=log.log_start_offset,
                     aborted_transactions=aborted,
                     records=log.read(fp.fetch_offset, max(fp.partition_max_bytes, 1),
                                      upto=lso if committed else None))
    leader, epoch = view.known_leader() if code in (E.NOT_LEADER_OR_FOLLOWER,
                                                    E.FENCED_LEADER_EPOCH) else (-1, -1)
    return P(partition_index=fp.partition, error_code=code, high_watermark=-1,
             last_stable_offset=-1, log_start_offset=-1,
             current_leader=_FR.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch),
             records=b"")


# ------------------------------------------------------------------ ListOffsets


def list_offsets(ctx: RequestContext, req: Any) -> Any:
    """Offsets by the leader's log; a ``read_committed`` LATEST is the last stable offset. While
    transaction markers are being written, stepping mode runs virtual time until they are (a
    client that just committed reads past its markers, as it would a moment later on Kafka)."""
    txns = ctx.gateway.txns
    if req.isolation_level == READ_COMMITTED and txns is not None:
        from . import autojump

        def poll() -> Any:
            txns.tick()
            return None if txns.busy() else _list_offsets(ctx, req)
        first = poll()
        if first is not None:
            return first
        return Pending(poll, lambda: _list_offsets(ctx, req),
                       virtual_deadline_ms=ctx.now_ms + autojump.wait_bound_ms(ctx.cluster))
    return _list_offsets(ctx, req)


def _list_offsets(ctx: RequestContext, req: Any) -> Any:
    image = _image(ctx)
    topics = []
    for t in req.topics:
        topic = image.topics.by_name(t.name)
        parts = []
        for p in t.partitions:
            view = PartitionView(ctx, topic, p.partition_index)
            code = view.error(p.current_leader_epoch)
            ts, offset, epoch = -1, -1, -1
            if code == E.NONE:
                log = view.log
                hw = view.high_watermark()
                epoch = view.rep.leader_epoch
                if p.timestamp == LATEST:
                    offset = hw if req.isolation_level != READ_COMMITTED else \
                        log_state.last_stable_offset(log, hw)
                elif p.timestamp in (EARLIEST, EARLIEST_LOCAL):
                    offset = log.log_start_offset
                elif p.timestamp == MAX_TIMESTAMP:
                    ts, offset = log.max_timestamp()
                elif p.timestamp == LATEST_TIERED:
                    offset = -1  # nothing is tiered
                else:
                    ts, offset = log.offset_for_timestamp(p.timestamp)
            parts.append(_LR.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=code, timestamp=ts, offset=offset,
                leader_epoch=epoch))
        topics.append(_LR.ListOffsetsTopicResponse(name=t.name, partitions=tuple(parts)))
    return _LR(throttle_time_ms=0, topics=tuple(topics))


# ------------------------------------------------------------------ OffsetForLeaderEpoch


def offset_for_leader_epoch(ctx: RequestContext, req: Any) -> Any:
    image = _image(ctx)
    topics = []
    for t in req.topics:
        topic = image.topics.by_name(t.topic)
        parts = []
        for p in t.partitions:
            view = PartitionView(ctx, topic, p.partition)
            code = view.error(p.current_leader_epoch)
            epoch, end = -1, -1
            if code == E.NONE:
                epoch, end = view.log.end_offset_for_epoch(p.leader_epoch, view.rep.leader_epoch)
            parts.append(_OR.EpochEndOffset(error_code=code, partition=p.partition,
                                          leader_epoch=epoch, end_offset=end))
        topics.append(_OR.OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(parts)))
    return _OR(throttle_time_ms=0, topics=tuple(topics))


# ------------------------------------------------------------------ DescribeLogDirs


def describe_log_dirs(ctx: RequestContext, req: Any) -> Any:
    """The broker's one log directory and the replicas in it, sized from the data plane's logs;
    a follower's offset lag is how far its log end trails its leader's."""
    import os

    R = M.DescribeLogDirsResponse
    cluster = ctx.cluster
    logic = cluster.broker(ctx.node).logic
    roles = cluster.roles[ctx.node]
    folder = f"{'combined' if len(roles) == 2 else roles[0]}-{ctx.node}"  # as Cluster lays out
    if cluster.data_dir is not None:
        log_dir = os.path.join(cluster.data_dir, folder)
    else:
        log_dir = f"/kraft-testkit/memory/{folder}"
    wanted = None if req.topics is None else {t.topic: set(t.partitions) for t in req.topics}
    plane = ctx.gateway.data_plane
    by_topic: dict[str, list] = {}
    for (topic_id, index), rep in sorted(logic.replicas.replicas.items(),
                                         key=lambda kv: (kv[1].topic_name, kv[0][1])):
        if wanted is not None and index not in wanted.get(rep.topic_name, ()):
            continue
        mine = plane.logs.get((ctx.node, topic_id, index))
        size = sum(len(b.data) for b in mine.batches) if mine is not None else 0
        end = mine.log_end_offset if mine is not None else 0
        lag = 0
        if rep.leader not in (-1, ctx.node):
            leader_log = plane.logs.get((rep.leader, topic_id, index))
            lag = max(0, (leader_log.log_end_offset if leader_log else 0) - end)
        by_topic.setdefault(rep.topic_name, []).append(R.DescribeLogDirsPartition(
            partition_index=index, partition_size=size, offset_lag=lag, is_future_key=False))
    topics = tuple(R.DescribeLogDirsTopic(name=n, partitions=tuple(p)) for n, p in by_topic.items())
    return R(throttle_time_ms=0, error_code=0, results=(R.DescribeLogDirsResult(
        error_code=0, log_dir=log_dir, topics=topics, total_bytes=-1, usable_bytes=-1),))
