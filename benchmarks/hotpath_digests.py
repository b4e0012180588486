"""Fingerprints of fault scenarios, to prove a hot-path optimization changed no behaviour.

``python benchmarks/hotpath_digests.py > before.txt`` on one checkout, the same on the other,
then ``diff``: every line is one scenario (seed, shape, wire and invariants) with the trace
digest, the committed log's sha256 (``dump_log``) and the cluster image's sha256 (its snapshot
records, encoded). Any difference is a behaviour change. ``--quick`` runs fewer seeds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import kraft_testkit  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_cluster  # noqa: E402

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.frames import encode_record
from kraft_testkit.sim.link import LinkProfile, Uniform


def failover(seed: int, brokers: int, wire: bool, invariants: bool) -> Cluster:
    """bench_cluster.py's scenario: topic, kill the active controller, run to 30 virtual s."""
    return bench_cluster.failover(seed, wire, invariants, brokers)


def faults(seed: int, brokers: int, wire: bool, invariants: bool) -> Cluster:
    """Kills, a restart, a partition that fences a broker, a pause, lossy links, a heal."""
    c = Cluster(3, brokers, seed=seed, wire=wire, invariants=invariants)
    c.create_topic("a", 4, 3)
    c.run_for(2_000)
    c.faults.kill(c.brokers[0])
    c.run_for(3_000)
    c.faults.start(c.brokers[0])
    c.network.isolate(c.brokers[1])
    c.run_for(12_000)
    c.network.heal()
    c.network.set_profile(LinkProfile(latency=Uniform(1, 8), drop=0.05, duplicate=0.05,
                                      reorder=0.1))
    c.faults.pause(c.brokers[2])
    c.run_for(4_000)
    c.faults.resume(c.brokers[2])
    old = c.active_controller
    c.faults.kill(old)
    c.run_for(6_000)
    c.network.set_profile(LinkProfile())
    c.faults.start(old)
    c.create_topic("b", 3, 2)
    c.run_for(10_000)
    return c


def fingerprint(c: Cluster, width: int = 16) -> str:
    """The line of one run; ``width`` hex digits of each hash (the tests take all 64)."""
    fd, path = tempfile.mkstemp()
    os.close(fd)
    try:
        c.dump_log(path)
        log = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:width]
    finally:
        os.unlink(path)
    image = hashlib.sha256()
    for record in c.metadata.write():
        image.update(encode_record(record))
    return (f"trace {c.sim.trace.digest()[:width]} events {c.sim.scheduler.executed} "
            f"now {c.now_ms} log {log} image {image.hexdigest()[:width]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seeds = (1, 2) if args.quick else (1, 2, 3, 7)
    for name, fn in (("failover", failover), ("faults", faults)):
        for brokers in (3, 10):
            for seed in seeds:
                for wire, invariants in ((True, True), (False, False)):
                    c = fn(seed, brokers, wire, invariants)
                    print(f"{name} 3+{brokers} seed {seed} wire {wire:d} inv {invariants:d}: "
                          f"{fingerprint(c)}", flush=True)


if __name__ == "__main__":
    main()
