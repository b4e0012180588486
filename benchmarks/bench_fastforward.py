"""What ``Cluster(fast_forward=True)`` buys on an idle cluster: cpu per virtual hour, on and off.

``python benchmarks/bench_fastforward.py [--minutes 3] [--brokers 10] [--rounds 3]
[--wire-off] [--topic-rf N --partitions P]``: boots ``Cluster(3, brokers, seed=1)``, runs
10 virtual s (with ``--topic-rf``: creates a topic of ``P`` partitions and replication factor
``N``, then runs 5 virtual s more), then times
``run_for`` of ``--minutes`` virtual minutes, stepped and fast-forwarded in turn, each in a
fresh subprocess; prints cpu-s per virtual hour and the fast path's counters. ``--minutes
1440 --rounds 1 --only-fast``: a virtual day, warped only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time, collections
sys.path.insert(0, {root!r})
from kraft_testkit.cluster import Cluster
c = Cluster(3, {brokers}, seed=1, fast_forward={ff}, wire={wire}, invariants={wire})
c.run_for(10_000)
if {rf}:
    c.create_topic("orders", partitions={partitions}, replication_factor={rf})
    c.run_for(5_000)
t = time.process_time()
c.run_for({ms})
cpu = time.process_time() - t
print(json.dumps({{"hour": cpu * 3_600_000 / {ms}, "stats": dict(c.fast_forward_stats)}}))
"""


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=3)
    p.add_argument("--brokers", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--wire-off", action="store_true")
    p.add_argument("--topic-rf", type=int, default=0,
                   help="create a topic with this replication factor first (0: none)")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--only-fast", action="store_true",
                   help="time fast_forward=True only (a virtual day stepped takes minutes)")
    args = p.parse_args()
    ms = int(args.minutes * 60_000)
    hours: dict[bool, list[float]] = {False: [], True: []}
    stats = {}
    for _ in range(args.rounds):
        for ff in ((True,) if args.only_fast else (False, True)):
            code = CHILD.format(root=str(ROOT), brokers=args.brokers, ff=ff,
                                wire=not args.wire_off, ms=ms, rf=args.topic_rf,
                                partitions=args.partitions)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            hours[ff].append(row["hour"])
            stats = row["stats"] or stats
    for ff in (False, True):
        if hours[ff]:
            print(f"fast_forward={ff}: {min(hours[ff]):.2f}-{max(hours[ff]):.2f} "
                  "cpu-s per virtual hour")
    if hours[False]:
        print(f"on/off, best of each: {min(hours[True]) / min(hours[False]):.2f}")
    print(f"stats of the last fast run: {stats}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
