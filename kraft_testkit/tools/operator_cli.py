"""The operator subcommands of ``kraft-testkit``: ``storage``, ``cluster``, ``metadata-shell``.

Kept apart from ``cli.py`` so the main parser stays small; each command is a thin layer over the
Python functions in ``storage_tool``, ``cluster_tool`` and ``metadata_shell``.
"""

from __future__ import annotations

import argparse
import sys


def _feature(text: str) -> tuple[str, int]:
    name, eq, level = text.partition("=")
    try:
        if not eq or not name:
            raise ValueError
        return name.strip(), int(level)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected feature=level (e.g. kraft.version=1), "
                                         f"got {text!r}") from None


def _node(args: argparse.Namespace):
    from .storage_tool import NodeStorage, StorageToolError

    if args.config is not None:
        if args.node_id is not None or args.directory:
            raise StorageToolError("give either --config or --node-id/--directory, not both")
        return NodeStorage.from_properties(args.config)
    if args.node_id is None or not args.directory:
        raise StorageToolError("give --config server.properties, or --node-id N and "
                               "--directory DIR (repeatable)")
    return NodeStorage.from_options(args.node_id, args.directory,
                                    metadata_directory=args.metadata_directory,
                                    roles=tuple(args.roles.split(",")),
                                    controller_endpoint=args.controller_endpoint)


def _storage(args: argparse.Namespace) -> int:
    from .storage_tool import format_storage, random_uuid, storage_info

    if args.storage_command == "random-uuid":
        print(random_uuid())
        return 0
    if args.storage_command == "info":
        directories = list(args.directory or ())
        if args.config is not None:
            directories += list(_node(args).log_dirs)
        info = storage_info(directories)
        sys.stdout.write(info.text())
        return 1 if info.problems else 0
    format_storage(_node(args), args.cluster_id, release_version=args.release_version,
                   features=dict(args.feature or ()), standalone=args.standalone,
                   initial_controllers=args.initial_controllers,
                   ignore_formatted=args.ignore_formatted, out=sys.stdout)
    return 0


def _cluster(args: argparse.Namespace) -> int:
    from . import cluster_tool

    target = cluster_tool.open_target(args.directory, demo_seed=args.demo)
    if args.cluster_command == "cluster-id":
        print(cluster_tool.cluster_id_text(target))
    elif args.cluster_command == "unregister":
        print(cluster_tool.unregister(target, args.id))
    elif args.cluster_command == "add-controller":
        from . import quorum_tool

        print(quorum_tool.add_controller(target))
    elif args.cluster_command == "remove-controller":
        from . import quorum_tool

        print(quorum_tool.remove_controller(target, args.controller_id,
                                            args.controller_directory_id))
    else:
        print(cluster_tool.describe_quorum_text(target, replication=args.replication))
    return 0


def _metadata_shell(args: argparse.Namespace) -> int:
    from .metadata_shell import MetadataShell

    shell = MetadataShell.open(args.path, prerelease=args.prerelease)
    commands = list(args.command or ()) + ([" ".join(args.words)] if args.words else [])
    if commands:
        return shell.run_all(commands, sys.stdout)
    return shell.interact(sys.stdin, sys.stdout)


def _add_node_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", metavar="FILE",
                   help="a Kafka server.properties (node.id, process.roles, log.dirs, "
                        "metadata.log.dir, listeners, controller.listener.names)")
    p.add_argument("--node-id", type=int, default=None, help="instead of --config: the node id")
    p.add_argument("--directory", "-d", action="append", metavar="DIR",
                   help="instead of --config: a log directory (repeat for several)")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``storage``, ``cluster`` and ``metadata-shell`` on the main parser."""
    p = sub.add_parser("storage", help="format and inspect node directories (kafka-storage)",
                       description="Kafka's storage tool: format a node's log directories, "
                                   "show what they hold, print a random uuid.")
    storage = p.add_subparsers(dest="storage_command", required=True, metavar="COMMAND")
    fmt = storage.add_parser("format", help="format the log directories of a node")
    _add_node_options(fmt)
    fmt.add_argument("--metadata-directory", metavar="DIR", default=None,
                     help="with --directory: the metadata log directory (default: the first)")
    fmt.add_argument("--roles", default="broker,controller",
                     help="with --directory: process.roles (default broker,controller)")
    fmt.add_argument("--controller-endpoint", default="localhost:9093", metavar="HOST:PORT",
                     help="with --directory: this controller's endpoint, for --standalone")
    fmt.add_argument("--cluster-id", "-t", required=True, help="the cluster id (random-uuid)")
    fmt.add_argument("--release-version", "-r", default=None,
                     help="metadata.version to bootstrap (e.g. 3.7-IV4 or 3.7; default the "
                          "latest production level)")
    fmt.add_argument("--feature", "-f", action="append", type=_feature, metavar="NAME=LEVEL",
                     help="a feature level, e.g. kraft.version=1 (repeatable)")
    fmt.add_argument("--ignore-formatted", "-g", action="store_true",
                     help="skip directories that are already formatted (same cluster and node)")
    quorum = fmt.add_mutually_exclusive_group()
    quorum.add_argument("--standalone", "-s", action="store_true",
                        help="start a dynamic quorum with this controller as its only voter")
    quorum.add_argument("--initial-controllers", "-I", metavar="LIST",
                        help="the initial voters: id@host:port:directoryId,... (the same on "
                             "every controller)")
    info = storage.add_parser("info", help="show what a node's log directories hold")
    _add_node_options(info)
    storage.add_parser("random-uuid", help="print a random uuid (a cluster or directory id)")
    p.set_defaults(func=_storage)

    p = sub.add_parser("cluster", help="cluster id, broker unregistration, the quorum "
                                       "(kafka-cluster, kafka-metadata-quorum)",
                       description="Ask a cluster for its id, unregister a broker, or describe "
                                   "the metadata quorum; the cluster is a data directory (a "
                                   "kit cluster's, a node's, or Kafka's) or an in-process demo "
                                   "cluster (--demo SEED).")
    cluster = p.add_subparsers(dest="cluster_command", required=True, metavar="COMMAND")
    for name, text in (("cluster-id", "print the cluster id"),
                       ("unregister", "unregister a broker (reopens a kit cluster's directory)"),
                       ("describe-quorum", "the leader, epoch, high watermark and voters"),
                       ("add-controller", "start a controller and add it as a voter (KIP-853; "
                                          "reopens a kraft_version=1 kit cluster's directory)"),
                       ("remove-controller", "remove a voter (KIP-853; reopens the directory)")):
        c = cluster.add_parser(name, help=text)
        where = c.add_mutually_exclusive_group(required=True)
        where.add_argument("--directory", "-d", metavar="DIR",
                           help="a data directory: a kit cluster's, a node's, or Kafka's")
        where.add_argument("--demo", type=int, metavar="SEED",
                           help="an in-process 3 + 3 cluster booted with this seed")
        if name == "unregister":
            c.add_argument("--id", "-i", type=int, required=True, help="the broker to unregister")
        if name == "remove-controller":
            c.add_argument("--controller-id", type=int, required=True, help="the voter's id")
            c.add_argument("--controller-directory-id", metavar="UUID",
                           help="the voter's directory id (default: the one the voters hold)")
        if name == "describe-quorum":
            c.add_argument("--replication", action="store_true",
                           help="a row per replica (log end offset, lag) instead of the status")
    p.set_defaults(func=_cluster)

    p = sub.add_parser("metadata-shell", help="browse the metadata image of a data directory",
                       description="The metadata image of a directory (a node's, a kit "
                                   "cluster's, Kafka's) or of one .log/.checkpoint file, as a "
                                   "tree: ls, cd, pwd, cat, find, tree, help, exit. Commands "
                                   "come from -c (repeatable), from the words after PATH, or "
                                   "interactively.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("-c", "--command", action="append", metavar="CMD",
                   help='a command to run, e.g. -c "cat /brokers/1/registration"')
    p.add_argument("--prerelease", action="store_true",
                   help="decode the pre-release record shapes of Kafka trunk, late 2023")
    p.add_argument("words", nargs="*", metavar="COMMAND", help="one command, as words")
    p.set_defaults(func=_metadata_shell)
