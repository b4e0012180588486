"""Time-warped lease expiry: wall-clock code and the cluster's virtual time move together.

A small "consumer lease" service, written as application code usually is (it reads
``time.time()`` and ``datetime.now()``), hands out a 30-second lease; at the same time a broker
is cut off and loses its Kafka lease (broker.session.timeout.ms, 9 s by default). Under
``cluster.wall_clock`` both expiries happen in milliseconds of real time, and the wall-clock
timestamps the service logs line up with the cluster's virtual time.

    python examples/time_warped_lease_expiry.py [seed]
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone

from kraft_testkit.cluster import Cluster


class LeaseService:
    """Application code: leases that end ``ttl_s`` wall-clock seconds after they are granted."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self.leases: dict[str, float] = {}

    def grant(self, holder: str) -> float:
        self.leases[holder] = time.time() + self.ttl_s
        return self.leases[holder]

    def valid(self, holder: str) -> bool:
        return time.time() < self.leases.get(holder, 0.0)


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def main(seed: int = 7) -> dict[str, int]:
    started = time.perf_counter()
    c = Cluster(3, 3, seed=seed, names="faker")
    victim = c.brokers[1]
    leases = LeaseService(ttl_s=30)
    seen: dict[str, int] = {}
    with c.wall_clock(start="2026-01-01T00:00:00Z") as clock:
        leases.grant("billing-worker")
        print(f"{stamp()}  lease granted to billing-worker until +30 s")
        c.network.isolate(victim)
        print(f"{stamp()}  {c.names.hosts[victim.id]} cut off from the cluster")
        took = clock.warp_until(lambda c: c.broker_state(victim).fenced, timeout_ms=20_000)
        seen["broker_fenced_ms"] = took
        print(f"{stamp()}  the controller fenced it after {took} ms (its 9 s Kafka lease lapsed); "
              f"billing-worker's lease valid: {leases.valid('billing-worker')}")
        c.network.heal()
        clock.warp_until(lambda c: not c.broker_state(victim).fenced, timeout_ms=20_000)
        print(f"{stamp()}  healed; the broker is unfenced again")
        clock.warp_to(leases.leases["billing-worker"])
        seen["lease_valid_at_expiry"] = int(leases.valid("billing-worker"))
        print(f"{stamp()}  billing-worker's lease reached its end: valid "
              f"{leases.valid('billing-worker')}")
        seen["virtual_ms"] = c.now_ms - clock.opened_at_ms
    wall_ms = (time.perf_counter() - started) * 1000
    print(f"{seen['virtual_ms'] / 1000:.1f} virtual (and wall-clock) seconds in {wall_ms:.0f} ms; "
          f"trace digest {c.trace.digest()[:16]} (the same without the wall clock)")
    return seen


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
