"""The local session: settings, the Java check (including the Java-missing path), the fixture."""

from __future__ import annotations

import os
import signal
import stat
import sys

import pytest

from kraft_testkit.errors import ConfigError, KraftError
from kraft_testkit.spark.errors import SparkUnavailable
from kraft_testkit.spark.session import check_java, jvm_flags


def test_no_java_on_path_is_one_clear_sentence(tmp_path):
    with pytest.raises(SparkUnavailable) as info:
        check_java({"PATH": str(tmp_path)})
    message = str(info.value)
    assert isinstance(info.value, KraftError)
    assert "no java was found on PATH" in message and "openjdk-17-jre-headless" in message
    assert "\n" not in message


def test_java_home_without_java_is_named(tmp_path):
    with pytest.raises(SparkUnavailable, match="no java was found on JAVA_HOME"):
        check_java({"JAVA_HOME": str(tmp_path), "PATH": ""})


def test_old_java_is_refused_with_its_version(tmp_path):
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\necho \'openjdk version "11.0.22" 2024-01-16\' >&2\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(SparkUnavailable, match=r"is Java 11 .*install Java 17 or 21"):
        check_java({"PATH": str(tmp_path)})


def test_a_bad_cds_mode_is_named():
    with pytest.raises(SparkUnavailable, match="cds must be"):
        jvm_flags("/usr/bin/java", "always")


def test_fixture_skips_with_the_reason_when_java_is_missing(pytester, monkeypatch, tmp_path):
    pytester.makepyfile("""
        def test_needs_spark(kraft_spark):
            raise AssertionError("must not run without java")
    """)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*Spark needs Java 17 or 21 but no java was found on PATH*"])


def test_session_is_tuned_for_tests(spark):
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert "-XX:TieredStopAtLevel=1" in conf.get("spark.driver.extraJavaOptions")
    assert conf.get("spark.python.authenticate.socketTimeout") == "120s"  # loaded machines
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    # the workers run this interpreter (else pyarrow and the kit would be missing there)
    exe = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable)
    assert exe.collect() == [sys.executable]


def test_factory_gives_a_session_with_its_own_sql_conf(spark, kraft_spark_factory, golden):
    own = kraft_spark_factory(**{"spark.sql.shuffle.partitions": 3})
    assert own.conf.get("spark.sql.shuffle.partitions") == "3"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    df = own.read.format("kraft-metadata").load(str(golden / "C_mv18_3brokers"))
    assert df.count() == 24  # the source is registered in the child session too
    with pytest.raises(ConfigError, match="spark.driver.memory"):
        kraft_spark_factory(**{"spark.driver.memory": "2g"})


def test_importing_the_plugin_and_the_package_loads_no_pyspark():
    import subprocess

    code = ("import sys, pytest_kraft.plugin, kraft_testkit.spark; "
            "from kraft_testkit.spark import errors; "
            "assert not any(m.startswith(('pyspark', 'py4j')) for m in sys.modules), 'loaded'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_second_master_in_one_process_is_a_config_error(spark):
    from kraft_testkit.spark import local_session

    assert local_session() is not None  # the same master: the running session
    with pytest.raises(ConfigError, match="already running"):
        local_session("local[3]")


def test_the_fixture_leaves_ctrl_c_to_the_test_runner(spark):
    """PySpark's SparkContext installs its own SIGINT handler on the main thread (it cancels the
    jobs; once the context is stopped it fails inside the handler); the fixture puts the
    runner's back, so a KeyboardInterrupt is pytest's (or xdist's) to handle."""
    handler = signal.getsignal(signal.SIGINT)
    assert "SparkContext" not in getattr(handler, "__qualname__", ""), handler
    assert spark.range(3).count() == 3  # the session works without pyspark's handler
