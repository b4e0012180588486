"""Cost of an idle hour's NoOp batches on every node: today's per-batch paths vs the bulk calls.

A 3 + 10 cluster is booted and stepped to an idle point, twice (same seed). Then 7,200 NoOp
batches (an hour at metadata.max.idle.interval.ms 500) are applied to all 13 nodes:

* **per batch**: the code stepping runs for each batch and commit, called directly (no
  scheduler, wire codec or invariants around it): the leader's linger drain
  (``RecordBatch.build``, ``_append_batch``), each replica's ``_append_fetched`` of the batch's
  bytes, the writes and fsync on each disk, then on each node the high watermark moved over
  the batch and ``_deliver`` (listeners, snapshot generator) plus the broker logic's
  ``on_metadata``;
* **bulk**: ``fastforward/noop_run.py``: ``append_leader_noops``, ``append_fetched_noops`` on the
  12 others, ``apply_commit_run`` on all 13, in chunks (``--chunks A/B``: A virtual ms for the
  appends and the controllers' commits, B for the brokers' commits; a warp stops a broker's
  commits at each of its heartbeats, 2 s, and every node's at its log-cleaner run, 60 s).

Each commit lands 5 ms after its batch's drain on every node (the instants matter to neither
cost). The two clusters' files are compared at the end (they must be equal). Snapshots by
time, the log cleaner, the leader rebalance and broker heartbeats are pushed out of the hour by configuration, so
that one call may cover a chunk; the hourly delegation-token check splits the leader's
run where it falls (its real code runs there). cpu time (``process_time``), best and worst of ``--rounds``.

    python benchmarks/bench_noop_run.py [--batches 7200] [--brokers 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kraft_testkit.cluster import Cluster  # noqa: E402
from kraft_testkit.controller.handlers import token_task  # noqa: E402
from kraft_testkit.fastforward.noop_run import (  # noqa: E402
    append_fetched_noops,
    append_leader_noops,
    apply_commit_run,
)
from kraft_testkit.protocol.records import RecordBatch  # noqa: E402
from kraft_testkit.sim.node import NEVER  # noqa: E402

CONFIGS = {"broker.heartbeat.interval.ms": 10_000_000, "broker.session.timeout.ms": 30_000_000,
           "metadata.log.max.snapshot.interval.ms": 0,
           "testkit.raft.log.clean.interval.ms": 100_000_000,
           "leader.imbalance.check.interval.seconds": 100_000}
COMMIT_LAG_MS = 5


def _cluster(brokers: int, seed: int) -> Cluster:
    c = Cluster(3, brokers, seed=seed, configs=CONFIGS)
    c.run_for(1_000)
    return c


def _plan(c: Cluster, batches: int) -> tuple[int, list[int], int]:
    leader = c.active_controller.id
    qc = c.sim.process(leader).machine.controller
    interval = c.config.metadata_max_idle_interval_ms
    first = qc.soft["noop.last_ms"] + interval
    return leader, [first + i * interval for i in range(batches)], c.raft_config.append_linger_ms


def _write(process, raft) -> None:
    ops, raft._writes, raft._sync = raft._writes, [], False
    ops += raft.epoch_checkpoint_ops()
    for op in ops:
        process.disk.apply(op)
    process.disk.sync()


def per_batch(c: Cluster, batches: int) -> float:
    leader, submits, linger = _plan(c, batches)
    nodes = [*c.controller_ids, *c.broker_ids]
    procs = {n: c.sim.process(n) for n in nodes}
    lp = procs[leader]
    lraft = lp.machine.raft
    base = lraft.config.log_time_base_ms
    start = time.process_time()
    for s in submits:
        d = s + linger
        lead = lraft._lead
        lead.pending, lead.drain_at = [b"\x01\x14\x00\x00"], NEVER
        lraft._append_batch(RecordBatch.build(lraft.log.end_offset, lead.pending,
                                              timestamp_ms=d + base, leader_epoch=lraft.epoch))
        lead.pending = []
        _write(lp, lraft)
        data = lraft.log.data[-1]
        for n in nodes:
            if n != leader:
                raft = procs[n].machine.raft
                raft._append_fetched(data)
                _write(procs[n], raft)
        hw = lraft.log.end_offset
        for n in nodes:
            node = procs[n].machine
            node._clock(d + COMMIT_LAG_MS)
            node.raft.hw = hw
            node.raft._deliver(d + COMMIT_LAG_MS)
            lst = node.listener
            if lst is not None and lst.image_changed:
                lst.image_changed = False
                node.logic.on_metadata(lst.image, d + COMMIT_LAG_MS)
    return time.process_time() - start


def _chunks(submits: list[int], chunk_ms: int) -> list[list[int]]:
    chunks: list[list[int]] = []
    for s in submits:
        if not chunks or s - chunks[-1][0] >= chunk_ms:
            chunks.append([])
        chunks[-1].append(s)
    return chunks


def bulk(c: Cluster, batches: int, chunk_ms: int, broker_chunk_ms: int) -> float:
    """The bulk calls: appends and the controllers' commits in chunks of ``chunk_ms``, the
    brokers' commits in chunks of ``broker_chunk_ms`` (a warp stops them at each heartbeat)."""
    leader, submits, linger = _plan(c, batches)
    procs = {n: c.sim.process(n) for n in (*c.controller_ids, *c.broker_ids)}
    others = [procs[n] for n in c.controller_ids if n != leader] + \
        [procs[n] for n in c.broker_ids]
    controllers = [procs[n] for n in c.controller_ids]
    brokers = [procs[n] for n in c.broker_ids]
    end0 = c.replica(leader).log_end_offset
    pairs = [(s + linger + COMMIT_LAG_MS, end0 + i + 1) for i, s in enumerate(submits)]
    chunks = _chunks(submits, chunk_ms)
    broker_chunks = _chunks(list(range(len(submits))), broker_chunk_ms // 500)
    qc = procs[leader].machine.controller
    start = time.process_time()
    done = 0
    for chunk in chunks:
        runs = []
        due = qc.soft.get("tokens.next_check_ms")
        if due is not None and chunk[-1] + linger >= due:  # the hourly token expiry check
            head = [s for s in chunk if s < due]
            if head:
                runs.append(append_leader_noops(procs[leader], head, until_ms=due - 1))
            token_task(qc, due)  # its real code, as the controller's event at that instant
            runs.append(append_leader_noops(procs[leader], chunk[len(head):]))
        else:
            runs.append(append_leader_noops(procs[leader], chunk))
        for run in runs:
            for p in others:
                append_fetched_noops(p, run)
        mine = pairs[done:done + len(chunk)]
        done += len(chunk)
        for p in controllers:
            r = apply_commit_run(p, mine)
            assert r.stopped is None, r
    for idx in broker_chunks:
        mine = pairs[idx[0]:idx[-1] + 1]
        for p in brokers:
            r = apply_commit_run(p, mine)
            assert r.stopped is None, r
    return time.process_time() - start


def _same_files(a: Cluster, b: Cluster) -> bool:
    return all(dict(a.sim.process(n).disk.view()) == dict(b.sim.process(n).disk.view())
               for n in (*a.controller_ids, *a.broker_ids))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=7_200)
    ap.add_argument("--brokers", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunks", nargs="+", default=["3600000/3600000", "60000/60000",
                                                      "60000/2000", "2000/2000"],
                    help="chunk ms of the appends and controllers' commits / of the brokers' "
                         "commits")
    args = ap.parse_args()
    nodes = 3 + args.brokers
    modes = [tuple(int(x) for x in m.split("/")) for m in args.chunks]
    stepped: list[float] = []
    bulks: dict[tuple[int, ...], list[float]] = {m: [] for m in modes}
    for _ in range(args.rounds):
        a = _cluster(args.brokers, args.seed)
        stepped.append(per_batch(a, args.batches))
        for mode in modes:
            b = _cluster(args.brokers, args.seed)
            bulks[mode].append(bulk(b, args.batches, *mode))
            if not _same_files(a, b):
                raise SystemExit(f"the bulk run (chunks {mode}) left other files")
    print(f"{args.batches} NoOp batches on {nodes} nodes, {args.rounds} rounds, cpu s "
          f"(best-worst); us per batch per node at the best")
    per = args.batches * nodes / 1e6
    print(f"  per-batch paths                 {min(stepped):7.3f}-{max(stepped):7.3f} s  "
          f"{min(stepped) / per:6.2f} us")
    for mode, xs in bulks.items():
        print(f"  bulk, chunks {mode[0]:>7}/{mode[1]:>7} ms {min(xs):7.3f}-{max(xs):7.3f} s  "
              f"{min(xs) / per:6.2f} us  ({min(stepped) / min(xs):5.1f}x)")
    print("  files of the two clusters equal: yes")


if __name__ == "__main__":
    main()
