"""A steady replica manager's fetch cycle between brokers, as state transitions alone.

In an idle stretch the replica fetching between brokers is a fixed cycle (``replicas.py``):
every ``replica.fetch.backoff.ms`` a follower's ``tick`` sends one FetchRequest per leader
broker, the leader's ``handle_fetch`` records the follower (last fetch, caught up, broker
epoch) and answers at once with no records, and the follower's ``on_fetch_response`` records
its last fetch. The idle warp holds these events (fastforward/held_events.py) and applies them
with the functions here, which move exactly the state those paths move but build no message:
the request ids are counted on the broker's outbox, the messages counted by the caller
(tests/broker/test_broker_steady_replicas.py compares them with the full paths). They apply
where the model found the replicas steady: every partition with a leader, every follower in
its view of the leader's, every live follower in the ISR, nothing pending.
"""

from __future__ import annotations

from typing import Any


def fetches_sent(replicas: Any, now_ms: int) -> list[int]:
    """``tick`` at a due replica fetch, the requests' ids counted but not queued
    (``ReplicaManager.fetch_round``); returns the leader brokers."""
    return replicas.fetch_round(now_ms, queue=False)


def fetch_served(replicas: Any, follower: int, epoch: int, now_ms: int) -> None:
    """``handle_fetch`` of a steady follower's request (broker epoch ``epoch``): its record on
    every partition led here that it follows (the answer is the caller's to count)."""
    me = replicas.broker_id
    for rep in replicas.replicas.values():
        if rep.leader == me:
            state = rep.followers.get(follower)
            if state is not None:
                state.fetched(epoch, now_ms)


def fetch_answered(replicas: Any, leader: int, cid: int, now_ms: int) -> bool:
    """``on_fetch_response`` of a steady leader's error-free answer to request ``cid``; False
    (nothing changed) when that is not the fetch in flight to that leader (a later one left
    before it came: the broker ignores it)."""
    if replicas._fetch_cids.get(leader) != cid:
        return False
    del replicas._fetch_cids[leader]
    for rep in replicas.replicas.values():
        if rep.leader == leader:
            rep.last_fetched_ms = now_ms
    return True


def isr_checked(replicas: Any, now_ms: int) -> None:
    """``tick`` at a due ISR check (in the steady state it shrinks nothing)."""
    replicas.isr_check(now_ms)
