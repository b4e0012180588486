"""A/B: cpu of boot 3 + 3 and of the 30-virtual-second failover scenario, two checkouts in turn.

``python benchmarks/ab_hotpath.py A_DIR B_DIR [--rounds 3]``: every round runs A then B, each
in a fresh subprocess importing ``kraft_testkit`` from its directory (a ``git archive`` of a
commit will do). Inside a subprocess: one warm-up, then the best cpu (``time.process_time``,
garbage collected before each run) of ``--boots`` boots and of ``--failovers`` failovers, with
the defaults (wire + invariants on) and with both off, all seed 1 (the same work every time;
the scenario of ``bench_cluster.py``; ``--fast-forward``: its ``Cluster`` warps the idle
stretches, the dead voter's included). Prints best and worst over the rounds, and B/A.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_idle import run_child  # noqa: E402

CHILD = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
from kraft_testkit.cluster import Cluster
opts = json.loads(sys.argv[2])

def failover(wire, invariants):
    kw = {"fast_forward": True} if opts.get("fast_forward") else {}
    c = Cluster(3, 3, seed=1, wire=wire, invariants=invariants, **kw)
    c.create_topic("t", 6, 3)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    c.run_for(30_000 - c.now_ms)

def best(fn, n):
    out = []
    for _ in range(n):
        gc.collect()
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return min(out)

failover(True, True)
res = {}
for wire in (True, False):
    tag = "defaults" if wire else "both off"
    res["boot " + tag] = best(lambda: Cluster(3, 3, seed=1, wire=wire, invariants=wire),
                              opts["boots"])
    res["failover " + tag] = best(lambda: failover(wire, wire), opts["failovers"])
print(json.dumps(res))
"""


def run(path: str, opts: dict) -> dict:
    return run_child(CHILD, path, opts)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--boots", type=int, default=15)
    p.add_argument("--failovers", type=int, default=5)
    p.add_argument("--fast-forward", action="store_true",
                   help="the failover with Cluster(fast_forward=True) (both checkouts)")
    args = p.parse_args()
    opts = {"boots": args.boots, "failovers": args.failovers,
            "fast_forward": args.fast_forward}
    results: dict[str, list[dict]] = {"A": [], "B": []}
    for r in range(args.rounds):
        for name, path in (("A", args.a), ("B", args.b)):
            got = run(path, opts)
            results[name].append(got)
            print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v * 1e3:.1f} ms"
                                                       for k, v in got.items()), flush=True)
    print(f"{'case':<22} {'A best-worst':>16} {'B best-worst':>16} {'B/A best':>9}")
    for case in results["A"][0]:
        a = sorted(x[case] * 1e3 for x in results["A"])
        b = sorted(x[case] * 1e3 for x in results["B"])
        print(f"{case:<22} {a[0]:7.1f}-{a[-1]:<7.1f} {b[0]:7.1f}-{b[-1]:<7.1f} "
              f"{b[0] / a[0]:9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
