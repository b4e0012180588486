"""Scale: what a change costs as the cluster grows, and what an idle cluster costs by its size.

``python benchmarks/bench_scale.py topics [--topics 10000] [--chunk 1000]``
    topics of 10 partitions, replication factor 3, created one at a time on 3 + 3
    (``Cluster.create_topic``, defaults: wire and invariants on): cpu of each chunk, and the
    last chunk against the first (target: at most 1.3x). ``--no-gc``: with CPython's cyclic
    collector off, to tell the kit's growth from the collector's full collections.
``python benchmarks/bench_scale.py idle [--partitions 10000] [--minutes 1]``
    an idle virtual minute of 3 + 3 holding ``--partitions`` replicated partitions (RF 3,
    topics of 10) against the same cluster empty, default ``Cluster(...)`` (fast-forward on);
    target: at most 2x.
``python benchmarks/bench_scale.py big [--partitions 100000] [--brokers 10]``
    one cluster with that many partitions (topics of 1,000, RF 3) on ``tmpdir`` storage:
    create, an idle virtual hour in which every node writes its snapshot (the 1 h interval),
    reopen from the directories, a controller failover; cpu and peak RSS of each.

Each measurement runs in a fresh subprocess (``--rounds`` times, the spread printed); cpu is
``time.process_time()`` of the step alone. ``--profile`` prints the top of a cProfile of the
last chunk / the idle stretch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TOPICS = """
import json, sys, time
sys.path.insert(0, {root!r})
from kraft_testkit.cluster import Cluster
if {nogc}:
    import gc; gc.disable()
c = Cluster(3, 3, seed=1)
chunks = []
prof = None
for i in range({topics}):
    if i % {chunk} == 0:
        if {profile} and i == {topics} - {chunk}:
            import cProfile; prof = cProfile.Profile(); prof.enable()
        t = time.process_time()
    c.create_topic(f"t{{i:05d}}", 10, 3)
    if (i + 1) % {chunk} == 0:
        chunks.append(time.process_time() - t)
if prof is not None:
    prof.disable()
    import pstats; pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
print(json.dumps({{"chunks": chunks}}))
"""

IDLE = """
import json, sys, time
sys.path.insert(0, {root!r})
from kraft_testkit.cluster import Cluster
c = Cluster(3, 3, seed=1)
for i in range({partitions} // 10):
    c.create_topic(f"t{{i:05d}}", 10, 3)
c.run_for(20_000)   # settled: every follower caught up, the creations committed everywhere
prof = None
if {profile}:
    import cProfile; prof = cProfile.Profile(); prof.enable()
t = time.process_time()
c.run_for({ms})
cpu = time.process_time() - t
if prof is not None:
    prof.disable()
    import pstats; pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(45)
print(json.dumps({{"cpu": cpu, "stats": dict(c.fast_forward_stats)}}))
"""

BIG = """
import json, resource, sys, tempfile, time
sys.path.insert(0, {root!r})
from kraft_testkit.cluster import Cluster
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = {{}}
root = tempfile.mkdtemp(prefix="bench-scale-")
t = time.process_time()
c = Cluster(3, {brokers}, seed=1, storage="tmpdir", data_dir=root)
for i in range({partitions} // 1000):
    c.create_topic(f"t{{i:04d}}", 1000, 3)
c.run_for(5_000)
out["create"] = (time.process_time() - t, rss())
t = time.process_time()
c.run_for(3_660_000)  # metadata.log.max.snapshot.interval.ms (1 h): a snapshot on every node
out["idle hour + snapshots"] = (time.process_time() - t, rss())
c.close()
del c
t = time.process_time()
c = Cluster(3, {brokers}, seed=1, storage="tmpdir", data_dir=root)
out["reopen"] = (time.process_time() - t, rss())
old = c.active_controller
t = time.process_time()
c.faults.kill(old)
c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=30_000)
out["failover"] = (time.process_time() - t, rss())
print(json.dumps(out))
"""


def _child(code: str, profile: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    if profile:
        print(done.stderr[-6000:], file=sys.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _spread(values: list[float], unit: str = "s") -> str:
    return f"{min(values):.2f}-{max(values):.2f} {unit}" if len(values) > 1 \
        else f"{values[0]:.2f} {unit}"


def topics(args: argparse.Namespace) -> None:
    firsts, lasts, ratios = [], [], []
    for _ in range(args.rounds):
        row = _child(TOPICS.format(root=str(ROOT), topics=args.topics, chunk=args.chunk,
                                   profile=args.profile, nogc=args.no_gc), args.profile)
        chunks = row["chunks"]
        print("chunks (cpu-s):", " ".join(f"{x:.2f}" for x in chunks), flush=True)
        firsts.append(chunks[0])
        lasts.append(chunks[-1])
        ratios.append(chunks[-1] / chunks[0])
    print(f"{args.topics:,} topics x 10 partitions, RF 3, one at a time, chunks of "
          f"{args.chunk:,}: first {_spread(firsts)}, last {_spread(lasts)}, last/first "
          f"{_spread(ratios, 'x')} (target <= 1.3x)")


def idle(args: argparse.Namespace) -> None:
    ms = int(args.minutes * 60_000)
    cpu: dict[int, list[float]] = {0: [], args.partitions: []}
    for _ in range(args.rounds):
        for n in cpu:
            row = _child(IDLE.format(root=str(ROOT), partitions=n, ms=ms,
                                     profile=args.profile and n > 0), args.profile and n > 0)
            cpu[n].append(row["cpu"])
            print(f"{n:,} partitions: {row['cpu']:.3f} cpu-s, {row['stats']}", flush=True)
    ratios = [a / b for a, b in zip(cpu[args.partitions], cpu[0])]
    print(f"idle {args.minutes:g} virtual min, 3 + 3: empty {_spread(cpu[0])}, "
          f"{args.partitions:,} RF-3 partitions {_spread(cpu[args.partitions])}, ratio "
          f"{_spread(ratios, 'x')} (target <= 2x)")


def big(args: argparse.Namespace) -> None:
    for _ in range(args.rounds):
        row = _child(BIG.format(root=str(ROOT), partitions=args.partitions,
                                brokers=args.brokers), False)
        print(f"{args.partitions:,} partitions on 3 + {args.brokers}, tmpdir: " + ", ".join(
            f"{k} {cpu:.1f} cpu-s (peak RSS {mb:.0f} MB)" for k, (cpu, mb) in row.items()),
            flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("topics")
    t.add_argument("--topics", type=int, default=10_000)
    t.add_argument("--chunk", type=int, default=1_000)
    t.add_argument("--no-gc", action="store_true",
                   help="gc.disable() in the child: the growth without CPython's cyclic "
                        "collector, whose full collections walk every object and land in "
                        "whichever chunk they fall")
    i = sub.add_parser("idle")
    i.add_argument("--partitions", type=int, default=10_000)
    i.add_argument("--minutes", type=float, default=1.0)
    b = sub.add_parser("big")
    b.add_argument("--partitions", type=int, default=100_000)
    b.add_argument("--brokers", type=int, default=10)
    for q in (t, i, b):
        q.add_argument("--rounds", type=int, default=1)
        q.add_argument("--profile", action="store_true")
    args = p.parse_args()
    {"topics": topics, "idle": idle, "big": big}[args.what](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
