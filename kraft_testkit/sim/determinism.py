"""Self-check: does a scenario replay identically from its seed?"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft_testkit.sim.errors import Nondeterminism
from kraft_testkit.sim.trace import format_event
from kraft_testkit.sim.world import Simulation


def check_determinism(scenario: Callable[[Simulation], object], seed: int, **options: Any) -> str:
    """Run ``scenario(sim)`` on two fresh simulations with ``seed``; return the trace digest.

    ``options`` go to :class:`Simulation`. Raises :class:`Nondeterminism` naming the first event
    where the two runs differ (typical causes: iterating a set of str, ``id()``, the wall clock,
    the global ``random``).
    """
    traces = []
    for _ in range(2):
        sim = Simulation(seed, **{**options, "trace_keep": None})
        scenario(sim)
        traces.append(sim.trace)
    first, second = traces
    if first.digest() == second.digest():
        return first.digest()
    a, b = first.events(), second.events()
    index = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    raise Nondeterminism(
        seed=seed,
        index=index,
        first=format_event(a[index]) if index < len(a) else None,
        second=format_event(b[index]) if index < len(b) else None,
    )
