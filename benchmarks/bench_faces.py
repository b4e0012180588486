"""The faces' costs: async drive vs sync, a wall clock, Faker names, HTML timelines.

Run ``python benchmarks/bench_faces.py`` from the repository root (``--repeat N`` best-of
repeats, default 5; ``--quick`` for 2). CPU time (``time.process_time``) of each case, best and
median of the repeats, all with seed 1; ratios are taken against the sync baseline measured in
the same repeat, so they hold on a busy machine. Cases:

1. lease story: ``Cluster(3, 3)`` booted, a broker isolated, run until the controller fences
   it, on to 30 virtual seconds; sync (``run_until`` + ``run_for``), then the same driven from
   async code with a second task sleeping 5 s and 30 s (``aio.run`` on asyncio, on trio);
2. wall clock: the same sync story inside ``cluster.wall_clock()`` (freezegun start included),
   and the cost of one ``time.time()`` read under the clock;
3. names: ``Cluster(3, 6, racks=3, boot=False)`` built with ``names="short"`` and ``"faker"``;
4. timeline: ``write_timeline`` of the lease story's cluster (HTML bytes written).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))

import anyio

from kraft_testkit import aio
from kraft_testkit.cluster import Cluster
from kraft_testkit.tools.timeline_html import write_timeline


def lease_sync() -> Cluster:
    c = Cluster(3, 3, seed=1)
    start = c.now_ms
    victim = c.brokers[1]
    c.network.isolate(victim)
    c.run_until(lambda c: c.broker_state(victim).fenced, timeout_ms=20_000)
    c.run_for(30_000 - (c.now_ms - start))
    return c


def lease_async(backend: str) -> Cluster:
    async def main():
        c = await aio.AsyncCluster.open(3, 3, seed=1)
        start = c.now_ms
        victim = c.brokers[1]
        c.network.isolate(victim)
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep, 5)
            tg.start_soon(anyio.sleep, 30)
            await c.run_until(lambda c: c.broker_state(victim).fenced, timeout_ms=20_000)
        assert c.now_ms - start == 30_000
        return c.cluster

    return aio.run(main, backend=backend)


def lease_wall_clock() -> Cluster:
    c = Cluster(3, 3, seed=1)
    with c.wall_clock():
        start = c.now_ms
        victim = c.brokers[1]
        c.network.isolate(victim)
        c.run_until(lambda c: c.broker_state(victim).fenced, timeout_ms=20_000)
        c.run_for(30_000 - (c.now_ms - start))
    return c


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    gc.collect()
    t = time.process_time()
    result = fn()
    return time.process_time() - t, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeat = 2 if args.quick else args.repeat
    lease_sync(), lease_async("asyncio"), lease_async("trio"), lease_wall_clock()  # warm up
    Cluster(1, 1, names="faker", boot=False)

    cases: dict[str, Callable[[], object]] = {
        "lease story, sync": lease_sync,
        "lease story, async on asyncio": lambda: lease_async("asyncio"),
        "lease story, async on trio": lambda: lease_async("trio"),
        "lease story, sync inside wall_clock()": lease_wall_clock,
        "Cluster(3, 6, racks=3) names=short, not booted": lambda: Cluster(
            3, 6, racks=3, seed=1, boot=False),
        "Cluster(3, 6, racks=3) names=faker, not booted": lambda: Cluster(
            3, 6, racks=3, seed=1, names="faker", boot=False),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    ratios: dict[str, list[float]] = {k: [] for k in cases}
    html_times, html_size = [], 0
    digests = set()
    for _ in range(repeat):
        base = None
        for name, fn in cases.items():
            cost, result = timed(fn)
            times[name].append(cost)
            if name == "lease story, sync":
                base = cost
            elif name.startswith("lease story"):
                ratios[name].append(cost / base)
            if name.startswith("lease story"):
                digests.add(result.trace.digest())
        with tempfile.TemporaryDirectory() as d:
            cluster = lease_sync()
            cost, path = timed(lambda: write_timeline(cluster, os.path.join(d, "t.html")))
            html_times.append(cost)
            html_size = os.path.getsize(path)
    c = Cluster(1, 1, seed=1)
    t = time.process_time()
    with c.wall_clock():
        opened = time.process_time()
        for _ in range(10_000):
            time.time()
        reads = time.process_time() - opened
    start_ms = (time.process_time() - t - reads) * 1000
    frozen_read_us = reads / 10_000 * 1e6

    print(f"{repeat} repeats, CPU ms: best / median; ratio to sync in the same repeat "
          f"(min-max); digests of the lease story across all runs: {len(digests)}")
    print(f"| case | best ms | median ms | ratio to sync (min-max) |")
    print("| --- | ---: | ---: | ---: |")
    for name, values in times.items():
        r = ratios[name]
        ratio = f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})" if r else "-"
        print(f"| {name} | {min(values) * 1000:.1f} | {statistics.median(values) * 1000:.1f} | "
              f"{ratio} |")
    print(f"| write_timeline of the lease story ({html_size:,} bytes) | "
          f"{min(html_times) * 1000:.1f} | {statistics.median(html_times) * 1000:.1f} | - |")
    print(f"wall_clock(): {start_ms:.1f} ms to open and close (freezegun scans the loaded "
          f"modules); time.time() under it: {frozen_read_us:.1f} us a read (CPU)")


if __name__ == "__main__":
    main()
