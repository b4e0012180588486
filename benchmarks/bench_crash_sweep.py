"""The crash sweep over many seeds: no committed record is lost by crashes, torn tails, kills in
the middle of a multi-file write (snapshot, segment rewrite) or reopening a cluster.

Run ``python benchmarks/bench_crash_sweep.py --seeds 0:1000`` (each seed is described in
tests/cluster/crash_sweep.py). Prints the seeds by ending, the mid-write crashes, every failing
seed with its reason, and seeds per CPU second; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
try:
    import kraft_testkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT))

from crash_sweep import run_crash_seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:200", help="START:STOP (default 0:200)")
    args = parser.parse_args()
    start, stop = (int(x) for x in args.seeds.split(":"))
    endings: collections.Counter[str] = collections.Counter()
    failures, crashes, topics = [], 0, 0
    steps: collections.Counter[str] = collections.Counter()
    struck: collections.Counter[str] = collections.Counter()
    cpu = time.process_time()
    for seed in range(start, stop):
        r = run_crash_seed(seed)
        endings[r.ending] += 1
        crashes += r.mid_write_crashes
        topics += r.topics
        steps.update(r.steps or {})
        struck.update(r.struck or {})
        if not r.ok:
            failures.append(r)
            print(f"seed {seed} ({r.ending}): {r.detail}", flush=True)
    cpu = time.process_time() - cpu
    n = stop - start
    print(f"{n} seeds, {len(failures)} failures; endings {dict(sorted(endings.items()))}; "
          f"{crashes} mid-write crashes; {topics} committed topics checked after reopen; "
          f"{n / cpu:.2f} seeds per CPU second ({cpu:.0f} CPU s)")
    print(f"multi-file steps written: {dict(sorted(steps.items()))}; mid-write crashes inside "
          f"one (after at least one of its ops): {dict(sorted(struck.items()))}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
