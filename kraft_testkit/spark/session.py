"""A local SparkSession tuned for tests, and the Java check that runs before any JVM starts.

Why these settings (measured in shared/notes/pyspark.md): a cold default session costs about 8 s;
UI off, two shuffle partitions and a C1-only JIT with SerialGC bring it to about 6 s, and an
AppCDS class-data archive (built once into a cache directory, then reused) to about 3 s. Spark's
Python workers run ``python3`` from PATH unless told otherwise, so ``PYSPARK_PYTHON`` is set to
the running interpreter before the JVM starts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from . import cds as _cds
from .cds import DEFAULT_CDS_DIR, SHORT_RUN_JVM_FLAGS  # noqa: F401 - part of this module's face
from .errors import SparkUnavailable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SUPPORTED_JAVA = (17, 21)
INSTALL_HINT = ("install Java 17 or 21 (Debian/Ubuntu: apt-get install -y "
                "openjdk-17-jre-headless) or point JAVA_HOME at one")

TEST_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "512m",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.catalogImplementation": "in-memory",
    "spark.python.worker.reuse": "true",
    # how long the JVM waits for this process to connect to a socket it opened for it (a
    # collect's results, a broadcast): 15 s by default, which a loaded machine can miss
    "spark.python.authenticate.socketTimeout": "120s",
}

_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


def find_java(env: Mapping[str, str] | None = None) -> str | None:
    """The java that Spark's launcher will use: ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java", path=env.get("PATH", ""))


def java_version(java: str) -> tuple[int, str]:
    """``(major, the version line)`` that ``java -version`` prints."""
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    text = (out.stderr or "") + (out.stdout or "")
    m = _JAVA_VERSION.search(text)
    if m is None:
        raise SparkUnavailable(f"{java} -version printed no version ({text.strip()[:80]!r}): "
                               f"{INSTALL_HINT}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_392"
        major = int(m.group(2))
    return major, text.strip().splitlines()[0]


def check_java(env: Mapping[str, str] | None = None) -> str:
    """The java to use; :class:`SparkUnavailable` with one clear sentence when there is none or
    it is too old (Spark 4 needs Java 17 or 21)."""
    java = find_java(env)
    if java is None:
        where = "JAVA_HOME" if (env if env is not None else os.environ).get("JAVA_HOME") \
            else "PATH"
        raise SparkUnavailable(f"Spark needs Java 17 or 21 but no java was found on {where}: "
                               f"{INSTALL_HINT}")
    major, line = java_version(java)
    if major < SUPPORTED_JAVA[0]:
        raise SparkUnavailable(f"Spark needs Java 17 or 21 but {java} is Java {major} ({line}): "
                               f"{INSTALL_HINT}")
    return java


def check_pyspark() -> None:
    """:class:`SparkUnavailable` naming the extra to install when pyspark is missing."""
    try:
        import pyspark  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:
        raise SparkUnavailable(f"Spark support needs {e.name}: pip install "
                               f"'kraft-testkit[spark]'") from None


def cds_archive_path(java: str, cds_dir: Path | None = None) -> Path:
    """The AppCDS archive for this JDK, this pyspark and this interpreter (an archive is only
    valid for the exact JDK build and class path it was made with)."""
    return _cds.archive_path(java, java_version(java)[1], cds_dir)


def jvm_flags(java: str, cds: str = "auto") -> str:
    """Driver JVM flags: short-run flags, plus the AppCDS archive when ``cds`` allows it.

    ``cds``: ``"auto"`` maps the archive when it is whole and otherwise has this JVM build it
    (written when the session ends, renamed into place only once whole: spark/cds.py);
    ``"build"`` is the same; ``"off"`` never touches it. A stale or foreign archive is ignored
    by the JVM, which then starts normally.
    """
    if cds not in _cds.MODES:
        raise SparkUnavailable(f"cds must be 'auto', 'build' or 'off', got {cds!r}")
    if cds == "off":
        return SHORT_RUN_JVM_FLAGS
    return _cds.flags(cds, cds_archive_path(java))


def prepare_environment(java: str) -> None:
    """What must be in the environment before the JVM starts: the Python for workers, a quiet
    loopback host, and JAVA_HOME matching the java that was checked."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if not os.environ.get("JAVA_HOME"):
        os.environ["JAVA_HOME"] = str(Path(os.path.realpath(java)).parent.parent)


def local_session(master: str = "local[2]", *, app_name: str = "kraft-testkit",
                  cds: str | None = None, **conf: object) -> "SparkSession":
    """A local SparkSession for tests with the ``kraft-metadata`` source registered.

    ``conf`` are Spark settings by name (``local_session(**{"spark.sql.shuffle.partitions":
    "4"})``). JVM-level settings take effect only for the first session of a process; a later
    call returns the running session with the SQL settings applied. ``cds``: see
    :func:`jvm_flags` (default from ``KRAFT_SPARK_CDS``, else ``"auto"``).
    """
    check_pyspark()
    java = check_java()
    prepare_environment(java)
    from pyspark.sql import SparkSession

    from pyspark import SparkContext

    running = SparkContext._active_spark_context  # one per process (no public accessor)
    if running is not None and running.master != master:
        raise ConfigError(f"a Spark session on {running.master} is already "
                          f"running in this process; one process has one SparkContext: pass "
                          f"that session on, or stop it before asking for {master}")
    settings = dict(TEST_CONF)
    cds = cds or os.environ.get("KRAFT_SPARK_CDS", "auto")
    if SparkContext._gateway is None:  # JVM flags count only when this call starts the JVM
        settings["spark.driver.extraJavaOptions"] = jvm_flags(java, cds)
    settings.update({k: str(v).lower() if isinstance(v, bool) else str(v)
                     for k, v in conf.items()})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except BaseException:
        _cds.cancel()
        raise
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def register(spark: "SparkSession") -> None:
    """Register the ``kraft-metadata`` data source with ``spark`` (registration is per session)."""
    from pyspark.errors import AnalysisException

    from .source import KraftMetadataDataSource

    try:
        spark.dataSource.register(KraftMetadataDataSource)
    except AnalysisException as e:  # a session that shares a registry with one registered
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise


def finish_archive() -> Path | None:
    """Stop this process's JVM and put the class-data archive it wrote in place (when this
    process was building one; else None). The pytest fixture calls it when its session ends."""
    return _cds.finish()


def _build_archive() -> int:
    """``python -m kraft_testkit.spark.session --build-cds``: start a session, run a query and a
    Python worker, stop the JVM and return once the AppCDS archive is whole and in place."""
    java = check_java()
    archive = cds_archive_path(java)
    if _cds.is_whole(archive):
        print(f"AppCDS archive already there: {archive}")
        return 0
    spark = local_session(cds="build")
    import tempfile

    from ..cluster import Cluster

    with tempfile.TemporaryDirectory() as tmp:  # load the classes a test run loads
        Cluster(controllers=1, brokers=1, seed=0).dump_log(f"{tmp}/00000000000000000000.log")
        spark.range(1000).selectExpr("id % 3 AS k").groupBy("k").count().collect()
        spark.read.format("kraft-metadata").load(tmp).groupBy("record_type").count().collect()
    written = finish_archive()
    if written is None:
        print(f"no AppCDS archive written (another process may be building it): {archive}",
              file=sys.stderr)
        return 1
    print(f"AppCDS archive written: {written} ({written.stat().st_size / 1e6:.0f} MB)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--build-cds"]:
        sys.exit(_build_archive())
    print("usage: python -m kraft_testkit.spark.session --build-cds", file=sys.stderr)
    sys.exit(2)
