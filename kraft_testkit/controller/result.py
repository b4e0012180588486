"""What every control module returns, and what it is given.

Kafka's ControllerResult idea: a command never mutates state. It reads the controller's latest
image (which includes its own records that are not yet committed: KIP-631's "future state"),
and returns the records to append plus the response to send once they commit. The quorum
controller replays those records into its pending image at once, so the next command sees them,
and reverts to the committed image if it loses leadership.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..config import NodeConfig
from ..metadata import MetadataImage
from ..protocol.codegen import Message
from ..protocol.frames import MetadataRecord

R = TypeVar("R")

#: ``QuorumController.MAX_RECORDS_PER_USER_OP``: the most records one user operation may write
#: (topics, partitions, ACLs alike: Kafka bounds each operation's record list)
MAX_RECORDS_PER_USER_OP = 10_000


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    """Records to append (possibly none) and the response to give once they are committed.

    ``atomic``: the records must be appended in one batch (all or nothing), as Kafka does for
    topic creation. Control modules choose record versions from the image's metadata.version.
    """

    records: tuple[MetadataRecord, ...]
    response: R
    atomic: bool = True

    @classmethod
    def of(cls, response: R, *records: MetadataRecord, atomic: bool = True) -> "ControllerResult[R]":
        return cls(tuple(records), response, atomic)


@dataclass(slots=True)
class ControllerContext:
    """Inputs of a command besides the request: the latest image, time, randomness, settings.

    ``rng`` is the controller's own seeded random source (topic ids, placement start): never
    the global ``random``. ``cluster_id`` is what registrations are checked against.
    ``next_offset`` is the log offset the first record of the result will get (the active
    controller knows where it appends): a broker epoch is the offset of its RegisterBrokerRecord.
    """

    image: MetadataImage
    now_ms: int
    rng: random.Random
    config: NodeConfig
    cluster_id: str
    node_id: int
    next_offset: int = 0
    extra: dict = field(default_factory=dict)


def record(message: Message, version: int) -> MetadataRecord:
    """A metadata record to append (frame version 1, released dialect)."""
    return MetadataRecord(message, version)
