"""Network partitions as values: which directed links are cut.

A :class:`Topology` is a set of rules ``(sources, destinations)``; a message from ``s`` to ``d`` is
blocked when some rule holds ``s`` among its sources and ``d`` among its destinations (``None``
stands for every node, including nodes added later). A node never loses the link to itself.
The named shapes are the classic ones from Jepsen: one node isolated, a minority/majority split,
a bridge, and a ring of overlapping majorities.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kraft_testkit.sim.errors import InvalidArgument

NodeSet = frozenset[int] | None  # None: every node
Rule = tuple[NodeSet, NodeSet]


def node_set(nodes: int | Iterable[int]) -> frozenset[int]:
    """``3`` or ``[1, 2]`` as a frozenset, refusing anything that is not a node id."""
    items = (nodes,) if type(nodes) is int else tuple(nodes)  # type: ignore[arg-type]
    for n in items:
        if type(n) is not int:
            raise InvalidArgument(f"node ids are ints, got {n!r}")
    return frozenset(items)


def _node_list(nodes: Iterable[int], need: int, shape: str) -> list[int]:
    out = list(nodes)
    if len(node_set(out)) != len(out):
        raise InvalidArgument(f"{shape}: node ids must be unique, got {out}")
    if len(out) < need:
        raise InvalidArgument(f"{shape} needs at least {need} nodes, got {len(out)}")
    return out


@dataclass(frozen=True, slots=True)
class Topology:
    """A named set of cut links."""

    name: str
    rules: tuple[Rule, ...]

    def blocks(self, src: int, dst: int) -> bool:
        if src == dst:
            return False
        for srcs, dsts in self.rules:
            if (srcs is None or src in srcs) and (dsts is None or dst in dsts):
                return True
        return False


def partition(*groups: int | Iterable[int]) -> Topology:
    """Nodes in different groups cannot talk (both ways); nodes in no group are untouched."""
    sets = [node_set(g) for g in groups]
    if len(sets) < 2:
        raise InvalidArgument("a partition needs at least two groups")
    seen: set[int] = set()
    for s in sets:
        if seen & s:
            raise InvalidArgument(f"partition groups overlap on {sorted(seen & s)}")
        seen |= s
    rules = tuple((a, b) for a in sets for b in sets if a is not b)
    return Topology("partition " + " | ".join(str(sorted(s)) for s in sets), rules)


def one_way(srcs: int | Iterable[int], dsts: int | Iterable[int]) -> Topology:
    """Messages from ``srcs`` to ``dsts`` are lost; the other direction still works."""
    a, b = node_set(srcs), node_set(dsts)
    return Topology(f"one-way {sorted(a)} -> {sorted(b)}", ((a, b),))


def isolated(node: int) -> Topology:
    """``node`` can neither send to nor receive from anyone."""
    only = node_set(node)
    return Topology(f"isolate {node}", ((only, None), (None, only)))


def split(nodes: Iterable[int], rng: random.Random | None = None) -> Topology:
    """A minority (floor((n-1)/2) nodes) cut from the majority; ``rng`` picks who, else the first."""
    order = _node_list(nodes, 2, "split")
    if rng is not None:
        rng.shuffle(order)
    k = (len(order) - 1) // 2 or 1
    topo = partition(order[:k], order[k:])
    return Topology(f"split minority={sorted(order[:k])}", topo.rules)


def bridge(nodes: Sequence[int]) -> Topology:
    """Two halves that cannot talk, and one node in the middle that talks to both."""
    order = _node_list(nodes, 3, "bridge")
    mid = len(order) // 2
    topo = partition(order[:mid], order[mid + 1 :])
    return Topology(f"bridge via {order[mid]}", topo.rules)


def majorities_ring(nodes: Sequence[int]) -> Topology:
    """Each node sees a majority (its ring neighbours), but no two nodes see the same majority."""
    order = _node_list(nodes, 3, "majorities_ring")
    n = len(order)
    reach = (n // 2 + 1) // 2  # neighbours seen on each side: ceil((majority - 1) / 2)
    rules: list[Rule] = []
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            distance = min((i - j) % n, (j - i) % n)
            if distance > reach:
                rules.append((frozenset((a,)), frozenset((b,))))
    return Topology(f"majorities ring {order}", tuple(rules))
