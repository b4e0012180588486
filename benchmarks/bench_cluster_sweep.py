"""Whole-cluster fault sweep: N seeds x M virtual minutes of ``simulate --cluster``, with the
figure the benchmarks README records (violations, seeds per cpu-second, spread over seeds).

    python benchmarks/bench_cluster_sweep.py --seeds 0:1000 --minutes 10 --workers 2 \
        --out sweep.jsonl

Every finished seed is appended to ``--out`` as one JSON line (seed, ok, kind, detail, events,
faults, commits, cpu_s, wall_s, digest), so a long run can be read while it goes and survives
an interruption; ``--summary FILE.jsonl`` prints the figures of such a file.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def summarize(rows: list[dict]) -> str:
    cpu = [r["cpu_s"] for r in rows]
    bad = [r for r in rows if not r["ok"]]
    total = sum(cpu)
    q = statistics.quantiles(cpu, n=10) if len(cpu) >= 10 else [min(cpu), max(cpu)]
    lines = [f"{len(rows)} seeds, {len(bad)} violations",
             f"cpu per seed: median {statistics.median(cpu):.2f} s, p10 {q[0]:.2f} s, "
             f"p90 {q[-1]:.2f} s, max {max(cpu):.2f} s; total {total:.0f} cpu-s",
             f"seeds per cpu-second: {len(rows) / total:.3f}",
             f"events per seed: median {statistics.median(r['events'] for r in rows):,.0f}; "
             f"faults per seed: median {statistics.median(r['faults'] for r in rows):.0f}"]
    for r in bad[:20]:
        lines.append(f"  seed {r['seed']}: {r['kind']}: {r['detail']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from kraft_testkit.tools.cluster_simulate import run_one
    from kraft_testkit.tools.simulate import _map, parse_seeds

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=parse_seeds, default=parse_seeds("0:1000"))
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--controllers", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="cluster_sweep.jsonl")
    parser.add_argument("--summary", metavar="JSONL", help="only summarize an existing file")
    parser.add_argument("--resume", action="store_true",
                        help="skip the seeds --out already holds (append the rest)")
    parser.add_argument("--skip", action="append", default=[], metavar="JSONL",
                        help="also skip the seeds this file holds (another run's output)")
    parser.add_argument("--shard", default="0/1", metavar="K/N",
                        help="run only the seeds with seed %% N == K (split a sweep over runs)")
    args = parser.parse_args(argv)
    if args.summary:
        with open(args.summary) as f:
            print(summarize([json.loads(line) for line in f if line.strip()]))
        return 0
    from rich.console import Console

    from kraft_testkit.tools.progress import SweepProgress

    done: set[int] = set()
    for path in ([args.out] if args.resume else []) + args.skip:
        try:
            with open(path) as f:
                done |= {json.loads(line)["seed"] for line in f if line.strip()}
        except FileNotFoundError:
            pass
    k, n = (int(x) for x in args.shard.split("/"))
    jobs = [(s, args.controllers, args.brokers, args.minutes, "random", True)
            for s in args.seeds if s not in done and s % n == k]
    rows = []
    started = time.perf_counter()
    with open(args.out, "a") as out, \
            SweepProgress(len(jobs), Console(stderr=True), "cluster sweep", 60.0) as progress:
        for r in _map(run_one, jobs, args.workers):
            row = {"seed": r.seed, "ok": r.ok, "kind": r.kind, "detail": r.detail,
                   "events": r.events, "faults": r.faults, "commits": r.commits,
                   "cpu_s": round(r.cpu_s, 4), "wall_s": round(r.wall_s, 4),
                   "digest": r.digest, "tail": r.trace_tail[-8:] if not r.ok else []}
            out.write(json.dumps(row) + "\n")
            out.flush()
            rows.append(row)
            progress.advance(r.ok, r.cpu_s)
    print(summarize(rows))
    print(f"wall {time.perf_counter() - started:.0f} s with {args.workers} workers")
    return 1 if any(not r["ok"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
