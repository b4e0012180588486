"""A scripted cluster scenario for the determinism tests; ``python cluster_scn_script.py SEED``
prints its trace digest (used to compare with a run in another process)."""

from __future__ import annotations

import sys

from kraft_testkit.cluster import Cluster


def scripted_run(seed: int) -> tuple[str, int, dict]:
    """Boot, create topics, fail over, isolate and heal a broker, shut one down, reassign.
    Returns (trace digest, virtual end time, committed image as a dict)."""
    c = Cluster(3, 4, seed=seed)
    c.create_topic("orders", 6, 3)
    c.alter_configs(topic="orders", set={"retention.ms": "1000"})
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 20_000)
    c.network.isolate(1)
    c.run_for(12_000)
    c.network.heal()
    c.faults.start(old)
    c.run_until(lambda c: not c.broker_state(1).fenced, 20_000)
    c.controlled_shutdown(c.brokers[2])
    c.reassign("orders", 0, [0, 1, 3])
    c.run_until(lambda c: not c.metadata.partition("orders", 0).adding_replicas, 60_000)
    c.run_for(1_000)
    return c.trace.digest(), c.now_ms, c.metadata.to_dict()


if __name__ == "__main__":
    digest, now, _ = scripted_run(int(sys.argv[1]))
    print(digest, now)
