"""FetchSessionTest (Kafka 4.2.1, core): the leader's side of KIP-227 sessions, on the kit's
``broker/fetch_session_cache.py``. Kafka's ``FetchManager#newContext`` is ``new_context``
(its context class is ``Context.kind``), ``FullFetchContext#updateAndGenerateResponseData`` is
``create_full_session``, ``MockTime`` an integer of milliseconds."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.broker.fetch_session import INVALID_SESSION_ID, FetchMetadata
from kraft_testkit.broker.fetch_session_cache import (
    CachedPartition,
    FetchSessionCache,
    FetchSessionCacheShard,
    create_full_session,
    new_context,
)
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid

RNG = random.Random(227)
_FQ, _FS = M.FetchRequest, M.FetchResponse
INT_MAX = (1 << 31) - 1


def rid() -> Uuid:
    return Uuid.random(RNG)


def dummy_create(size: int):
    """FetchSessionTest#dummyCreate: ``size`` partitions of fresh topic ids."""
    def create():
        return {(rid(), i): CachedPartition("test", None, i) for i in range(size)}
    return create


def assert_cache_contains(shard: FetchSessionCacheShard, *ids: int) -> None:
    for i, sid in enumerate(ids, 1):
        assert shard.get(sid) is not None, f"Missing session {i} out of {len(ids)} ({sid})"
    assert shard.size == len(ids)


@pytest.mark.kafka("FetchSessionTest#testNewSessionId")
def test_new_session_id():
    shard = FetchSessionCacheShard(3, 100, rng=random.Random(1))
    assert all(shard.new_session_id() > 0 for _ in range(10_001))


@pytest.mark.kafka("FetchSessionTest#testSessionCache")
def test_session_cache():
    shard = FetchSessionCacheShard(3, 100)
    assert shard.size == 0
    id1 = shard.maybe_create_session(0, False, 10, True, dummy_create(10))
    id2 = shard.maybe_create_session(10, False, 20, True, dummy_create(20))
    id3 = shard.maybe_create_session(20, False, 30, True, dummy_create(30))
    assert shard.maybe_create_session(30, False, 40, True, dummy_create(40)) == INVALID_SESSION_ID
    assert shard.maybe_create_session(40, False, 5, True, dummy_create(5)) == INVALID_SESSION_ID
    assert_cache_contains(shard, id1, id2, id3)
    shard.touch(shard.get(id1), 200)
    id4 = shard.maybe_create_session(210, False, 11, True, dummy_create(11))
    assert_cache_contains(shard, id1, id3, id4)
    shard.touch(shard.get(id1), 400)
    shard.touch(shard.get(id3), 390)
    shard.touch(shard.get(id4), 400)
    id5 = shard.maybe_create_session(410, False, 50, True, dummy_create(50))
    assert_cache_contains(shard, id3, id4, id5)
    assert shard.maybe_create_session(410, False, 5, True, dummy_create(5)) == INVALID_SESSION_ID
    id6 = shard.maybe_create_session(410, True, 5, True, dummy_create(5))
    assert_cache_contains(shard, id3, id5, id6)


@pytest.mark.kafka("FetchSessionTest#testResizeCachedSessions")
def test_resize_cached_sessions():
    shard = FetchSessionCacheShard(2, 100)
    assert (shard.total_partitions, shard.size, shard.evictions) == (0, 0, 0)
    id1 = shard.maybe_create_session(0, False, 2, True, dummy_create(2))
    assert id1 > 0
    assert_cache_contains(shard, id1)
    session1 = shard.get(id1)
    assert session1.size == 2
    assert (shard.total_partitions, shard.size, shard.evictions) == (2, 1, 0)
    id2 = shard.maybe_create_session(0, False, 4, True, dummy_create(4))
    session2 = shard.get(id2)
    assert id2 > 0
    assert_cache_contains(shard, id1, id2)
    assert (shard.total_partitions, shard.size, shard.evictions) == (6, 2, 0)
    shard.touch(session1, 200)
    shard.touch(session2, 200)
    id3 = shard.maybe_create_session(200, False, 5, True, dummy_create(5))
    assert id3 > 0
    assert_cache_contains(shard, id2, id3)
    assert (shard.total_partitions, shard.size, shard.evictions) == (9, 2, 1)
    shard.remove(id3)
    assert_cache_contains(shard, id2)
    assert (shard.size, shard.evictions, shard.total_partitions) == (1, 1, 4)
    del session2.partitions[next(iter(session2.partitions))]
    assert (session2.size, session2.cached_size) == (3, 4)
    shard.touch(session2, session2.last_used_ms)
    assert shard.total_partitions == 3


def request_parts(tid: Uuid, *offsets: tuple[int, int]) -> list:
    """(key, topic name, FetchPartition) of foo's partitions: (partition, fetch offset)."""
    return [((tid, p), "foo", _FQ.FetchPartition(partition=p, fetch_offset=off,
                                                 log_start_offset=0, partition_max_bytes=100))
            for p, off in offsets]


def full_session(cache: FetchSessionCache, now: int, follower: bool, parts: list) -> int:
    """A full request's context and response: HW / log start 100 for foo-0, 10 for foo-1."""
    ctx = new_context(cache, FetchMetadata(0, 0), parts, [], now)
    assert ctx.kind == "full"
    answers = [(key, name, fp, _FS.PartitionData(
        partition_index=key[1], high_watermark=100 if key[1] == 0 else 10,
        last_stable_offset=100 if key[1] == 0 else 10,
        log_start_offset=100 if key[1] == 0 else 10)) for key, name, fp in parts]
    sid = create_full_session(cache, now, follower, answers)
    assert sid != INVALID_SESSION_ID
    return sid


@pytest.mark.kafka("FetchSessionTest#testFetchSessionExpiration")
def test_fetch_session_expiration():
    shard = FetchSessionCacheShard(2, 1000)
    cache = FetchSessionCache([shard])
    foo = rid()
    now = 0
    s1 = full_session(cache, now, False, request_parts(foo, (0, 0), (1, 10)))
    assert shard.get(s1) is not None
    now += 500
    s2 = full_session(cache, now, False, request_parts(foo, (0, 0), (1, 10)))
    assert shard.get(s1) is not None and shard.get(s2) is not None
    now += 500
    ctx = new_context(cache, FetchMetadata(s1, 1), [], [], now)
    assert ctx.kind == "incremental"
    now += 501  # session 1 would be evicted now had the incremental fetch not touched it
    s3 = full_session(cache, now, False, request_parts(foo, (0, 0), (1, 0)))
    assert shard.get(s1) is not None
    assert shard.get(s2) is None, ("session 2 should have been evicted by latest session, as "
                                   "session 1 was used more recently")
    assert shard.get(s3) is not None


@pytest.mark.kafka("FetchSessionTest#testPrivilegedSessionHandling")
def test_privileged_session_handling():
    shard = FetchSessionCacheShard(2, 1000)
    cache = FetchSessionCache([shard])
    foo = rid()
    now = 0
    s1 = full_session(cache, now, True, request_parts(foo, (0, 0), (1, 10)))
    assert shard.size == 1
    now += 500
    s2 = full_session(cache, now, False, request_parts(foo, (0, 0), (1, 10)))
    assert shard.get(s1) is not None and shard.get(s2) is not None and shard.size == 2
    now += 500
    s3 = full_session(cache, now, True, request_parts(foo, (0, 0), (1, 0)))
    assert shard.get(s1) is not None
    assert shard.get(s2) is None, "session 2 should have been evicted by session 3"
    assert shard.get(s3) is not None and shard.size == 2
    now += 501
    s4 = full_session(cache, now, True, request_parts(foo, (0, 0), (1, 0)))
    assert shard.get(s1) is None, ("session 1 should have been evicted by session 4 even though "
                                   "it is privileged as it has hit eviction time")
    assert shard.get(s3) is not None and shard.get(s4) is not None and shard.size == 2


@pytest.mark.kafka("FetchSessionTest#testZeroSizeFetchSession")
def test_zero_size_fetch_session():
    shard = FetchSessionCacheShard(10, 1000)
    cache = FetchSessionCache([shard])
    foo = rid()
    s1 = full_session(cache, 0, False, request_parts(foo, (0, 0), (1, 10)))
    # an incremental request that removes foo-0 and foo-1 closes the session
    ctx = new_context(cache, FetchMetadata(s1, 1), [], [(foo, 0), (foo, 1)], 0)
    assert ctx.kind == "sessionless"
    assert shard.size == 0


@pytest.mark.kafka("FetchSessionTest#testFetchSessionCache_getShardedCache_retrievesCacheFromCorrectSegment")
def test_sharded_cache_retrieves_cache_from_correct_segment():
    n = 8
    rng_range = INT_MAX // n
    shards = [FetchSessionCacheShard(10, 1000, rng_range, i) for i in range(n)]
    cache = FetchSessionCache(shards)
    assert cache.get_cache_shard(rng_range - 1) is shards[0]
    assert cache.get_cache_shard(rng_range) is shards[1]
    assert cache.get_cache_shard(rng_range * 2) is shards[2]
    with pytest.raises(IndexError):
        cache.get_cache_shard(rng_range * n)


@pytest.mark.kafka("FetchSessionTest#testFetchSessionCache_RoundRobinsIntoShards")
def test_round_robins_into_shards():
    n = 8
    shards = [FetchSessionCacheShard(10, 1000, INT_MAX // n, i) for i in range(n)]
    cache = FetchSessionCache(shards)
    for i in range(n * 2):
        assert cache.get_next_cache_shard() is shards[i % n]


@pytest.mark.kafka("FetchSessionTest#testFetchSessionCache_RoundRobinsIntoShards_WhenIntegerOverflows")
def test_round_robins_into_shards_when_integer_overflows():
    n = 8
    shards = [FetchSessionCacheShard(10, 1000, INT_MAX // n, i) for i in range(n)]
    cache = FetchSessionCache(shards)
    cache.counter = INT_MAX + 1  # Int.MaxValue + 1 wraps to Int.MinValue
    for i in range(n * 2):
        assert cache.get_next_cache_shard() is shards[i % n]


@pytest.mark.kafka("FetchSessionTest#testFetchRequests")
def test_fetch_requests_session_errors_and_epochs():
    """The contexts of testFetchRequests: a full request makes a session; a wrong epoch gets
    INVALID_FETCH_SESSION_EPOCH, an unknown id FETCH_SESSION_ID_NOT_FOUND
    (``SessionErrorContext``); epochs 1, 2 are incremental; FINAL_EPOCH closes the session
    and is sessionless."""
    shard = FetchSessionCacheShard(10, 1000)
    cache = FetchSessionCache([shard])
    foo = rid()
    assert new_context(cache, FetchMetadata(0, -1), request_parts(foo, (0, 0)), [],
                       0).kind == "sessionless"
    sid = full_session(cache, 0, False, request_parts(foo, (0, 0), (1, 10)))
    ctx3 = new_context(cache, FetchMetadata(sid, 5), [], [], 0)
    assert (ctx3.kind, ctx3.error) == ("error", 71)   # INVALID_FETCH_SESSION_EPOCH
    ctx4 = new_context(cache, FetchMetadata(sid + 1, 1), [], [], 0)
    assert (ctx4.kind, ctx4.error) == ("error", 70)   # FETCH_SESSION_ID_NOT_FOUND
    assert new_context(cache, FetchMetadata(sid, 1), request_parts(foo, (0, 5)), [],
                       0).kind == "incremental"
    assert new_context(cache, FetchMetadata(sid, 5), [], [], 0).error == 71
    assert new_context(cache, FetchMetadata(sid, 2), [], [], 0).kind == "incremental"
    assert shard.get(sid).epoch == 3
    assert new_context(cache, FetchMetadata(sid, -1), request_parts(foo, (0, 0)), [],
                       0).kind == "sessionless"
    assert shard.get(sid) is None
