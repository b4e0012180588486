"""Typed views (join on columns, not JSON) and seed sweeps as Spark jobs."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError
from kraft_testkit.quorum import Quorum
from kraft_testkit.spark import serve, sweep, views
from kraft_testkit.tools import cli


def test_views_give_brokers_topics_partitions_and_changes(spark):
    c = Cluster(seed=7)
    c.create_topic("orders", partitions=3, replication_factor=1)
    c.faults.kill(c.brokers[1])
    c.run_until(lambda c: c.broker_state(1).fenced, timeout_ms=20_000)
    with serve(c) as served:
        df = spark.read.format("kraft-metadata").options(**served).load().cache()
        brokers = {r.broker_id: r for r in views.brokers(df).collect()}
        assert sorted(brokers) == [0, 1, 2]
        assert brokers[0].endpoints[0].name == "PLAINTEXT" and brokers[0].log_dirs
        topics = views.topics(df).collect()
        assert [t.topic for t in topics] == ["orders"]
        parts = views.partitions(df).join(views.topics(df).select("topic_id", "topic"),
                                          "topic_id")
        on_1 = [p.partition for p in parts.where("leader = 1").collect()]
        assert len(on_1) == 1 and parts.count() == 3
        changes = views.partition_changes(df).join(
            views.topics(df).select("topic_id", "topic"), "topic_id").collect()
        lost = [(ch.topic, ch.partition) for ch in changes if ch.leader == -1]
        assert lost == [("orders", on_1[0])]
        fenced = [b.broker_id for b in views.broker_changes(df).collect() if b.fenced == 1]
        assert fenced == [1]
        df.unpersist()


def quorum_scenario(seed: int) -> Quorum:
    q = Quorum(voters=3, seed=seed)
    q.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
    q.append([b"x"])
    return q


def failing_scenario(seed: int) -> Quorum:
    if seed % 2:
        raise ValueError(f"seed {seed} is odd")
    return quorum_scenario(seed)


def test_sweep_digests_equal_single_process_digests(spark):
    rows = sweep(quorum_scenario, range(6), spark=spark).collect()
    assert [r.seed for r in rows] == list(range(6))
    assert all(r.verdict == "ok" and r.first_violation is None for r in rows)
    for r in rows:
        q = quorum_scenario(r.seed)
        assert r.digest == q.trace.digest() and r.virtual_ms == q.now_ms
        assert r.wall_s > 0


def test_sweep_reports_a_failing_seed(spark):
    rows = {r.seed: r for r in sweep(failing_scenario, [0, 1], spark=spark).collect()}
    assert rows[0].verdict == "ok"
    assert (rows[1].verdict, rows[1].first_violation) == ("error", "ValueError: seed 1 is odd")


def test_sweep_rejects_bad_input(spark):
    with pytest.raises(ConfigError, match="int seeds"):
        sweep(quorum_scenario, [], spark=spark)
    with pytest.raises(ConfigError, match="scenario function"):
        sweep("quorum", range(2), spark=spark)


def test_simulate_on_spark_prints_what_the_plain_runner_prints(spark, capsys):
    args = ["simulate", "--voters", "3", "--seeds", "0:3", "--minutes", "0.3"]
    assert cli.main(args) == 0
    plain = capsys.readouterr().out.splitlines()[-1]
    assert cli.main(args + ["--spark", "local[2]"]) == 0
    on_spark = capsys.readouterr().out.splitlines()[-1]
    assert plain.split(" (")[0] == on_spark.split(" (")[0] == "3 seeds, 0 violations"
