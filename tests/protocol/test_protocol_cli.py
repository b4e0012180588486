"""``kraft-testkit dump-log``: what a user sees for real Kafka logs, snapshots and broken files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _protocol_support import requires_golden, segment_bytes, segment_path
from kraft_testkit.protocol import frames, log
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import ControlRecord
from kraft_testkit.protocol.records import RecordBatch
from kraft_testkit.tools.cli import main

REPO = Path(__file__).resolve().parents[2]
DECODE = "--cluster-metadata-decoder"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def record_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("|")]


def batch_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("baseOffset: ")]


def assert_one_clean_error_line(err: str, path) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith(f"kraft-testkit dump-log: {path}: ")
    return lines[0]


# ------------------------------------------------------------------ golden logs


@requires_golden
@pytest.mark.parametrize("folder", "BC")
def test_dump_log_prints_every_record(capsys, folder):
    path = segment_path(folder)
    code, out, err = run(capsys, "dump-log", DECODE, path)
    assert (code, err) == (0, "")
    batches = list(log.iter_log(segment_bytes(folder)))
    recs = [r for b in batches for r in b.records]
    assert out.splitlines()[:2] == [f"Dumping {path}", "Log starting offset: 0"]
    assert len(batch_lines(out)) == len(batches)
    assert all("isvalid: true" in ln and "magic: 2" in ln for ln in batch_lines(out))
    lines = record_lines(out)
    assert len(lines) == len(recs) == {"B": 26, "C": 24}[folder]
    payload_lines = [ln for ln in lines if ' payload: {"type":' in ln]
    control_lines = [ln for ln in lines if " LeaderChange: {" in ln]
    assert len(payload_lines) + len(control_lines) == len(recs)
    assert len(control_lines) == sum(isinstance(r.payload, ControlRecord) for r in recs)
    for ln, r in zip(lines, recs):
        assert ln.startswith(f"| offset: {r.offset} CreateTime: {r.timestamp} ")
        if isinstance(r.payload, ControlRecord):
            assert json.loads(ln.split(" LeaderChange: ", 1)[1]) == {
                "version": 0, "leaderId": 1000, "voters": [{"voterId": 1000}],
                "grantingVoters": [{"voterId": 1000}]}
        else:
            printed = json.loads(ln.split(" payload: ", 1)[1])
            assert printed == r.payload.to_json()
            assert printed["type"] == frames.type_name(type(r.payload.message).__name__)
    assert '"type":"REGISTER_BROKER_RECORD","version":3' in out
    assert '{"name":"metadata.version","featureLevel":18}' in out


@requires_golden
def test_skip_record_metadata_drops_the_offset_part(capsys):
    code, out, _ = run(capsys, "dump-log", DECODE, "--skip-record-metadata", segment_path("B"))
    assert code == 0
    lines = record_lines(out)
    assert len(lines) == 26
    assert not any("offset:" in ln or "keySize" in ln for ln in lines)
    assert all(ln.startswith(("| payload: {", "| LeaderChange: {")) for ln in lines)
    assert lines[0].startswith("| LeaderChange: {") and lines[-1].startswith("| LeaderChange: {")


@requires_golden
def test_without_the_decoder_only_batches_print(capsys):
    code, out, _ = run(capsys, "dump-log", segment_path("C"))
    assert code == 0
    assert len(batch_lines(out)) == 21 and record_lines(out) == []


@requires_golden
def test_prerelease_records_need_the_flag(capsys):
    path = segment_path("A")
    code, out, err = run(capsys, "dump-log", DECODE, path)
    assert code != 0
    line = assert_one_clean_error_line(err, path)
    assert "offset 24" in line and "PartitionRecord(v1).Directories" in line
    # the batches before the failing one (it holds offsets 20..28) were printed in full
    failing = next(b for b in log.iter_log(segment_bytes("A"), decode=False)
                   if b.base_offset <= 24 <= b.last_offset)
    assert failing.base_offset == 20
    assert [int(ln.split()[2]) for ln in record_lines(out)] == list(range(20))
    code, out, err = run(capsys, "dump-log", DECODE, "--prerelease", path)
    assert (code, err) == (0, "")
    assert len(record_lines(out)) == 94
    assert out.count('"eligibleLeaderReplicas":[],"lastKnownELR":[]') == 6


# ------------------------------------------------------------------ snapshots


def _snapshot_bytes() -> bytes:
    header = frames.encode_control(M.SnapshotHeaderRecord(last_contained_log_timestamp=77), 0)
    footer = frames.encode_control(M.SnapshotFooterRecord(), 0)
    values = [frames.encode_metadata(M.FeatureLevelRecord(name="metadata.version",
                                                          feature_level=18), 0),
              frames.encode_metadata(M.TopicRecord(name="orders", topic_id=b"\x07" * 16), 0)]
    batches = [
        RecordBatch.build(0, [header[1]], keys=[header[0]], timestamp_ms=77, leader_epoch=2,
                          control=True),
        RecordBatch.build(1, values, timestamp_ms=77, leader_epoch=2),
        RecordBatch.build(3, [footer[1]], keys=[footer[0]], timestamp_ms=77, leader_epoch=2,
                          control=True),
    ]
    return log.write_log(batches)


def test_checkpoint_file(capsys, tmp_path):
    path = tmp_path / "00000000000000000025-0000000002.checkpoint"
    path.write_bytes(_snapshot_bytes())
    code, out, err = run(capsys, "dump-log", DECODE, path)
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == "Snapshot end offset: 25, epoch: 2"
    lines = record_lines(out)
    assert len(lines) == 4
    assert json.loads(lines[0].split(" SnapshotHeader: ", 1)[1]) == {
        "version": 0, "lastContainedLogTimestamp": 77}
    assert ' payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"orders",' in lines[2]
    assert json.loads(lines[3].split(" SnapshotFooter: ", 1)[1]) == {"version": 0}


# ------------------------------------------------------------------ broken input


def _corrupt_variants(tmp_path: Path) -> dict[str, Path]:
    good = _snapshot_bytes()
    flipped = bytearray(good)
    flipped[40] ^= 0x04  # inside the first batch's CRC-covered bytes
    cases = {
        "crc": bytes(flipped),
        "truncated": good[:-7],
        "garbage": bytes(range(7, 250, 3)) * 2,
    }
    paths = {}
    for name, data in cases.items():
        paths[name] = tmp_path / f"00000000000000000000-{name}.log"
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize("case", ["crc", "truncated", "garbage"])
def test_corrupt_file_gives_one_clear_line(capsys, tmp_path, case):
    path = _corrupt_variants(tmp_path)[case]
    code, out, err = run(capsys, "dump-log", DECODE, path)
    assert code != 0
    line = assert_one_clean_error_line(err, path)
    if case == "crc":
        assert "CRC mismatch" in line
    if case == "truncated":
        assert "truncated" in line


def test_missing_path(capsys, tmp_path):
    path = tmp_path / "nope.log"
    code, _, err = run(capsys, "dump-log", DECODE, path)
    assert code != 0
    assert "No such file or directory" in assert_one_clean_error_line(err, path)


def test_a_bad_path_does_not_stop_the_others(capsys, tmp_path):
    good = tmp_path / "00000000000000000025-0000000002.checkpoint"
    good.write_bytes(_snapshot_bytes())
    bad = _corrupt_variants(tmp_path)["crc"]
    code, out, err = run(capsys, "dump-log", DECODE, bad, good)
    assert code != 0
    assert_one_clean_error_line(err, bad)
    assert len(record_lines(out)) == 4


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["dump-log"])
    assert info.value.code == 2
    assert "PATH" in capsys.readouterr().err


@requires_golden
def test_python_dash_m_in_a_real_process(tmp_path):
    missing = tmp_path / "missing.log"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "kraft_testkit", "dump-log", DECODE, str(segment_path("B")),
         str(missing)], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert proc.returncode == 1
    assert len(record_lines(proc.stdout)) == 26
    assert proc.stdout.count(' payload: {"type":') == 24
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert str(missing) in proc.stderr
