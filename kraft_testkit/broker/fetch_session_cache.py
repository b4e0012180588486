"""KIP-227 incremental fetch sessions, the leader's side: Kafka 4.2.1's ``CachedPartition``,
``FetchSession``, ``FetchSessionCacheShard``, ``FetchSessionCache`` and ``FetchManager#newContext``
(core ``kafka.server.FetchSession``).

A broker caches ``max.incremental.fetch.session.cache.slots`` (1000) sessions split over 8
shards (a shard holds slots / 8, sessions go to the shards in turn, a session id tells its
shard). A new session takes a free slot, else evicts: the least recently used session if it
was idle more than 120 s, else the "least valuable" evictable one (unprivileged before
privileged, then fewer partitions, then lower id) if the new one is worth more. Sessions of
followers (replica fetches) are privileged and become evictable by other privileged sessions
only after 120 s.

Session ids are drawn from the broker's own seeded stream (Kafka: ``ThreadLocalRandom``).
The round-robin shard counter is per broker (Kafka's is one static counter per JVM).
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from kraft_testkit.protocol.error_codes import ErrorCode

from .fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, FetchMetadata, \
    next_epoch

E = ErrorCode
NUM_FETCH_SESSION_CACHE_SHARDS = 8          # KafkaBroker.NumFetchSessionCacheShards
MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS = 1000  # max.incremental.fetch.session.cache.slots
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000
INT_MAX = (1 << 31) - 1


class CachedPartition:
    """``CachedPartition``: what the leader remembers of one partition of a session."""

    __slots__ = ("fetch_offset", "fetcher_log_start_offset", "high_watermark",
                 "last_fetched_epoch", "leader_epoch", "local_log_start_offset", "max_bytes",
                 "partition", "pos", "topic", "topic_id")

    def __init__(self, topic: str | None, topic_id: Any, partition: int, req: Any = None,
                 resp: Any = None) -> None:
        self.topic, self.topic_id, self.partition = topic, topic_id, partition
        self.max_bytes = self.fetch_offset = self.fetcher_log_start_offset = -1
        self.leader_epoch = self.last_fetched_epoch = -1
        self.high_watermark = self.local_log_start_offset = -1
        self.pos = 0  # place in the session's order (Kafka's ImplicitLinkedHashCollection)
        if req is not None:
            self.update_request_params(req)
        if resp is not None:
            self.high_watermark = resp.high_watermark
            self.local_log_start_offset = resp.log_start_offset

    def update_request_params(self, req: Any) -> None:
        """``updateRequestParams`` from a FetchRequest partition (``FetchPartition``)."""
        self.max_bytes = req.partition_max_bytes
        self.fetch_offset = req.fetch_offset
        self.fetcher_log_start_offset = req.log_start_offset
        self.leader_epoch = req.current_leader_epoch
        self.last_fetched_epoch = req.last_fetched_epoch

    def maybe_update_response_data(self, resp: Any, update: bool) -> bool:
        """``maybeUpdateResponseData``: whether an incremental response must list the
        partition (records, a new high watermark or log start, a preferred read replica, an
        error, a diverging epoch), updating the cache when ``update``."""
        must = bool(resp.records)
        if self.high_watermark != resp.high_watermark:
            must = True
            if update:
                self.high_watermark = resp.high_watermark
        if self.local_log_start_offset != resp.log_start_offset:
            must = True
            if update:
                self.local_log_start_offset = resp.log_start_offset
        if resp.preferred_read_replica >= 0:
            must = True
        if resp.error_code != E.NONE:
            if update:
                self.high_watermark = -1
            must = True
        if resp.diverging_epoch.epoch >= 0 or resp.diverging_epoch.end_offset >= 0:
            must = True
        return must

    def __repr__(self) -> str:
        return (f"CachedPartition(topic={self.topic}, partition={self.partition}, "
                f"fetchOffset={self.fetch_offset}, highWatermark={self.high_watermark})")


class FetchSession:
    """``FetchSession``: one fetcher's partitions and where its requests are (epoch)."""

    __slots__ = ("cached_size", "creation_ms", "epoch", "id", "last_used_ms", "owner",
                 "partitions", "privileged", "seq", "uses_topic_ids")

    def __init__(self, sid: int, privileged: bool, partitions: dict, uses_topic_ids: bool,
                 creation_ms: int, last_used_ms: int, epoch: int) -> None:
        self.id, self.privileged, self.uses_topic_ids = sid, privileged, uses_topic_ids
        #: key (topic id, partition) -> CachedPartition, in session order
        self.partitions: dict[Any, CachedPartition] = partitions
        self.seq = len(partitions)
        self.creation_ms, self.last_used_ms, self.epoch = creation_ms, last_used_ms, epoch
        self.cached_size = -1  # the size the cache last counted (-1: not in a cache)
        self.owner: Any = None  # what the replica manager keeps beside it (replica_fetch.py)

    @property
    def size(self) -> int:
        return len(self.partitions)

    @property
    def metadata(self) -> FetchMetadata:
        return FetchMetadata(self.id, self.epoch)

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def update(self, fetch_data: list[tuple[Any, str, Any]], to_forget: list[Any]
               ) -> tuple[list, list, list]:
        """``FetchSession#update``: (key, topic name, request partition) entries added or
        updated, ``to_forget`` keys removed; returns (added, updated, removed) keys."""
        added, updated, removed = [], [], []
        parts = self.partitions
        for key, name, req in fetch_data:
            cached = parts.get(key)
            if cached is None:
                cached = parts[key] = CachedPartition(name, key[0], key[1], req)
                cached.pos = self.seq
                self.seq += 1
                added.append(key)
            else:
                cached.update_request_params(req)
                updated.append(key)
        for key in to_forget:
            if parts.pop(key, None) is not None:
                removed.append(key)
        return added, updated, removed

    def __repr__(self) -> str:
        return (f"FetchSession(id={self.id}, privileged={self.privileged}, "
                f"partitionMap.size={self.size}, creationMs={self.creation_ms}, "
                f"lastUsedMs={self.last_used_ms}, epoch={self.epoch})")


class FetchSessionCacheShard:
    """``FetchSessionCacheShard``: up to ``max_entries`` sessions with ids in its range."""

    def __init__(self, max_entries: int, eviction_ms: int, session_id_range: int = INT_MAX,
                 shard_num: int = 0, rng: random.Random | None = None) -> None:
        self.max_entries, self.eviction_ms = max_entries, eviction_ms
        self.session_id_range, self.shard_num = session_id_range, shard_num
        self.rng = rng if rng is not None else random.Random(shard_num)
        self.sessions: dict[int, FetchSession] = {}
        self.evictable_by_all: dict[int, tuple] = {}  # id -> evictable key
        self.evictable_by_privileged: dict[int, tuple] = {}
        self.total_partitions = 0
        self.evictions = 0  # IncrementalFetchSessionEvictionsPerSec's count

    def get(self, sid: int) -> FetchSession | None:
        return self.sessions.get(sid)

    @property
    def size(self) -> int:
        return len(self.sessions)

    def new_session_id(self) -> int:
        """``newSessionId``: positive, unused, within this shard's range."""
        lo = max(1, self.shard_num * self.session_id_range)
        hi = (self.shard_num + 1) * self.session_id_range
        while True:
            sid = self.rng.randrange(lo, hi)
            if sid not in self.sessions and sid != INVALID_SESSION_ID:
                return sid

    def maybe_create_session(self, now: int, privileged: bool, size: int, uses_topic_ids: bool,
                             create: Any) -> int:
        """``maybeCreateSession``: the new session's id, or INVALID_SESSION_ID when there is
        no room and nothing may be evicted for it."""
        if len(self.sessions) < self.max_entries or \
                self._try_evict(privileged, (privileged, size, 0), now):
            session = FetchSession(self.new_session_id(), privileged, create(), uses_topic_ids,
                                   now, now, next_epoch(INITIAL_EPOCH))
            self.sessions[session.id] = session
            self.touch(session, now)
            return session.id
        return INVALID_SESSION_ID

    def _try_evict(self, privileged: bool, key: tuple, now: int) -> bool:
        """``tryEvict``: a stale session (unused for longer than the eviction time) first,
        else the least valuable evictable one if ``key`` is worth at least as much."""
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - oldest.last_used_ms > self.eviction_ms:
            self.remove(oldest)
            self.evictions += 1
            return True
        pool = self.evictable_by_privileged if privileged else self.evictable_by_all
        if not pool:
            return False
        first = min(pool.values())
        if key < first:
            return False
        self.remove(self.sessions[first[2]])
        self.evictions += 1
        return True

    def remove(self, session: FetchSession | int) -> FetchSession | None:
        """``remove``: the session leaves the cache (None if it was not in it)."""
        if isinstance(session, int):
            found = self.sessions.get(session)
            if found is None:
                return None
            session = found
        self.evictable_by_all.pop(session.id, None)
        self.evictable_by_privileged.pop(session.id, None)
        gone = self.sessions.pop(session.id, None)
        if gone is not None:
            self.total_partitions -= session.cached_size
            if gone.owner is not None:  # the replica manager's bookkeeping beside it
                gone.owner.closed()
        return gone

    def touch(self, session: FetchSession, now: int) -> None:
        """``touch``: last used now, its size and evictability counted again."""
        session.last_used_ms = now
        if session.cached_size != -1:
            self.evictable_by_privileged.pop(session.id, None)
            self.evictable_by_all.pop(session.id, None)
            self.total_partitions -= session.cached_size
        session.cached_size = session.size
        key = session.evictable_key()
        old = now - session.creation_ms > self.eviction_ms
        if not session.privileged or old:
            self.evictable_by_privileged[session.id] = key
        if old:
            self.evictable_by_all[session.id] = key
        self.total_partitions += session.cached_size


class FetchSessionCache:
    """``FetchSessionCache``: the shards, and the one a new session goes to."""

    def __init__(self, shards: list[FetchSessionCacheShard]) -> None:
        self.shards = shards
        self.counter = 0

    @classmethod
    def for_broker(cls, rng: random.Random,
                   slots: int = MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS) -> FetchSessionCache:
        """As ``BrokerServer`` builds it: 8 shards of slots / 8 each."""
        n = NUM_FETCH_SESSION_CACHE_SHARDS
        rng_range = INT_MAX // n
        return cls([FetchSessionCacheShard(slots // n, MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
                                           rng_range, i, rng) for i in range(n)])

    def get_cache_shard(self, sid: int) -> FetchSessionCacheShard:
        return self.shards[sid // self.shards[0].session_id_range]

    def get_next_cache_shard(self) -> FetchSessionCacheShard:
        n = self.counter
        self.counter = (n + 1) & 0xFFFFFFFF
        signed = n - (1 << 32) if n >= 1 << 31 else n
        return self.shards[(signed & 0x7FFFFFFF) % len(self.shards)]  # Utils.toPositive

    def get(self, sid: int) -> FetchSession | None:
        if sid <= 0:
            return None
        return self.get_cache_shard(sid).get(sid)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.shards)

    @property
    def total_partitions(self) -> int:
        return sum(s.total_partitions for s in self.shards)

    def sessions(self) -> list[FetchSession]:
        return [s for shard in self.shards for s in shard.sessions.values()]


class Context(NamedTuple):
    """What ``FetchManager#newContext`` decided: ``kind`` is "error" (``error`` set),
    "sessionless", "full" or "incremental" (``session`` set, its epoch already moved)."""

    kind: str
    error: int = E.NONE
    session: FetchSession | None = None
    removed: tuple = ()  # keys an incremental request forgot
    changed: tuple = ()  # keys an incremental request added or updated
    closed: FetchSession | None = None  # a session a full request closed


def new_context(cache: FetchSessionCache, meta: FetchMetadata, fetch_data: Any, to_forget: Any,
                now: int) -> Context:
    """``FetchManager#newContext`` for a request with ``meta`` (its partitions: ``fetch_data``
    as (key, topic name, request partition), ``to_forget`` keys); always topic ids (v13+)."""
    if meta.is_full:
        closed = None
        if meta.session_id != INVALID_SESSION_ID:
            closed = cache.get_cache_shard(meta.session_id).remove(meta.session_id)
        kind = "sessionless" if meta.epoch == FINAL_EPOCH else "full"
        return Context(kind, closed=closed)
    shard = cache.get_cache_shard(meta.session_id)
    session = shard.get(meta.session_id)
    if session is None:
        return Context("error", E.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != meta.epoch:
        return Context("error", E.INVALID_FETCH_SESSION_EPOCH)
    added, updated, removed = session.update(fetch_data, to_forget)
    if not session.partitions:
        shard.remove(session)
        return Context("sessionless", removed=tuple(removed), closed=session)
    shard.touch(session, now)
    session.epoch = next_epoch(session.epoch)
    return Context("incremental", session=session, removed=tuple(removed),
                   changed=tuple(added + updated))


def create_full_session(cache: FetchSessionCache, now: int, privileged: bool,
                        parts: list[tuple[Any, str, Any, Any]]) -> int:
    """A full context's response (``FullFetchContext#updateAndGenerateResponseData``): a new
    session of ``parts`` ((key, name, request partition, response partition)) in the next
    shard, or INVALID_SESSION_ID."""
    def create() -> dict:
        out = {}
        for i, (key, name, req, resp) in enumerate(parts):
            cp = out[key] = CachedPartition(name, key[0], key[1], req, resp)
            cp.pos = i
        return out
    return cache.get_next_cache_shard().maybe_create_session(now, privileged, len(parts), True,
                                                             create)
