"""The real-Kafka twin: one scenario, the in-process cluster and a real Kafka, compared.

With a Docker engine (or ``KRAFT_TWIN_BOOTSTRAP=host:port`` of a running Kafka) the scenario
also runs on a real single-node KRaft Kafka; otherwise it says why and compares two in-process
clusters of different shapes, which a client must not be able to tell apart either.

    python examples/twin_compare.py
"""

from __future__ import annotations

from kraft_testkit.cluster import Cluster
from kraft_testkit.twin import (AlterTopicConfig, CreateTopic, DeleteTopic, Describe,
                                InProcessBackend, RealKafkaUnavailable, compare, run_scenario,
                                start_real_kafka)

SCENARIO = [
    CreateTopic("orders", 3, 1),
    CreateTopic("orders", 3, 1),
    CreateTopic("wide", 1, 3),
    AlterTopicConfig("orders", "retention.ms", "60000"),
    Describe(),
    DeleteTopic("orders"),
    Describe(),
]


def main() -> int:
    ours = run_scenario(InProcessBackend(Cluster(1, 1, combined=True, seed=1)), SCENARIO)
    for label, outcome in ours.outcomes:
        print(f"{label}: {outcome}")
    try:
        real = start_real_kafka()
    except RealKafkaUnavailable as why:
        print(f"no real Kafka: {why}")
        theirs = run_scenario(InProcessBackend(Cluster(3, 1, seed=2), "3 controllers + 1 broker"),
                              SCENARIO)
    else:
        try:
            theirs = run_scenario(real.backend(), SCENARIO)
        finally:
            real.stop()
    diffs = compare(ours, theirs)
    print(f"{ours.backend} vs {theirs.backend}: " + ("no difference a client could see" if not
                                                      diffs else "\n  ".join(["", *diffs])))
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
