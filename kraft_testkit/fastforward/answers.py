"""What a computed fetch answer may hold: NoOps only (``fastforward.quorum_model``)."""

from __future__ import annotations

from typing import Any

from kraft_testkit.metadata.replay import NOOP_VALUE  # the one record a computed answer may carry
from kraft_testkit.raft.log import SettledBytes


def only_noops(log: Any, start: int, end: int) -> bool:
    """Whether the log's batches in [start, end) hold NoOpRecords only (and are still
    decoded: a settled batch below a snapshot says nothing of its records, but for a NoOp
    batch the warp built, settled into its shared bytes: ``SettledBytes``)."""
    if start >= end:
        return True
    if start < log.start_offset:
        return False
    for batch in log.batches_between(start, end):
        if type(batch) is SettledBytes:
            continue
        records = getattr(batch, "records", None)
        if records is None or batch.is_control or \
                any(r.value != NOOP_VALUE for r in records):
            return False
    return True
