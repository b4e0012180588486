"""A steady replica manager's fetch cycle between brokers, as state transitions alone.

In an idle stretch the replica fetching between brokers is a fixed cycle (``replicas.py``):
every ``replica.fetch.backoff.ms`` a follower's ``tick`` sends one FetchRequest per leader
broker, the leader's ``handle_fetch`` records the follower (last fetch, caught up, broker
epoch) and answers at once with no records, and the follower's ``on_fetch_response`` records
its last fetch. The idle warp holds these events (fastforward/held_events.py) and applies them
with the functions here, which run those paths but queue no message: the request ids are
counted on the broker's outbox and the bodies handed to the caller (with KIP-227 sessions a
steady fetch and its answer list no partition, so building them costs little and keeps the
session ids and epochs exactly as stepping moves them), the messages counted by the caller
(tests/broker/test_broker_steady_replicas.py compares them with the full paths). They apply
where the model found the replicas steady: every partition with a leader, every follower in
its view of the leader's, every live follower in the ISR, nothing pending.
"""

from __future__ import annotations

from typing import Any


def fetches_sent(replicas: Any, now_ms: int) -> list[int]:
    """``tick`` at a due replica fetch, the requests built (their sessions move) but not
    queued: ``replicas._unqueued[leader]`` holds each one's (request id, body)
    (``ReplicaManager.fetch_round``); returns the leader brokers."""
    return replicas.fetch_round(now_ms, queue=False)


def fetch_served(replicas: Any, request: Any, now_ms: int) -> Any:
    """``handle_fetch`` of a steady follower's request body: its record at the leader (only
    the partitions that changed are visited: KIP-227 sessions, ``replica_fetch.py``); returns
    the answer's body (the caller counts it)."""
    return replicas.handle_fetch(request, now_ms)


def fetch_answered(replicas: Any, leader: int, cid: int, answer: Any, now_ms: int) -> bool:
    """``on_fetch_response`` of a leader's answer to request ``cid``; False (nothing changed)
    when that is not the fetch in flight to that leader (a later one left before it came: the
    broker ignores it)."""
    if replicas._fetch_cids.get(leader) != cid:  # noqa: SLF001
        return False
    replicas.on_fetch_response(leader, cid, answer, now_ms)
    return True


def isr_checked(replicas: Any, now_ms: int) -> None:
    """``tick`` at a due ISR check (in the steady state it shrinks nothing)."""
    replicas.isr_check(now_ms)
