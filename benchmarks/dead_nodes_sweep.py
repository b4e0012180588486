"""The dead-node warp's differential over random schedules, once (CI runs a few seeds).

``python benchmarks/dead_nodes_sweep.py --seeds 0:200``: for each seed, the random schedule of
tests/cluster/test_fastforward_dead_nodes.py (``schedule``):
controller kills (the active one or a follower), broker kills, restarts of whatever is down,
topic creations (RF 1-3) and idle stretches of 0.8-45 virtual s on 3 + 3..5, stepped and with
``fast_forward=True``; after every step the replica state of
tests/cluster/test_fastforward_replicas.py and the network's sent, delivered, vanished and
dropped counts are compared; ``--settings``: each seed on the links and with one or two of the
settings of config_sweep.py. Prints the seeds that differ (none expected), the virtual ms
warped and the cpu of each mode.
"""

from __future__ import annotations

import time

from sweeps import bounds, parser  # (and this checkout and its cluster tests importable)

from test_fastforward_dead_nodes import schedule  # noqa: E402


def main() -> int:
    p = parser("0:200")
    p.add_argument("--settings", action="store_true",
                   help="each seed with links and settings of config_sweep.py")
    args = p.parse_args()
    from config_sweep import settings
    lo, hi = bounds(args.seeds)
    bad, warped, cpu = [], 0, {False: 0.0, True: 0.0}
    for seed in range(lo, hi):
        out = {}
        for ff in (False, True):
            t = time.process_time()
            try:
                out[ff] = schedule(seed, ff, **(settings(seed) if args.settings else {}))
            except Exception as e:  # noqa: BLE001 - the same failure in both modes is equal
                # (its first line: the trace lines after it differ between modes by design)
                out[ff] = ((type(e).__name__, str(e).splitlines()[0]), 0)
            cpu[ff] += time.process_time() - t
        if out[False][0] != out[True][0]:
            bad.append(seed)
            print(f"seed {seed} differs", flush=True)
        warped += out[True][1]
    print(f"{hi - lo} seeds, {len(bad)} differ {bad}; {warped} virtual ms warped; cpu stepped "
          f"{cpu[False]:.1f} s, fast-forward {cpu[True]:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
