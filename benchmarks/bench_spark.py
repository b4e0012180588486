"""Spark benchmark: cold session (default, tuned, tuned + AppCDS), first query, 1,000,000 records
from a directory to a DataFrame count, commit -> foreachBatch latency, sweep seeds/s.

    python benchmarks/bench_spark.py [--quick] [--repeat N] [--only cold,count,latency,sweep]

Cold starts run in fresh child processes (a JVM starts once per process). Figures are medians
with min-max over ``--repeat`` runs; the load average is printed because this machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_B = ROOT / "tests/golden/apache-kafka-pr15553-023aafc/B_mv18_3brokers_restart"


def child(mode: str) -> None:
    """One cold start in this fresh process; prints JSON timings."""
    started = time.perf_counter()
    if mode == "default":
        from kraft_testkit.spark.session import check_java, prepare_environment, register

        prepare_environment(check_java())  # the interpreter for workers: needed to work at all
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        register(spark)
    else:
        from kraft_testkit.spark import local_session

        spark = local_session(cds="off" if mode == "tuned" else "auto")
    session_s = time.perf_counter() - started
    t = time.perf_counter()
    spark.range(1000).count()
    first_s = time.perf_counter() - t
    t = time.perf_counter()
    spark.read.format("kraft-metadata").load(str(GOLDEN_B)).count()
    source_s = time.perf_counter() - t
    print(json.dumps({"session_s": session_s, "first_query_s": first_s,
                      "first_source_s": source_s}))
    spark.stop()


def run_child(mode: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True,
                         text=True, cwd=ROOT, timeout=600)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"child {mode} failed:\n{out.stderr[-2000:]}")
    return json.loads(lines[-1])


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def bench_cold(repeat: int) -> None:
    from kraft_testkit.spark.session import cds_archive_path, check_java

    archive = cds_archive_path(check_java())
    if not archive.is_file():
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kraft_testkit.spark.session", "--build-cds"],
                       cwd=ROOT, check=True, capture_output=True, timeout=900)
        print(f"AppCDS archive built once in {time.perf_counter() - t:.1f} s: {archive} "
              f"({archive.stat().st_size / 1e6:.0f} MB)")
    for mode in ("default", "tuned", "cds"):
        runs = [run_child(mode) for _ in range(repeat)]
        print(f"cold {mode:8s} session {spread([r['session_s'] for r in runs])}, "
              f"first range().count() {spread([r['first_query_s'] for r in runs])}, "
              f"first kraft-metadata count {spread([r['first_source_s'] for r in runs])}")


def bench_count(spark, repeat: int, records: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from spark_data import write_segment

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        path = write_segment(tmp, records)
        size = os.path.getsize(path)
        print(f"segment of {records:,} records, {size / 1e6:.0f} MB, written in "
              f"{time.perf_counter() - t:.1f} s")
        for value_json in ("false", "true"):
            times, n = [], 0
            for _ in range(repeat):
                t = time.perf_counter()
                n = spark.read.format("kraft-metadata").option("valueJson", value_json) \
                    .load(tmp).count()
                times.append(time.perf_counter() - t)
            print(f"count() valueJson={value_json}: {n:,} rows in {spread(times)} "
                  f"= {n / statistics.median(times) / 1e3:.0f}k rows/s")


def bench_latency(spark, commits: int) -> None:
    from kraft_testkit.cluster import Cluster
    from kraft_testkit.spark import serve

    c = Cluster(seed=7)
    seen: dict[int, float] = {}

    def sink(df, _):
        now = time.perf_counter()
        for r in df.select("offset").collect():
            seen[r.offset] = now

    with serve(c) as served:
        query = spark.readStream.format("kraft-metadata").options(**served).load() \
            .writeStream.foreachBatch(sink).start()
        while query.lastProgress is None:
            time.sleep(0.05)
        latencies = []
        for i in range(commits):
            c.create_topic(f"t{i}", partitions=1, replication_factor=1)
            committed = time.perf_counter()  # create_topic returns once committed (and served)
            last = served.bounds()[1] - 1
            while last not in seen:
                time.sleep(0.002)
            latencies.append(seen[last] - committed)
            time.sleep(0.3)  # let the stream idle, as a test would between steps
        query.stop()
    latencies.sort()
    print(f"commit -> foreachBatch over {commits} commits: median "
          f"{statistics.median(latencies) * 1e3:.0f} ms, min {latencies[0] * 1e3:.0f} ms, "
          f"max {latencies[-1] * 1e3:.0f} ms")


def bench_sweep(spark, seeds: int, repeat: int, minutes: float) -> None:
    from functools import partial

    from kraft_testkit.spark import sweep
    from kraft_testkit.tools.simulate import run_seed

    scenario = partial(run_seed, voters=3, minutes=minutes)
    plain, on_spark = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        plain_digests = [scenario(s).digest for s in range(seeds)]
        plain.append(seeds / (time.perf_counter() - t))
        t = time.perf_counter()
        rows = sweep(scenario, range(seeds), spark=spark).collect()
        on_spark.append(seeds / (time.perf_counter() - t))
        assert [r.digest for r in rows] == plain_digests
    print(f"sweep of {seeds} seeds (3 voters, {minutes:g} virtual min, random faults): plain "
          f"{statistics.median(plain):.1f} seeds/s ({min(plain):.1f}-{max(plain):.1f}), "
          f"local[2] {statistics.median(on_spark):.1f} seeds/s "
          f"({min(on_spark):.1f}-{max(on_spark):.1f}), ratio "
          f"{statistics.median(on_spark) / statistics.median(plain):.2f}; digests equal")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default="cold,count,latency,sweep")
    p.add_argument("--child", default=None)
    p.add_argument("--sweep-minutes", type=float, default=5.0,
                   help="virtual minutes of faults per seed in the sweep case")
    args = p.parse_args()
    if args.child:
        return child(args.child)
    only = set(args.only.split(","))
    repeat = 1 if args.quick else args.repeat
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if "cold" in only:
        bench_cold(repeat)
    if only & {"count", "latency", "sweep"}:
        from kraft_testkit.spark import local_session

        spark = local_session()
        spark.range(10).count()
        if "count" in only:
            bench_count(spark, repeat, 100_000 if args.quick else 1_000_000)
        if "latency" in only:
            bench_latency(spark, 5 if args.quick else 15)
        if "sweep" in only:
            bench_sweep(spark, 8 if args.quick else 16, repeat, args.sweep_minutes)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
