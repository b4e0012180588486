"""Client fetch sessions (KIP-227), as a Kafka 4.2 broker keeps them for consumers: ported from
``kafka.server.FetchSession`` (``FetchManager#newContext``, ``FetchSessionCacheShard``,
``CachedPartition#maybeUpdateResponseData``), with Kafka's values (1,000 slots over 8 shards,
a session evictable after 120 s unused, ``FetchMetadata`` epochs).

A full fetch (epoch 0) answers every partition it names and opens a session when a slot is free
(or one can be evicted: a stale one, else a smaller non-privileged one older than 120 s); the
answer carries the session id. An incremental fetch (the session id, the next epoch) names only
what changed (new offsets, partitions to add, forgotten ones) and is answered with only the
partitions that have something to say (records, a new high watermark or log start, an error).
Epoch -1 closes the session (a sessionless fetch). Errors: FETCH_SESSION_ID_NOT_FOUND for an
unknown (evicted, closed) id, INVALID_FETCH_SESSION_EPOCH for a wrong epoch,
FETCH_SESSION_TOPIC_ID_ERROR when a session made with topic ids is used without (or back).

Pure state: each broker's cache lives in the gateway and dies with the broker's process, as a
restarted Kafka broker knows no sessions; session ids come from the cluster's seeded RNG.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.sim.rng import RngTree

INVALID_SESSION_ID, INITIAL_EPOCH, FINAL_EPOCH = 0, 0, -1
#: max.incremental.fetch.session.cache.slots (default) over KafkaBroker.NumFetchSessionCacheShards
CACHE_SLOTS, SHARDS = 1000, 8
#: KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
EVICTION_MS = 120_000
_INT_MAX = 0x7FFFFFFF
_ID_RANGE = _INT_MAX // SHARDS


def next_epoch(epoch: int) -> int:
    """``FetchMetadata#nextEpoch``: -1 stays -1, the epoch wraps to 1 after Integer.MAX_VALUE."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT_MAX else epoch + 1


#: a partition's key in a session: (topic id when the session uses ids, else the name, index)
Key = tuple[Any, int]


@dataclass
class CachedPartition:
    """What a session remembers of a partition: the request's parameters (so an incremental
    fetch need not repeat them) and what was last answered (to answer only changes)."""

    topic: str
    topic_id: Any
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, answer: Any, update: bool = True) -> bool:
        """``CachedPartition#maybeUpdateResponseData``: records, a moved high watermark or log
        start, or an error make a partition part of an incremental answer."""
        respond = bool(answer.records) or answer.error_code != 0
        if answer.high_watermark != self.high_watermark:
            respond = True
            if update:
                self.high_watermark = answer.high_watermark
        if answer.log_start_offset != self.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = answer.log_start_offset
        if answer.error_code != 0 and update:
            self.high_watermark = -1
        return respond


@dataclass
class FetchSession:
    id: int
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[Key, CachedPartition] = field(default_factory=dict)  # in fetch order
    privileged: bool = False  # a follower's session; clients' sessions never are
    #: older than EVICTION_MS when last used (``touch`` puts it in ``evictableByAll`` then)
    evictable_by_all: bool = False

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, len(self.partitions), self.id)


class SessionCacheShard:
    """``FetchSessionCacheShard``: at most ``slots`` sessions, ids in the shard's range."""

    def __init__(self, shard: int, slots: int, rng: Any) -> None:
        self.shard = shard
        self.slots = slots
        self.rng = rng
        self.sessions: dict[int, FetchSession] = {}

    def _new_id(self) -> int:
        lo, hi = max(1, self.shard * _ID_RANGE), (self.shard + 1) * _ID_RANGE
        while True:
            sid = self.rng.randrange(lo, hi)
            if sid not in self.sessions and sid != INVALID_SESSION_ID:
                return sid

    def maybe_create(self, now: int, size: int, uses_topic_ids: bool,
                     partitions: dict[Key, CachedPartition]) -> int:
        """A new session's id, or INVALID_SESSION_ID when the shard is full and nothing can be
        evicted for it (``maybeCreateSession`` / ``tryEvict``)."""
        if len(self.sessions) >= self.slots and not self._try_evict(now, size):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_id(), uses_topic_ids, now, now, next_epoch(INITIAL_EPOCH),
                               partitions)
        self.sessions[session.id] = session
        return session.id

    def _try_evict(self, now: int, size: int) -> bool:
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stale.last_used_ms > EVICTION_MS:
            del self.sessions[stale.id]
            return True
        # only sessions created more than EVICTION_MS ago compete (evictableByAll), smallest
        # first; the new one (not privileged) must be at least as large
        old = [s for s in self.sessions.values() if s.evictable_by_all]
        if not old:
            return False
        victim = min(old, key=FetchSession.evictable_key)
        if (False, size, 0) < victim.evictable_key():
            return False
        del self.sessions[victim.id]
        return True


class SessionCache:
    """One broker's ``FetchSessionCache``: new sessions go to the shards in turn."""

    def __init__(self, rng: Any, slots: int = CACHE_SLOTS) -> None:
        self.shards = [SessionCacheShard(i, slots // SHARDS, rng) for i in range(SHARDS)]
        self._turn = 0

    def shard_of(self, session_id: int) -> SessionCacheShard:
        return self.shards[min(session_id // _ID_RANGE, SHARDS - 1)]

    def get(self, session_id: int) -> FetchSession | None:
        return self.shard_of(session_id).sessions.get(session_id)

    def remove(self, session_id: int) -> None:
        self.shard_of(session_id).sessions.pop(session_id, None)

    def create(self, now: int, uses_topic_ids: bool,
               partitions: dict[Key, CachedPartition]) -> int:
        shard = self.shards[self._turn % SHARDS]
        self._turn += 1
        return shard.maybe_create(now, len(partitions), uses_topic_ids, partitions)

    def __len__(self) -> int:
        return sum(len(s.sessions) for s in self.shards)


@dataclass
class FetchContext:
    """``FetchManager#newContext``'s answer: what to fetch and how to shape the response.

    ``kind`` is "error" (answer ``error`` alone), "sessionless" (session id 0), "full" (open a
    session after answering) or "incremental" (``session``, answer only changes)."""

    kind: str
    partitions: list[CachedPartition]
    error: int = 0
    session: FetchSession | None = None
    request_epoch: int = INITIAL_EPOCH


def new_context(cache: SessionCache, now: int, session_id: int, epoch: int,
                uses_topic_ids: bool, requested: list[CachedPartition],
                forgotten: list[Key]) -> FetchContext:
    """``FetchManager#newContext`` for a client's Fetch (``requested`` in request order)."""
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        return FetchContext("sessionless" if epoch == FINAL_EPOCH else "full", requested)
    session = cache.get(session_id)
    if session is None:
        return FetchContext("error", [], ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        return FetchContext("error", [], ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    if session.uses_topic_ids != uses_topic_ids:
        return FetchContext("error", [], ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    for part in requested:                      # FetchSession#update: add or update
        key = (part.topic_id if uses_topic_ids else part.topic, part.partition)
        cached = session.partitions.get(key)
        if cached is None:
            session.partitions[key] = part
        else:
            cached.fetch_offset, cached.max_bytes = part.fetch_offset, part.max_bytes
            cached.current_leader_epoch = part.current_leader_epoch
    for key in forgotten:
        session.partitions.pop(key, None)
    if not session.partitions:
        cache.remove(session.id)
        return FetchContext("sessionless", requested)
    session.last_used_ms = now                  # FetchSessionCacheShard#touch
    session.evictable_by_all = now - session.creation_ms > EVICTION_MS
    session.epoch = next_epoch(session.epoch)
    return FetchContext("incremental", list(session.partitions.values()), session=session,
                        request_epoch=epoch)


def finish(cache: SessionCache, ctx: FetchContext, now: int, uses_topic_ids: bool,
           answers: list[tuple[CachedPartition, Any]]) -> tuple[int, int, list]:
    """(error code, session id, the (partition, answer) pairs to send) once the fetch is
    answered: a full fetch opens its session here, an incremental one keeps only changes
    (and moves the partitions that returned records to the end of the session's order)."""
    if ctx.kind == "error":
        return ctx.error, INVALID_SESSION_ID, []
    if ctx.kind == "sessionless":
        return 0, INVALID_SESSION_ID, answers
    if ctx.kind == "full":
        cached: dict[Key, CachedPartition] = {}
        for part, answer in answers:
            part.high_watermark, part.log_start_offset = \
                answer.high_watermark, answer.log_start_offset
            cached[(part.topic_id if uses_topic_ids else part.topic, part.partition)] = part
        return 0, cache.create(now, uses_topic_ids, cached), answers
    session = ctx.session
    if session.epoch != next_epoch(ctx.request_epoch):  # a duplicate raced this one
        return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
    out = []
    for part, answer in answers:
        if part.must_respond(answer):
            out.append((part, answer))
            if answer.records:
                key = (part.topic_id if uses_topic_ids else part.topic, part.partition)
                session.partitions[key] = session.partitions.pop(key)
    return 0, session.id, out


# ------------------------------------------------------------------ the gateway's side


def cache_of(gateway: Any, node: int) -> SessionCache:
    """The broker's session cache; a restarted broker process starts with an empty one."""
    incarnation = gateway.cluster.sim.process(node).incarnation
    caches = gateway.fetch_sessions
    held = caches.get(node)
    if held is None or held[0] != incarnation:
        rng = RngTree(gateway.cluster.seed).child("gateway", "fetch-session", node, incarnation)
        held = caches[node] = (incarnation, SessionCache(rng))
    return held[1]


def open_session(ctx: Any, req: Any) -> tuple[FetchContext, Any]:
    """The client's Fetch seen through its session: the context, and the request to serve
    (every partition of the session for an incremental fetch, in the session's order)."""
    by_id = ctx.version >= 13
    image = ctx.cluster.broker(ctx.node).image
    requested = []
    for t in req.topics:
        topic = image.topics.by_id(t.topic_id) if by_id else image.topics.by_name(t.topic)
        name = t.topic if not by_id else (topic.name if topic is not None else None)
        for fp in t.partitions:
            requested.append(CachedPartition(
                topic=name, topic_id=t.topic_id if by_id else None, partition=fp.partition,
                fetch_offset=fp.fetch_offset, max_bytes=fp.partition_max_bytes,
                current_leader_epoch=fp.current_leader_epoch))
    forgotten = [(f.topic_id if by_id else f.topic, p)
                 for f in req.forgotten_topics_data for p in f.partitions]
    fctx = new_context(cache_of(ctx.gateway, ctx.node), ctx.now_ms, req.session_id,
                       req.session_epoch, by_id, requested, forgotten)
    topics: list[Any] = []
    F = type(req)
    for part in fctx.partitions:
        fp = F.FetchPartition(partition=part.partition, fetch_offset=part.fetch_offset,
                              partition_max_bytes=part.max_bytes,
                              current_leader_epoch=part.current_leader_epoch)
        key = part.topic_id if by_id else part.topic
        if topics and (topics[-1][0] == key):
            topics[-1][1].append(fp)
        else:
            topics.append((key, [fp], part))
    served = req.replace(topics=tuple(
        F.FetchTopic(topic=part.topic or "", topic_id=part.topic_id, partitions=tuple(fps))
        if by_id else F.FetchTopic(topic=part.topic, partitions=tuple(fps))
        for _, fps, part in topics))
    return fctx, served


def shape(ctx: Any, fctx: FetchContext, response: Any) -> Any:
    """The answer to send: the session's error, id, and (incremental) only the changes.
    ``response`` answers the served request, partition for partition in the session's order."""
    parts = iter(fctx.partitions)
    pairs = [(next(parts), p) for t in response.responses for p in t.partitions]
    code, session_id, sent = finish(cache_of(ctx.gateway, ctx.node), fctx, ctx.now_ms,
                                    ctx.version >= 13, pairs)
    keep = {id(p) for _, p in sent}
    topics = []
    for t in response.responses:
        kept = tuple(p for p in t.partitions if id(p) in keep)
        if kept:
            topics.append(t.replace(partitions=kept))
    return response.replace(error_code=code, session_id=session_id, responses=tuple(topics))
