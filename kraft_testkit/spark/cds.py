"""The AppCDS class-data archive: built without being asked, used only when whole.

Why: a cold Spark session spends most of its start loading and verifying about 20,000 classes;
a dynamic AppCDS archive (``-XX:ArchiveClassesAtExit``, JDK 13+) maps them instead and roughly
halves the start (figures in benchmarks/README.md). The JVM writes the archive while it exits,
which is after PySpark's ``spark.stop()`` and even after the Python process that started it
has returned, so two rules keep a session from ever mapping a half-written file:

* the JVM writes to a private ``<archive>.<pid>.part`` file, and only this process, after it has
  seen the JVM exit with status 0, renames it into place (``os.replace``: atomic on POSIX);
* one process at a time builds (an ``O_EXCL`` lock file beside the archive; a lock older than
  :data:`STALE_LOCK_S` is from a process that died and is taken over).

``cds="auto"`` (the default) uses the archive when it is there and otherwise builds it in the
first session of a process that gets the lock: that session starts as fast as it would have
anyway, and the dump costs some seconds when the session ends (:func:`finish`). A later run, in
any process, starts on the archive.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import SparkUnavailable

#: JVM flags for short runs: C1-only JIT and the serial collector start faster and use less memory.
SHORT_RUN_JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
#: Where the AppCDS archive lives unless ``KRAFT_SPARK_CDS_DIR`` says otherwise.
DEFAULT_CDS_DIR = Path.home() / ".cache" / "kraft_testkit" / "spark-cds"
#: A build lock older than this is from a process that died without removing it.
STALE_LOCK_S = 15 * 60
#: How long :func:`finish` waits for the JVM to write the archive and exit.
DUMP_TIMEOUT_S = 300.0
MODES = ("auto", "build", "off")


def archive_path(java: str, java_line: str, cds_dir: Path | None = None) -> Path:
    """The archive for this JDK build, this pyspark and this interpreter (an archive is only valid
    for the exact JDK build and class path it was made with)."""
    import pyspark

    key = "|".join([os.path.realpath(java), java_line, pyspark.__version__, sys.prefix])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    base = cds_dir or Path(os.environ.get("KRAFT_SPARK_CDS_DIR") or DEFAULT_CDS_DIR)
    return base / f"spark-{pyspark.__version__}-{digest}.jsa"


def is_whole(archive: Path) -> bool:
    """An archive is used only when it is there and not empty; it can only appear by the atomic
    rename in :func:`finish`, so a file there is a file the JVM finished writing."""
    try:
        return archive.stat().st_size > 0
    except OSError:
        return False


@dataclass
class Build:
    """An archive this process is writing: the JVM dumps to ``part``; ``finish`` renames it."""

    archive: Path
    part: Path
    lock: Path
    done: bool = False

    @property
    def flag(self) -> str:
        return f"-XX:ArchiveClassesAtExit={self.part} -Xlog:disable"


_pending: Build | None = None


def _take_lock(lock: Path) -> bool:
    try:
        age = time.time() - lock.stat().st_mtime
        if age > STALE_LOCK_S:
            lock.unlink(missing_ok=True)
    except OSError:
        pass
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except OSError:  # another process builds (or the directory is not writable)
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def start_build(archive: Path) -> Build | None:
    """Plan a build of ``archive`` by this process's JVM, or None when another process holds the
    lock or the cache directory cannot be written (the session then starts without one)."""
    global _pending
    if _pending is not None and not _pending.done:
        return None  # one JVM per process: its archive is already planned
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    lock = archive.with_name(archive.name + ".lock")
    if not _take_lock(lock):
        return None
    for litter in archive.parent.glob(f"{archive.name}.*.part"):  # from builders that died
        litter.unlink(missing_ok=True)
    build = Build(archive, archive.with_name(f"{archive.name}.{os.getpid()}.part"), lock)
    _pending = build
    atexit.register(finish)
    return build


def flags(mode: str, archive: Path) -> str:
    """The driver JVM flags for ``mode``: the short-run flags, then map the archive when it is
    whole, else (``auto``/``build``) plan a build, else nothing more."""
    if mode not in MODES:
        raise SparkUnavailable(f"cds must be 'auto', 'build' or 'off', got {mode!r}")
    if mode == "off":
        return SHORT_RUN_JVM_FLAGS
    if is_whole(archive):
        return f"{SHORT_RUN_JVM_FLAGS} -XX:SharedArchiveFile={archive} -Xshare:auto -Xlog:cds=off"
    build = start_build(archive)
    return SHORT_RUN_JVM_FLAGS if build is None else f"{SHORT_RUN_JVM_FLAGS} {build.flag}"


def cancel() -> None:
    """The planned build did not start (the session failed to start): drop the lock."""
    global _pending
    if _pending is not None and not _pending.done:
        _pending.done = True
        _pending.lock.unlink(missing_ok=True)
        _pending.part.unlink(missing_ok=True)
    _pending = None


def finish(timeout_s: float = DUMP_TIMEOUT_S) -> Path | None:
    """End this process's JVM so it writes the archive, wait for it, and move the archive into
    place. Returns the archive when one was written; None when nothing was being built.

    Called when the pytest fixture's session ends and, failing that, at interpreter exit. It stops
    the JVM for good: a later ``local_session()`` in this process starts a new one."""
    global _pending
    build = _pending
    if build is None or build.done:
        return None
    build.done = True
    try:
        proc = _stop_jvm()
        if proc is None:
            return None
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            print(f"kraft_testkit: the JVM did not exit within {timeout_s:.0f} s; no Spark "
                  f"class-data archive this time", file=sys.stderr)
            return None
        if code == 0 and is_whole(build.part):
            os.replace(build.part, build.archive)
            return build.archive
        return None
    finally:
        build.part.unlink(missing_ok=True)
        build.lock.unlink(missing_ok=True)
        _pending = None


def _stop_jvm() -> subprocess.Popen | None:
    """Close the gateway's pipe so the JVM exits (PySpark's gateway server exits on EOF of its
    stdin), and forget the gateway so a later session launches a new JVM."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return None
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - a gateway already gone is what we want
        pass
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    return proc
