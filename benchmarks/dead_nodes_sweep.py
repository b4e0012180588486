"""The dead-node warp's differential over random schedules, once (CI runs a few seeds).

``python benchmarks/dead_nodes_sweep.py --seeds 0:150``: for each seed, a random schedule of
controller kills (the active one or a follower), broker kills, restarts of whatever is down,
topic creations (RF 1-3) and idle stretches of 0.8-45 virtual s on 3 + 3..5, stepped and with
``fast_forward=True``; after every step the replica state of
tests/cluster/test_fastforward_replicas.py and the network's sent, delivered, vanished and
dropped counts are compared. Prints the seeds that differ (none expected), the virtual ms
warped and the cpu of each mode.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "cluster"))

from kraft_testkit.cluster import Cluster, node_id  # noqa: E402
from test_fastforward_replicas import _replica_state  # noqa: E402


def schedule(seed: int, fast_forward: bool) -> tuple[list, int]:
    r = random.Random(seed)
    brokers = r.choice([3, 4, 5])
    c = Cluster(3, brokers, seed=seed, fast_forward=fast_forward)
    c.run_for(8_000)
    c.create_topic("a", partitions=r.randint(1, 6), replication_factor=r.choice([1, 2, 3]))
    states = []
    for step in range(8):
        what, ms = r.random(), r.choice([777, 3_000, 20_000, 45_000])
        down = [n for n in c.roles if not c.sim.process(n).up]
        if what < 0.2 and not any(n in c.controller_ids for n in down):
            leader = c.active_controller
            leader = None if leader is None else node_id(leader)
            others = [n for n in c.controller_ids if n != leader]
            c.faults.kill(leader if leader is not None and r.random() < 0.5 else r.choice(others))
            c.run_until(lambda c: c.active_controller is not None, timeout_ms=15_000)
        elif what < 0.4:
            b = c.broker_ids[r.randrange(brokers)]
            if c.sim.process(b).up:
                c.faults.kill(b)
        elif what < 0.6:
            for n in down:
                c.faults.start(n)
        elif what < 0.65:
            c.create_topic(f"t{step}", partitions=2, replication_factor=r.choice([1, 2, 3]))
        c.run_for(ms)
        net = c.sim.network.stats
        states.append((_replica_state(c), {k: net[k] for k in
                                           ("sent", "delivered", "vanished", "dropped")}))
    return states, (c.fast_forward_stats or {}).get("virtual ms warped", 0)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", default="0:150")
    args = p.parse_args()
    lo, hi = map(int, args.seeds.split(":"))
    bad, warped, cpu = [], 0, {False: 0.0, True: 0.0}
    for seed in range(lo, hi):
        out = {}
        for ff in (False, True):
            t = time.process_time()
            try:
                out[ff] = schedule(seed, ff)
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
