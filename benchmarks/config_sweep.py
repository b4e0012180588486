"""The warp under Kafka settings other than the defaults, stepped against warped, over seeds.

``python benchmarks/config_sweep.py --seeds 0:100``: for each seed one or two of the settings
below (heartbeat interval, replica fetch backoff, NoOp interval, replica lag, session
timeout, Raft fetch timeout, snapshots by interval or by bytes), links of 1-5 ms to 2-300 ms, 3 + 3..6 nodes, a topic of
replication factor 1-3 or none, five ``run_for`` calls of 0.3-25 virtual s; every node's
files, images, Raft and broker state, timers, links and network counters compared
(``test_fastforward_warp._quorum_state``). A seed whose stepped run itself ends without an
active controller (a setting that makes the quorum flap) is skipped. Prints the seeds that
differ (none expected).
"""

from __future__ import annotations

import random
import sys
import time

from sweeps import bounds, parser  # (and this checkout and its cluster tests importable)

from kraft_testkit.cluster import Cluster  # noqa: E402
from kraft_testkit.sim import LinkProfile  # noqa: E402
from kraft_testkit.sim.errors import NoProgress  # noqa: E402
from kraft_testkit.sim.link import Fixed, Uniform  # noqa: E402
from test_fastforward_warp import _quorum_state  # noqa: E402

SETTINGS = (
    {"broker.heartbeat.interval.ms": 500}, {"broker.heartbeat.interval.ms": 3000},
    {"replica.fetch.backoff.ms": 100}, {"replica.fetch.backoff.ms": 300},
    {"metadata.max.idle.interval.ms": 200}, {"metadata.max.idle.interval.ms": 2000},
    {"replica.lag.time.max.ms": 2000}, {"broker.session.timeout.ms": 4000},
    {"controller.quorum.fetch.timeout.ms": 1000},
    {"metadata.log.max.snapshot.interval.ms": 15_000},
    {"metadata.log.max.record.bytes.between.snapshots": 4_000},
)
LATENCIES = (Uniform(1, 5), Uniform(1, 40), Uniform(2, 300), Fixed(3))


def draw(rnd: random.Random) -> dict:
    """One or two of ``SETTINGS`` and one of ``LATENCIES``, as ``Cluster`` arguments."""
    configs = dict(rnd.choice(SETTINGS))
    if rnd.random() < 0.5:
        configs.update(rnd.choice(SETTINGS))
    return {"configs": configs, "link": LinkProfile(latency=rnd.choice(LATENCIES))}


def settings(seed: int) -> dict:
    """The other sweeps' ``--settings``: the seed's draw, apart from its draws here."""
    return draw(random.Random(-1 - seed))


def scenario(seed: int, fast_forward: bool) -> tuple[dict, Cluster, dict]:
    rnd = random.Random(seed)
    cluster = draw(rnd)
    configs = cluster["configs"]
    c = Cluster(3, rnd.randint(3, 6), seed=seed, fast_forward=fast_forward, **cluster)
    if rnd.random() < 0.7:
        c.create_topic("t", 4, rnd.randint(1, 3))
    for _ in range(5):
        c.run_for(rnd.randint(300, 25_000))
    return _quorum_state(c), c, configs


def main() -> int:
    p = parser("0:100")
    args = p.parse_args()
    lo, hi = bounds(args.seeds)
    bad, skipped, stretches = [], 0, 0
    t = time.process_time()
    for seed in range(lo, hi):
        try:
            stepped, _, configs = scenario(seed, False)
        except NoProgress:
            skipped += 1
            continue
        try:
            warped, c, _ = scenario(seed, True)
        except Exception as e:  # noqa: BLE001 - a sweep reports every seed
            bad.append((seed, configs, repr(e)[:100]))
            continue
        stretches += c.fast_forward_stats.get("stretches", 0)
        differ = sorted(k for k in stepped if stepped[k] != warped[k])
        if differ:
            bad.append((seed, configs, differ[:3]))
    print(f"{hi - lo} seeds ({skipped} skipped), {len(bad)} differ {bad}; {stretches} "
          f"stretches warped; cpu {time.process_time() - t:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
