"""Kafka 4.2.1's server-side assignors for consumer groups (``group.consumer.assignors``):
``uniform`` (the default; ``UniformAssignor``) and ``range`` (``RangeAssignor``).

* uniform, every member subscribed to the same topics: ``UniformHomogeneousAssignmentBuilder``
  ported step for step (each member keeps what it had up to its quota, the members that must
  take an extra partition are the last ones, the rest go out in topic order);
* uniform, members subscribed to different topics: ``UniformHeterogeneousAssignmentBuilder``
  (``uniform_heterogeneous.py``): members keep what they still subscribe to, the rest goes to
  the least-loaded subscribers topic by topic, then partitions move until balanced;
* range: per topic, members sorted (static members by instance id first, then member ids)
  take consecutive ranges, the first ``partitions % members`` one more.

Iteration orders are Java's (``java_order``), so the same group gives Kafka's assignment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Assignment = dict[Any, frozenset[int]]   # topic id -> partitions
ASSIGNORS = ("uniform", "range")


class PartitionAssignorError(Exception):
    """Kafka's ``PartitionAssignorException``: the coordinator answers UNKNOWN_SERVER_ERROR."""


@dataclass(frozen=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    topics: tuple           # subscribed topic ids that exist, in Java's iteration order
    assignment: Assignment  # the member's current target assignment (Java's topic order)


@dataclass
class GroupSpec:
    members: list[MemberSpec]                 # in the order ``memberIds()`` iterates
    homogeneous: bool
    assigned: set[tuple[Any, int]] = field(default_factory=set)  # the inverted target


def assign(name: str, spec: GroupSpec,
           partitions_of: Callable[[Any], int]) -> dict[str, Assignment]:
    """The new target assignment, member id -> topic id -> partitions."""
    if not spec.members:
        return {}
    if name == "range":
        return _range(spec, partitions_of)
    if spec.homogeneous:
        return _uniform_homogeneous(spec, partitions_of)
    return _uniform_heterogeneous(spec, partitions_of)


def _uniform_homogeneous(spec: GroupSpec, partitions_of: Callable[[Any], int]) -> dict:
    """``UniformHomogeneousAssignmentBuilder#build``."""
    from .java_order import copy_table_size, uuid_order

    first = spec.members[0].topics
    topics = uuid_order(first, copy_table_size(len(first)))
    if not topics:
        return {}
    subscribed = set(topics)
    unassigned: list[tuple[Any, int]] = []
    total = 0
    for t in topics:
        n = partitions_of(t)
        if n == -1:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {t} which doesn't exist in the topic metadata.")
        unassigned += [(t, i) for i in range(n) if (t, i) not in spec.assigned]
        total += n
    count = len(spec.members)
    minimum, extra = divmod(total, count)
    target: dict[str, dict[Any, set[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, m in enumerate(spec.members):  # maybeRevokePartitions
        new = {t: set(p) for t, p in m.assignment.items()}
        quota, has_extra = minimum, False
        if extra > 0:
            quota, has_extra = quota + 1, True
        for t, parts in m.assignment.items():
            if t in subscribed:
                if len(parts) <= quota:
                    quota -= len(parts)
                    continue
                for p in sorted(parts):
                    if quota > 0:
                        quota -= 1
                    else:
                        new[t].discard(p)
                        if not new[t]:
                            del new[t]
                        unassigned.append((t, p))
            else:
                new.pop(t, None)
        if quota > 0 and has_extra and count - index > extra:
            quota, has_extra = quota - 1, False
        if quota > 0:
            unfilled.append((m.member_id, quota))
        if has_extra:
            extra -= 1
        target[m.member_id] = new
    at = 0
    for member_id, quota in unfilled:  # assignRemainingPartitions
        mine = target[member_id]
        for _ in range(quota):
            if at >= len(unassigned):
                break
            t, p = unassigned[at]
            at += 1
            mine.setdefault(t, set()).add(p)
    if at < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return {m: {t: frozenset(p) for t, p in a.items()} for m, a in target.items()}


def _uniform_heterogeneous(spec: GroupSpec, partitions_of: Callable[[Any], int]) -> dict:
    """``UniformHeterogeneousAssignmentBuilder#build`` (uniform_heterogeneous.py)."""
    from .uniform_heterogeneous import build

    return build(spec.members, partitions_of, PartitionAssignorError)


def _range(spec: GroupSpec, partitions_of: Callable[[Any], int]) -> dict:
    """``RangeAssignor#assign``: homogeneous and heterogeneous groups alike, topic by topic."""
    members = sorted(spec.members, key=lambda m: (
        (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id)))
    counts: dict[Any, list[int]] = {}   # topic -> [partitions, members, next, extra, quota]
    homogeneous = spec.homogeneous
    for m in members:
        for t in (members[0].topics if homogeneous else m.topics):
            if t not in counts:
                n = partitions_of(t)
                if n == -1:
                    raise PartitionAssignorError("Member is subscribed to a non-existent topic")
                counts[t] = [n, len(members) if homogeneous else 0, 0, -1, -1]
            if not homogeneous:
                counts[t][1] += 1
        if homogeneous:
            break
    out: dict[str, Assignment] = {}
    for m in members:
        mine: Assignment = {}
        for t in (members[0].topics if homogeneous else m.topics):
            c = counts[t]
            if c[4] == -1:
                c[4], c[3] = divmod(c[0], c[1])
            quota = c[4]
            if c[3] > 0:
                quota += 1
                c[3] -= 1
            start = c[2]
            end = min(start + quota, c[0])
            c[2] = end
            if start < end:
                mine[t] = frozenset(range(start, end))
        out[m.member_id] = mine
    return out
