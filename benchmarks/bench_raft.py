"""How much faster than real time a simulated Raft quorum runs, and seeds/s of the fault runner.

Run ``python benchmarks/bench_raft.py`` (``--quick`` for a short run, ``--repeat N`` for more
best-of repeats). What is measured (``time.perf_counter``, best of the repeats):

(a) steady state: a quorum of 3 or 5 voters elects a leader, then idles for 10 virtual minutes
    (followers long-poll the leader: a fetch every 500 ms each); virtual ms / wall ms, with wire
    mode off and on (every message encoded to Kafka frames and decoded), invariants off, and once
    with everything on as ``Quorum()`` builds it by default;
(b) with appends: the same, with one record appended every 100 virtual ms;
(c) the fault runner of ``kraft-testkit simulate``: 5 voters, 10 virtual minutes of random faults,
    invariants and wire mode on; seeds per wall second in one process.

Target (issue): a 3-voter quorum at steady state at least 10,000x faster than real time.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT))

from kraft_testkit.quorum import Quorum
from kraft_testkit.tools.simulate import run_seed


def steady(voters: int, wire: bool, invariants: bool, virtual_ms: int, append_every: int = 0,
           seed: int = 1) -> tuple[float, int]:
    """(virtual/wall ratio, events) for ``virtual_ms`` of a quorum with an elected leader."""
    q = Quorum(voters, seed=seed, wire=wire, invariants=invariants)
    q.run_until(lambda q: q.active_controller is not None)
    q.run_for(10_000)
    events = len(q.trace)
    gc.collect()
    start = time.perf_counter()
    if append_every:
        for _ in range(virtual_ms // append_every):
            leader = q.leader_id
            if leader is not None:
                q._call(leader, lambda r, now: r.append([b"bench-record"], now))
            q.run_for(append_every)
    else:
        q.run_for(virtual_ms)
    wall = time.perf_counter() - start
    return virtual_ms / (wall * 1000), len(q.trace) - events


def best(fn, repeat: int) -> tuple[float, int]:
    runs = [fn() for _ in range(repeat)]
    return max(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (1 virtual minute)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    args = parser.parse_args()
    minutes = 1 if args.quick else 10
    virtual = minutes * 60_000
    rows: list[tuple[str, str, str]] = []

    for voters in (3, 5):
        for wire in (False, True):
            ratio, events = best(lambda v=voters, w=wire: steady(v, w, False, virtual),
                                 args.repeat)
            rows.append((f"steady state, {voters} voters, wire {'on' if wire else 'off'}",
                         f"{ratio:,.0f}x", f"{events:,} events"))
    ratio, events = best(lambda: steady(3, True, True, virtual), args.repeat)
    rows.append(("steady state, 3 voters, Quorum() defaults (wire + invariants)",
                 f"{ratio:,.0f}x", f"{events:,} events"))
    for wire in (False, True):
        ratio, events = best(lambda w=wire: steady(3, w, True, virtual, append_every=100),
                             args.repeat)
        rows.append((f"3 voters, 10 appends/s, invariants on, wire {'on' if wire else 'off'}",
                     f"{ratio:,.0f}x", f"{events:,} events"))

    seeds = 3 if args.quick else 10
    start = time.perf_counter()
    events = 0
    for seed in range(seeds):
        result = run_seed(seed, voters=5, minutes=minutes)
        assert result.ok, result.detail
        events += result.events
    wall = time.perf_counter() - start
    rows.append((f"fault runner, 5 voters, {minutes} virtual min/seed ({seeds} seeds)",
                 f"{seeds / wall:.2f} seeds/s", f"{events // seeds:,} events/seed"))

    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover
        for row in rows:
            print(" | ".join(row))
        return 0
    table = Table(title=f"Raft quorum, {minutes} virtual minute(s), best of {args.repeat}")
    for col, justify in (("case", "left"), ("virtual / wall", "right"), ("work", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
