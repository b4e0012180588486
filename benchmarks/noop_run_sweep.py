"""The bulk NoOp runs' differential (tests/cluster/test_noop_run.py) over many seeds, once.

Each seed: two identical clusters (3 + 2..6 brokers; every third seed snapshots every 7 s and
the commit runs step through them, every fourth has 1,500-byte segments and an index entry
every ~3 batches, every seventh is combined) stepped to an idle point; one steps on for
20-28 virtual s, the other gets the same run through fastforward/noop_run.py; every node's
files, logs, images, metrics and counters compared. Prints the seeds that differ.

    python benchmarks/noop_run_sweep.py [--seeds 11:41]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "cluster")]

import test_noop_run as T  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="11:41")
    lo, hi = map(int, ap.parse_args().seeds.split(":"))
    bad, stepped = [], 0
    start = time.process_time()
    for seed in range(lo, hi):
        cfg: dict = {}
        if seed % 3 == 0:
            cfg["metadata.log.max.snapshot.interval.ms"] = 7_000
        if seed % 4 == 0:
            cfg.update({"internal.metadata.log.segment.bytes": 1_500,
                        "log.index.interval.bytes": 200})
        opts = {"combined": True} if seed % 7 == 0 else {}
        a, b = T._twins(seed, 2 + seed % 5, cfg, **opts)
        commits = T._record_commits(a)
        a.run_for(20_000 + 1_000 * (seed % 9))
        results = T._bulk(a, b, commits, through_snapshots=True)
        stepped += sum(len(r.stepped) for r in results.values())
        diffs = T._differences(a, b)
        if diffs:
            bad.append(seed)
            print(f"seed {seed}: {diffs[:3]}")
    print(f"seeds {lo}..{hi - 1}: {len(bad)} differ {bad}; {stepped} snapshot commits stepped "
          f"through; cpu {time.process_time() - start:.1f} s")


if __name__ == "__main__":
    main()
