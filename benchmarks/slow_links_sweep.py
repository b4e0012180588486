"""The warp on slow links with replicated topics, stepped against warped, over many seeds.

``python benchmarks/slow_links_sweep.py --seeds 0:100``: for each seed a 3 + 3..5 cluster on
links of 1-200 ms to 300-900 ms (slower than half ``replica.fetch.backoff.ms``: a follower's
next replica fetch can leave before the last one's answer comes, and the broker ignores that
answer), a topic of replication factor 2-3, six ``run_for`` calls of 0.5-20 virtual s (stops
with messages on their way); every node's files, images, Raft and broker state, timers,
links and network counters compared (``test_fastforward_warp._quorum_state``). Prints the
seeds that differ (none expected) and how many stretches were warped.
"""

from __future__ import annotations

import random
import sys
import time

from sweeps import bounds, parser  # (and this checkout and its cluster tests importable)

from kraft_testkit.cluster import Cluster  # noqa: E402
from kraft_testkit.sim import LinkProfile  # noqa: E402
from kraft_testkit.sim.link import Fixed, Uniform  # noqa: E402
from test_fastforward_warp import _quorum_state  # noqa: E402

LATENCIES = (Uniform(2, 700), Uniform(300, 900), Uniform(1, 200), Fixed(450), Uniform(50, 600))


def scenario(seed: int, fast_forward: bool) -> tuple[dict, Cluster]:
    rnd = random.Random(seed)
    c = Cluster(3, rnd.randint(3, 5), seed=seed, fast_forward=fast_forward,
                link=LinkProfile(latency=rnd.choice(LATENCIES)))
    c.create_topic("t", rnd.randint(2, 6), rnd.randint(2, 3))
    for _ in range(6):
        c.run_for(rnd.randint(500, 20_000))
    return _quorum_state(c), c


def main() -> int:
    p = parser("0:100")
    args = p.parse_args()
    lo, hi = bounds(args.seeds)
    bad, stretches = [], 0
    t = time.process_time()
    for seed in range(lo, hi):
        stepped, _ = scenario(seed, False)
        try:
            warped, c = scenario(seed, True)
        except Exception as e:  # noqa: BLE001 - a sweep reports every seed
            bad.append((seed, repr(e)[:100]))
            continue
        stretches += c.fast_forward_stats.get("stretches", 0)
        differ = sorted(k for k in stepped if stepped[k] != warped[k])
        if differ:
            bad.append((seed, differ[:3]))
    print(f"{hi - lo} seeds, {len(bad)} differ {bad}; {stretches} stretches warped; "
          f"cpu {time.process_time() - t:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
