"""Replica fetching between brokers: the follower's FetchRequest per leader broker and the
leader's answer, the part of :class:`~.replicas.ReplicaManager` that speaks the Fetch RPC,
with KIP-227 incremental fetch sessions as Kafka 4.2.1's replica fetcher uses them.

The follower keeps one :class:`~.fetch_session.FetchSessionHandler` per leader broker
(``RemoteLeaderEndPoint``) and, per leader, the partitions it follows there and the ones that
changed since its last request (added, new leader epoch, gone): an incremental request lists
only those, so an idle follower's fetch carries no partition. The leader keeps a
:class:`~.fetch_session_cache.FetchSessionCache` and answers an incremental fetch from its
session's partitions, listing only those with news (an error, a new high watermark or log
start, data).

Kafka's leader reads every partition of the session at each fetch and records the follower's
fetch on each (``Partition#updateFollowerFetchState``). Here a partition whose last answer was
error free, whose follower is in the ISR and that nothing changed since (no metadata, no ISR
change, no data) is *clean*: its follower's record reads the session's last fetch
(:class:`FetchClock`) instead of being written at every fetch, and a change marks it *dirty*
again (materializing the record), so a fetch costs in proportion to what changed. The
follower does the same for its replicas' last successful fetch. The states read the same as
if every partition had been visited (tests/broker/test_broker_fetch_sessions.py).

A fetch whose answer has not come when the next one is due counts as failed
(``FetchSessionHandler#handleError``): the next request closes the session and asks for a new
one (Kafka's fetcher waits for the answer or a timeout; the kit's fetches leave on a fixed
cadence).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

from .fetch_session import (
    INVALID_SESSION_ID,
    FetchMetadata,
    FetchSessionHandler,
    PartitionData,
    next_epoch,
)
from .fetch_session_cache import create_full_session, new_context

if TYPE_CHECKING:
    from .replicas import LocalReplica

E = ErrorCode
_FQ: Any = M.FetchRequest
_FS: Any = M.FetchResponse
_NO_LEADER: Any = _FS.LeaderIdAndEpoch()  # messages are immutable tuples: one is enough
_SESSION_ID_AT = _FQ._names.index("session_id")  # noqa: SLF001
_SESSION_EPOCH_AT = _FQ._names.index("session_epoch")  # noqa: SLF001

REPLICA_FETCH_WAIT_MAX_MS = 500     # replica.fetch.wait.max.ms
REPLICA_FETCH_MAX_BYTES = 1 << 20   # replica.fetch.max.bytes
REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 << 20


class FetchClock:
    """A session's last fetch: when, and the broker epoch it carried."""

    __slots__ = ("epoch", "ms")

    def __init__(self, ms: int, epoch: int) -> None:
        self.ms, self.epoch = ms, epoch


class LeaderSession:
    """What the leader keeps beside one follower's fetch session (``FetchSession.owner``)."""

    __slots__ = ("clock", "dirty", "empty", "force", "manager", "rid", "session")

    def __init__(self, manager: Any, rid: int, session: Any, clock: FetchClock) -> None:
        self.manager, self.rid, self.session, self.clock = manager, rid, session, clock
        self.dirty: set = set()  # keys to evaluate at the next fetch
        self.force: set = set()  # keys with data: listed at the next fetch
        self.empty: Any = None  # the answer that lists nothing (immutable: built once)

    def closed(self) -> None:
        """The cache dropped the session: its clean records stop following its fetches."""
        self.manager._unlink_session(self)  # noqa: SLF001


def _partition_data(rep: LocalReplica) -> PartitionData:
    return PartitionData(rep.topic_id, 0, -1, REPLICA_FETCH_MAX_BYTES, rep.leader_epoch, -1)


class ReplicaFetching:
    """Sends a follower's fetches and answers a leader's (see replicas.py for the model)."""

    __slots__ = ()
    broker_id: int
    rack: str | None
    replicas: dict
    image: Any
    active: bool
    leader_serving: bool
    _out: Any
    _broker_epoch: Any
    _fetch_cids: dict
    _ok_answers: dict
    _handlers: dict
    _by_leader: dict
    _fetch_dirty: dict
    _erroring: dict
    _fclocks: dict
    _unqueued: dict
    _cache: Any
    _lsessions: dict
    _sent_parts: dict
    version: int
    _empty_fetch: Any

    # ------------------------------------------------------------------ follower side

    def _refollow(self, rep: LocalReplica, old_leader: int) -> None:
        """``rep``'s leader or leader epoch changed (or it is gone: leader -1): the fetch
        state of the leaders before and after."""
        me, tp = self.broker_id, (rep.topic_name, rep.partition)
        rep.unlink_fetched()
        if old_leader not in (-1, me):
            follows = self._by_leader.get(old_leader)
            if follows is not None and follows.pop(tp, None) is not None:
                self._fetch_dirty.setdefault(old_leader, {})[tp] = None
                self._erroring.get(old_leader, set()).discard(tp)
                if not follows:  # Kafka's idle fetcher goes, and its session with it
                    for d in (self._by_leader, self._fetch_dirty, self._handlers,
                              self._erroring, self._fclocks):
                        d.pop(old_leader, None)
        self.version += 1
        new = rep.leader
        if new not in (-1, me) and rep.key in self.replicas:
            self._by_leader.setdefault(new, {})[tp] = rep
            self._fetch_dirty.setdefault(new, {})[tp] = _partition_data(rep)

    def _send_fetches(self, queue: bool = True) -> list[int]:
        leaders = sorted(self._by_leader)
        if not leaders:  # follows nothing (most idle brokers): no fetch, nothing to keep
            if self._fetch_cids:
                self._fetch_cids = {}
            return []
        self._fetch_cids = {k: v for k, v in self._fetch_cids.items() if k in self._by_leader}
        out = self._out
        for leader in leaders:
            body = self._fetch_request(leader)
            if queue:
                self._fetch_cids[leader] = out.request(leader, body)
            else:
                cid = self._fetch_cids[leader] = out.next_cid()
                self._unqueued[leader] = (cid, body)
        return leaders

    def _fetch_request(self, leader: int) -> Any:
        """The next request to ``leader`` (its handler moves: build it once per fetch)."""
        handler = self._handlers.get(leader)
        if handler is None:
            handler = self._handlers[leader] = FetchSessionHandler(leader)
        if leader in self._fetch_cids:  # the last one was not answered: a failed request
            handler.handle_error()
        dirty = self._fetch_dirty.pop(leader, None)
        if handler.next_metadata.is_full:
            follows = self._by_leader[leader]
            data = handler.build_full({tp: _partition_data(follows[tp]) for tp in sorted(follows)})
            self._erroring.pop(leader, None)
            for rep in follows.values():
                rep.unlink_fetched()
        else:
            data = handler.build_changes(dirty or {})
        self._sent_parts[leader] = list(data.to_send)
        return self._build_fetch_request(data)

    def _build_fetch_request(self, data: Any) -> Any:
        """``FetchRequest.Builder#build`` (v13+: topic ids; partitions of one topic grouped
        where they are consecutive; forgotten partitions, then replaced ones, by topic)."""
        meta = data.metadata
        if not data.to_send and not data.to_forget and not data.to_replace:
            # an idle incremental fetch: the last empty one with this session's id and epoch
            key = (self._broker_epoch(), self.rack)
            empty = self._empty_fetch
            if empty is None or empty[0] != key:
                empty = self._empty_fetch = (key, self._fetch_body(meta, (), ()))
            values = list(empty[1])
            values[_SESSION_ID_AT], values[_SESSION_EPOCH_AT] = meta.session_id, meta.epoch
            return tuple.__new__(_FQ, values)  # the fields as given (Message.replace checks)
        topics: list = []
        last = None
        parts: list = []
        for (name, partition), d in data.to_send.items():
            if name != last:
                if last is not None:
                    topics.append(_FQ.FetchTopic(topic=last, topic_id=tid, partitions=tuple(parts)))
                last, tid, parts = name, d.topic_id, []
            parts.append(_FQ.FetchPartition(
                partition=partition, current_leader_epoch=d.current_leader_epoch,
                fetch_offset=d.fetch_offset, last_fetched_epoch=d.last_fetched_epoch,
                log_start_offset=d.log_start_offset, partition_max_bytes=d.max_bytes))
        if last is not None:
            topics.append(_FQ.FetchTopic(topic=last, topic_id=tid, partitions=tuple(parts)))
        forgotten: dict[str, tuple[Uuid, list[int]]] = {}
        for tip in [*data.to_forget, *data.to_replace]:
            forgotten.setdefault(tip.topic, (tip.topic_id, []))[1].append(tip.partition)
        return self._fetch_body(meta, tuple(topics), tuple(
            _FQ.ForgottenTopic(topic=name, topic_id=tid, partitions=tuple(ps))
            for name, (tid, ps) in forgotten.items()))

    def _fetch_body(self, meta: Any, topics: tuple, forgotten: tuple) -> Any:
        return _FQ(
            replica_state=_FQ.ReplicaState(replica_id=self.broker_id,
                                           replica_epoch=self._broker_epoch()),
            max_wait_ms=REPLICA_FETCH_WAIT_MAX_MS, min_bytes=1,
            max_bytes=REPLICA_FETCH_RESPONSE_MAX_BYTES, isolation_level=0,
            session_id=meta.session_id, session_epoch=meta.epoch, topics=topics,
            forgotten_topics_data=forgotten, rack_id=self.rack or "")

    def on_fetch_response(self, src: int, cid: int | None, body: Any, now_ms: int) -> None:
        if not self.active or self._fetch_cids.get(src) != cid:
            return
        del self._fetch_cids[src]
        handler = self._handlers.get(src)
        if handler is None:
            return
        meta = handler.next_metadata
        clock = self._fclocks.get(src)
        if not body.responses and body.error_code == E.NONE and not meta.is_full \
                and body.session_id == meta.session_id != INVALID_SESSION_ID \
                and clock is not None and not self._sent_parts.get(src) \
                and not self._erroring.get(src):
            # an idle answer to an idle fetch: what handleResponse and the loop below do
            handler.next_metadata = meta.next_incremental()
            clock.ms = now_ms
            return
        was_full = handler.next_metadata.is_full
        parts, ids = handler.response_parts(body)
        if not handler.handle_response(body.error_code, body.session_id, parts, ids):
            return  # nothing in it is processed (RemoteLeaderEndPoint#fetch)
        clock = self._fclocks.get(src)
        if clock is None:
            clock = self._fclocks[src] = FetchClock(now_ms, 0)
        clock.ms = now_ms
        erroring = self._erroring.setdefault(src, set())
        listed_errors = set()
        for topic in body.responses:
            for p in topic.partitions:
                rep = self.replicas.get((topic.topic_id, p.partition_index))
                if rep is None or rep.leader != src:
                    continue
                tp = (rep.topic_name, rep.partition)
                if p.error_code == E.NONE:
                    rep.link_fetched(clock)
                    erroring.discard(tp)
                else:
                    rep.unlink_fetched()
                    erroring.add(tp)
                    listed_errors.add(tp)
        if was_full:
            return
        # the partitions the request sent and the ones that erred before, not listed with an
        # error now: fetched without news (Kafka leaves them out of the answer)
        follows = self._by_leader.get(src, {})
        for tp in [*self._sent_parts.get(src, ()), *erroring]:
            if tp not in listed_errors:
                erroring.discard(tp)
                rep = follows.get(tp)
                if rep is not None and not rep.fetched_follows(clock):
                    rep.link_fetched(clock)

    # ------------------------------------------------------------------ leader side

    def handle_fetch(self, req: Any, now_ms: int) -> Any:
        """Answer a follower's FetchRequest (``KafkaApis#handleFetchRequest`` through
        ``FetchManager#newContext``), recording what it tells about the follower."""
        rid = req.replica_state.replica_id
        if rid < 0:
            rid = req.replica_id
        epoch = req.replica_state.replica_epoch
        if not req.topics and not req.forgotten_topics_data and req.session_epoch > 0:
            owner = self._lsessions.get(rid)  # a steady follower's idle fetch: the short path
            if owner is not None and not owner.dirty and owner.empty is not None:
                session = owner.session
                if session.id == req.session_id and session.epoch == req.session_epoch \
                        and session.partitions:
                    # what newContext and an incremental context do with nothing to update
                    self._cache.get_cache_shard(session.id).touch(session, now_ms)
                    session.epoch = next_epoch(session.epoch)
                    owner.clock.ms, owner.clock.epoch = now_ms, epoch
                    return owner.empty
        meta = FetchMetadata(req.session_id, req.session_epoch)
        fetch_data = [((t.topic_id, fp.partition), t.topic, fp)
                      for t in req.topics for fp in t.partitions]
        forget = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
        ctx = new_context(self._cache, meta, fetch_data, forget, now_ms)
        if ctx.kind == "error":
            return _FS(error_code=ctx.error, session_id=INVALID_SESSION_ID, responses=())
        if ctx.kind == "incremental":
            return self._incremental(ctx, rid, epoch, now_ms)
        answers = []
        for key, name, fp in fetch_data:
            error = self._follower_fetch(key[0], fp, rid, epoch, now_ms)
            answers.append((key, name, fp, self._fetch_answer(key[0], fp.partition, error)))
        sid = INVALID_SESSION_ID
        if ctx.kind == "full":
            sid = create_full_session(self._cache, now_ms, rid >= 0, answers)
            if sid != INVALID_SESSION_ID and rid >= 0:
                self._own_session(rid, self._cache.get(sid), now_ms, epoch, answers)
        return _FS(error_code=E.NONE, session_id=sid, responses=_grouped(
            (key[0], name, resp) for key, name, _, resp in answers))

    def _incremental(self, ctx: Any, rid: int, epoch: int, now_ms: int) -> Any:
        """An incremental fetch: the dirty partitions evaluated, the clean ones' records
        following the session's clock; the answer lists the partitions with news."""
        session = ctx.session
        owner = session.owner
        if owner is None or self._lsessions.get(rid) is not owner:
            owner = self._own_session(rid, session, now_ms, epoch, None)
        owner.clock.ms, owner.clock.epoch = now_ms, epoch
        for key in ctx.removed:
            owner.dirty.discard(key)
            owner.force.discard(key)
            self._unlink_state(key, rid, owner)
        for key in ctx.changed:
            owner.dirty.add(key)
            self._unlink_state(key, rid, owner)
        if not owner.dirty:
            if owner.empty is None:
                owner.empty = _FS(error_code=E.NONE, session_id=session.id, responses=())
            return owner.empty
        parts = session.partitions
        listed = []
        for key in sorted(owner.dirty, key=lambda k: parts[k].pos):
            cp = parts[key]
            fp = _FQ.FetchPartition(partition=key[1], current_leader_epoch=cp.leader_epoch,
                                    fetch_offset=cp.fetch_offset,
                                    last_fetched_epoch=cp.last_fetched_epoch,
                                    log_start_offset=cp.fetcher_log_start_offset,
                                    partition_max_bytes=cp.max_bytes)
            error = self._follower_fetch(key[0], fp, rid, epoch, now_ms)
            resp = self._fetch_answer(key[0], key[1], error)
            must = cp.maybe_update_response_data(resp, True)
            if key in owner.force:
                owner.force.discard(key)
                must = True
            if must:
                listed.append((key[0], cp.topic, resp))
            rep = self.replicas.get(key)
            if error == E.NONE and not must and rep is not None and rid in rep.isr:
                state = rep.followers.get(rid)
                if state is not None:
                    state.link_to(owner.clock)
                    owner.dirty.discard(key)
        return _FS(error_code=E.NONE, session_id=session.id, responses=_grouped(listed))

    def _own_session(self, rid: int, session: Any, now_ms: int, epoch: int,
                     answers: list | None) -> LeaderSession:
        """``session`` is now the one follower ``rid``'s clean records follow (the one it
        fetches with); ``answers``: a full fetch's, whose clean partitions it links."""
        old = self._lsessions.get(rid)
        if old is not None and old.session is not session:
            self._unlink_session(old)
        owner = LeaderSession(self, rid, session, FetchClock(now_ms, epoch))
        session.owner = owner
        self._lsessions[rid] = owner
        if answers is None:
            owner.dirty = set(session.partitions)
            return owner
        for key, _, _, resp in answers:
            rep = self.replicas.get(key)
            cp = session.partitions.get(key)
            if cp is None:
                continue
            if resp.error_code == E.NONE and rep is not None and rid in rep.isr \
                    and rep.followers.get(rid) is not None:
                rep.followers[rid].link_to(owner.clock)
            else:
                owner.dirty.add(key)
        return owner

    def _unlink_session(self, owner: LeaderSession) -> None:
        """Every record following ``owner``'s clock keeps its last value, on its own."""
        if self._lsessions.get(owner.rid) is owner:
            del self._lsessions[owner.rid]
        for key in owner.session.partitions:
            self._unlink_state(key, owner.rid, owner)
        owner.session.owner = None

    def _unlink_state(self, key: Any, rid: int, owner: LeaderSession) -> None:
        rep = self.replicas.get(key)
        if rep is not None:
            state = rep.followers.get(rid)
            if state is not None and state.link is owner.clock:
                state.unlink()

    def partition_changed(self, key: Any, data: bool = False) -> None:
        """Something a fetch of ``key`` reads changed at this leader (its registration, ISR,
        leadership; ``data``: records or high watermark, which an incremental answer must
        carry): every session holding it evaluates it again at its next fetch."""
        self.version += 1
        for owner in self._lsessions.values():
            if key in owner.session.partitions:
                owner.dirty.add(key)
                if data:
                    owner.force.add(key)
                self._unlink_state(key, owner.rid, owner)

    def all_partitions_changed(self) -> None:
        """Leadership serving switched (KIP-343): every session re-evaluates everything."""
        for owner in list(self._lsessions.values()):
            for key in owner.session.partitions:
                owner.dirty.add(key)
                self._unlink_state(key, owner.rid, owner)

    def _follower_fetch(self, topic_id: Uuid, fp: Any, rid: int, epoch: int, now_ms: int) -> int:
        rep = self.replicas.get((topic_id, fp.partition))
        if rep is None or not self.active:
            if self.image.topics.by_id(topic_id) is None:
                return E.UNKNOWN_TOPIC_ID
            return E.NOT_LEADER_OR_FOLLOWER
        if rep.leader != self.broker_id or not self.leader_serving:
            return E.NOT_LEADER_OR_FOLLOWER
        requested = fp.current_leader_epoch
        if requested >= 0 and rep.leader_epoch > requested:
            return E.FENCED_LEADER_EPOCH
        if requested >= 0 and rep.leader_epoch < requested:
            return E.UNKNOWN_LEADER_EPOCH
        follower = rep.followers.get(rid)
        if follower is None:
            return E.UNKNOWN_LEADER_EPOCH if requested >= 0 else E.NOT_LEADER_OR_FOLLOWER
        follower.fetched(epoch, now_ms)
        self._maybe_expand_isr(rep, follower, now_ms)  # type: ignore[attr-defined]
        return E.NONE

    def _fetch_answer(self, topic_id: Uuid, partition: int, error: int) -> Any:
        if error == E.NONE:  # the common answer: built once per partition index (immutable)
            answer = self._ok_answers.get(partition)
            if answer is None:
                answer = self._ok_answers[partition] = _FS.PartitionData(
                    partition_index=partition, error_code=E.NONE, high_watermark=0,
                    last_stable_offset=0, log_start_offset=0, current_leader=_NO_LEADER,
                    records=b"")
            return answer
        rep = self.replicas.get((topic_id, partition))
        current = _NO_LEADER
        if error in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH) and rep is not None \
                and rep.leader != self.broker_id:
            current = _FS.LeaderIdAndEpoch(leader_id=rep.leader, leader_epoch=rep.leader_epoch)
        return _FS.PartitionData(partition_index=partition, error_code=error,
                                 high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                                 current_leader=current, records=b"")


def _grouped(parts: Any) -> tuple:
    """``FetchResponse#of``: partitions of one topic grouped where they are consecutive."""
    topics: list = []
    last = None
    group: list = []
    for tid, name, resp in parts:
        if tid != last:
            if last is not None:
                topics.append(_FS.FetchableTopicResponse(topic=lname, topic_id=last,
                                                         partitions=tuple(group)))
            last, lname, group = tid, name, []
        group.append(resp)
    if last is not None:
        topics.append(_FS.FetchableTopicResponse(topic=lname, topic_id=last,
                                                 partitions=tuple(group)))
    return tuple(topics)
