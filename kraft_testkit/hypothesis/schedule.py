"""Fault schedules for a :class:`~kraft_testkit.cluster.Cluster`: data, runner, replay script.

A :class:`Schedule` is a list of :class:`FaultStep` (at a virtual time, a fault on a node, for
a duration, then healed). :func:`run_schedule` plays it on a cluster with the cluster's
invariants on, heals everything, and (by default) waits for the cluster to converge.
:meth:`Schedule.to_script` prints the run as a Python script that replays it exactly, which is
what a shrunk Hypothesis failure shows (see :mod:`kraft_testkit.hypothesis`).

This module needs nothing but the kit; Hypothesis is needed only for the strategies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.errors import ConfigError

#: what a step can do to a node; each is undone when its duration ends
KINDS = ("kill", "stop", "pause", "isolate", "restart")
CONVERGE_MS = 60_000
#: how long a graceful ``stop`` waits for its controlled shutdown before the node stops anyway
#: (Kafka's broker waits 5 minutes; a schedule's horizon is shorter, so a bounded 30 s)
STOP_TIMEOUT_MS = 30_000


@dataclass(frozen=True, order=True)
class FaultStep:
    """At ``at_ms`` (virtual, from the start of the schedule) do ``kind`` to ``node``, and undo
    it ``duration_ms`` later (restart is instantaneous). A ``stop`` is graceful and may take a
    while (a broker's controlled shutdown, up to ``STOP_TIMEOUT_MS``, then it stops anyway):
    the node starts again ``duration_ms`` after the stop was asked for, or as soon as it is
    down if that is later, so any duration, 0 included, is a valid step."""

    at_ms: int
    kind: str
    node: int
    duration_ms: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"fault kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name in ("at_ms", "duration_ms"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ConfigError(f"FaultStep {name} must be an int >= 0, got {value!r}")

    def __repr__(self) -> str:
        return f"FaultStep({self.at_ms}, {self.kind!r}, {self.node}, {self.duration_ms})"


@dataclass(frozen=True)
class Schedule:
    """Fault steps plus the cluster they were drawn for (``Cluster`` keyword arguments)."""

    steps: tuple[FaultStep, ...]
    cluster: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        return f"Schedule({list(self.steps)!r}, cluster={self.cluster!r})"

    def to_script(self, *, converge_ms: int | None = CONVERGE_MS) -> str:
        """A Python script that rebuilds the cluster and replays this schedule exactly."""
        shape = ", ".join(f"{k}={v!r}" for k, v in self.cluster.items())
        steps = "".join(f"    {s!r},\n" for s in self.steps)
        return ("from kraft_testkit.cluster import Cluster\n"
                "from kraft_testkit.hypothesis import FaultStep, Schedule, run_schedule\n\n"
                f"cluster = Cluster({shape})\n"
                f"schedule = Schedule((\n{steps}), cluster={self.cluster!r})\n"
                f"run_schedule(cluster, schedule, converge_ms={converge_ms!r})\n")


def _converged(c: Any) -> bool:
    return c.active_controller is not None and all(
        (s := c.broker_state(b)).state == "RUNNING" and not s.fenced for b in c.broker_ids)


class _Player:
    """Applies steps and their undo actions in virtual-time order."""

    def __init__(self, cluster: Any) -> None:
        self.c = cluster
        self.isolations: dict[int, Any] = {}

    def _state(self, node: int) -> str:
        return self.c.sim.process(node).state.value

    def _stop(self, node: int) -> None:
        """A graceful stop that always ends with the node down, as a Kafka broker's shutdown
        does: it waits up to ``STOP_TIMEOUT_MS`` for the controller to approve its controlled
        shutdown, then stops anyway. (The step's duration is how long the node stays down,
        not how long its shutdown may take.)"""
        from kraft_testkit.sim import NoProgress

        try:
            self.c.faults.stop(node, timeout_ms=STOP_TIMEOUT_MS)
        except NoProgress:  # no controller approved in time: shut down without it
            if self.c.sim.process(node).up:
                self.c.sim.stop(node)

    def apply(self, step: FaultStep) -> list[tuple[int, str, int]]:
        """Do ``step`` now; return the undo actions as ``(at, action, node)``."""
        c, node, end = self.c, step.node, self.c.now_ms + step.duration_ms
        state = self._state(node)
        if step.kind in ("kill", "stop") and state == "running":
            if step.kind == "kill":
                c.faults.kill(node)
            else:
                self._stop(node)
            return [(end, "start", node)]
        if step.kind == "pause" and state == "running":
            c.faults.pause(node)
            return [(end, "resume", node)]
        if step.kind == "restart" and state == "running":
            c.faults.restart(node)
        if step.kind == "isolate" and node not in self.isolations:
            self.isolations[node] = c.network.isolate(node)
            return [(end, "reconnect", node)]
        return []

    def undo(self, action: str, node: int) -> None:
        c = self.c
        if action == "start" and self._state(node) in ("killed", "stopped"):
            c.faults.start(node)
        elif action == "resume" and self._state(node) == "paused":
            c.faults.resume(node)
        elif action == "reconnect" and node in self.isolations:
            topology = self.isolations.pop(node)
            if topology in c.sim.network.partitions:
                c.network.heal(topology)


def run_schedule(cluster: Any, schedule: Schedule | list[FaultStep], *,
                 converge_ms: int | None = CONVERGE_MS) -> Any:
    """Play ``schedule`` on ``cluster`` (step times count from now), undo every fault when its
    duration ends, then, unless ``converge_ms`` is None, wait until a controller is active and
    every broker is RUNNING and unfenced (:class:`~kraft_testkit.sim.NoProgress` otherwise).

    Invariant violations raise as they happen. Returns the cluster."""
    steps = schedule.steps if isinstance(schedule, Schedule) else tuple(schedule)
    for s in steps:
        cluster.node(s.node)  # a ConfigError naming the known nodes
    player = _Player(cluster)
    start = cluster.now_ms
    pending: list[tuple[int, int, str, Any]] = [(start + s.at_ms, n, "step", s)
                                                for n, s in enumerate(sorted(steps))]
    seq = len(pending)
    while pending:
        pending.sort(key=lambda p: (p[0], p[1]))
        at, _, what, arg = pending.pop(0)
        if at > cluster.now_ms:
            cluster.run_for(at - cluster.now_ms)
        if what == "step":
            for when, action, node in player.apply(arg):
                seq += 1
                pending.append((when, seq, action, node))
        else:
            player.undo(what, arg)
    if converge_ms is not None:
        cluster.run_until(_converged, timeout_ms=converge_ms)
    return cluster
