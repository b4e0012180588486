"""Transactional produce through the loopback gateway: confluent-kafka (librdkafka) committing
transactions of ``acks=all`` records, the transaction coordinator's log writes and markers and
the partition leaders' KIP-890 verification in the path.

Run ``python benchmarks/bench_gateway_transactions.py`` from the repository root
(``--transactions N``, ``--records N`` per transaction, ``--repeat N``, ``--quick``). Each repeat
boots a fresh ``Cluster(3, 3, seed=1)`` served in stepping mode, creates a 6-partition topic with
replication factor 3, ``init_transactions()``, then times N rounds of ``begin_transaction()``,
K records of 100 bytes round-robin over the partitions, ``commit_transaction()`` (which returns
once PrepareCommit is replicated; the markers follow). Then a ``read_committed`` consumer reads
the N*K records back (timed from ``assign()`` to the last record), which also waits for the last
markers.

commits/s and records/s per phase; the median of the repeats, (min-max) beside.
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

from bench_gateway_clients import PARTITIONS, TOPIC, VALUE, consume_all  # noqa: E402

from kraft_testkit import Cluster, serve


def one_repeat(transactions: int, per_txn: int) -> dict[str, float]:
    from confluent_kafka import Producer

    cluster = Cluster(3, 3, seed=1)
    with serve(cluster) as srv:
        srv.call(lambda c: c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3))
        boot = srv.bootstrap_servers
        p = Producer({"bootstrap.servers": boot, "transactional.id": "bench-txn",
                      "linger.ms": 5})
        p.init_transactions(60)
        t0 = time.perf_counter()
        for t in range(transactions):
            p.begin_transaction()
            for i in range(per_txn):
                p.produce(TOPIC, VALUE, partition=(t * per_txn + i) % PARTITIONS)
            p.commit_transaction(60)
        commit_s = time.perf_counter() - t0
        p.flush(10)
        del p  # librdkafka's handle goes before the gateway's sockets

        n = transactions * per_txn
        consume_s = consume_all(boot, n, **{"isolation.level": "read_committed"})
    return {"commits": transactions / commit_s, "produce": n / commit_s,
            "consume": n / consume_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transactions", type=int, default=200)
    ap.add_argument("--records", type=int, default=60, help="records per transaction")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="20 transactions, one repeat")
    args = ap.parse_args()
    txns, repeat = (20, 1) if args.quick else (args.transactions, args.repeat)
    runs = [one_repeat(txns, args.records) for _ in range(repeat)]
    print(f"confluent-kafka transactions through the gateway: {txns:,} transactions of "
          f"{args.records} records of {len(VALUE)} B, {repeat} repeat(s)")
    print("| phase | rate |")
    print("| --- | ---: |")
    for phase, unit in (("commits", "commits/s"), ("produce", "records/s"),
                        ("consume", "records/s")):
        rates = [r[phase] for r in runs]
        print(f"| {phase} ({unit}) | {statistics.median(rates):,.1f} ({min(rates):,.1f}-"
              f"{max(rates):,.1f}) |")


if __name__ == "__main__":
    main()
