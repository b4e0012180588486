"""``kraft-testkit dump-log``: print a metadata log segment or snapshot as Kafka's dump tool does."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TextIO

from ..errors import KraftError
from ..protocol import jsontext
from ..protocol.errors import DecodeError
from ..protocol.frames import ControlRecord, MetadataRecord
from ..protocol.log import LogBatch, decode_batch_records, iter_log
from .dump_index import DumpLogError

_CONTROL_LABELS = {"LEADER_CHANGE": "LeaderChange", "SNAPSHOT_HEADER": "SnapshotHeader",
                   "SNAPSHOT_FOOTER": "SnapshotFooter", "KRAFT_VERSION": "KRaftVersion",
                   "KRAFT_VOTERS": "KRaftVoters", "ABORT": "endTxnMarker", "COMMIT": "endTxnMarker"}
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")


def _json(obj: object) -> str:
    return jsontext.dumps(obj)


def payload_json(payload: MetadataRecord | ControlRecord | None) -> str:
    """The JSON that Kafka's dump tool prints for a record value (``null`` for no value)."""
    if payload is None:
        return "null"
    if type(payload) is MetadataRecord:
        return payload.to_json_text()
    if isinstance(payload, ControlRecord):
        if payload.message is None:
            return _json({"version": payload.version})
        return payload.message.to_json_text(payload.version)
    return _json(payload.to_json())


def payload_text(payload: MetadataRecord | ControlRecord | None) -> str:
    """`` payload: {...}`` for metadata records, `` LeaderChange: {...}`` for control records."""
    if isinstance(payload, ControlRecord):
        label = _CONTROL_LABELS.get(payload.type_name, payload.type_name)
        return f" {label}: {payload_json(payload)}"
    return f" payload: {payload_json(payload)}"


def batch_line(b: LogBatch) -> str:
    batch = b.batch
    last_seq = batch.base_sequence + batch.last_offset_delta if batch.base_sequence >= 0 else -1
    ts_name = batch.timestamp_type
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {len(batch.records)} baseSequence: {batch.base_sequence} "
            f"lastSequence: {last_seq} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {str(batch.is_transactional).lower()} "
            f"isControl: {str(batch.is_control).lower()} position: {b.position} "
            f"{ts_name}: {batch.max_timestamp} size: {b.size} magic: {batch.magic} "
            f"compresscodec: {batch.compression} crc: {batch.crc} "
            f"isvalid: {str(batch.crc_valid).lower()}")


def dump_file(path: str, out: TextIO, *, decode: bool, skip_record_metadata: bool,
              prerelease: bool = False) -> int:
    """Print one file; returns the number of records printed. Raises KraftError on bad bytes."""
    name = os.path.basename(path)
    out.write(f"Dumping {path}\n")
    if m := _SNAPSHOT_NAME.match(name):
        out.write(f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}\n")
    elif m := _SEGMENT_NAME.match(name):
        out.write(f"Log starting offset: {int(m.group(1))}\n")
    with open(path, "rb") as f:
        data = f.read()
    if not data:  # a fresh segment (or an emptied file): Kafka's tool prints no batch, no error
        return 0
    count = 0
    next_offset, position = None, 0
    try:
        for b in iter_log(data, decode=False):
            count += _dump_batch(b, out, decode=decode, prerelease=prerelease,
                                 skip_record_metadata=skip_record_metadata)
            next_offset, position = b.batch.last_offset + 1, b.position + b.size
    except DecodeError as e:
        if getattr(e, "log_offset", None) is None and e.offset is not None:
            where = (f"the batch at byte position {position}" +
                     (f", after log offset {next_offset - 1}" if next_offset is not None else
                      ", the file's first batch"))
            raise DumpLogError(f"{e} in {where}") from None
        raise
    return count


def dump_paths(paths: Iterable[str], out: TextIO, err: TextIO, *, decode: bool = False,
               skip_record_metadata: bool = False, prerelease: bool = False) -> int:
    """Dump every path in turn (segments, snapshots, ``.index`` and ``.timeindex`` files).

    A missing or damaged file, or an index that does not match its segment, gets one line on
    ``err`` naming the file and where it broke, and the next path is dumped all the same. An
    empty file prints its header lines and no batch, as Kafka's ``kafka-dump-log.sh``.

    Returns the exit status: 0 when every file dumped cleanly, else 1.
    """
    from .dump_index import dump_index, is_index_file

    status = 0
    for path in paths:
        try:
            if is_index_file(path):
                mismatches = dump_index(path, out)
                if mismatches:
                    out.flush()
                    what = "entry does" if len(mismatches) == 1 else "entries do"
                    err.write(f"kraft-testkit dump-log: {path}: {len(mismatches)} index {what} "
                              f"not match the segment (see 'Mismatches in' above)\n")
                    status = 1
                continue
            dump_file(path, out, decode=decode, skip_record_metadata=skip_record_metadata,
                      prerelease=prerelease)
        except KraftError as e:
            out.flush()
            err.write(f"kraft-testkit dump-log: {path}: {e}\n")
            status = 1
        except BrokenPipeError:
            raise
        except OSError as e:
            out.flush()
            err.write(f"kraft-testkit dump-log: {path}: {e.strerror or e}\n")
            status = 1
    return status


def _dump_batch(b: LogBatch, out: TextIO, *, decode: bool, prerelease: bool,
                skip_record_metadata: bool) -> int:
    count = 0
    out.write(batch_line(b) + "\n")  # before its records, so an error shows its batch
    records = decode_batch_records(b.batch, prerelease=prerelease, position=b.position) \
        if decode else ()
    for r in records:
        line = "|"
        if not skip_record_metadata:
            rec = r.record
            line += (f" offset: {r.offset} {b.batch.timestamp_type}: {r.timestamp} "
                     f"keySize: {-1 if rec.key is None else len(rec.key)} "
                     f"valueSize: {-1 if rec.value is None else len(rec.value)} "
                     f"sequence: {_sequence(b, rec.offset_delta)} "
                     f"headerKeys: [{','.join(h.key for h in rec.headers)}]")
        line += payload_text(r.payload)
        out.write(line + "\n")
        count += 1
    if not decode:
        count += len(b.batch.records)
    return count


def _sequence(b: LogBatch, delta: int) -> int:
    return b.batch.base_sequence + delta if b.batch.base_sequence >= 0 else -1
