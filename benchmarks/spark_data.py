"""Build a large metadata log for the Spark benchmark: real record batches from a simulated
cluster, repeated with new base offsets (the base offset is outside the batch CRC) until the
segment holds the asked number of records."""

from __future__ import annotations

import os
import struct

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.log import iter_log


def template_batches(seed: int = 1) -> list[tuple[bytes, int]]:
    """(bytes, record count) of the committed batches of a cluster that created 200 partitions."""
    c = Cluster(controllers=1, brokers=3, seed=seed)
    for i in range(4):
        c.create_topic(f"topic-{i}", partitions=50, replication_factor=3)
    r = c.replica(c.controllers[0])
    data = b"".join(r.log.data)
    out = []
    for b in iter_log(data, decode=False):
        if b.batch.last_offset < r.hw:
            out.append((data[b.position:b.position + b.size], len(b.batch.records)))
    return out


def write_segment(directory: str, records: int, seed: int = 1) -> str:
    """A ``__cluster_metadata-0/00000000000000000000.log`` with at least ``records`` records."""
    meta = os.path.join(directory, "__cluster_metadata-0")
    os.makedirs(meta, exist_ok=True)
    path = os.path.join(meta, "00000000000000000000.log")
    batches = template_batches(seed)
    offset = 0
    with open(path, "wb") as f:
        while offset < records:
            for raw, count in batches:
                f.write(struct.pack(">q", offset) + raw[8:])
                offset += count
                if offset >= records:
                    break
    return path
