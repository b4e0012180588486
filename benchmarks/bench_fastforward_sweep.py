"""The fast-forward's differential test over many seeds, once (CI runs four).

``python benchmarks/bench_fastforward_sweep.py --seeds 10:30 --brokers 4 10``: for each seed
and cluster shape, the scenario of tests/cluster/test_fastforward_differential.py (faults and
admin requests around idle stretches) stepped and with ``fast_forward=True``; prints the seeds
whose states differ (none expected), how many fetches were computed, and the cpu of each mode;
``--settings``: each seed on the links and with one or two settings of config_sweep.py.
"""

from __future__ import annotations

import collections
import time

from sweeps import bounds, parser  # (and this checkout and its cluster tests importable)

import test_fastforward_differential as scenario  # noqa: E402


def main() -> int:
    p = parser("10:30")
    p.add_argument("--brokers", type=int, nargs="+", default=[4, 10])
    p.add_argument("--settings", action="store_true",
                   help="each seed on the links and with settings of config_sweep.py")
    args = p.parse_args()
    from config_sweep import settings
    lo, hi = bounds(args.seeds)
    totals: collections.Counter = collections.Counter()
    bad = []
    cpu = {False: 0.0, True: 0.0}
    for brokers in args.brokers:
        for seed in range(lo, hi):
            states = {}
            for ff in (False, True):
                t = time.process_time()
                states[ff], c = scenario._scenario(
                    seed, brokers, ff, **(settings(seed) if args.settings else {}))
                totals.update(c.fast_forward_stats)
                cpu[ff] += time.process_time() - t
            if states[False] != states[True]:
                keys = [k for k in states[False] if states[False][k] != states[True].get(k)]
                bad.append((seed, brokers, keys))
                print(f"seed {seed}, 3 + {brokers}: differs in {keys}", flush=True)
    runs = (hi - lo) * len(args.brokers)
    print(f"{runs} scenario pairs, {len(bad)} differ; {dict(totals)}; cpu stepped "
          f"{cpu[False]:.1f} s, fast-forward {cpu[True]:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
