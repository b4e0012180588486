"""Heavier Spark cases, run on request (``-m slow``) and by the benchmarks."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import pytest

from kraft_testkit.spark import sweep
from kraft_testkit.tools.simulate import run_seed

pytestmark = pytest.mark.slow


def test_sweep_of_random_fault_schedules_matches_the_plain_runner(spark):
    scenario = partial(run_seed, voters=3, minutes=1.0)
    rows = sweep(scenario, range(40), spark=spark).collect()
    for r in rows:
        plain = scenario(r.seed)
        assert (r.digest, r.verdict == "ok", r.virtual_ms) == \
            (plain.digest, plain.ok, plain.virtual_ms)


def test_large_segment_counts_exactly_in_several_partitions(spark, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from spark_data import write_segment

    from kraft_testkit.protocol.log import read_log

    path = write_segment(str(tmp_path), 200_000)
    expected = sum(len(b.batch.records) for b in read_log(path, decode=False))
    df = spark.read.format("kraft-metadata").option("numPartitions", 4).load(str(tmp_path))
    assert df.rdd.getNumPartitions() > 1
    assert df.count() == expected
    assert df.selectExpr("count(DISTINCT offset)").first()[0] == expected


def test_a_run_builds_the_archive_and_the_next_run_maps_it(pytester, monkeypatch, tmp_path):
    """The first pytest run that uses ``kraft_spark`` leaves a whole archive (and nothing else)
    in the cache when it returns; the next run's JVM maps it."""
    cache = tmp_path / "cds"
    monkeypatch.setenv("KRAFT_SPARK_CDS_DIR", str(cache))
    pytester.makepyfile("""
        def test_uses_spark(kraft_spark):
            opts = kraft_spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
            print("OPTS", opts)
            assert kraft_spark.range(10).count() == 10
    """)
    first = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*OPTS*-XX:ArchiveClassesAtExit=*.part*"])
    files = list(cache.iterdir())
    assert [p.suffix for p in files] == [".jsa"] and files[0].stat().st_size > 10_000_000
    second = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines([f"*OPTS*-XX:SharedArchiveFile={files[0]} -Xshare:auto*"])
