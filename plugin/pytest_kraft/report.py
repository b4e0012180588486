"""What a failing test's report says about its clusters (imported only when a test failed).

Every cluster the test built is listed with its seed and a replay line, not just the last one;
an expected simulation failure (``NoProgress``, ``InvariantViolation``) is shown as one line at
the test's own source line instead of a traceback through the kit's internals (``--tb=long``
or ``--full-trace`` bring the traceback back).
"""

from __future__ import annotations

import pytest


def _base_seed(config: pytest.Config) -> int:
    seed = config.getoption("--kraft-seed")
    return 0 if seed is None else seed


def kraft_section(item: pytest.Item) -> str | None:
    """The ``kraft_testkit`` report section: seeds, replay lines, the trace tail."""
    clusters = list(getattr(item, "_kraft_clusters", ()))
    last = getattr(item, "_kraft_cluster", None)
    if last is not None and all(c is not last for c in clusters):
        clusters.append(last)
    if not clusters:
        return None
    base = _base_seed(item.config)
    from_factory = "kraft_cluster_factory" in getattr(item, "fixturenames", ())
    last = clusters[-1]
    options = f" --kraft-storage={item.config.getoption('--kraft-storage')}" \
        if item.config.getoption("--kraft-storage") != "memory" else ""
    if item.config.getoption("--kraft-no-fast-forward"):
        options += " --kraft-no-fast-forward"
    lines = [f"seed {last.seed} at virtual time {last.now_ms} ms",
             f"replay: pytest '{item.nodeid}' --kraft-seed={base}{options}"
             + ("  (clusters built by kraft_cluster_factory: pass each one's seed=...)"
                if from_factory else "")]
    if len(clusters) > 1 or from_factory:
        lines.append(f"clusters in this test ({len(clusters)}):")
        lines += [f"  #{n} seed {c.seed} at {c.now_ms} ms; replay: {c.sim.replay_hint}"
                  for n, c in enumerate(clusters, 1)]
    n = 40 if item.config.getoption("--kraft-trace") else 12
    which = f" (cluster #{len(clusters)})" if len(clusters) > 1 else ""
    lines.append(f"last {n} events{which}:")
    lines += [f"  {e}" for e in last.trace.tail(n)]
    return "\n".join(lines)


def short_replayable_failure(item: pytest.Item, call: pytest.CallInfo) -> OneLineFailure | None:
    """``file:line: source`` and one line naming what did not happen, the seed and the replay,
    for a NoProgress or InvariantViolation; None for anything else (pytest's own report)."""
    if call.excinfo is None:
        return None
    from kraft_testkit.sim.errors import InvariantViolation, NoProgress

    error = call.excinfo.value
    if not isinstance(error, (NoProgress, InvariantViolation)):
        return None
    if item.config.getoption("tbstyle", "auto") in ("long", "native") or \
            item.config.getoption("fulltrace", False):
        return None
    where, path, lineno = "", str(getattr(item, "path", "")), 0
    for entry in call.excinfo.traceback:
        if str(entry.path) == path:
            source = entry.statement
            lineno = entry.lineno + 1
            where = (f"{item.nodeid.split('::')[0]}:{lineno}: "
                     f"{str(source).strip().splitlines()[0] if source else ''}")
    has_section = bool(getattr(item, "_kraft_clusters", ())) or \
        getattr(item, "_kraft_cluster", None) is not None
    hint = ("(the last events are in the 'kraft_testkit' section; --tb=long shows the traceback)"
            if has_section else "(--tb=long shows the traceback)")
    # notes attached to the error (Hypothesis' falsifying example, replay_note's script) stay
    # visible: they are how the failure is replayed
    notes = [str(n) for n in getattr(error, "__notes__", ())]
    text = "\n".join(x for x in (where, f"E   {error.summary}", *notes, hint) if x)
    return OneLineFailure(text, error.summary, path, lineno)


def bad_marker_failure(item: pytest.Item, call: pytest.CallInfo) -> OneLineFailure | None:
    """One line for a bad ``@pytest.mark.kraft`` argument (a :class:`MarkerError` raised while
    a kraft fixture was set up); None for any other setup failure."""
    if call.excinfo is None:
        return None
    from .markers import MarkerError

    error = call.excinfo.value
    if not isinstance(error, MarkerError):
        return None
    path, lineno = str(getattr(item, "path", "")), 0
    location = item.location
    if location[1] is not None:
        lineno = location[1] + 1
    message = f"MarkerError: {error}"
    return OneLineFailure(f"E   {message}", message, path, lineno)


class OneLineFailure:
    """A report's ``longrepr``: prints like pytest's own (``E`` lines in red) and gives the
    short summary (``-ra``) its message; as a string where reports travel (xdist)."""

    def __init__(self, text: str, message: str, path: str, lineno: int) -> None:
        from types import SimpleNamespace

        self.text = text
        self.reprcrash = SimpleNamespace(path=path, lineno=lineno, message=message)

    def toterminal(self, tw) -> None:
        for line in self.text.splitlines():
            tw.line(line, red=line.startswith("E "), bold=line.startswith("E "))

    def __str__(self) -> str:
        return self.text
