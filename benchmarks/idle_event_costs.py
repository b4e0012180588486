"""Where an idle cluster's cpu goes, event kind by event kind, and how long a broker's fetch
loop runs between two events of its own that a bulk step could not compute.

``python benchmarks/idle_event_costs.py [--minutes 2] [--seed 1] [--brokers 10]
[--wire-off]``: boots ``Cluster(3, brokers)``, then steps an idle stretch one event at a time
and times each ``sim.step()`` (node code, trace, wire codec and invariants of that event)
with ``time.process_time_ns``, by what the event is (read from the heap entry before it runs).
Also reports how often ``fastforward.idle.why_not_idle`` finds the cluster idle (sampled
every 50th event; its own cost is not in the per-kind figures) and, per broker, the windows
between its non-fetch events (its timer, its heartbeat answers): what "fetch loops computed,
heartbeats stepped" could detach at a time. Figures for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT))

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.idle import is_idle


def _kind(c: Cluster, entry: list, arrive: object, timers: dict, brokers: set[int]) -> str:
    fn, arg = entry[3], entry[4]
    if fn is arrive:
        body = getattr(arg.msg, "body", None)
        name = type(body if body is not None else arg.msg).__name__
        to = "broker" if arg.dst in brokers else "controller"
        frm = "broker" if arg.src in brokers else "controller"
        return f"{name} {frm} -> {to}"
    node = timers.get(fn)
    if node is not None:
        return f"timer ({'broker' if node in brokers else 'controller'})"
    return "other"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--brokers", type=int, default=10)
    p.add_argument("--wire-off", action="store_true", help="wire=False, invariants off")
    args = p.parse_args()
    opts = {"wire": False, "invariants": False} if args.wire_off else {}
    c = Cluster(3, args.brokers, seed=args.seed, trace_keep=None, **opts)
    c.run_for(10_000)
    brokers = set(c.broker_ids)
    sim, sched = c.sim, c.sim.scheduler
    arrive = sim.network._arrive_cb  # noqa: SLF001 - classification only
    timers = {proc._timer_cb: n for n, proc in sim.processes.items()}  # noqa: SLF001
    end = sim.now_ms + int(args.minutes * 60_000)
    cost: dict[str, int] = collections.Counter()
    count: dict[str, int] = collections.Counter()
    # per broker: the instants of its events that are not Raft fetch answers
    own: dict[int, list[int]] = {b: [] for b in brokers}
    answers: dict[int, list[int]] = {b: [] for b in brokers}
    idle = samples = 0
    n = 0
    clock = time.process_time_ns
    while (at := sched.next_at()) is not None and at <= end:
        entry = sched._heap[0]  # noqa: SLF001 - next_at popped the cancelled ones
        kind = _kind(c, entry, arrive, timers, brokers)
        fn, arg = entry[3], entry[4]
        t0 = clock()
        sim.step()
        cost[kind] += clock() - t0
        count[kind] += 1
        if fn is arrive and arg.dst in brokers:
            (answers if kind.startswith("FetchResponse") else own)[arg.dst].append(at)
        elif timers.get(fn) in brokers:
            own[timers[fn]].append(at)
        n += 1
        if n % 50 == 0:
            samples += 1
            idle += is_idle(c)
    secs = args.minutes * 60
    total = sum(cost.values())
    print(f"3 + {args.brokers}, seed {args.seed}, {args.minutes:g} virtual min"
          f"{' (wire and invariants off)' if args.wire_off else ''}: {n / secs:.1f} events per "
          f"virtual s, {total / 1e9 / secs * 3600:.2f} cpu-s per virtual hour (timed steps)")
    for kind, ns in sorted(cost.items(), key=lambda kv: -kv[1]):
        print(f"  {ns / total:6.1%}  {count[kind] / secs:6.2f}/s  "
              f"{ns / count[kind] / 1000:6.1f} us each  {kind}")
    print(f"idle per why_not_idle: {idle}/{samples} sampled instants "
          f"({idle / max(1, samples):.1%})")
    windows, trips = [], []
    for b in sorted(brokers):
        marks = own[b]
        for lo, hi in zip(marks, marks[1:]):
            if hi - lo > 50:  # a heartbeat's send and its answer are a few ms apart
                windows.append(hi - lo)
                trips.append(sum(1 for t in answers[b] if lo < t < hi))
    if windows:
        print(f"broker windows between own events (> 50 ms): median {statistics.median(windows)} "
              f"ms, {statistics.mean(trips):.2f} fetch answers each (median "
              f"{statistics.median(trips)}), {len(windows)} windows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
