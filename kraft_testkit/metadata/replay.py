"""Committed record batches into images: what a node's metadata listener runs per commit.

Apart from :mod:`.delta` (one delta's replay of records) because it is about batches and the
cost of idle commits: NoOp-only batches move the image's position without a delta, and the
decoded records of small values are remembered across nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..protocol.frames import MetadataRecord, decode_metadata
from .delta import MetadataDelta
from .image import MetadataImage


def replay_log(batches: Any, image: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    """Replay log batches (``read_log`` output) one delta per batch, as a node applies each
    committed batch; gives the last image."""
    for batch in batches:
        delta = MetadataDelta(image)
        delta.replay_batch(batch)
        image = delta.apply()
    return image


NOOP_VALUE = b"\x01\x14\x00\x00"  # NoOpRecord v0 in the released frame

# Every node replays every committed record: the same bytes decode to the same (immutable)
# record, so the decoded records of small values are remembered (a full memo starts again).
_DECODED: dict[bytes, MetadataRecord] = {}
_DECODED_ENTRIES = 512
_DECODED_MAX_BYTES = 1024


def replay_batches(image: MetadataImage, batches: Iterable[Any]) -> MetadataImage:
    """The image after committed record batches (as Raft hands them over).

    Batches holding nothing but NoOps (the controller writes one every 500 ms) only move the
    image's position, without building a delta: they are most of an idle cluster's commits.
    """
    last = None
    delta = None
    for batch in batches:
        if batch.is_control:
            last = batch
            continue
        for r in batch.records:
            value = r.value
            if value is None or (value == NOOP_VALUE and delta is None):
                continue
            if delta is None:
                delta = MetadataDelta(image)
            record = _DECODED.get(value) if type(value) is bytes else None
            if record is None:
                record = decode_metadata(value)
                if type(value) is bytes and len(value) <= _DECODED_MAX_BYTES:
                    if len(_DECODED) >= _DECODED_ENTRIES:
                        _DECODED.clear()
                    _DECODED[value] = record
            delta.replay(record, offset=batch.base_offset + r.offset_delta,
                         epoch=batch.partition_leader_epoch)
        last = batch
    if last is None:
        return image
    if delta is None:
        return image.with_provenance((last.last_offset, last.partition_leader_epoch))
    delta._advance(last.last_offset, last.partition_leader_epoch)
    return delta.apply()
