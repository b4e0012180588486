"""Read a metadata log written by Apache Kafka and summarise it.

    python examples/read_kafka_log.py PATH/__cluster_metadata-0/00000000000000000000.log
"""

import collections
import sys

from kraft_testkit.protocol.log import read_log, write_log


def main(path: str) -> None:
    segment = read_log(path)
    kinds = collections.Counter(
        r.payload.type_name for b in segment for r in b.records if r.payload is not None)
    print(f"{len(segment)} batches, {sum(kinds.values())} records")
    for name, n in kinds.most_common():
        print(f"  {n:4d}  {name}")
    with open(path, "rb") as f:
        same = write_log(segment) == f.read()
    print("re-encoded byte for byte:", same)


if __name__ == "__main__":
    main(sys.argv[1])
