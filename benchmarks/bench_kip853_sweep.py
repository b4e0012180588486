"""KIP-853 voter changes under faults, over many seeds: violations and seeds per cpu-second.

Each seed: a kraft.version 1 quorum of 1 or 3 voters, then a seeded schedule of steps, each one of
add a controller, add an observer as a voter, remove a voter (maybe the leader), replace a
disk (a voter's only where a majority survives, then removed and added back with its new
directory id), kill / restart a node, partition one node away, heal, append records; the Raft invariants
run after every event (single leader per epoch, committed prefix and majority over the voter set
in effect, durability, ...). Voter changes that time out under faults are expected (Kafka's
admin client would retry too); the run then heals everything and requires convergence: one
leader, every replica with the same log, every committed record held by all.

    python benchmarks/bench_kip853_sweep.py --seeds 0:200         # a summary table
    python benchmarks/bench_kip853_sweep.py --quick               # 20 seeds
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kraft_testkit.errors import ConfigError, KraftError  # noqa: E402
from kraft_testkit.protocol.error_codes import KafkaApiError  # noqa: E402
from kraft_testkit.quorum import Quorum  # noqa: E402
from kraft_testkit.raft.errors import NotLeader  # noqa: E402
from kraft_testkit.sim import InvariantViolation, NoProgress  # noqa: E402

STEPS = 30


CHANGES = {"committed": 0}  # voter changes answered NONE, over the whole sweep


def run_seed(seed: int) -> tuple[str, str]:
    """('ok' | 'violation' | 'stuck', detail) for one seed."""
    rng = random.Random(seed)
    q = Quorum(voters=rng.choice([1, 3]), kraft_version=1, seed=seed)
    try:
        q.run_until(lambda q: q.active_controller is not None, timeout_ms=30_000)
        replaced: dict[int, object] = {}  # voter -> the directory id its lost disk had
        for _ in range(STEPS):
            step = rng.choice(["add_controller", "add_voter", "add_voter", "remove_voter",
                               "replace_disk", "kill", "restart", "partition", "heal",
                               "append", "append"])
            voters = q.voter_set()
            before = q.voter_set()
            try:
                if replaced and voters is not None and step in (
                        "add_controller", "add_voter", "remove_voter", "replace_disk"):
                    node, old = next(iter(replaced.items()))  # finish a disk replacement first
                    if voters.keys.get(node) == old:
                        q.remove_voter(node, old, timeout_ms=5_000)
                    del replaced[node]
                    q.add_voter(node, timeout_ms=5_000)
                elif step == "add_controller" and len(q.nodes) < 7:
                    q.add_controller()
                elif step == "add_voter" and voters is not None:
                    observers = [n for n in q.nodes if n not in voters and q.replica(n)]
                    if observers:
                        q.add_voter(rng.choice(observers), timeout_ms=5_000)
                elif step == "remove_voter" and voters is not None and len(voters) > 1:
                    q.remove_voter(rng.choice(sorted(voters)), timeout_ms=5_000)
                elif step == "replace_disk":
                    # a voter's disk only where a majority survives it, then KIP-853's fix:
                    # remove the old (id, directory id), add the new one
                    node = rng.choice(q.nodes)
                    # any replica's view, the ones down included (their last state)
                    known = {n for r in q.invariants._machines.values() for n in r.voters}
                    old = voters.keys.get(node) if voters is not None else None
                    if voters is not None and node not in known | set(voters) or \
                            old is not None and len(voters) >= 3 and not replaced:
                        q.faults.replace_disk(node)
                        if old is not None:
                            replaced[node] = old
                            q.run_for(2_000)
                            q.remove_voter(node, old, timeout_ms=10_000)
                            del replaced[node]
                            q.add_voter(node, timeout_ms=10_000)
                elif step == "kill":
                    node = rng.choice(q.nodes)
                    if q.sim.process(node).up:
                        q.faults.kill(node)
                elif step == "restart":
                    down = [n for n in q.nodes if not q.sim.process(n).up]
                    node = rng.choice(down or q.nodes)  # bring back a killed node first
                    if q.sim.process(node).state.value in ("running", "killed", "stopped"):
                        q.faults.restart(node)
                elif step == "partition":
                    q.network.isolate(rng.choice(q.nodes))
                elif step == "heal":
                    q.network.heal()
                elif step == "append":
                    q.append([f"s{seed}".encode()], timeout_ms=5_000)
            except (KafkaApiError, NotLeader, NoProgress, ConfigError):
                pass  # under faults a change or an append may time out; the invariants judge
            after = q.voter_set()
            if before is not None and after is not None and after != before:
                CHANGES["committed"] += 1
            q.run_for(rng.randrange(200, 3_000))
        # a voter whose only copy was replaced cannot come back: heal what can be healed
        q.converge(timeout_ms=120_000)
        return "ok", ""
    except InvariantViolation as e:
        return "violation", str(e).splitlines()[0]
    except NoProgress as e:
        return "stuck", str(e).splitlines()[0]
    except KraftError as e:
        return "error", f"{type(e).__name__}: {str(e).splitlines()[0]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0:100", help="start:stop")
    ap.add_argument("--quick", action="store_true", help="20 seeds")
    args = ap.parse_args(argv)
    start, stop = (0, 20) if args.quick else map(int, args.seeds.split(":"))
    outcomes: dict[str, list[int]] = {}
    cpu0 = time.process_time()
    for seed in range(start, stop):
        kind, detail = run_seed(seed)
        outcomes.setdefault(kind, []).append(seed)
        if kind != "ok":
            print(f"seed {seed}: {kind}: {detail}", flush=True)
    cpu = time.process_time() - cpu0
    n = stop - start
    print(f"{n} seeds, {cpu:.1f} cpu-s, {n / cpu:.2f} seeds per cpu-second, "
          f"{CHANGES['committed']} steps that changed the leader's voter set")
    for kind, seeds in sorted(outcomes.items()):
        print(f"  {kind}: {len(seeds)}" + ("" if kind == "ok" else f" (seeds {seeds[:20]})"))
    return 0 if set(outcomes) <= {"ok"} else 1


if __name__ == "__main__":
    sys.exit(main())
