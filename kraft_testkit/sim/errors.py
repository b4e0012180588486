"""Errors raised by the simulator.

Every error carries enough to replay: a seed where one exists, and the tail of the trace when
something went wrong during a run. They all derive from the project's root :class:`KraftError`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kraft_testkit.errors import ConfigError, KraftError, StorageError


class SimulationError(KraftError):
    """Root of the simulator's errors."""


class InvalidArgument(SimulationError, ConfigError):
    """A caller passed a value the simulator cannot use (bad seed, probability, latency...)."""


class UnknownNode(SimulationError, LookupError):
    """A node id that was never added to the simulation."""


class NodeStateError(SimulationError):
    """A lifecycle action that does not fit the node's state (pausing a dead node...)."""


class EffectsError(SimulationError, TypeError):
    """Node logic returned something that breaks the node contract."""


class DiskError(SimulationError):
    """A disk operation that no file system would accept (truncate past the end...)."""


class DiskWriteError(DiskError, StorageError):
    """The real file system refused a node's write (a full disk, an I/O error): the node fails,
    as a Kafka node halts when its metadata log directory fails; names the file and the problem."""


def _format_tail(tail: Sequence[str]) -> str:
    return "\n".join("  " + line for line in tail) if tail else "  (no events)"


class _Replayable(SimulationError):
    """An error raised during a run: says which seed replays it and what happened last."""

    def __init__(self, headline: str, *, seed: int, now_ms: int, trace_tail: Sequence[str],
                 replay: str | None = None):
        self.headline = headline
        self.seed = seed
        self.now_ms = now_ms
        self.trace_tail = list(trace_tail)
        self.replay = replay or f"Simulation(seed={seed})"
        super().__init__(
            f"{headline} (seed={seed}, now={now_ms} ms)\n"
            f"replay with {self.replay}\n"
            f"last events:\n{_format_tail(self.trace_tail)}"
        )


    @property
    def summary(self) -> str:
        """One line: what did not happen, the seed, and how to replay it (no trace tail)."""
        return (f"{type(self).__name__}: {self.headline} (seed={self.seed}, "
                f"now={self.now_ms} ms); replay with {self.replay}")


class NoProgress(_Replayable):
    """``run_until`` gave up: the condition did not hold before the timeout or the events ran out."""

    def __init__(self, reason: str, *, seed: int, now_ms: int, trace_tail: Sequence[str],
                 replay: str | None = None):
        self.reason = reason
        super().__init__(f"no progress: {reason}", seed=seed, now_ms=now_ms,
                         trace_tail=trace_tail, replay=replay)


class InvariantViolation(_Replayable):
    """An invariant checker found the cluster in a state that must never happen."""

    def __init__(
        self, invariant: str, detail: str, *, seed: int, now_ms: int, trace_tail: Sequence[str],
        replay: str | None = None,
    ):
        self.invariant = invariant
        self.detail = detail
        super().__init__(
            f"invariant {invariant!r} violated: {detail}",
            replay=replay,
            seed=seed,
            now_ms=now_ms,
            trace_tail=trace_tail,
        )


class Nondeterminism(SimulationError):
    """Two runs with the same seed differed; names the first event where they parted."""

    def __init__(self, *, seed: int, index: int, first: str | None, second: str | None):
        self.seed = seed
        self.index = index
        self.first = first
        self.second = second
        super().__init__(
            f"seed {seed} is not deterministic: runs differ at event #{index}\n"
            f"  run 1: {first if first is not None else '(ended)'}\n"
            f"  run 2: {second if second is not None else '(ended)'}"
        )
