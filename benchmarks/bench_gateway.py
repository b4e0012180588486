"""The loopback gateway: requests per second over a socket against the same work
through the in-process API.

Run ``python benchmarks/bench_gateway.py`` from the repository root (``--quick`` for a short
run, ``--repeat N`` for more repeats). One client connection sends requests one at a time (the
next after the answer), in stepping mode (virtual time moves only when a request needs it), on a
``Cluster(3, 3, seed=1)`` holding a 6-partition topic with replication factor 3:

1. Metadata v12 for all topics: over the socket, against ``cluster.broker_metadata(broker)``
   (the in-process API: a MetadataRequest from the kit's admin node over the simulated network).
2. Produce v9 with ``acks=all`` (one 1-record batch per request, to the partition leader): over
   the socket, against the same handler called in-process (``gateway.data_apis.produce`` on a
   request context, then the simulation stepped until the ISR has the batch, as the gateway
   does): the difference is the socket, the framing and the thread hand-off.

Each figure is the median of the repeats, with the spread (min-max) beside it; the ratio of the
socket to the in-process figure, measured in the same repeat, is the number to quote.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "gateway"))
try:
    import kraft_testkit  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))

from gateway_helpers import RawClient, metadata

from kraft_testkit import Cluster, serve
from kraft_testkit.gateway import data_apis
from kraft_testkit.gateway.context import Pending, RequestContext
from kraft_testkit.protocol import messages as M

P = M.ProduceRequest


def _batch() -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    b.append(0, timestamp=1_700_000_000_000, key=b"k", value=b"x" * 100, headers=[])
    return bytes(b.build())


def _produce_request(batch: bytes) -> P:
    return P(acks=-1, timeout_ms=10_000, topic_data=(P.TopicProduceData(
        name="bench", partition_data=(P.PartitionProduceData(index=0, records=batch),)),))


def one_repeat(n: int) -> dict[str, float]:
    cluster = Cluster(3, 3, seed=1)
    cluster.create_topic("bench", partitions=6, replication_factor=3)
    leader = cluster.metadata.topic("bench").partitions[0].leader
    request = _produce_request(_batch())
    out = {}
    with serve(cluster) as srv:
        client = RawClient(srv.address(cluster.brokers[0])[1])
        metadata(client)
        t0 = time.perf_counter()
        for _ in range(n):
            metadata(client)
        out["metadata socket"] = n / (time.perf_counter() - t0)

        to_leader = RawClient(srv.address(leader)[1])
        t0 = time.perf_counter()
        for _ in range(n):
            answer = to_leader.request(request, 9)
            assert answer.responses[0].partition_responses[0].error_code == 0
        out["produce socket"] = n / (time.perf_counter() - t0)

        with srv.hold() as c:
            t0 = time.perf_counter()
            for _ in range(n):
                c.broker_metadata(c.brokers[0])
            out["metadata in-process"] = n / (time.perf_counter() - t0)

            ctx = RequestContext(srv, leader, "broker", 0, 9, 0, "bench")
            t0 = time.perf_counter()
            for _ in range(n):
                answer = data_apis.produce(ctx, request)
                if isinstance(answer, Pending):
                    ready = []
                    c.sim.run_until(lambda _: ready.append(answer.poll()) or ready[-1], 10_000)
                    answer = ready[-1]
                assert answer.responses[0].partition_responses[0].error_code == 0
            out["produce in-process"] = n / (time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = 200 if args.quick else 1_000
    runs = [one_repeat(n) for _ in range(args.repeat)]
    print(f"{n} sequential requests per case, {args.repeat} repeats (median, min-max)")
    for what in ("metadata", "produce"):
        sock = [r[f"{what} socket"] for r in runs]
        inproc = [r[f"{what} in-process"] for r in runs]
        ratios = [s / i for s, i in zip(sock, inproc)]
        print(f"{what:9s} socket {statistics.median(sock):8.0f}/s ({min(sock):.0f}-{max(sock):.0f})"
              f"   in-process {statistics.median(inproc):8.0f}/s "
              f"({min(inproc):.0f}-{max(inproc):.0f})   socket/in-process "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
