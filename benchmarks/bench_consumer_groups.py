"""What the KIP-848 consumer group coordinator costs (gateway/groups/consumer):

* steady heartbeats over a socket (a stable member, nothing to write) against Metadata
  requests over the same socket, and the in-process manager call alone, requests/s;
* joins (each writes the member, epoch and assignment records to __consumer_offsets and is
  answered once replicated): members/s over a socket;
* the server-side assignors in-process: uniform (homogeneous and heterogeneous) and range,
  a full reassignment of many members over many partitions, ms per assignment.

    python benchmarks/bench_consumer_groups.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "gateway"))

from gateway_helpers import RawClient, port_of  # noqa: E402

from kraft_testkit import Cluster, serve  # noqa: E402
from kraft_testkit.gateway.groups.consumer.assignors import (  # noqa: E402
    GroupSpec,
    MemberSpec,
    assign,
)
from kraft_testkit.protocol import messages as M  # noqa: E402
from kraft_testkit.protocol.uuid import Uuid  # noqa: E402

H = M.ConsumerGroupHeartbeatRequest


def _socket_rates(heartbeats: int, joins: int) -> tuple[float, float, float, float]:
    with serve(Cluster(3, 3, seed=1)) as srv:
        srv.call(lambda c: c.create_topic("t", partitions=12, replication_factor=3))
        first = RawClient(port_of(srv.bootstrap_servers))
        found = first.request(M.FindCoordinatorRequest(key_type=0, coordinator_keys=("g",)), 4)
        first.close()
        c = RawClient(found.coordinators[0].port)
        t0 = time.perf_counter()
        for i in range(joins):
            c.request(H(group_id="g", member_id=f"m{i}", member_epoch=0,
                        rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
                        topic_partitions=()), 1)
        join_rate = joins / (time.perf_counter() - t0)
        answer = c.request(H(group_id="g", member_id="m0", member_epoch=0,
                             rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
                             topic_partitions=()), 1)
        epoch = answer.member_epoch
        beat = H(group_id="g", member_id="m0", member_epoch=epoch)
        t0 = time.perf_counter()
        for _ in range(heartbeats):
            c.request(beat, 1)
        socket_rate = heartbeats / (time.perf_counter() - t0)
        metadata = M.MetadataRequest(topics=None)
        t0 = time.perf_counter()
        for _ in range(heartbeats):
            c.request(metadata, 12)
        metadata_rate = heartbeats / (time.perf_counter() - t0)
        coord = srv.groups

        def direct() -> float:
            shard, _ = coord.shard_for(found.coordinators[0].node_id, "g")
            t0 = time.perf_counter()
            for _ in range(heartbeats):
                coord.consumer.heartbeat(shard, beat, 1, "bench", "/127.0.0.1")
            return heartbeats / (time.perf_counter() - t0)
        direct_rate = srv.call(lambda _: direct())
        c.close()
    return socket_rate, metadata_rate, direct_rate, join_rate


def _assignor_ms(name: str, members: int, topics: int, partitions: int,
                 homogeneous: bool, rounds: int) -> float:
    ids = [Uuid(i.to_bytes(16, "big")) for i in range(1, topics + 1)]
    specs = []
    for m in range(members):
        subscribed = tuple(ids) if homogeneous else tuple(ids[m % topics::2] or ids[:1])
        specs.append(MemberSpec(f"member-{m:04}", None, None, subscribed, {}))
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        assign(name, GroupSpec(specs, homogeneous, set()), lambda t: partitions)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    quick = "--quick" in sys.argv
    socket_rate, metadata_rate, direct_rate, join_rate = _socket_rates(
        300 if quick else 2000, 20 if quick else 100)
    print(f"steady heartbeat: {socket_rate:,.0f}/s over a socket (Metadata on the same socket "
          f"{metadata_rate:,.0f}/s, ratio {socket_rate / metadata_rate:.2f}); the manager call "
          f"alone {direct_rate:,.0f}/s")
    print(f"joins (records written, answered once replicated): {join_rate:,.1f} members/s")
    rounds = 3 if quick else 7
    for name, homogeneous in (("uniform", True), ("uniform", False), ("range", True)):
        ms = _assignor_ms(name, 100, 10, 100, homogeneous, rounds)
        kind = "homogeneous" if homogeneous else "heterogeneous"
        print(f"{name} {kind}: 100 members x 10 topics x 100 partitions: {ms:.1f} ms "
              "(median)")


if __name__ == "__main__":
    main()
