"""Long idle stretches, warped: ``Cluster(fast_forward=True)`` against stepping every event.

A test that lets a cluster idle for a long time (a nightly job's window, a lease measured in
hours) pays for every NoOp, metadata fetch and heartbeat the cluster makes: about 85 events a
virtual second for 3 controllers and 10 brokers. With ``fast_forward=True``, ``run_for``
computes idle stretches with a model and fills every node in as stepping would have left it,
byte for byte. This script runs the same scenario both ways (a topic, a long idle stretch,
then a broker crash whose lease runs out, then a controller failover and another idle
stretch with both nodes still dead: dead nodes warp too) and shows what is equal and what it
cost.

    python examples/idle_warp.py [virtual minutes] [seed]

See docs/simulation.md, "Fast-forward: the idle warp", for what is modelled and how it is checked.
"""

from __future__ import annotations

import hashlib
import sys
import time

from kraft_testkit.cluster import Cluster


def fingerprint(c: Cluster) -> str:
    """Every node's files and the cluster's committed image, hashed: equal means the two runs
    left the same bytes everywhere."""
    h = hashlib.sha256()
    for n in sorted(c.roles):
        for name, data in sorted(c.sim.process(n).disk.view().items()):
            h.update(f"{n}/{name}".encode())
            h.update(data)
    h.update(repr(c.metadata.visible()).encode())
    return h.hexdigest()[:16]


def scenario(fast_forward: bool, minutes: float, seed: int) -> dict[str, object]:
    c = Cluster(3, 3, seed=seed, fast_forward=fast_forward)
    c.create_topic("orders", 3, 1)
    started = time.process_time()
    c.run_for(int(minutes * 60_000))  # the long idle stretch
    idle_cpu = time.process_time() - started
    victim = c.brokers[0]
    c.faults.kill(victim)  # then a failure: the broker's lease (9 s) must run out as before
    fenced_after = c.run_until(lambda c: c.broker_state(victim).fenced, timeout_ms=30_000)
    old = c.active_controller
    c.faults.kill(old)  # a failover: the new leader keeps asking the dead voter to join
    elected_after = c.run_until(lambda c: c.active_controller not in (None, old),
                                timeout_ms=10_000)
    started = time.process_time()
    c.run_for(int(minutes * 30_000))  # idle again, a voter and a broker dead
    dead_cpu = time.process_time() - started
    return {"idle cpu-s": round(idle_cpu, 2), "fenced after ms": fenced_after,
            "elected after ms": elected_after, "dead idle cpu-s": round(dead_cpu, 2),
            "now ms": c.now_ms, "fingerprint": fingerprint(c),
            "stats": dict(c.fast_forward_stats)}


def main(minutes: float = 10, seed: int = 7) -> dict[str, dict[str, object]]:
    runs = {"stepped": scenario(False, minutes, seed), "warped": scenario(True, minutes, seed)}
    for name, row in runs.items():
        print(f"{name:8} idle {minutes:g} virtual min: {row['idle cpu-s']:6.2f} cpu-s; "
              f"broker fenced {row['fenced after ms']} ms after its crash; new controller "
              f"{row['elected after ms']} ms after the failover; {minutes / 2:g} more virtual "
              f"min with both dead: {row['dead idle cpu-s']:6.2f} cpu-s; "
              f"files + image {row['fingerprint']}")
    stats = runs["warped"]["stats"]
    print(f"warp: {stats.get('stretches', 0)} stretches, {stats.get('virtual ms warped', 0)} virtual ms "
          f"computed, {stats.get('events computed', 0)} events not stepped")
    same = all(runs["stepped"][k] == runs["warped"][k]
               for k in ("fenced after ms", "elected after ms", "now ms", "fingerprint"))
    print("same bytes and same behaviour after the stretch:", same)
    return runs


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]), *(int(a) for a in sys.argv[2:3]))
