"""What every user-facing facade over one :class:`Simulation` offers (``Quorum``, ``Cluster``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from kraft_testkit.sim.world import Simulation


class SimulationFacade:
    """Seed, virtual time, trace and running, for a facade holding ``self.sim``."""

    sim: Simulation
    DEFAULT_TIMEOUT_MS: ClassVar[int] = 10_000

    @property
    def seed(self) -> int:
        return self.sim.seed

    @property
    def now_ms(self) -> int:
        """Virtual time in milliseconds."""
        return self.sim.now_ms

    @property
    def trace(self) -> Any:
        """The event trace: ``trace.digest()`` (same seed, same digest), ``trace.tail(n)``."""
        return self.sim.trace

    def run_for(self, ms: int) -> None:
        """Let ``ms`` virtual milliseconds pass."""
        self.sim.run_for(ms)

    def run_until(self, predicate: Callable[[Any], object], timeout_ms: int | None = None) -> int:
        """Run until ``predicate(self)`` holds; returns the virtual ms it took.

        Raises :class:`~kraft_testkit.sim.NoProgress` (with the seed and the trace tail, naming
        the predicate) after ``timeout_ms`` of virtual time.
        """
        if not callable(predicate):  # else a TypeError deep in the run, after time passed
            from kraft_testkit.arg_checks import bad
            raise bad("run_until", "predicate", predicate, "a callable taking the cluster, e.g. "
                                                           "lambda c: c.active_controller")
        def holds(_: Simulation) -> object:
            return predicate(self)
        holds.__name__ = getattr(predicate, "__name__", "predicate")
        return self.sim.run_until(holds, self.DEFAULT_TIMEOUT_MS if timeout_ms is None
                                  else timeout_ms)
