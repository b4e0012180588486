"""What the metadata log's Kafka layout (segments, indexes, retention) costs an idle cluster.

Run ``python benchmarks/bench_storage.py [--minutes 10] [--rounds 4] [--trees A,B]``: each round
runs ``Cluster(3, 10, seed=1)`` booted, then ``run_for(minutes)`` of virtual time, in a fresh
process per tree (``PYTHONPATH=<tree>``, so two checkouts compare in the same venv), the trees
alternating; prints CPU seconds and peak RSS per run, and the ratio of the medians. ``--trees``
defaults to this checkout alone. ``--no-checks`` turns wire mode and invariants off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import resource, sys, time
from kraft_testkit.cluster import Cluster
checks = sys.argv[2] == "1"
c = Cluster(3, 10, seed=1, wire=checks, invariants=checks)
t = time.process_time()
c.run_for(int(sys.argv[1]))
print(time.process_time() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def run(tree: str, virtual_ms: int, checks: bool) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": tree}
    out = subprocess.run([sys.executable, "-c", CHILD, str(virtual_ms), "1" if checks else "0"],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="virtual minutes per run")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--trees", default=str(ROOT), help="comma-separated checkouts")
    parser.add_argument("--no-checks", action="store_true", help="wire mode and invariants off")
    args = parser.parse_args()
    trees = args.trees.split(",")
    results: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            results[tree].append(run(tree, int(args.minutes * 60_000), not args.no_checks))
    first = statistics.median(c for c, _ in results[trees[0]])
    for tree, rows in results.items():
        cpu = statistics.median(c for c, _ in rows)
        print(f"{tree}: CPU s {', '.join(f'{c:.2f}' for c, _ in rows)} (median {cpu:.2f}, "
              f"x{cpu / first:.3f}); peak RSS MB {max(m for _, m in rows):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
