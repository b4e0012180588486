"""The fetch session cache alone (``gateway/fetch_sessions.py``), against Kafka's
``FetchSessionTest``: epochs, the errors of ``FetchManager#newContext``, what an incremental
answer keeps, and ``FetchSessionCacheShard`` eviction."""

from __future__ import annotations

import random
from types import SimpleNamespace

from kraft_testkit.gateway import fetch_sessions as fs
from kraft_testkit.protocol.error_codes import ErrorCode as E


def _part(p: int, offset: int = 0, topic: str = "t") -> fs.CachedPartition:
    return fs.CachedPartition(topic=topic, topic_id=None, partition=p, fetch_offset=offset,
                              max_bytes=1 << 20)


def _answer(hw: int, records: bytes = b"", error: int = 0, log_start: int = 0):
    return SimpleNamespace(records=records, high_watermark=hw, error_code=error,
                           log_start_offset=log_start)


def _open(cache: fs.SessionCache, now: int = 0, parts=(0, 1)) -> int:
    ctx = fs.new_context(cache, now, 0, fs.INITIAL_EPOCH, False, [_part(p) for p in parts], [])
    assert ctx.kind == "full"
    code, sid, sent = fs.finish(cache, ctx, now, False, [(p, _answer(5)) for p in ctx.partitions])
    assert code == 0 and sid != fs.INVALID_SESSION_ID and len(sent) == len(parts)
    return sid


def test_next_epoch_wraps_and_final_stays():
    """FetchSessionTest / FetchMetadata#nextEpoch."""
    assert fs.next_epoch(0) == 1 and fs.next_epoch(41) == 42
    assert fs.next_epoch(0x7FFFFFFF) == 1
    assert fs.next_epoch(fs.FINAL_EPOCH) == fs.FINAL_EPOCH


def test_incremental_fetches_answer_only_changes():
    """FetchSessionTest#testIncrementalFetchSession: partitions with nothing new are left out,
    a new high watermark or records bring one back; the epoch must be the next one."""
    cache = fs.SessionCache(random.Random(1))
    sid = _open(cache)
    ctx = fs.new_context(cache, 10, sid, 1, False, [], [])
    assert ctx.kind == "incremental" and [p.partition for p in ctx.partitions] == [0, 1]
    code, same, sent = fs.finish(cache, ctx, 10, False,
                                 [(ctx.partitions[0], _answer(5)),
                                  (ctx.partitions[1], _answer(7, b"rec"))])
    assert (code, same) == (0, sid) and [p.partition for p, _ in sent] == [1]
    # partition 1 returned records: it moves to the end of the session's order
    ctx = fs.new_context(cache, 20, sid, 2, False, [_part(1, offset=7)], [("t", 0)])
    assert [p.partition for p in ctx.partitions] == [1] and ctx.partitions[0].fetch_offset == 7
    assert fs.new_context(cache, 30, sid, 2, False, [], []).error == E.INVALID_FETCH_SESSION_EPOCH
    assert fs.new_context(cache, 30, 12345, 1, False, [], []).error == \
        E.FETCH_SESSION_ID_NOT_FOUND
    assert fs.new_context(cache, 30, sid, 3, True, [], []).error == \
        E.FETCH_SESSION_TOPIC_ID_ERROR
    close = fs.new_context(cache, 40, sid, fs.FINAL_EPOCH, False, [_part(1)], [])
    assert close.kind == "sessionless" and cache.get(sid) is None
    code, none, sent = fs.finish(cache, close, 40, False, [(close.partitions[0], _answer(7))])
    assert none == fs.INVALID_SESSION_ID and len(sent) == 1


def test_forgetting_every_partition_closes_the_session():
    cache = fs.SessionCache(random.Random(2))
    sid = _open(cache, parts=(0,))
    ctx = fs.new_context(cache, 5, sid, 1, False, [], [("t", 0)])
    assert ctx.kind == "sessionless" and cache.get(sid) is None


def test_a_full_cache_evicts_stale_then_smaller_old_sessions():
    """FetchSessionTest#testSessionCache / testPrivilegedSessionHandling: a shard holds
    slots // 8 sessions; a stale one (unused > 120 s) goes first; otherwise an old one (created
    > 120 s ago) with fewer partitions than the newcomer; none: no session (id 0)."""
    cache = fs.SessionCache(random.Random(3), slots=16)  # 2 per shard
    sids = [_open(cache, now=0, parts=(0,)) for _ in range(16)]
    assert len(cache) == 16 and len(set(sids)) == 16
    # every shard full, all sessions young: a newcomer gets no session
    ctx = fs.new_context(cache, 1_000, 0, fs.INITIAL_EPOCH, False, [_part(0)], [])
    assert fs.finish(cache, ctx, 1_000, False, [(ctx.partitions[0], _answer(1))])[1] == 0
    # all stale after 120 s unused: the least recently used one of the shard goes
    ctx = fs.new_context(cache, 200_000, 0, fs.INITIAL_EPOCH, False, [_part(0)], [])
    sid = fs.finish(cache, ctx, 200_000, False, [(ctx.partitions[0], _answer(1))])[1]
    assert sid != 0 and len(cache) == 16


def test_an_old_session_makes_room_for_a_larger_one():
    """FetchSessionTest#testSessionCache: with nothing stale, a session created more than
    120 s ago (as of its last use) is evicted for a newcomer with more partitions, not for one
    of the same size."""
    cache = fs.SessionCache(random.Random(4), slots=8)  # one per shard
    sids = [_open(cache, now=0, parts=(0,)) for _ in range(8)]
    for sid in sids:                                      # used again after 130 s
        assert fs.new_context(cache, 130_000, sid, 1, False, [], []).kind == "incremental"

    def newcomer(parts) -> int:
        ctx = fs.new_context(cache, 140_000, 0, fs.INITIAL_EPOCH, False,
                             [_part(p) for p in parts], [])
        return fs.finish(cache, ctx, 140_000, False, [(p, _answer(1)) for p in ctx.partitions])[1]

    assert newcomer((0,)) == fs.INVALID_SESSION_ID
    assert newcomer((0, 1)) != fs.INVALID_SESSION_ID and len(cache) == 8
