"""A Spark job over the live metadata log: which partitions lost their leader during a scripted
controller failover, and for how long (in virtual time).

    python examples/spark_failover_pipeline.py

The script: a topic with one replica per partition; the active controller and broker 1 die
together; a new controller is elected, broker 1's lease runs out and it is fenced (its
partitions have no leader: PartitionChangeRecord leader -1); broker 1 restarts and its partitions
get their leader back. The job sees only the committed log, through the ``kraft-metadata`` source.
"""

from __future__ import annotations

from kraft_testkit.cluster import Cluster
from kraft_testkit.spark import local_session, serve, views


def scripted_failover(seed: int = 7) -> Cluster:
    c = Cluster(controllers=3, brokers=3, seed=seed)
    c.create_topic("orders", partitions=6, replication_factor=1)
    old = c.active_controller
    c.faults.kill(old)
    c.faults.kill(c.brokers[1])
    c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=10_000)
    c.run_until(lambda c: c.broker_state(1).fenced, timeout_ms=30_000)
    c.run_for(2_000)  # leaderless for a while
    c.faults.start(c.brokers[1])
    c.run_until(lambda c: not c.broker_state(1).fenced, timeout_ms=30_000)
    c.faults.start(old)
    c.run_for(1_000)
    return c


def leaderless_windows(log):
    """``topic, partition, lost_at, regained_at, lost_ms`` for every stretch a partition had no
    leader (from leader -1 to the next change that names a leader)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    names = views.topics(log).select("topic_id", "topic")
    changes = (views.partition_changes(log).where(F.col("leader").isNotNull())
               .join(names, "topic_id"))
    by_partition = Window.partitionBy("topic", "partition").orderBy("offset")
    nxt = changes.withColumn("next_leader", F.lead("leader").over(by_partition)) \
                 .withColumn("next_at", F.lead("timestamp").over(by_partition))
    return (nxt.where((F.col("leader") == -1) & (F.col("next_leader") >= 0))
               .select("topic", "partition", F.col("timestamp").alias("lost_at"),
                       F.col("next_at").alias("regained_at"),
                       ((F.unix_micros("next_at") - F.unix_micros("timestamp")) / 1000)
                       .cast("long").alias("lost_ms"))
               .orderBy("topic", "partition"))


def main() -> None:
    spark = local_session()
    cluster = scripted_failover()
    with serve(cluster) as served:
        log = spark.read.format("kraft-metadata").options(**served).load()
        leaderless_windows(log).show(truncate=False)


if __name__ == "__main__":
    main()
