"""Progress of a seed sweep on the console: a rich bar on a terminal, a line every few seconds
otherwise (a CI log or a file), so a long run never looks hung.

Only the tool reads the wall clock here, between seeds; no simulation is running then.
"""

from __future__ import annotations

import time
from typing import Any

#: a non-terminal gets one status line per this many wall seconds
LINE_EVERY_S = 10.0


class SweepProgress:
    """``with SweepProgress(total, console, "simulate") as p: ... p.advance(ok)``."""

    def __init__(self, total: int, console: Any, label: str,
                 line_every_s: float = LINE_EVERY_S) -> None:
        self.total = total
        self.console = console
        self.label = label
        self.line_every_s = line_every_s
        self.done = 0
        self.bad = 0
        self.cpu_s = 0.0
        self._started = time.perf_counter()
        self._last_line = self._started
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> SweepProgress:
        if self.console.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._progress = Progress(
                TextColumn(f"[bold]{self.label}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]} seeds/s"),
                TextColumn("[red]{task.fields[bad]} violations"), TimeElapsedColumn(),
                TimeRemainingColumn(), console=self.console)
            self._progress.__enter__()
            self._task = self._progress.add_task("seeds", total=self.total, bad=0, rate="-")
        return self

    def advance(self, ok: bool, cpu_s: float = 0.0) -> None:
        self.done += 1
        self.bad += not ok
        self.cpu_s += cpu_s
        now = time.perf_counter()
        rate = self.done / max(now - self._started, 1e-9)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, bad=self.bad, rate=f"{rate:.2f}")
        elif now - self._last_line >= self.line_every_s and self.done < self.total:
            self._last_line = now
            self.console.print(f"{self.label}: {self.done}/{self.total} seeds, "
                               f"{self.bad} violations, {rate:.2f} seeds/s, "
                               f"{now - self._started:.0f} s", highlight=False)

    @property
    def wall_s(self) -> float:
        return time.perf_counter() - self._started

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
