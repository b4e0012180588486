"""How much faster than real time a simulated Raft quorum runs, and seeds/s of the fault runner.

Run ``python benchmarks/bench_raft.py`` (``--quick`` for a short run, ``--repeat N`` for more
best-of repeats). What is measured (``time.perf_counter``, best of the repeats):

(a) steady state: a quorum of 3 or 5 voters elects a leader, then idles for 10 virtual minutes
    (followers long-poll the leader: a fetch every 500 ms each); virtual ms / wall ms, with wire
    mode off and on (every message encoded to Kafka frames and decoded), invariants off, and once
    with everything on as ``Quorum()`` builds it by default;
(b) with appends: the same, with one record appended every 100 virtual ms;
(c) the fault runner of ``kraft-testkit simulate``: 5 voters, 10 virtual minutes of random faults,
    invariants and wire mode on; seeds 0..N-1 one after the other in one process: seeds per
    cpu-second (``time.process_time``) and per wall second, and the spread of cpu per seed.

Every ratio is given twice: on wall time (``perf_counter``) and on the process's cpu time
(``process_time``), which moves far less when other jobs share the machine.

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
           seed: int = 1) -> tuple[float, float, int]:
    """(virtual/wall ratio, virtual/cpu ratio, events) for ``virtual_ms`` of a quorum with an
    elected leader."""
    q = Quorum(voters, seed=seed, wire=wire, invariants=invariants)
    q.run_until(lambda q: q.active_controller is not None)
    q.run_for(10_000)
    events = len(q.trace)
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    if append_every:
        for _ in range(virtual_ms // append_every):
            leader = q.leader_id
            if leader is not None:
                q._call(leader, lambda r, now: r.append([b"bench-record"], now))
            q.run_for(append_every)
    else:
        q.run_for(virtual_ms)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return virtual_ms / (wall * 1000), virtual_ms / (cpu * 1000), len(q.trace) - events


def best(fn, repeat: int) -> tuple[str, str, str]:
    """Best of ``repeat`` on wall and on cpu (with the spread of the cpu ratio), and events."""
    runs = [fn() for _ in range(repeat)]
    cpu = [r[1] for r in runs]
    return (f"{max(r[0] for r in runs):,.0f}x",
            f"{max(cpu):,.0f}x (worst {min(cpu):,.0f}x)", f"{runs[0][2]:,} events")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (1 virtual minute)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="fault runner seeds (default 20, quick 3)")
    args = parser.parse_args()
    minutes = 1 if args.quick else 10
    virtual = minutes * 60_000
    rows: list[tuple[str, ...]] = []

    for voters in (3, 5):
        for wire in (False, True):
            rows.append((f"steady state, {voters} voters, wire {'on' if wire else 'off'}",
                         *best(lambda v=voters, w=wire: steady(v, w, False, virtual),
                               args.repeat)))
    rows.append(("steady state, 3 voters, Quorum() defaults (wire + invariants)",
                 *best(lambda: steady(3, True, True, virtual), args.repeat)))
    for wire in (False, True):
        rows.append((f"3 voters, 10 appends/s, invariants on, wire {'on' if wire else 'off'}",
                     *best(lambda w=wire: steady(3, w, True, virtual, append_every=100),
                           args.repeat)))

    seeds = args.seeds or (3 if args.quick else 20)
    start = time.perf_counter()
    events = 0
    cpus = []
    for seed in range(seeds):
        result = run_seed(seed, voters=5, minutes=minutes)
        assert result.ok, result.detail
        events += result.events
        cpus.append(result.cpu_s)
    wall = time.perf_counter() - start
    cpus.sort()
    rows.append((f"fault runner, 5 voters, {minutes} virtual min/seed (seeds 0-{seeds - 1})",
                 f"{seeds / wall:.2f} seeds/s",
                 f"{seeds / sum(cpus):.2f} seeds/cpu-s (cpu per seed {cpus[0]:.2f}-"
                 f"{cpus[-1]:.2f} s, median {cpus[len(cpus) // 2]:.2f} s)",
                 f"{events // seeds:,} events/seed"))

    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover
        for row in rows:
            print(" | ".join(row))
        return 0
    table = Table(title=f"Raft quorum, {minutes} virtual minute(s), best of {args.repeat}")
    for col, justify in (("case", "left"), ("virtual / wall (best)", "right"),
                         ("virtual / cpu (best, worst)", "right"), ("work", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    console = Console()
    if not console.is_terminal:  # piped into a file: do not wrap
        console = Console(width=200)
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
