"""Throughput of a real client through the loopback gateway: confluent-kafka (librdkafka)
producing with ``acks=all`` and a consumer reading everything back.

Run ``python benchmarks/bench_gateway_clients.py`` from the repository root (``--records N``,
``--repeat N``, ``--quick``). Each repeat boots a fresh ``Cluster(3, 3, seed=1)`` served in
stepping mode, creates a 6-partition topic with replication factor 3, then:

1. **produce**: one ``Producer`` (``acks=all``, idempotence off, librdkafka's default batching:
   ``linger.ms`` 5) sends N records of 100 bytes round-robin over the partitions; timed from the
   first ``produce()`` to ``flush()`` returning with every delivery report in (all acknowledged
   by the ISR);
2. **consume**: one ``Consumer`` ``assign()``-ed to every partition from the beginning reads the
   N records; timed from ``assign()`` to the last record.

records/s and MB/s (of record values) per phase; the median of the repeats, (min-max) beside.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))

from kraft_testkit import Cluster, serve

TOPIC, PARTITIONS, VALUE = "bench", 6, b"x" * 100


def one_repeat(n: int) -> dict[str, float]:
    from confluent_kafka import Producer

    cluster = Cluster(3, 3, seed=1)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        boot = srv.bootstrap_servers
        acked = [0]

        def on_delivery(err, msg) -> None:
            if err is not None:
                raise RuntimeError(f"delivery failed: {err}")
            acked[0] += 1

        p = Producer({"bootstrap.servers": boot, "acks": "all", "enable.idempotence": False,
                      "linger.ms": 5})
        t0 = time.perf_counter()
        for i in range(n):
            while True:
                try:
                    p.produce(TOPIC, VALUE, partition=i % PARTITIONS, on_delivery=on_delivery)
                    break
                except BufferError:  # librdkafka's queue is full: let it drain
                    p.poll(0.01)
            p.poll(0)
        if p.flush(300) != 0 or acked[0] != n:
            raise RuntimeError(f"{acked[0]} of {n} acknowledged")
        produce_s = time.perf_counter() - t0
        del p  # librdkafka's handle goes before the gateway's sockets

        consume_s = consume_all(boot, n)
    return {"produce": n / produce_s, "consume": n / consume_s}


def consume_all(boot: str, n: int, **config: object) -> float:
    """Wall seconds for one confluent consumer to read ``n`` records from the start of every
    partition of ``TOPIC`` (``config`` added to the consumer's, e.g. an isolation level)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": boot, "group.id": "bench",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100, **config})
    t0 = time.perf_counter()
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got = 0
    deadline = time.monotonic() + 300
    while got < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"read {got} of {n}")
        for m in c.consume(1000, 0.2):
            if m.error() is None:
                got += 1
    seconds = time.perf_counter() - t0
    c.close()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2,000 records, one repeat")
    args = ap.parse_args()
    n, repeat = (2_000, 1) if args.quick else (args.records, args.repeat)
    runs = [one_repeat(n) for _ in range(repeat)]
    print(f"confluent-kafka through the gateway: {n:,} records of {len(VALUE)} B, "
          f"{repeat} repeat(s)")
    print("| phase | records/s | MB/s |")
    print("| --- | ---: | ---: |")
    for phase in ("produce", "consume"):
        rates = [r[phase] for r in runs]
        mb = [r * len(VALUE) / 1e6 for r in rates]
        print(f"| {phase} | {statistics.median(rates):,.0f} ({min(rates):,.0f}-"
              f"{max(rates):,.0f}) | {statistics.median(mb):.2f} ({min(mb):.2f}-{max(mb):.2f}) |")


if __name__ == "__main__":
    main()
