"""What an idle 3 + 10 cluster's events are, and how the brokers' fetch loops touch the rest.

``python benchmarks/idle_anatomy.py [--minutes 10] [--seed 1]``: boots ``Cluster(3, 10)``,
runs an idle stretch with the whole trace kept, and counts from the trace (so it measures the
code as it runs, not a model of it): events per virtual second by kind and by who talks to
whom (voters, brokers' Raft fetches, their controller channel), what wakes the active
controller's timer (a NoOp append, a parked fetch reaching its max wait, something else), and
how often a broker's fetch reaches the leader in the same millisecond as another leader event
(the ties a bulk step would have to order exactly). Figures for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT))

from kraft_testkit.cluster import Cluster


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    c = Cluster(3, 10, seed=args.seed, trace_keep=None)
    c.run_for(10_000)
    leader = c.active_controller.id
    brokers = set(c.broker_ids)
    start = c.sim.now_ms
    ms = int(args.minutes * 60_000)
    executed = c.sim.scheduler.executed
    c.run_for(ms)
    assert c.active_controller.id == leader, "the leader changed: not an idle stretch"
    events = [e for e in c.sim.trace.events() if e[0] > start]
    secs = ms / 1000
    print(f"seed {args.seed}, {args.minutes:g} virtual min, leader {leader}: "
          f"{(c.sim.scheduler.executed - executed) / secs:.1f} scheduler events per virtual s")

    kinds = collections.Counter()
    for t, kind, node, peer, detail in events:
        if kind == "recv":
            side = "broker" if (node in brokers or peer in brokers) else "voter"
            kinds[f"recv {detail} ({side})"] += 1
        elif kind == "timer":
            kinds[f"timer ({'broker' if node in brokers else 'controller'})"] += 1
    for what, n in kinds.most_common():
        print(f"  {n / secs:7.2f}/s  {what}")

    # what the leader's timer firings did: look at the leader's events in the same ms
    by_ms: dict[int, list] = collections.defaultdict(list)
    for e in events:
        if e[2] == leader:
            by_ms[e[0]].append(e)
    causes = collections.Counter()
    for t, row in by_ms.items():
        for i, (_, kind, _, _, detail) in enumerate(row):
            if kind != "timer":
                continue
            after = row[i + 1:]
            nxt = next((e for e in after if e[1] in ("timer", "recv")), None)
            mine = after[: after.index(nxt)] if nxt else after
            if any(e[1] == "disk" and "append" in e[4] for e in mine):
                causes["appends (a NoOp or a record)"] += 1
            elif any(e[1] == "send" and e[4] == "FetchResponse" and e[3] in brokers for e in mine):
                causes["answers a broker's parked fetch at its max wait"] += 1
            elif any(e[1] == "send" and e[4] == "FetchResponse" for e in mine):
                causes["answers a voter's parked fetch at its max wait"] += 1
            else:
                causes["nothing visible (a deadline moved)"] += 1
    print("the leader's timer firings:")
    for what, n in causes.most_common():
        print(f"  {n / secs:7.2f}/s  {what}")

    # broker fetches arriving at the leader in a millisecond that has other leader events
    shared = alone = 0
    for t, row in by_ms.items():
        arrivals = [e for e in row if e[1] == "recv" and e[3] in brokers and e[4] == "FetchRequest"]
        others = [e for e in row if e[1] in ("timer", "recv") and e not in arrivals]
        if arrivals:
            if others:
                shared += len(arrivals)
            else:
                alone += len(arrivals)
    print(f"broker fetches reaching the leader: {(shared + alone) / secs:.2f}/s, "
          f"{shared / max(1, shared + alone):.1%} in a ms with another leader event")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
