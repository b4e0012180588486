"""The class-data archive: built without being asked, and never mapped half-written.

The JVM is replaced by a fake whose exit writes the ``.part`` file, so these run without Java;
the real path (a JVM writing a real archive, a second process starting on it) is
test_slow.py::test_a_run_builds_the_archive_and_the_next_run_maps_it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kraft_testkit.spark import cds
from kraft_testkit.spark.errors import SparkUnavailable


class FakeJvm:
    """A JVM that writes ``payload`` to the planned ``.part`` file when it exits."""

    def __init__(self, build: cds.Build, payload: bytes = b"CDS", code: int = 0) -> None:
        self.build, self.payload, self.code = build, payload, code
        self.seen_archive_while_writing: bool | None = None

    def wait(self, timeout: float | None = None) -> int:
        self.build.part.write_bytes(self.payload)
        self.seen_archive_while_writing = cds.is_whole(self.build.archive)
        return self.code


@pytest.fixture
def archive(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(cds, "_pending", None)
    yield tmp_path / "cache" / "spark-x.jsa"
    cds.cancel()


def _jvm(monkeypatch, **kw) -> list[FakeJvm]:
    made: list[FakeJvm] = []

    def stop() -> FakeJvm:
        made.append(FakeJvm(cds._pending, **kw))
        return made[-1]

    monkeypatch.setattr(cds, "_stop_jvm", stop)
    return made


def test_without_an_archive_auto_plans_a_build_to_a_private_part_file(archive, monkeypatch):
    flags = cds.flags("auto", archive)
    part = archive.with_name(f"{archive.name}.{os.getpid()}.part")
    assert f"-XX:ArchiveClassesAtExit={part}" in flags
    assert cds.SHORT_RUN_JVM_FLAGS in flags
    assert "SharedArchiveFile" not in flags
    assert archive.with_name(archive.name + ".lock").is_file()


def test_the_archive_appears_only_once_the_jvm_has_exited(archive, monkeypatch):
    cds.flags("auto", archive)
    jvms = _jvm(monkeypatch, payload=b"x" * 1000)
    assert not archive.exists()
    assert cds.finish() == archive
    assert jvms[0].seen_archive_while_writing is False  # not in place while being written
    assert archive.read_bytes() == b"x" * 1000
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]  # no part, no lock
    flags = cds.flags("auto", archive)  # the next session maps it
    assert f"-XX:SharedArchiveFile={archive} -Xshare:auto" in flags
    assert "ArchiveClassesAtExit" not in flags


@pytest.mark.parametrize("payload,code", [(b"", 0), (b"half", 1)])
def test_a_failed_or_empty_dump_leaves_no_archive_and_no_litter(archive, monkeypatch, payload,
                                                                code):
    cds.flags("auto", archive)
    _jvm(monkeypatch, payload=payload, code=code)
    assert cds.finish() is None
    assert list(archive.parent.iterdir()) == []
    assert "ArchiveClassesAtExit" in cds.flags("auto", archive)  # a later session tries again


def test_only_one_process_builds_at_a_time(archive, monkeypatch):
    archive.parent.mkdir(parents=True)
    lock = archive.with_name(archive.name + ".lock")
    lock.write_text("12345")  # another live builder
    assert cds.flags("auto", archive) == cds.SHORT_RUN_JVM_FLAGS
    litter = archive.with_name(archive.name + ".12345.part")
    litter.write_bytes(b"half")  # what it had written when it died
    old = time.time() - cds.STALE_LOCK_S - 60  # that builder died long ago
    os.utime(lock, (old, old))
    assert "ArchiveClassesAtExit" in cds.flags("auto", archive)
    assert lock.read_text() == str(os.getpid())
    assert not litter.exists()


def test_a_session_that_failed_to_start_releases_the_lock(archive):
    cds.flags("build", archive)
    cds.cancel()
    assert not archive.with_name(archive.name + ".lock").exists()
    assert cds.finish() is None  # nothing pending


def test_an_unwritable_cache_means_no_archive_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(cds, "_pending", None)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cds.flags("auto", blocker / "sub" / "a.jsa") == cds.SHORT_RUN_JVM_FLAGS


def test_off_never_touches_the_cache_and_a_bad_mode_is_named(archive):
    assert cds.flags("off", archive) == cds.SHORT_RUN_JVM_FLAGS
    assert not archive.parent.exists()
    with pytest.raises(SparkUnavailable, match="cds must be 'auto', 'build' or 'off'"):
        cds.flags("sometimes", archive)
