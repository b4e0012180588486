"""Hypothesis strategies for fault schedules (absolute imports: this package is named like
the library it uses)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from kraft_testkit.cluster import CONTROLLER_ID_BASE
from kraft_testkit.errors import ConfigError
from kraft_testkit.hypothesis.schedule import KINDS, FaultStep, Schedule


def node_ids(controllers: int, brokers: int, combined: bool = False) -> list[int]:
    """The node ids ``Cluster(controllers, brokers, combined=...)`` gives its nodes."""
    base = 0 if combined else CONTROLLER_ID_BASE
    return sorted({base + i for i in range(controllers)} | set(range(brokers)))


def fault_steps(nodes: Sequence[int], *, kinds: Sequence[str] = KINDS,
                horizon_ms: int = 30_000, max_duration_ms: int = 15_000) -> st.SearchStrategy:
    """One :class:`FaultStep` on one of ``nodes``; shrinks toward early, short, ``kinds[0]``
    faults on the first node."""
    unknown = set(kinds) - set(KINDS)
    if not kinds or unknown:
        raise ConfigError(f"kinds must be a non-empty subset of {KINDS}, got {list(kinds)!r}")
    if not nodes:
        raise ConfigError("fault_steps needs at least one node")
    return st.builds(FaultStep,
                     at_ms=st.integers(0, horizon_ms),
                     kind=st.sampled_from(tuple(kinds)),
                     node=st.sampled_from(tuple(nodes)),
                     duration_ms=st.integers(0, max_duration_ms))


def fault_schedules(controllers: int = 3, brokers: int = 3, *, kinds: Sequence[str] = KINDS,
                    nodes: Sequence[int] | None = None, max_faults: int = 6,
                    horizon_ms: int = 30_000, max_duration_ms: int = 15_000,
                    **cluster: Any) -> st.SearchStrategy:
    """Schedules of up to ``max_faults`` steps within ``horizon_ms`` for a cluster of this
    shape (``cluster`` takes more ``Cluster`` keywords, e.g. ``seed=7`` or ``configs``).

    ``nodes`` limits which nodes get faults (default: all of them)."""
    if type(max_faults) is not int or max_faults < 0:
        raise ConfigError(f"max_faults must be an int >= 0, got {max_faults!r}")
    combined = bool(cluster.get("combined", False))
    targets = list(nodes) if nodes is not None else node_ids(controllers, brokers, combined)
    shape = {"controllers": controllers, "brokers": brokers, **cluster}
    step = fault_steps(targets, kinds=kinds, horizon_ms=horizon_ms,
                       max_duration_ms=max_duration_ms)
    return st.lists(step, max_size=max_faults).map(
        lambda steps: Schedule(tuple(sorted(steps)), dict(shape)))
