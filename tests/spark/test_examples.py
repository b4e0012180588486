"""Both Spark examples run and say what happened."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_failover_pipeline_finds_the_leaderless_partitions(spark):
    example = load("spark_failover_pipeline")
    cluster = example.scripted_failover(seed=7)
    on_broker_1 = sorted(p for p, part in cluster.metadata.topic("orders").partitions.items()
                         if list(part.replicas) == [1])
    assert on_broker_1
    from kraft_testkit.spark import serve

    with serve(cluster) as served:
        log = spark.read.format("kraft-metadata").options(**served).load()
        rows = example.leaderless_windows(log).collect()
    assert [(r.topic, r.partition) for r in rows] == [("orders", p) for p in on_broker_1]
    # broker 1 was fenced only after its 9 s lease ran out, and stayed down 2 s at least
    assert all(r.lost_ms >= 2_000 for r in rows)
    assert all(r.lost_at.timestamp() * 1000 >= 9_000 for r in rows)
    assert len({r.lost_at for r in rows}) == 1  # fenced in one go: every partition at once


def test_lease_expiry_stream_raises_one_alert(spark):
    example = load("spark_lease_expiry_stream")
    alerts = example.run(spark, seed=7)
    assert [(a.alert, a.broker_id) for a in alerts] == [("LEASE_EXPIRED", 1)]
