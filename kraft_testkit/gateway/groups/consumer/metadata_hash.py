"""The metadata hash a consumer group keeps (KIP-1101, ``ConsumerGroupMetadataValue.MetadataHash``):
Kafka 4.2.1's ``Utils#computeTopicHash`` over each subscribed topic (id, name, partition count,
each partition's sorted replica racks) and ``Utils#computeGroupHash`` over the topics in name
order. A change (new partitions, a topic created or deleted) bumps the group epoch.

The byte streams are Kafka's (hash4j's ``HashStream64``: little-endian numbers, a string as its
UTF-16 code units then its length); the 64-bit hash over them is XXH3-64 with seed 0 (the ``xxhash`` package's
``xxh3_64_intdigest``, the same function as hash4j's ``Hashing.xxh3_64()``).
"""

from __future__ import annotations

import struct
from typing import Any

from xxhash import xxh3_64_intdigest as xxh3_64

TOPIC_HASH_MAGIC_BYTE = 0


def _string(text: str) -> bytes:
    units = text.encode("utf-16-le")
    return units + struct.pack("<i", len(units) // 2)


def topic_hash(topic: Any, rack_of: Any) -> int:
    """``computeTopicHash``: 0 for a missing topic."""
    if topic is None:
        return 0
    raw = bytes(topic.id)
    out = bytearray([TOPIC_HASH_MAGIC_BYTE])
    out += raw[:8][::-1] + raw[8:][::-1]       # putLong(msb), putLong(lsb), little-endian
    out += _string(topic.name)
    out += struct.pack("<i", len(topic.partitions))
    for i in range(len(topic.partitions)):
        out += struct.pack("<i", i)
        reg = topic.partitions.get(i)
        racks = sorted(r for r in (rack_of(b) for b in (reg.replicas if reg else ())) if r)
        for rack in racks:
            out += struct.pack("<i", len(rack)) + _string(rack)
    return _signed(xxh3_64(bytes(out)))


def group_hash(topic_hashes: dict[str, int]) -> int:
    """``computeGroupHash``: 0 without topics."""
    if not topic_hashes:
        return 0
    data = b"".join(struct.pack("<q", topic_hashes[name]) for name in sorted(topic_hashes))
    return _signed(xxh3_64(data))


def metadata_hash(names: set[str], image: Any) -> int:
    """``ModernGroup#computeMetadataHash`` over the subscribed topics that exist."""
    def rack_of(broker: int) -> str | None:
        reg = image.cluster.brokers.get(broker) if hasattr(image.cluster, "brokers") else None
        return getattr(reg, "rack", None)
    hashes = {}
    for name in names:
        topic = image.topic(name)
        if topic is not None:
            hashes[name] = topic_hash(topic, rack_of)
    return group_hash(hashes)


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v
