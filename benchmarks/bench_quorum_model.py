"""The idle model alone (``fastforward.quorum_model.predict_quorum``): cpu per virtual hour and
a digest of everything it computed, so a faster model can be shown to compute the same.

``python benchmarks/bench_quorum_model.py [--minutes 60] [--rounds 3] [--cases 3+0:1,3+4:2,3+10:1]
[--record FILE | --check FILE] [--profile]``: for each case ``3+brokers:seed`` boots
``Cluster(3, brokers, seed, fast_forward=True)``, runs 10 virtual s, then warps ``--minutes``
virtual minutes and times the model's calls alone (one per stretch; the log cleaner and the
snapshots end stretches). The digest chains, per stretch, every event with all its fields,
the NoOps and drains, the messages in flight at the end, every loop's final state and the
links' counters (``fastforward.model_digest.fingerprint``);
``--record`` writes the digests, ``--check`` compares against a recorded file (exit 1 on a
difference).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kraft_testkit.cluster import Cluster  # noqa: E402
from kraft_testkit.fastforward import warp as warp_module  # noqa: E402
from kraft_testkit.fastforward.model_digest import (  # noqa: E402
    compact_fingerprint,
    fingerprint,
)
from kraft_testkit.fastforward.quorum_model import predict_quorum  # noqa: E402


def run_case(brokers: int, seed: int, ms: int, *, steps: bool = False,
             profile: bool = False, compact: bool = False) -> dict:
    """Warp ``ms`` virtual ms of an idle ``3 + brokers`` cluster, timing the model's calls alone
    (``warp.predict_quorum`` wrapped) and chaining the digests of every stretch it computed.
    By default the warp replays (a delivery hook keeps it off its compact path), so the model
    computes every event, as the recorded digests did; ``compact``: the warp's own path."""
    c = Cluster(3, brokers, seed=seed, fast_forward=True)
    if not compact:
        c.sim.network.on_deliver(lambda src, dst, msg: None)
    c.run_for(10_000)
    prof = cProfile.Profile() if profile else None
    totals = {"cpu": 0.0, "events": 0, "stretches": 0, "span": 0}
    chain = hashlib.sha256()

    def timed(cluster, until_ms, steps=steps, compact=False):  # noqa: ANN001, ANN202
        t = time.process_time()
        if prof:
            prof.enable()
        try:
            pred = predict_quorum(cluster, until_ms, steps=steps, compact=compact)
        finally:
            if prof:
                prof.disable()
            totals["cpu"] += time.process_time() - t
        # a compact prediction leaves most events out (``omitted``) and carries the held
        # answers and heartbeats: its own digest (``compact_fingerprint``) covers them
        totals["events"] += len(pred.events) + (pred.omitted if compact else 0)
        totals["stretches"] += 1
        totals["span"] += pred.horizon_ms - cluster.now_ms
        chain.update((compact_fingerprint if compact else fingerprint)(pred).encode())
        return pred

    real = warp_module.predict_quorum
    warp_module.predict_quorum = timed
    try:
        c.run_for(ms)
    finally:
        warp_module.predict_quorum = real
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    cpu = totals["cpu"]
    return {"case": f"3+{brokers}:{seed}", "events": totals["events"],
            "stretches": totals["stretches"], "span_ms": totals["span"], "cpu_s": cpu,
            "cpu_per_hour": cpu * 3_600_000 / ms,
            "us_per_event": cpu * 1e6 / max(1, totals["events"]),
            "digest": chain.hexdigest()[:16]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cases", default="3+0:1,3+4:2,3+10:1")
    p.add_argument("--steps", action="store_true", help="also record the leader's steps")
    p.add_argument("--record")
    p.add_argument("--check")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--compact", action="store_true",
                   help="time the compact prediction the warp uses (digests of "
                        "model_digest.compact_fingerprint: compare two checkouts' output)")
    args = p.parse_args()
    ms = int(args.minutes * 60_000)
    digests, bad = {}, 0
    expected = json.loads(Path(args.check).read_text()) if args.check else {}
    for case in args.cases.split(","):
        brokers, seed = (int(x) for x in case.split("+")[1].split(":"))
        rows = [run_case(brokers, seed, ms, steps=args.steps, profile=args.profile and r == 0,
                         compact=args.compact)
                for r in range(args.rounds)]
        per_hour = [r["cpu_per_hour"] for r in rows]
        r0 = rows[0]
        key = f"{r0['case']}/{args.minutes:g}min/steps={args.steps}"
        digests[key] = r0["digest"]
        same = len({r["digest"] for r in rows}) == 1
        mark = ""
        if key in expected:
            mark = "same as recorded" if expected[key] == r0["digest"] else "DIFFERS"
            bad += expected[key] != r0["digest"]
        print(f"{r0['case']:>8}: {r0['events']} events in {r0['stretches']} stretches "
              f"({r0['span_ms'] / 1000:.0f} virtual s computed); model "
              f"{min(per_hour):.3f}-{max(per_hour):.3f} cpu-s per virtual hour, "
              f"{min(r['us_per_event'] for r in rows):.2f} us/event; digest "
              f"{r0['digest']}{'' if same else ' (VARIES between rounds)'} {mark}")
        bad += not same
    if args.record:
        old = json.loads(Path(args.record).read_text()) if Path(args.record).exists() else {}
        old.update(digests)
        Path(args.record).write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
