"""The damage table over many seeds: one node's folder damaged, the cluster reopened.

For each seed a 3 + 3 cluster and a combined 3-node cluster are built (tiny segments, six RF-3
topics), closed, and for every kind of damage x every role (active controller, follower
controller, broker, combined node) a copy is damaged and reopened with another seed. Counted: the
node failed alone with a typed error naming the expected file; it started and caught up where
Kafka starts on such a folder; anything else (another node failed, the reopen raised, a committed
topic missing or changed). Figures in docs/storage.md and benchmarks/README.md.

    python benchmarks/bench_damage_table.py --seeds 0:5
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "tests" / "storage", ROOT):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from damage_table import (  # noqa: E402
    DAMAGES,
    ROLES,
    assignments,
    build,
    damaged_copy,
    folder_of,
    reopen,
)

from benchmarks.sweeps import bounds, parser  # noqa: E402
from kraft_testkit.errors import StorageError  # noqa: E402


def trial(pristine, work: Path, role: str, damage, seed: int) -> str:
    data_dir, victim = damaged_copy(pristine, work, role, damage)
    try:
        c = reopen(data_dir, pristine, seed=seed + 1000)
    except Exception as e:  # noqa: BLE001 - counted, not hidden
        return f"reopen raised {type(e).__name__}"
    try:
        if damage.fails is None:
            outcome = "started" if not c.failed_nodes else "other node failed"
        else:
            failure = c.failed_nodes.get(victim)
            ok = (set(c.failed_nodes) == {victim} and isinstance(failure, StorageError)
                  and failure.file.startswith(str(folder_of(data_dir, victim) / damage.fails)))
            outcome = "failed alone, typed" if ok else "other outcome"
        c.create_topic("after", partitions=1, replication_factor=2)
        after = assignments(c)
        if any(after.get(name) != value for name, value in pristine.topics.items()):
            outcome = "committed topic lost"
        return outcome
    except Exception as e:  # noqa: BLE001
        return f"serve raised {type(e).__name__}"
    finally:
        c.close()


def main() -> None:
    args = parser("0:5").parse_args()
    lo, hi = bounds(args.seeds)
    outcomes: Counter[str] = Counter()
    topics = 0
    start = time.process_time()
    for seed in range(lo, hi):
        with tempfile.TemporaryDirectory() as tmp:
            shapes = {combined: build(Path(tmp) / f"pristine-{combined}", combined, seed=seed)
                      for combined in (False, True)}
            for damage in DAMAGES:
                for role in ROLES:
                    pristine = shapes[role == "combined node"]
                    work = Path(tmp) / "trial"
                    outcomes[trial(pristine, work, role, damage, seed)] += 1
                    topics += len(pristine.topics)
                    shutil.rmtree(work, ignore_errors=True)
    trials = sum(outcomes.values())
    cpu = time.process_time() - start
    print(f"seeds {lo}:{hi}: {trials} trials ({len(DAMAGES)} damages x {len(ROLES)} roles), "
          f"{topics} committed topics checked after reopen")
    for outcome, n in sorted(outcomes.items()):
        print(f"  {outcome}: {n}")
    print(f"  {cpu:.0f} CPU s ({trials / cpu:.2f} trials per CPU second)")


if __name__ == "__main__":
    main()
