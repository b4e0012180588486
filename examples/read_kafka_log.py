"""Read a metadata log written by Apache Kafka and summarise it.

    python examples/read_kafka_log.py [--prerelease] DIR/__cluster_metadata-0/00000000000000000000.log

``--prerelease`` reads the record shapes Kafka's trunk wrote for a few weeks in late 2023.
"""

import argparse
import collections
import sys

from kraft_testkit import KraftError
from kraft_testkit.protocol.log import read_log, write_log


def main(path: str, prerelease: bool = False) -> None:
    try:
        segment = read_log(path, prerelease=prerelease)
    except OSError as e:
        sys.exit(f"{path}: {e.strerror or e}")
    except KraftError as e:
        sys.exit(f"{path}: {e}\n(a log from Kafka trunk of late 2023? try --prerelease)")
    kinds = collections.Counter(
        r.payload.type_name for b in segment for r in b.records if r.payload is not None)
    print(f"{len(segment)} batches, {sum(kinds.values())} records")
    for name, n in kinds.most_common():
        print(f"  {n:4d}  {name}")
    with open(path, "rb") as f:
        same = write_log(segment) == f.read()
    print("re-encoded byte for byte:", same)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="read_kafka_log.py", description="Summarise a metadata log written by Kafka.")
    parser.add_argument("path", help="a log segment, e.g. "
                                     "__cluster_metadata-0/00000000000000000000.log")
    parser.add_argument("--prerelease", action="store_true",
                        help="read the record shapes of Kafka trunk, late 2023")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])  # a bad argument is a usage line, not a traceback
    main(args.path, prerelease=args.prerelease)
