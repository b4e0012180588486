"""Typed errors of metadata replay and snapshot writing."""

from __future__ import annotations

from typing import Any

from ..errors import KraftError


class MetadataError(KraftError):
    """Root of the metadata package's errors."""


class MetadataReplayError(MetadataError, ValueError):
    """A record that cannot apply to the image it meets.

    ``record`` is the offending message and ``offset`` its log offset when known. The delta that
    raised is left exactly as it was before the record (records apply atomically).
    """

    def __init__(self, reason: str, record: Any = None, offset: int | None = None) -> None:
        self.reason = reason
        self.record = record
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        what = f"{type(record).__name__}{where}: " if record is not None else ""
        super().__init__(f"cannot replay {what}{reason}" + (f" ({record!r})" if record is not None
                                                          else ""))


class UnwritableMetadataError(MetadataError, ValueError):
    """An image that cannot be written at the asked metadata.version without losing something
    (Kafka's ``UnwritableMetadataException``)."""

    def __init__(self, metadata_version: int, loss: str) -> None:
        self.metadata_version = metadata_version
        self.loss = loss
        super().__init__(f"metadata.version {metadata_version} cannot represent {loss}")


class UnknownMetadataVersionError(MetadataError, ValueError):
    """A metadata.version feature level that no released Kafka version defines."""
