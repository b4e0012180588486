"""``dump-log`` on several paths: each bad one is named with where it broke, the rest still dump."""

import io

from _golden import GOLDEN

from kraft_testkit.tools.cli import main
from kraft_testkit.tools.dump_log import dump_paths

SEGMENT = GOLDEN / "C_mv18_3brokers" / "__cluster_metadata-0" / "00000000000000000000.log"


def test_bad_paths_are_named_and_the_others_still_dump(tmp_path):
    data = SEGMENT.read_bytes()
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    crc = tmp_path / "crc.log"
    bad = bytearray(data)
    bad[300] ^= 0xFF
    crc.write_bytes(bytes(bad))
    torn = tmp_path / "torn.log"
    torn.write_bytes(data[:-10])
    missing = tmp_path / "missing.log"
    out, err = io.StringIO(), io.StringIO()
    status = dump_paths([str(p) for p in (empty, missing, crc, torn, SEGMENT)], out, err,
                        decode=True)
    assert status == 1
    lines = err.getvalue().splitlines()
    assert lines == [
        f"kraft-testkit dump-log: {missing}: No such file or directory",
        (f"kraft-testkit dump-log: {crc}: record batch CRC mismatch: stored 3658884754, computed "
         f"3089708970 (field crc, byte offset 253) in the batch at byte position 236, after log "
         f"offset 4"),
        (f"kraft-testkit dump-log: {torn}: record batch of 72 bytes is truncated (62 bytes left) "
         f"(field batchLength, byte offset 2012) in the batch at byte position 2004, after log "
         f"offset 22"),
    ]
    text = out.getvalue()
    assert text.count(f"Dumping {SEGMENT}") == 1
    assert text.split(f"Dumping {SEGMENT}")[1].count("baseOffset:") == 21  # the good one, whole
    assert "baseOffset" not in text.split(f"Dumping {empty}")[1].split("Dumping")[0]
    # the damaged files printed their good batches before the bad one
    assert text.split(f"Dumping {crc}")[1].split("Dumping")[0].count("baseOffset:") == 2


def test_an_empty_segment_prints_its_header_and_no_batch_as_kafka(tmp_path, capsys):
    """Kafka's kafka-dump-log.sh on a freshly rolled segment: the two header lines, exit 0."""
    segment = tmp_path / "00000000000000000042.log"
    segment.write_bytes(b"")
    snapshot = tmp_path / "00000000000000000042-0000000003.checkpoint"
    snapshot.write_bytes(b"")
    assert main(["dump-log", "--cluster-metadata-decoder", str(segment), str(snapshot)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"Dumping {segment}", "Log starting offset: 42",
        f"Dumping {snapshot}", "Snapshot end offset: 42, epoch: 3"]
    assert captured.err == ""
    torn = tmp_path / "00000000000000000043.log"
    torn.write_bytes(SEGMENT.read_bytes()[:5])  # a few bytes are still damage, not emptiness
    assert main(["dump-log", str(torn)]) == 1
    assert "record batch header needs 61 bytes, 5 left" in capsys.readouterr().err


def test_cli_exit_code_and_a_directory(tmp_path, capsys):
    assert main(["dump-log", str(SEGMENT), str(SEGMENT)]) == 0
    assert capsys.readouterr().out.count("Dumping") == 2
    assert main(["dump-log", str(tmp_path), str(SEGMENT)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"kraft-testkit dump-log: {tmp_path}: Is a directory\n"
    assert captured.out.count("baseOffset:") == 21


def _index_files(tmp_path):
    """A copy of segment C with an offset index and a time index entry for every third batch."""
    import struct

    from kraft_testkit.protocol.log import iter_log

    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(SEGMENT.read_bytes())
    batches = list(iter_log(seg.read_bytes(), decode=False))[::3]
    index = b"".join(struct.pack(">ii", b.batch.last_offset, b.position) for b in batches)
    times = b"".join(struct.pack(">qi", b.batch.max_timestamp, b.batch.last_offset)
                     for b in batches)
    (tmp_path / "00000000000000000000.index").write_bytes(index + bytes(80))  # preallocated
    (tmp_path / "00000000000000000000.timeindex").write_bytes(times)
    return batches


def test_index_and_time_index_dump_like_kafka(tmp_path, capsys):
    batches = _index_files(tmp_path)
    assert main(["dump-log", str(tmp_path / "00000000000000000000.index"),
                 str(tmp_path / "00000000000000000000.timeindex")]) == 0
    out = capsys.readouterr().out.splitlines()
    offsets = [ln for ln in out if ln.startswith("offset: ")]
    assert offsets == [f"offset: {b.batch.last_offset} position: {b.position}" for b in batches]
    times = [ln for ln in out if ln.startswith("timestamp: ")]
    assert times[0] == f"timestamp: {batches[0].batch.max_timestamp} offset: " \
                       f"{batches[0].batch.last_offset}"
    assert len(times) == len(batches)


def test_truncated_or_mismatched_index_is_named(tmp_path, capsys):
    import struct

    _index_files(tmp_path)
    index = tmp_path / "00000000000000000000.index"
    whole = index.read_bytes()
    index.write_bytes(whole[:21])
    assert main(["dump-log", str(index), str(SEGMENT)]) == 1
    captured = capsys.readouterr()
    assert captured.err == (f"kraft-testkit dump-log: {index}: corrupt index: 21 bytes is not a "
                            "whole number of 8-byte entries (a partial entry at byte offset 16)\n")
    assert captured.out.count("baseOffset:") == 21          # the next path was dumped
    index.write_bytes(whole[:8] + struct.pack(">ii", 7, 99))  # points into the middle of a batch
    assert main(["dump-log", str(index)]) == 1
    captured = capsys.readouterr()
    assert "Index offset: 7, log offset: -1" in captured.out
    assert "1 index entry does not match the segment" in captured.err
