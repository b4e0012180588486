"""A streaming query over the live metadata log that raises an alert row when a broker's lease
expires: the broker is cut off, and twelve virtual seconds pass in a few milliseconds of wall
time (the simulator's time warp); the controller fences it (BrokerRegistrationChangeRecord
fenced=1) and the alert arrives through Structured Streaming's foreachBatch.

    python examples/spark_lease_expiry_stream.py
"""

from __future__ import annotations

import time

from kraft_testkit.cluster import Cluster
from kraft_testkit.spark import local_session, serve, start_stream, views


def lease_alerts(log):
    """One alert row per fencing: ``alert, broker_id, broker_epoch, at, offset``."""
    from pyspark.sql import functions as F

    return (views.broker_changes(log).where(F.col("fenced") == 1)
            .select(F.lit("LEASE_EXPIRED").alias("alert"), "broker_id", "broker_epoch",
                    F.col("timestamp").alias("at"), "offset"))


def run(spark, seed: int = 7, timeout_s: float = 600.0) -> list:
    """Isolate broker 1, warp 12 s of virtual time, return the alert rows the stream raised."""
    cluster = Cluster(controllers=3, brokers=3, seed=seed)
    alerts: list = []
    with serve(cluster) as served:
        stream = spark.readStream.format("kraft-metadata").options(**served).load()
        # returns once the first trigger ran: the stream has fixed its start ("latest")
        query = start_stream(lease_alerts(stream).writeStream
                             .foreachBatch(lambda df, _: alerts.extend(df.collect())))
        try:
            deadline = time.monotonic() + timeout_s
            cluster.network.isolate(cluster.brokers[1])
            cluster.run_for(12_000)  # virtual ms: the lease (9 s) runs out
            while not alerts and query.isActive and time.monotonic() < deadline:
                time.sleep(0.05)  # the alert arrives in a micro-batch of its own
            error = None if query.isActive else query.exception()
            if error is not None:
                raise error
        finally:
            query.stop()
    return alerts


def main() -> None:
    for row in run(local_session()):
        print(f"{row.alert}: broker {row.broker_id} (epoch {row.broker_epoch}) at virtual "
              f"{row.at:%H:%M:%S.%f}, log offset {row.offset}")


if __name__ == "__main__":
    main()
