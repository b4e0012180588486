"""The fast broker loops' differential over many random walks, once (CI runs a few seeds).

``python benchmarks/fast_brokers_sweep.py --seeds 0:200``: for each seed,
tests/cluster/test_fastforward_fast_brokers.py's ``random_walk`` (3 + 3..10 brokers, link
latencies from 1-5 to 2-700 ms, a topic or not, or with ``--replicated`` always a topic of
replication factor 2-3, broker and controller kills and restarts),
where a compact prediction with the brokers' fetch loops out of the heap
(``fastforward/fast_brokers.py``) and one with the heap alone are compared at every step
(``model_digest.compact_fingerprint``). Prints the seeds that differ (none expected) and how
many predictions used the fast loops (and how many loops had a quiet broker's heartbeats in
them, ``fastforward/fast_beats.py``).
"""

from __future__ import annotations

import sys
import time

from sweeps import bounds, parser  # (and this checkout and its cluster tests importable)

from test_fastforward_fast_brokers import random_walk  # noqa: E402


def main() -> int:
    p = parser("0:200")
    p.add_argument("--points", type=int, default=20)
    p.add_argument("--replicated", action="store_true",
                   help="always a topic of replication factor 2-3 (the brokers fetch from "
                        "each other)")
    args = p.parse_args()
    lo, hi = bounds(args.seeds)
    bad, used, loops, beats = [], 0, 0, 0
    t = time.process_time()
    for seed in range(lo, hi):
        try:
            u, n, b = random_walk(seed, args.points, args.replicated)
        except AssertionError as e:
            bad.append((seed, str(e).splitlines()[0]))
            continue
        used += u
        loops += n
        beats += b
    print(f"{hi - lo} walks x {args.points} points, {len(bad)} differ {bad}; {used} predictions "
          f"with fast loops ({loops} loops, {beats} with their heartbeats); cpu {time.process_time() - t:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
