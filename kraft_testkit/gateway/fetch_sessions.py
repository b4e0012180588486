"""Client fetch sessions (KIP-227) at the gateway, as a Kafka 4.2 broker keeps them for
consumers: the session cache is the kit's port of Kafka's ``FetchSession.scala``
(``broker/fetch_session_cache.py``: ``FetchSessionCache``, ``FetchManager#newContext``,
``CachedPartition#maybeUpdateResponseData``), which the brokers' replica fetches use too.

A full fetch (epoch 0) answers every partition it names and opens a session when a slot is free
(1,000 slots over 8 shards; or one can be evicted: a stale one, else a smaller old one); the
answer carries the session id. An incremental fetch (the session id, the next epoch) names only
what changed (new offsets, partitions to add, forgotten ones) and is answered with only the
partitions that have something to say (records, a new high watermark or log start, an error);
those that returned records move to the end of the session's order. Epoch -1 closes the
session (a sessionless fetch). Errors: FETCH_SESSION_ID_NOT_FOUND for an unknown (evicted,
closed) id, INVALID_FETCH_SESSION_EPOCH for a wrong epoch, FETCH_SESSION_TOPIC_ID_ERROR when a
session made with topic ids is used without them (or back).

Kafka keeps followers' and clients' sessions in one cache per broker; the gateway keeps the
clients' in a cache of its own per broker (same classes, sizes and eviction), so a client never
takes a slot from the simulated followers. A restarted broker process knows no session;
session ids come from the cluster's seeded RNG.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.broker.fetch_session import FetchMetadata, next_epoch
from kraft_testkit.broker.fetch_session_cache import CachedPartition, Context, FetchSessionCache, \
    new_context
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.sim.rng import RngTree

INVALID_SESSION_ID = 0


def cache_of(gateway: Any, node: int) -> FetchSessionCache:
    """The broker's client session cache; a restarted broker process starts with an empty one."""
    incarnation = gateway.cluster.sim.process(node).incarnation
    held = gateway.fetch_sessions.get(node)
    if held is None or held[0] != incarnation:
        rng = RngTree(gateway.cluster.seed).child("gateway", "fetch-session", node, incarnation)
        held = gateway.fetch_sessions[node] = (incarnation, FetchSessionCache.for_broker(rng))
    return held[1]


@dataclass
class ClientSession:
    """One client Fetch through its session: ``context`` is what ``newContext`` decided,
    ``served`` the (key, topic name, FetchPartition) entries to read, in order."""

    context: Context
    meta: FetchMetadata
    by_id: bool
    served: list[tuple[Any, str | None, Any]] = field(default_factory=list)


def open_session(ctx: Any, req: Any) -> tuple[ClientSession, Any]:
    """The client's Fetch seen through its session, and the request to serve (every partition
    of the session for an incremental fetch, in the session's order)."""
    by_id = ctx.version >= 13
    image = ctx.cluster.broker(ctx.node).image
    entries = []
    for t in req.topics:
        topic = image.topics.by_id(t.topic_id) if by_id else image.topics.by_name(t.topic)
        name = t.topic if not by_id else (topic.name if topic is not None else None)
        for fp in t.partitions:
            entries.append(((t.topic_id if by_id else t.topic, fp.partition), name, fp))
    forgotten = [(f.topic_id if by_id else f.topic, p)
                 for f in req.forgotten_topics_data for p in f.partitions]
    cache = cache_of(ctx.gateway, ctx.node)
    meta = FetchMetadata(req.session_id, req.session_epoch)
    known = None if meta.is_full else cache.get(meta.session_id)
    if known is not None and known.epoch == meta.epoch and known.uses_topic_ids != by_id:
        context = Context("error", ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    else:
        context = new_context(cache, meta, entries, forgotten, ctx.now_ms)
    session = ClientSession(context, meta, by_id)
    if context.kind in ("full", "sessionless"):
        session.served = entries
    elif context.kind == "incremental":
        F = type(req)
        for key, cp in sorted(context.session.partitions.items(), key=lambda kv: kv[1].pos):
            session.served.append((key, cp.topic, F.FetchPartition(
                partition=key[1], fetch_offset=cp.fetch_offset, partition_max_bytes=cp.max_bytes,
                current_leader_epoch=cp.leader_epoch)))
    return session, req.replace(topics=_topics(type(req), session.served, by_id))


def _topics(F: Any, served: list, by_id: bool) -> tuple:
    """FetchTopics of consecutive entries of one topic, in order."""
    groups: list[tuple[Any, str | None, list]] = []
    for key, name, fp in served:
        if groups and groups[-1][0] == key[0]:
            groups[-1][2].append(fp)
        else:
            groups.append((key[0], name, [fp]))
    if by_id:
        return tuple(F.FetchTopic(topic=name or "", topic_id=tid, partitions=tuple(fps))
                     for tid, name, fps in groups)
    return tuple(F.FetchTopic(topic=name, partitions=tuple(fps)) for _, name, fps in groups)


def shape(ctx: Any, session: ClientSession, response: Any) -> Any:
    """The answer to send (once per request: the session moves with it): the session's error
    and id, and for an incremental fetch only the partitions with news.
    ``response`` answers the served request, partition for partition."""
    context = session.context
    if context.kind == "error":
        return response.replace(error_code=context.error, session_id=INVALID_SESSION_ID,
                                responses=())
    answers = [p for t in response.responses for p in t.partitions]
    pairs = list(zip(session.served, answers, strict=True))
    if context.kind == "sessionless":
        return response.replace(session_id=INVALID_SESSION_ID)
    cache = cache_of(ctx.gateway, ctx.node)
    if context.kind == "full":       # FullFetchContext#updateAndGenerateResponseData
        def create() -> dict:
            out = {}
            for i, ((key, name, fp), answer) in enumerate(pairs):
                cp = out[key] = CachedPartition(name, key[0], key[1], fp, answer)
                cp.pos = i
            return out
        sid = cache.get_next_cache_shard().maybe_create_session(
            ctx.now_ms, False, len(pairs), session.by_id, create)
        return response.replace(session_id=sid)
    live = context.session             # IncrementalFetchContext#updateAndGenerateResponseData
    if live.epoch != next_epoch(session.meta.epoch):  # a later request moved it meanwhile
        return response.replace(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                                session_id=live.id, responses=())
    keep = set()
    for (key, _, _), answer in pairs:
        cp = live.partitions.get(key)
        if cp is not None and cp.maybe_update_response_data(answer, True):
            keep.add(id(answer))
            if answer.records:       # to the end of the session's order
                cp.pos, live.seq = live.seq, live.seq + 1
    topics = []
    for t in response.responses:
        kept = tuple(p for p in t.partitions if id(p) in keep)
        if kept:
            topics.append(t.replace(partitions=kept))
    return response.replace(session_id=live.id, responses=tuple(topics))
