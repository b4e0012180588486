"""Property-based fault schedules: Hypothesis strategies, a schedule runner, a stateful machine.

>>> from hypothesis import given, settings
>>> from kraft_testkit.hypothesis import fault_schedules, run_schedule
>>> @given(fault_schedules(controllers=3, brokers=3, max_faults=4))
... def test_converges(schedule):
...     cluster = Cluster(**schedule.cluster)
...     run_schedule(cluster, schedule)          # NoProgress / InvariantViolation on failure

A failing schedule is shrunk by Hypothesis and printed with ``schedule.to_script()``, a Python
script that replays it (``replay_note`` adds it to Hypothesis' report). Needs Hypothesis
(``pip install 'kraft-testkit[hypothesis]'``). The package is named after the library; its modules
import ``hypothesis`` absolutely, which is always the library.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.hypothesis.schedule import KINDS, FaultStep, Schedule, run_schedule

__all__ = ["KINDS", "ClusterMachine", "FaultStep", "Schedule", "fault_schedules", "fault_steps",
           "node_ids", "replay_note", "run_schedule"]


def replay_note(schedule: Schedule, *, converge_ms: int | None = 60_000) -> None:
    """Inside a Hypothesis test: attach the replay script to the report of a failing example
    (``converge_ms`` as the test passes it to :func:`run_schedule`)."""
    from hypothesis import note

    note("replay script:\n" + schedule.to_script(converge_ms=converge_ms))


def __getattr__(name: str) -> Any:  # strategies and the machine import Hypothesis: lazily
    if name in ("fault_schedules", "fault_steps", "node_ids"):
        from kraft_testkit.hypothesis import strategies

        return getattr(strategies, name)
    if name == "ClusterMachine":
        from kraft_testkit.hypothesis.machine import ClusterMachine

        return ClusterMachine
    raise AttributeError(f"module 'kraft_testkit.hypothesis' has no attribute {name!r}")
