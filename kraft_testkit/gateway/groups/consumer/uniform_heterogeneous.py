"""Kafka 4.2.1's ``UniformHeterogeneousAssignmentBuilder``: the uniform assignor when members
subscribe to different topics. Members keep the partitions of topics they still subscribe to;
the unassigned partitions go, topic by topic (most partitions per subscriber first), to the
least-loaded subscribers; then partitions move from the most to the least loaded subscriber of
each topic until no move improves the balance (at most 16 rounds over the topics)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_ITERATION_COUNT = 16


def _signed64(raw: bytes) -> int:
    v = int.from_bytes(raw, "big")
    return v - (1 << 64) if v >= 1 << 63 else v


def _uuid_key(topic_id: Any) -> tuple[int, int]:
    """``Uuid#compareTo``: the two halves as signed longs."""
    raw = bytes(topic_id)
    return _signed64(raw[:8]), _signed64(raw[8:])


class _Balancer:
    """``MemberAssignmentBalancer``: the least and most loaded ranges of a topic's
    subscribers, sorted by (assigned partitions, member index)."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted: list[int] = []

    def initialize(self, members: list[int]) -> int:
        self.sorted = sorted(members, key=lambda i: (self.sizes[i], i))
        s = self.sorted
        self.least_end, self.least_count = 0, self.sizes[s[0]] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(s)
        self.most_count = self.sizes[s[-1]] + 1
        self.next_most = len(s) - 1
        return self.sizes[s[-1]] - self.sizes[s[0]]

    def next_least_loaded(self) -> int:
        s = self.sorted
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(s) and self.sizes[s[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = s[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        s = self.sorted
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.sizes[s[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.sizes[s[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = s[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        s = self.sorted
        member = s[self.next_most + 1]
        s[self.next_most + 1] = s[self.most_end - 1]
        s[self.most_end - 1] = member
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


def build(members: list, partitions_of: Callable[[Any], int],
          error: type[Exception]) -> dict[str, dict[Any, frozenset[int]]]:
    """``UniformHeterogeneousAssignmentBuilder#build`` over ``members`` (MemberSpec, in the
    group's member iteration order)."""
    ids = [m.member_id for m in members]
    subscribers: dict[Any, list[int]] = {}
    for index, m in enumerate(members):
        for t in m.topics:
            if partitions_of(t) == -1:
                raise error(f"Members are subscribed to topic {t} which doesn't exist in the "
                            "topic metadata.")
            subscribers.setdefault(t, []).append(index)
    if not subscribers:
        return {}
    sizes = [0] * len(members)
    owners = {t: [-1] * partitions_of(t) for t in subscribers}
    target: list[dict[Any, set[int]]] = []
    for index, m in enumerate(members):  # maybeRevokePartitions
        mine: dict[Any, set[int]] = {}
        for t, parts in m.assignment.items():
            if t in m.topics:
                sizes[index] += len(parts)
                for p in parts:
                    owners[t][p] = index
                mine[t] = set(parts)
        target.append(mine)

    def topic_order(topics: Any) -> list:
        def key(t: Any) -> tuple:
            n, subs = partitions_of(t), len(subscribers[t])
            return (-(n / subs), subs, _uuid_key(t))
        return sorted(topics, key=key)

    def assign_partition(t: Any, p: int, index: int) -> None:
        old = owners[t][p]
        if old != -1:
            target[old][t].discard(p)
            if not target[old][t]:
                del target[old][t]
            owners[t][p] = -1
            sizes[old] -= 1
        target[index].setdefault(t, set()).add(p)
        owners[t][p] = index
        sizes[index] += 1

    unassigned = {t: [p for p in range(partitions_of(t)) if owners[t][p] == -1]
                  for t in subscribers}
    balancer = _Balancer(sizes)
    for t in topic_order(t for t, ps in unassigned.items() if ps):  # assignRemainingPartitions
        balancer.initialize(subscribers[t])
        for p in unassigned[t]:
            assign_partition(t, p, balancer.next_least_loaded())

    movable = topic_order(t for t in subscribers if len(subscribers[t]) >= 2)  # balance
    last = -1
    for _ in range(MAX_ITERATION_COUNT):
        for index, t in enumerate(movable):
            if index == last:
                return _result(ids, target)
            moved = _balance_topic(t, balancer, owners[t], subscribers[t], assign_partition)
            if moved > 0 or last == -1:
                last = index
    return _result(ids, target)


def _balance_topic(t: Any, balancer: _Balancer, owners: list[int], subscribers: list[int],
                   assign_partition: Callable) -> int:
    """``balanceTopic``: move partitions from the most to the least loaded subscribers."""
    moved = 0
    if balancer.initialize(subscribers) <= 1:
        return moved
    order = sorted(range(len(owners)), key=lambda p: (owners[p], p))
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    for i, p in enumerate(order):
        start.setdefault(owners[p], i)
        end[owners[p]] = i + 1
    while not balancer.balanced():
        while True:
            most = balancer.next_most_loaded()
            if most == -1:
                break
            if most not in end or end[most] - start[most] <= 0:
                balancer.exclude_most_loaded()
                continue
            break
        if most == -1:
            break
        p = order[end[most] - 1]
        end[most] -= 1
        least = balancer.next_least_loaded()
        if balancer.balanced():
            break
        assign_partition(t, p, least)
        moved += 1
    return moved


def _result(ids: list[str], target: list[dict]) -> dict[str, dict[Any, frozenset[int]]]:
    return {ids[i]: {t: frozenset(ps) for t, ps in a.items()} for i, a in enumerate(target)}
