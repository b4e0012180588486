"""Seed sweeps as Spark jobs: the same scenario code on ``local[2]`` or a real cluster's master.

A scenario is a function ``seed -> outcome``. Each seed runs in a Spark task, in a Python worker,
exactly as it would in this process (the simulation depends on nothing but the seed), so the
trace digest of every seed equals the single-process one. The outcome may be

* a facade (``Cluster``, ``Quorum``, ``Simulation``: anything with ``trace.digest()`` and
  ``now_ms``): verdict ``ok``;
* a :class:`kraft_testkit.tools.simulate.SeedResult`: its verdict, detail and digest;
* an exception: ``InvariantViolation`` gives verdict ``invariant``, ``NoProgress``
  ``liveness``, anything else ``error``, with the first violation's text.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SCHEMA = ("seed long, verdict string, first_violation string, digest string, "
          "virtual_ms long, wall_s double")


def run_one(scenario: Callable[[int], Any], seed: int) -> tuple:
    """One seed's row: ``(seed, verdict, first_violation, digest, virtual_ms, wall_s)``."""
    from ..sim import InvariantViolation, NoProgress

    started = time.perf_counter()
    verdict, violation, digest, virtual_ms = "ok", None, None, None
    try:
        out = scenario(seed)
        if hasattr(out, "ok") and hasattr(out, "digest"):  # a SeedResult
            verdict = "ok" if out.ok else (out.kind or "error")
            violation = None if out.ok else out.detail
            digest = out.digest
            virtual_ms = getattr(out, "virtual_ms", None)
        elif hasattr(out, "trace") and hasattr(out, "now_ms"):
            digest, virtual_ms = out.trace.digest(), out.now_ms
        else:
            verdict, violation = "error", f"scenario returned {type(out).__name__}, not a " \
                                          f"cluster, quorum or SeedResult"
    except InvariantViolation as e:
        verdict, violation, virtual_ms = "invariant", f"{e.invariant}: {e.detail}", e.now_ms
    except NoProgress as e:
        verdict, violation, virtual_ms = "liveness", str(e).splitlines()[0], \
            getattr(e, "now_ms", None)
    except Exception as e:  # noqa: BLE001 - a crash in a scenario is a finding of that seed
        verdict, violation = "error", f"{type(e).__name__}: {e}".splitlines()[0]
    return (seed, verdict, violation, digest, virtual_ms, time.perf_counter() - started)


def _ship_by_value(scenario: Callable) -> None:
    """Workers import a scenario's module by name; a test module (pytest imports those from
    their folder, which workers do not see) travels by value instead
    (``cloudpickle.register_pickle_by_value``).
    Modules of the standard library, installed packages and the kit go by reference."""
    import sysconfig

    from pyspark import cloudpickle

    while isinstance(scenario, partial):
        scenario = scenario.func
    name = getattr(scenario, "__module__", None) or ""
    module = sys.modules.get(name)
    origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
    if module is None or name == "__main__" or name.split(".")[0] in ("kraft_testkit",):
        return
    installed = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                    "platlib")}
    if origin and not any(origin.startswith(p) for p in installed):
        cloudpickle.register_pickle_by_value(module)


def sweep(scenario: Callable[[int], Any], seeds: Iterable[int] = range(100), *,
          master: str = "local[2]", spark: "SparkSession | None" = None,
          partitions: int | None = None) -> "DataFrame":
    """Run ``scenario`` for every seed as a Spark job (now, once); a DataFrame of ``seed,
    verdict, first_violation, digest, virtual_ms, wall_s`` (in seed order).

    ``spark``: a session to use (else a local session on ``master``); ``partitions``: tasks
    (default: the session's default parallelism, at least one seed each).
    """
    if not callable(scenario):
        raise ConfigError(f"sweep needs a scenario function seed -> cluster, got {scenario!r}")
    seeds = list(seeds)
    if not seeds or not all(type(s) is int for s in seeds):
        raise ConfigError(f"sweep needs a non-empty range or list of int seeds, got {seeds[:5]!r}")
    if spark is None:
        from .session import local_session

        spark = local_session(master)
    _ship_by_value(scenario)
    sc = spark.sparkContext
    slices = max(1, min(len(seeds), partitions or sc.defaultParallelism))

    def run_partition(part: Iterator[int]) -> Iterator[tuple]:
        for seed in part:
            yield run_one(scenario, seed)

    # Run once, here: a DataFrame over the RDD would rerun every scenario on each action
    # (and a sort would run them an extra time to sample its ranges).
    rows = sc.parallelize(sorted(seeds), slices).mapPartitions(run_partition).collect()
    return spark.createDataFrame(rows, SCHEMA)


def simulate_on_spark(seeds: Iterable[int], master: str, **options: Any) -> Iterator[Any]:
    """``kraft-testkit simulate --spark MASTER``: :func:`~kraft_testkit.tools.simulate.run_seed`
    for each seed as a Spark job; yields SeedResults as the plain runner does."""
    from ..tools.quorum_runs import SeedResult, run_seed

    df = sweep(partial(run_seed, **options), seeds, master=master)
    for row in df.toLocalIterator():
        ok = row.verdict == "ok"
        yield SeedResult(row.seed, ok, "" if ok else row.verdict, row.first_violation or "",
                         row.digest or "", wall_s=row.wall_s, virtual_ms=row.virtual_ms or 0)
