"""``kraft-testkit simulate``: random fault schedules against a Raft quorum (or, with
``--cluster``, a whole cluster), invariants on, over a range of seeds.

One seed's run is :func:`.quorum_runs.run_seed` (the names are importable from here too). A
seed's outcome depends on nothing but the seed and the options, so ``--workers`` changes only
the wall time. A failing seed prints a one-line replay command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator

from .arguments import at_least
from .quorum_runs import (APPEND_EVERY_MS, FAULT_KINDS, LIVENESS_BOUND_MS, SIMULATE_CONFIG,
                          Fault, SeedResult, _run_one, random_schedule, run_seed)

__all__ = ["APPEND_EVERY_MS", "FAULT_KINDS", "LIVENESS_BOUND_MS", "SIMULATE_CONFIG", "Fault",
           "SeedResult", "add_parser", "iter_results", "main", "parse_seeds", "random_schedule",
           "replay_command", "run_seed"]


def parse_seeds(text: str) -> range:
    """``"0:200"`` (start:stop, stop excluded) or a single seed ``"17"``."""
    try:
        if ":" in text:
            a, b = text.split(":", 1)
            seeds = range(int(a), int(b))
        else:
            seeds = range(int(text), int(text) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are START:STOP or one seed, got {text!r}") \
            from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"empty seed range {text!r}")
    return seeds


def iter_results(seeds: range, voters: int, minutes: float, faults: str, wire: bool,
                 workers: int, spark: str | None = None) -> Iterator[SeedResult]:
    if spark is not None:  # the same run_seed, as a Spark job on that master
        from kraft_testkit.spark.sweeps import simulate_on_spark
        yield from simulate_on_spark(seeds, spark, voters=voters, minutes=minutes,
                                     faults=faults, wire=wire)
        return
    jobs = [(s, voters, minutes, faults, wire) for s in seeds]
    yield from _map(_run_one, jobs, workers)


def _map(fn: Callable, jobs: list, workers: int) -> Iterator[SeedResult]:
    if workers <= 1:
        yield from map(fn, jobs)
        return
    import multiprocessing
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        yield from pool.imap_unordered(fn, jobs)


def replay_command(args: argparse.Namespace, seed: int) -> str:
    if getattr(args, "cluster", False):
        from .cluster_simulate import replay_command as cluster_replay
        return cluster_replay(args, seed)
    parts = ["kraft-testkit simulate", f"--voters {args.voters}",
             f"--seeds {seed}:{seed + 1}", f"--minutes {args.minutes:g}",
             f"--faults {args.faults}"]
    if not args.wire:
        parts.append("--no-wire")
    return " ".join(parts)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .progress import SweepProgress

    console = Console(stderr=True)
    seeds: range = args.seeds
    if args.cluster:
        from .cluster_simulate import run_one
        jobs = [(s, args.controllers, args.brokers, args.minutes, args.faults, args.wire)
                for s in seeds]
        results = _map(run_one, jobs, args.workers)
        what = f"{args.controllers} controllers + {args.brokers} brokers"
    else:
        results = iter_results(seeds, args.voters, args.minutes, args.faults, args.wire,
                               args.workers, getattr(args, "spark", None))
        what = f"{args.voters} voters"
    failures: list[SeedResult] = []
    label = "simulate --cluster" if args.cluster else "simulate"
    with SweepProgress(len(seeds), console, label) as progress:
        for result in results:
            if not result.ok:
                failures.append(result)
                console.print(f"[red]seed {result.seed}: {result.kind} violation[/red] "
                              f"(replay: {replay_command(args, result.seed)})", highlight=False)
            progress.advance(result.ok, result.cpu_s)
    for r in sorted(failures, key=lambda r: r.seed):
        print(f"seed {r.seed}: {r.kind} violation: {r.detail}")
        if args.verbose:
            for line in r.trace_tail:
                print("    " + line)
        print(f"  replay: {replay_command(args, r.seed)}")
    rate = len(seeds) / progress.cpu_s if progress.cpu_s else 0.0
    print(f"{len(seeds)} seeds, {len(failures)} violations ({what}, {args.minutes:g} virtual "
          f"min each; {progress.wall_s:.1f} s wall, {progress.cpu_s:.1f} cpu-s in the runs, "
          f"{rate:.2f} seeds per cpu-second)")
    return 1 if failures else 0


def _positive_minutes(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of minutes, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate", help="run a Raft quorum (or --cluster) under random faults for many seeds",
        description="Run a Raft quorum under random fault schedules (kills, restarts, "
                    "partitions, packet loss, delays, duplicates, pauses, disk wipes of a "
                    "minority) with safety invariants checked after every event, then heal and "
                    "check that it converges. With --cluster, a whole cluster (controllers and "
                    "brokers, topics, admin traffic, the full fault menu including one-way links "
                    "and clock skew). Prints 'N seeds, M violations'; exits 1 on any. "
                    "The default is a short run (10 seeds x 2 virtual minutes).")
    p.add_argument("--cluster", action="store_true",
                   help="simulate a whole cluster (controllers + brokers), not a Raft quorum")
    p.add_argument("--voters", type=at_least(1), default=5, help="voters in the quorum (default 5)")
    p.add_argument("--controllers", type=at_least(1), default=3,
                   help="with --cluster: controllers (default 3)")
    p.add_argument("--brokers", type=at_least(1), default=3,
                   help="with --cluster: brokers (default 3)")
    p.add_argument("--seeds", type=parse_seeds, default=parse_seeds("0:10"),
                   help="START:STOP seed range, stop excluded, or one seed (default 0:10)")
    p.add_argument("--minutes", type=_positive_minutes, default=2.0,
                   help="virtual minutes of faults per seed (default 2)")
    p.add_argument("--faults", choices=("random", "none"), default="random",
                   help="fault schedule (default random)")
    p.add_argument("--workers", type=at_least(1), default=1,
                   help="processes to run seeds in (results do not depend on it)")
    p.add_argument("--no-wire", dest="wire", action="store_false",
                   help="skip encoding every message to Kafka bytes (faster)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the trace tail of each violation")
    p.add_argument("--spark", metavar="MASTER", default=None,
                   help="run the seeds as a Spark job on MASTER (local[2], spark://host:7077; "
                        "needs pip install 'kraft-testkit[spark]' and Java 17)")
    p.set_defaults(func=main)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="kraft-testkit")
    add_parser(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(["simulate", *sys.argv[1:]])
    sys.exit(ns.func(ns))
