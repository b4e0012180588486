"""The ``kraft-testkit`` command line: the parser of every command, and ``main``.

Commands live in their own modules and add their parsers here; what they share (argument
types) is in :mod:`.arguments`, so nothing imports this module but the entry point.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..errors import KraftError
from .arguments import at_least


def _has_module(name: str) -> bool:
    """Whether ``name`` can be imported (checked before a long run that would need it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or no spec
        return False


def _dump_log(args: argparse.Namespace) -> int:
    from .dump_log import dump_paths

    return dump_paths(args.paths, sys.stdout, sys.stderr, decode=args.cluster_metadata_decoder,
                      skip_record_metadata=args.skip_record_metadata, prerelease=args.prerelease)


def _demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .demo import run_demo

    if args.plot is not None and not _has_module("matplotlib"):
        print("kraft-testkit demo: --plot needs matplotlib, which is not installed; install it "
              "with: pip install 'kraft-testkit[plot]' (or pip install matplotlib)",
              file=sys.stderr)
        return 2
    seed = args.seed
    if seed is None:
        import secrets

        seed = secrets.randbelow(10_000)  # before the simulation starts; printed for replay
    run_demo(seed, Console(), controllers=args.controllers, brokers=args.brokers,
             verbose=args.verbose, plot=args.plot, html=args.html,
             broker_self_fencing=args.broker_self_fencing)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraft-testkit",
        description="An in-process, deterministic Kafka KRaft cluster for tests, and its tools.")
    parser.add_argument("--version", action="version", version=f"kraft-testkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="a scripted incident drill on an in-process cluster",
                       description="Boot 3 controllers and 3 brokers, create a topic, kill the "
                                   "active controller, isolate a broker until its lease expires, "
                                   "heal, shut a broker down in a controlled way, reassign a "
                                   "partition; print the timeline and the final metadata.")
    p.add_argument("--seed", type=int, default=None, help="the run's seed (printed if not given)")
    p.add_argument("--controllers", type=at_least(1), default=3)
    p.add_argument("--brokers", type=at_least(2), default=3,
                   help="brokers (at least 2: one is isolated while another stays)")
    p.add_argument("--verbose", action="store_true",
                   help="also show each partition's replica and ISR events")
    p.add_argument("--plot", metavar="PNG", default=None,
                   help="also draw broker states and the active controller over time to PNG "
                        "(needs matplotlib: pip install 'kraft-testkit[plot]')")
    p.add_argument("--broker-self-fencing", action="store_true",
                   help="KIP-343 as the seed document proposed it (not released Kafka): the "
                        "isolated broker fences itself too")
    p.add_argument("--html", metavar="FILE", default=None,
                   help="also write a self-contained HTML swim-lane timeline of the drill "
                        "(nodes, roles, states, faults, committed records) to FILE")
    p.set_defaults(func=_demo)

    p = sub.add_parser("dump-log", help="print a metadata log segment or snapshot file",
                       description="Print the batches and records of Kafka log segments (.log) "
                                   "and snapshots (.checkpoint), like Kafka's dump tool.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--cluster-metadata-decoder", action="store_true",
                   help="decode each record as a metadata or control record")
    p.add_argument("--skip-record-metadata", action="store_true",
                   help="print only the payload of each record")
    p.add_argument("--prerelease", action="store_true",
                   help="decode the pre-release record shapes of Kafka trunk, late 2023")
    p.set_defaults(func=_dump_log)

    from .simulate import add_parser as add_simulate
    add_simulate(sub)
    from .operator_cli import add_parsers as add_operator_tools  # storage, cluster, shell
    add_operator_tools(sub)
    from .serve import add_parser as add_serve
    add_serve(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KraftError as e:  # expected failures: one line (seed and replay when there is one)
        sys.stdout.flush()
        print(f"kraft-testkit {args.command}: "
              f"{getattr(e, 'summary', None) or str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
