"""What a long idle run keeps in memory, virtual hour by virtual hour (issue 24, section 3).

Run ``python benchmarks/bench_long_run.py [--hours 24] [--seeds 1,2] [--trees A,B]
[--trace-hours 0]``: for each seed and checkout, a fresh process (``PYTHONPATH=<tree>``) builds
the default ``Cluster(3, 3, seed=s)`` (fast-forward on), creates one RF-3 topic and runs idle
virtual hours. After each hour it records the RSS and the structures that grow with the run:
the simulated disks' held bytes (``MemoryDisk.held_bytes``, or the files' sizes on a checkout
without it), the metadata logs' columns and the distinct objects in them (``sys.getsizeof``),
the decoded batches among them, and the Raft invariants' committed-prefix record (the
structures after the first and the last hour only, the RSS after each). Prints each
run's growth per virtual hour after the first hour, by source, and the RSS growth over the
whole run after the first hour. ``--trace-hours N`` adds tracemalloc over N hours after the
first (40x slower) and prints the largest growing allocation sites.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r'''
import gc, json, sys, time, tracemalloc
from kraft_testkit.cluster import Cluster

HOUR = 3_600_000

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024

def held(c):
    disks = logs = decoded = 0
    seen, pieces = set(), set()
    for n in c.controller_ids + c.broker_ids:
        p = c.sim.process(n)
        d = p.disk
        disks += d.held_bytes(pieces) if hasattr(d, "held_bytes") else sum(map(len, d.view().values()))
        log = p.machine.raft.log
        held_objects = getattr(log, "held_objects", None)
        objects = held_objects() if held_objects else [
            log.bases, log.batches, log.data, log.positions, *log.batches, *log.data]
        for obj in objects:
            if id(obj) not in seen:
                seen.add(id(obj))
                logs += sys.getsizeof(obj)
                decoded += type(obj).__name__ == "RecordBatch"
    record = c.invariants.raft._batches
    if isinstance(record, dict):  # before the compact record: a dict of tuples
        inv = sys.getsizeof(record) + sum(sys.getsizeof(v) + sys.getsizeof(v[1]) + 32
                                          for v in record.values())
    elif hasattr(record, "held_bytes"):  # runs and a CRC a batch
        inv = record.held_bytes()
    else:
        inv = sum(a.itemsize * len(a) for a in (record.bases, record.lasts, record.keys))
    return {"disks": disks, "logs": logs, "decoded": decoded, "invariants": inv}

hours, seed, trace_hours = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
c = Cluster(3, 3, seed=seed)
c.create_topic("t", partitions=1, replication_factor=3)
t0 = time.process_time()
rows = []
for h in range(hours):
    if h == 1 and trace_hours:
        tracemalloc.start(6)
        snap = tracemalloc.take_snapshot()
    c.run_for(HOUR)
    gc.collect()
    if h == trace_hours and trace_hours:
        top = []
        for st in tracemalloc.take_snapshot().compare_to(snap, "traceback")[:12]:
            frames = [f"{f.filename.split('kraft_testkit/')[-1]}:{f.lineno}"
                      for f in st.traceback if "kraft_testkit" in f.filename]
            top.append([st.size_diff, " <- ".join(reversed(frames[-3:]))])
        tracemalloc.stop()
        print(json.dumps({"trace": top}), flush=True)
    row = dict(hour=h + 1, rss=rss(), cpu=time.process_time() - t0,
               end=c.replica(c.active_controller.id).log.end_offset)
    if h == 0 or h == hours - 1:  # the walk's own garbage would show in the next hours' RSS
        row.update(held(c))
    print(json.dumps(row), flush=True)
'''


def run(tree: str, hours: int, seed: int, trace_hours: int) -> tuple[list[dict], list]:
    env = {**os.environ, "PYTHONPATH": tree}
    out = subprocess.run([sys.executable, "-c", CHILD, str(hours), str(seed), str(trace_hours)],
                         env=env, cwd=tree, capture_output=True, text=True, check=True).stdout
    rows, trace = [], []
    for line in out.splitlines():
        item = json.loads(line)
        if "trace" in item:
            trace = item["trace"]
        else:
            rows.append(item)
    return rows, trace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=24, help="virtual hours per run")
    parser.add_argument("--seeds", default="1", help="comma-separated seeds")
    parser.add_argument("--trees", default=str(ROOT), help="comma-separated checkouts")
    parser.add_argument("--trace-hours", type=int, default=0,
                        help="tracemalloc over this many hours after the first")
    parser.add_argument("--quick", action="store_true", help="3 hours, one seed")
    args = parser.parse_args()
    hours = 3 if args.quick else max(args.hours, 2)
    seeds = [1] if args.quick else [int(s) for s in args.seeds.split(",")]
    mb = 1e6
    print("tree | seed | hours | RSS after 1 h | RSS growth after 1 h (MB) | per hour (MB): "
          "RSS, disks, logs, invariants | decoded batches added/h | NoOps/h | cpu s")
    for tree in args.trees.split(","):
        for seed in seeds:
            rows, trace = run(tree, hours, seed, args.trace_hours)
            a, b = rows[0], rows[-1]
            n = b["hour"] - a["hour"]

            def per_hour(key: str, a: dict = a, b: dict = b, n: int = n) -> float:
                return (b[key] - a[key]) / n

            print(f"{tree} | {seed} | {hours} | {a['rss'] / mb:.1f} | "
                  f"{(b['rss'] - a['rss']) / mb:.1f} | {per_hour('rss') / mb:.2f}, "
                  f"{per_hour('disks') / mb:.2f}, {per_hour('logs') / mb:.2f}, "
                  f"{per_hour('invariants') / mb:.2f} | {per_hour('decoded'):.0f} | "
                  f"{per_hour('end'):.0f} | {b['cpu']:.1f}")
            for size, where in trace:
                print(f"    traced {size / mb / max(args.trace_hours, 1):+.2f} MB/h  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
