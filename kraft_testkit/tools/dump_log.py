"""``kraft-testkit dump-log``: print a metadata log segment or snapshot as Kafka's dump tool does."""

from __future__ import annotations

import json
import os
import re
from typing import TextIO

from ..protocol.frames import ControlRecord, MetadataRecord
from ..protocol.log import LogBatch, decode_batch_records, iter_log

_CONTROL_LABELS = {"LEADER_CHANGE": "LeaderChange", "SNAPSHOT_HEADER": "SnapshotHeader",
                   "SNAPSHOT_FOOTER": "SnapshotFooter", "KRAFT_VERSION": "KRaftVersion",
                   "KRAFT_VOTERS": "KRaftVoters", "ABORT": "endTxnMarker", "COMMIT": "endTxnMarker"}
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")


def _json(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def payload_json(payload: MetadataRecord | ControlRecord | None) -> str:
    """The JSON that Kafka's dump tool prints for a record value (``null`` for no value)."""
    if payload is None:
        return "null"
    if isinstance(payload, ControlRecord):
        data = payload.message.to_json(payload.version) if payload.message is not None else {
            "version": payload.version}
        return _json(data)
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
    count = 0
    for b in iter_log(data, decode=False):
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
