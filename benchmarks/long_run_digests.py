"""Fingerprints of long warped runs that read and cut the metadata logs' settled prefixes.

``python benchmarks/long_run_digests.py [--seeds 3,5,6] > out.txt`` on two checkouts, then
``diff``: a change to how a log holds its batches (raft/log_runs.py: a run of NoOp batches as
one entry) must change nothing a node does or writes. Per seed, 3 + 3 with three RF-3
partitions over 6.5 virtual hours (fast-forward on, the default): a broker killed for two
minutes after two hours; another one dead from 3.5 to 5.5 hours, which then fetches its
metadata from inside the leader's settled prefix; the active controller killed for a minute
at 4 hours. Then the same cluster on ``storage="tmpdir"``, closed after 2.5 hours and
reopened for another hour (the logs recovered from the files, then settled again). Each line:
the trace digest, the events run, every node's files (sha256 over names and bytes), the
committed log (``dump_log``) and the committed offsets.
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

from kraft_testkit.cluster import Cluster

MINUTE, HOUR = 60_000, 3_600_000


def files_digest(c: Cluster) -> str:
    h = hashlib.sha256()
    for n in c.controller_ids + c.broker_ids:
        view = c.sim.process(n).disk.view()
        for name in sorted(view):
            h.update(f"{n}/{name}\0".encode())
            h.update(bytes(view[name]))
    return h.hexdigest()[:16]


def fingerprint(c: Cluster) -> str:
    fd, path = tempfile.mkstemp()
    os.close(fd)
    try:
        c.dump_log(path)
        log = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    finally:
        os.unlink(path)
    ends = [c.replica(n).log.end_offset for n in c.controller_ids]
    return (f"trace {c.sim.trace.digest()[:16]} events {c.sim.scheduler.executed} "
            f"now {c.now_ms} files {files_digest(c)} log {log} ends {ends}")


def faults_run(seed: int) -> str:
    c = Cluster(3, 3, seed=seed)
    c.create_topic("t", 3, 3)
    c.run_for(2 * HOUR)
    c.faults.kill(c.brokers[0])
    c.run_for(2 * MINUTE)
    c.faults.start(c.brokers[0])
    c.run_for(HOUR + 28 * MINUTE)  # 3.5 h
    c.faults.kill(c.brokers[1])
    c.run_for(HOUR // 2)  # 4 h
    old = c.active_controller
    c.faults.kill(old)
    c.run_for(MINUTE)
    c.faults.start(old)
    c.run_for(HOUR + 29 * MINUTE)  # 5.5 h
    c.faults.start(c.brokers[1])
    c.run_for(HOUR)  # 6.5 h
    return fingerprint(c)


def reopen_run(seed: int) -> str:
    with tempfile.TemporaryDirectory() as d:
        c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=d)
        c.create_topic("t", 3, 3)
        c.run_for(2 * HOUR + 30 * MINUTE)
        first = fingerprint(c)
        c.close()
        c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=d)
        c.run_for(HOUR)
        line = f"{first} | reopened: {fingerprint(c)}"
        c.close()
        return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="3,5,6")
    parser.add_argument("--no-reopen", action="store_true")
    args = parser.parse_args()
    for seed in (int(s) for s in args.seeds.split(",")):
        print(f"seed {seed} faults: {faults_run(seed)}", flush=True)
        if not args.no_reopen:
            print(f"seed {seed} reopen: {reopen_run(seed)}", flush=True)


if __name__ == "__main__":
    main()
