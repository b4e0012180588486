"""A/B: the cpu cost of an idle stretch of a booted 3 + 10 cluster, two checkouts in turn.

``python benchmarks/ab_idle.py A_DIR B_DIR [--minutes 2] [--rounds 3] [--wire-off]
[--extra '{"fast_forward": true}']``: every
round runs A then B, each in a fresh subprocess importing ``kraft_testkit`` from its directory
(a ``git archive`` of a commit will do), and prints cpu seconds per virtual hour (scaled from
the stretch) and events. Alternating in one window keeps both sides under the same load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
from kraft_testkit.cluster import Cluster
opts = json.loads(sys.argv[2])
c = Cluster(3, 10, seed=opts["seed"], wire=opts["wire"], invariants=opts["invariants"],
            **opts.get("extra", {}))
gc.collect()
e0 = c.sim.scheduler.executed
t0 = time.process_time()
c.run_for(opts["ms"])
cpu = time.process_time() - t0
print(json.dumps({"cpu": cpu, "events": c.sim.scheduler.executed - e0}))
"""


def run_child(child: str, path: str, opts: dict) -> dict:
    """Run ``child`` (Python source) in a fresh interpreter with ``path`` (a checkout) and
    ``opts`` (JSON) as its arguments; return the JSON object it printed last."""
    out = subprocess.run([sys.executable, "-c", child, path, json.dumps(opts)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(path: str, opts: dict) -> dict:
    return run_child(CHILD, path, opts)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--minutes", type=float, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--wire-off", action="store_true", help="wire mode and invariants off")
    p.add_argument("--extra", default="{}", help="JSON Cluster kwargs for both")
    p.add_argument("--b-extra", default="{}", help="JSON Cluster kwargs for B only")
    args = p.parse_args()
    ms = int(args.minutes * 60_000)
    base = {"seed": args.seed, "ms": ms, "wire": not args.wire_off,
            "invariants": not args.wire_off}
    scale = 3_600_000 / ms
    results: dict[str, list] = {"A": [], "B": []}
    for r in range(args.rounds):
        both = json.loads(args.extra)
        for name, path, extra in (("A", args.a, both),
                                  ("B", args.b, {**both, **json.loads(args.b_extra)})):
            got = run(path, {**base, "extra": extra})
            results[name].append(got)
            print(f"round {r + 1} {name}: {got['cpu'] * scale:7.2f} cpu-s/virtual hour, "
                  f"{got['events'] * scale:,.0f} events/hour", flush=True)
    for name in "AB":
        cpus = sorted(x["cpu"] * scale for x in results[name])
        print(f"{name}: best {cpus[0]:.2f} worst {cpus[-1]:.2f} cpu-s per virtual hour")
    a = min(x["cpu"] for x in results["A"])
    b = min(x["cpu"] for x in results["B"])
    print(f"B/A (best of each): {b / a:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
