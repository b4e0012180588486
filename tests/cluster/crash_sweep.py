"""One seed of the crash sweep: a tmpdir cluster under writes, crashed in every way a disk allows,
then reopened; every committed record must be back.

A seed drives the run (the harness's choices come from ``random.Random(seed)``; the cluster's
own from its seed): topics are created while nodes are killed (torn tails allowed), crashed in
the middle of a multi-file write (a snapshot, a segment roll, a retention clean) and restarted;
small snapshot thresholds make snapshots frequent, and most seeds also take tiny segments (rolled
by size and by age, with their indexes) and tiny retention limits (old snapshots and the segments
below them deleted). Then the whole cluster ends one of four ways (clean close,
every node killed, every node crashed mid-write at a random point, a random virtual instant
then every node killed) and is reopened from its directories with another seed. Invariants are
on in both runs (durability: nothing acknowledged is lost on a restart). What was committed before
(topic ids and replica assignments) must equal what the reopened cluster serves.
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
from dataclasses import dataclass

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import KraftError

ENDINGS = ("close", "kill-all", "crash-mid-write", "kill-at-random-instant")


@dataclass
class CrashResult:
    seed: int
    ok: bool
    ending: str
    detail: str = ""
    topics: int = 0
    mid_write_crashes: int = 0
    steps: dict[str, int] | None = None  # multi-file steps written in the first run, by kind
    struck: dict[str, int] | None = None  # crashes that struck inside one (after >= 1 of its ops)


STEP_MARKS = {"roll": re.compile(r"\d{20}\.log \+0\b"),
              "snapshot": re.compile(r"replace \S+\.checkpoint ="),
              "clean": re.compile(r"delete \S+\d{20}-\d{10}\.checkpoint")}  # or a full truncation


def count_steps(c: Cluster) -> tuple[dict[str, int], dict[str, int]]:
    """How many segment rolls, snapshots and retention cleans the nodes wrote, and how many
    mid-write crashes struck inside one (the trace line lists the ops done before the crash)."""
    steps = dict.fromkeys(STEP_MARKS, 0)
    struck = dict.fromkeys(STEP_MARKS, 0)
    for _, kind, _, _, detail in c.trace.events():
        if kind != "disk":
            continue
        for name, mark in STEP_MARKS.items():
            if mark.search(detail):
                steps[name] += 1
                if "(crash after" in detail:
                    struck[name] += 1
    return steps, struck


def assignments(c: Cluster) -> dict[str, tuple[str, dict[int, tuple[int, ...]]]]:
    return {t.name: (str(t.id), {p: tuple(part.replicas) for p, part in t.partitions.items()})
            for t in c.metadata.topics}


def run_crash_seed(seed: int, data_dir: str | None = None) -> CrashResult:
    rng = random.Random(seed)
    own_dir = data_dir is None
    data_dir = data_dir or tempfile.mkdtemp(prefix="kraft-crash-")
    configs = {"metadata.log.max.record.bytes.between.snapshots": rng.choice([800, 2_000, 6_000])}
    if rng.random() < 0.75:  # small segments: rolls (by size, some by age) with their indexes
        configs |= {"log.index.interval.bytes": 200,
                    "internal.metadata.log.segment.bytes": rng.choice([600, 1_500, 4_000]),
                    "metadata.log.segment.ms": rng.choice([3_000, 20_000, 7 * 86_400_000])}
    if rng.random() < 0.75:  # retention: old snapshots and the segments below them deleted
        configs |= {"metadata.max.retention.bytes": rng.choice([0, 3_000, 10_000]),
                    "testkit.raft.log.clean.interval.ms": rng.choice([300, 1_000, 5_000])}
    ending = ENDINGS[seed % len(ENDINGS)]
    result = CrashResult(seed, False, ending)
    try:
        c = Cluster(3, 3, seed=seed, storage="tmpdir", data_dir=data_dir, configs=configs,
                    trace_keep=None)
        for i in range(rng.randint(4, 9)):
            try:
                c.create_topic(f"t{i}", partitions=rng.randint(1, 4), replication_factor=3)
            except KraftError:
                pass  # a request cut by a fault: whether it committed is read from the image
            victim = rng.choice(c.nodes)
            action = rng.random()
            if action < 0.3 and victim.up:
                c.faults.kill(victim)
                c.run_for(rng.randint(0, 3_000))
                c.faults.start(victim)
            elif action < 0.6 and victim.up:
                c.faults.crash_in_writes(victim, rng.randint(0, 4))
                c.run_for(rng.randint(100, 4_000))
            for n in c.nodes:  # a crash armed earlier may strike later: bring the node back
                if not n.up:
                    result.mid_write_crashes += 1
                    c.faults.start(n)
            c.run_until(lambda c: c.active_controller is not None, timeout_ms=30_000)
        c.run_for(rng.randint(0, 2_000))
        before = assignments(c)
        result.topics = len(before)
        if ending == "close":
            pass
        elif ending == "kill-all":
            for n in c.nodes:
                if n.up:
                    c.faults.kill(n)
        elif ending == "crash-mid-write":
            for n in c.nodes:
                if n.up:
                    c.faults.crash_in_writes(n, rng.randint(0, 3))
            c.run_for(rng.randint(50, 3_000))
            for n in c.nodes:
                if n.up:
                    c.faults.kill(n)
        else:
            c.run_for(rng.randint(1, 700))
            for n in c.nodes:
                if n.up:
                    c.faults.kill(n)
        result.steps, result.struck = count_steps(c)
        c.close()
        again = Cluster(3, 3, seed=seed + 1_000_003, storage="tmpdir", data_dir=data_dir,
                        configs=configs)
        after = assignments(again)
        lost = {name: v for name, v in before.items() if after.get(name) != v}
        if again.failed_nodes:
            result.detail = f"nodes refused to start: {again.failed_nodes}"
        elif lost:
            result.detail = f"committed topics lost or changed on reopen: {sorted(lost)}"
        else:
            result.ok = True
        again.close()
    except KraftError as e:
        result.detail = f"{type(e).__name__}: {str(e).splitlines()[0]}"
    finally:
        if own_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
    return result
