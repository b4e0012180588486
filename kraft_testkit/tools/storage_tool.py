"""``kraft-testkit storage format | info | random-uuid``: Kafka's storage tool, as functions.

After ``kafka-storage.sh`` (Kafka 3.9/4.x ``StorageTool`` and ``Formatter``): ``format`` writes
``meta.properties`` (version 1: cluster.id, node.id, a fresh directory.id) and
``bootstrap.checkpoint`` (the bootstrap feature levels, in snapshot format: header, records,
footer, offsets from 0, epoch 0) into every log directory, and, for a dynamic quorum
(``--standalone`` or ``--initial-controllers``), the bootstrap snapshot
``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`` holding a KRaftVersionRecord
and the VotersRecord in the metadata directory of a node that is one of the initial voters.
``info`` prints what Kafka prints (found directories, the metadata, problems; exit 1 on a
problem). Every refusal is a :class:`StorageToolError` saying what and where.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ..errors import KraftError
from ..metadata import versions as V
from ..protocol import messages as M
from ..protocol.frames import encode_control
from ..protocol.records import RecordBatch, encode_batch
from ..protocol.uuid import Uuid
from ..raft.snapshot import file_name as snapshot_file_name
from ..storage.meta_properties import (
    FILE_NAME as META_PROPERTIES,
)
from ..storage.meta_properties import (
    MetaProperties,
    MetaPropertiesError,
    parse_properties,
    read_meta_properties,
    write_meta_properties,
)

BOOTSTRAP_FILE = "bootstrap.checkpoint"
METADATA_DIR = "__cluster_metadata-0"
KRAFT_VERSION = "kraft.version"
SUPPORTED_FEATURES = {KRAFT_VERSION: (0, 1)}  # besides metadata.version (--release-version)


class StorageToolError(KraftError, ValueError):
    """What ``kafka-storage`` would refuse: the message says what was wrong and where."""


def random_uuid(rng: random.Random | None = None) -> Uuid:
    """A random uuid as Kafka's ``Uuid.randomUuid`` draws it (never a reserved one, never
    starting with ``-``); from ``rng`` when given, else from the system's randomness."""
    return Uuid.random(rng if rng is not None else random.SystemRandom())


# ------------------------------------------------------------------ the node's settings


@dataclass(frozen=True)
class Voter:
    """One initial controller: ``id@host:port:directoryId`` (KIP-853)."""

    node_id: int
    host: str
    port: int
    directory_id: Uuid


def parse_initial_controllers(text: str) -> list[Voter]:
    """Kafka's ``--initial-controllers`` list: ``0@host:9093:DIRID,1@[::1]:9094:DIRID``."""
    voters: list[Voter] = []
    for item in (p.strip() for p in text.split(",")):
        voters.append(_parse_voter(item, text))
    if not voters:
        raise StorageToolError("--initial-controllers: no voters given")
    seen = set()
    for v in voters:
        if v.node_id in seen:
            raise StorageToolError(f"--initial-controllers: node id {v.node_id} was specified "
                                   f"more than once in {text!r}")
        seen.add(v.node_id)
    return voters


def _parse_voter(item: str, whole: str) -> Voter:
    def bad(why: str) -> StorageToolError:
        return StorageToolError(f"--initial-controllers: {why} in {item!r} (of {whole!r}); "
                                f"expected id@host:port:directoryId")

    node, at, rest = item.partition("@")
    if not at:
        raise bad("no @ found")
    try:
        node_id = int(node)
    except ValueError:
        raise bad(f"node id {node!r} is not an integer")
    if node_id < 0:
        raise bad(f"node id {node_id} is negative")
    if rest.startswith("["):
        host, bracket, rest = rest[1:].partition("]")
        if not bracket:
            raise bad("a host in [ has no ]")
    else:
        host, colon, after = rest.partition(":")
        rest = colon + after
    if not host or not rest.startswith(":"):
        raise bad("no host:port")
    port_text, colon, dir_text = rest[1:].partition(":")
    if not colon:
        raise bad("no colon after the port")
    try:
        port = int(port_text)
    except ValueError:
        raise bad(f"port {port_text!r} is not an integer")
    if not 0 <= port <= 65535:
        raise bad(f"port {port} is out of range")
    try:
        directory_id = Uuid.parse(dir_text)
    except (KraftError, ValueError):
        raise bad(f"directory id {dir_text!r} is not a base64 uuid")
    return Voter(node_id, host, port, directory_id)


@dataclass(frozen=True)
class NodeStorage:
    """What the storage tool needs of a node's configuration (Kafka's names in comments)."""

    node_id: int                                  # node.id
    log_dirs: tuple[str, ...]                     # log.dirs (or log.dir)
    metadata_log_dir: str                         # metadata.log.dir (default: first log dir)
    roles: tuple[str, ...] = ("broker", "controller")  # process.roles
    controller_listener: str = "CONTROLLER"       # controller.listener.names (the first)
    controller_host: str = "localhost"            # from listeners, for --standalone
    controller_port: int = 9093
    static_voters: str = ""                       # controller.quorum.voters
    source: str = "the command line"

    @classmethod
    def from_options(cls, node_id: int, directories: Sequence[str | os.PathLike], *,
                     metadata_directory: str | os.PathLike | None = None,
                     roles: Sequence[str] = ("broker", "controller"),
                     controller_endpoint: str = "localhost:9093") -> NodeStorage:
        if type(node_id) is not int or node_id < 0:
            raise StorageToolError(f"--node-id must be an int >= 0, got {node_id!r}")
        if not directories:
            raise StorageToolError("give at least one --directory to format")
        dirs = tuple(sorted({os.fspath(d) for d in directories}))
        meta = os.fspath(metadata_directory) if metadata_directory is not None else \
            os.fspath(directories[0])
        host, _, port = controller_endpoint.rpartition(":")
        try:
            port_number = int(port)
        except ValueError:
            raise StorageToolError(f"--controller-endpoint must be host:port, got "
                                   f"{controller_endpoint!r}") from None
        return cls(node_id, tuple(sorted(set(dirs) | {meta})), meta, tuple(roles),
                   controller_host=host or "localhost", controller_port=port_number)

    @classmethod
    def from_properties(cls, path: str | os.PathLike) -> NodeStorage:
        """A Kafka ``server.properties`` (``--config``); errors name the file and the key."""
        try:
            props = parse_properties(Path(path).read_text())
        except OSError as e:
            raise StorageToolError(f"--config {os.fspath(path)}: {e.strerror or e}") from None

        def bad(key: str, why: str) -> StorageToolError:
            return StorageToolError(f"{os.fspath(path)}: {key}: {why}")

        roles = tuple(r.strip() for r in props.get("process.roles", "").split(",") if r.strip())
        if not roles:
            raise bad("process.roles", "is not set: the configuration appears to be for a "
                      "legacy cluster; formatting is only supported for clusters in KRaft mode")
        if set(roles) - {"broker", "controller"}:
            raise bad("process.roles", f"{props['process.roles']!r}: roles are broker, controller")
        try:
            node_id = int(props.get("node.id", ""))
        except ValueError:
            raise bad("node.id", f"{props.get('node.id')!r} is not an integer") from None
        dirs_text = props.get("log.dirs") or props.get("log.dir") or "/tmp/kafka-logs"
        dirs = tuple(d.strip() for d in dirs_text.split(",") if d.strip())
        if not dirs and not props.get("metadata.log.dir"):
            raise bad("log.dirs", f"{dirs_text!r} names no directory")
        meta = props.get("metadata.log.dir") or dirs[0]
        listener = (props.get("controller.listener.names", "CONTROLLER").split(",")[0].strip()
                    or "CONTROLLER")
        host, port = "localhost", 9093
        for spec in props.get("listeners", "").split(","):
            name, sep, address = spec.strip().partition("://")
            if sep and name == listener:
                h, _, p = address.rpartition(":")
                host = h.strip("[]") or "localhost"
                try:
                    port = int(p)
                except ValueError:
                    raise bad("listeners", f"port of {spec.strip()!r} is not an integer") from None
        return cls(node_id, tuple(sorted(set(dirs) | {meta})), meta, roles, listener, host, port,
                   props.get("controller.quorum.voters", "").strip(), os.fspath(path))


# ------------------------------------------------------------------ format


@dataclass
class FormatResult:
    """What ``format`` did: the directories written (and skipped) and what went in them."""

    cluster_id: str
    node_id: int
    metadata_version: str
    features: dict[str, int]
    formatted: dict[str, Uuid] = field(default_factory=dict)  # directory -> its directory.id
    skipped: list[str] = field(default_factory=list)
    voters: list[Voter] = field(default_factory=list)


def format_storage(node: NodeStorage, cluster_id: str, *, release_version: str | int | None = None,
                   features: Mapping[str, int] | None = None, standalone: bool = False,
                   initial_controllers: str | None = None, ignore_formatted: bool = False,
                   out: TextIO | None = None, rng: random.Random | None = None,
                   now_ms: int | None = None) -> FormatResult:
    """Format ``node``'s log directories for cluster ``cluster_id`` as ``kafka-storage format``.

    ``rng`` draws the directory ids (the system's randomness by default); ``now_ms`` stamps the
    bootstrap files (the wall clock by default: this runs outside any simulation).
    """
    try:
        Uuid.parse(cluster_id)
    except (KraftError, ValueError):
        raise StorageToolError(f"Cluster ID string {cluster_id!r} does not appear to be a valid "
                               f"UUID (use kraft-testkit storage random-uuid)") from None
    if standalone and initial_controllers:
        raise StorageToolError("--standalone and --initial-controllers exclude each other")
    voters: list[Voter] = []
    if standalone:
        if "controller" not in node.roles:
            raise StorageToolError("You cannot use --standalone on a broker node.")
        voters = [Voter(node.node_id, node.controller_host, node.controller_port,
                        random_uuid(rng))]
    elif initial_controllers:
        voters = parse_initial_controllers(initial_controllers)
    dynamic = bool(voters)
    if dynamic and node.static_voters:
        raise StorageToolError(
            f"{node.source}: controller.quorum.voters is set; a node with static voters cannot "
            "be formatted with --standalone or --initial-controllers")
    mv, levels = _feature_levels(release_version, dict(features or {}), dynamic)
    result = FormatResult(cluster_id, node.node_id, mv.name, levels, voters=voters)
    formatted = _already_formatted(node, cluster_id)
    if formatted and not ignore_formatted:
        raise StorageToolError(f"Log directory {formatted[0]} is already formatted. Use "
                               "--ignore-formatted to ignore this directory and format the others.")
    result.skipped = formatted
    write = out.write if out is not None else (lambda _: None)
    empty = [d for d in node.log_dirs if d not in formatted]
    if not empty:
        write("All of the log directories are already formatted.\n")
        return result
    stamp = int(time.time() * 1000) if now_ms is None else now_ms
    write(f"Bootstrap metadata: metadata.version {mv.name} (level {mv.level}), "
          + ", ".join(f"{k} {v}" for k, v in sorted(levels.items())) + "\n")
    own_voter = next((v for v in voters if v.node_id == node.node_id), None)
    for directory in empty:
        is_meta = directory == node.metadata_log_dir
        if is_meta and own_voter is not None:
            kind, dir_id = "dynamic metadata voter directory", own_voter.directory_id
        else:
            kind = ("dynamic metadata directory" if dynamic else "metadata directory") \
                if is_meta else "data directory"
            dir_id = random_uuid(rng)
        write(f"Formatting {kind} {directory} with metadata.version {mv.name}.\n")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        _write_atomically(path / BOOTSTRAP_FILE, bootstrap_checkpoint(mv.level, levels, stamp))
        if is_meta and dynamic:
            snap_dir = path / METADATA_DIR
            snap_dir.mkdir(exist_ok=True)
            _write_atomically(snap_dir / snapshot_file_name(0, 0),
                              voters_snapshot(voters, levels[KRAFT_VERSION],
                                              node.controller_listener, stamp))
        write_meta_properties(path, MetaProperties(cluster_id, node.node_id, dir_id))
        result.formatted[directory] = dir_id
    return result


def _feature_levels(release_version: str | int | None, features: dict[str, int],
                    dynamic: bool) -> tuple[V.MetadataVersion, dict[str, int]]:
    if V.FEATURE_NAME in features:
        if release_version is not None:
            raise StorageToolError(f"Use --release-version instead of --feature "
                                   f"{V.FEATURE_NAME}=X to avoid ambiguity.")
        release_version = features.pop(V.FEATURE_NAME)
    try:
        mv = V.get(V.LATEST_PRODUCTION if release_version is None else release_version)
    except KraftError as e:
        raise StorageToolError(f"--release-version: {e}") from None
    if mv.level < V.MINIMUM_BOOTSTRAP_VERSION:
        minimum = V.get(V.MINIMUM_BOOTSTRAP_VERSION).name
        raise StorageToolError(f"{V.FEATURE_NAME} {mv.name} is too old to bootstrap a KRaft "
                               f"cluster (the minimum is {minimum})")
    for name, level in features.items():
        if name not in SUPPORTED_FEATURES:
            raise StorageToolError(f"Unsupported feature: {name}. Supported features are: "
                                   f"{', '.join(sorted([*SUPPORTED_FEATURES, V.FEATURE_NAME]))}")
        low, high = SUPPORTED_FEATURES[name]
        if not low <= level <= high:
            raise StorageToolError(f"--feature {name}={level}: supported levels are {low}..{high}")
    kraft = features.get(KRAFT_VERSION)
    if kraft == 0 and dynamic:
        raise StorageToolError("Cannot set kraft.version to 0 with --standalone or "
                               "--initial-controllers: dynamic voters need kraft.version 1.")
    if kraft is not None and kraft > 0 and not dynamic:
        raise StorageToolError(f"Cannot set kraft.version to {kraft} unless one of --standalone "
                               "or --initial-controllers is used (and controller.quorum.voters "
                               "is empty).")
    levels = dict(features)
    levels[KRAFT_VERSION] = kraft if kraft is not None else (1 if dynamic else 0)
    return mv, levels


def _already_formatted(node: NodeStorage, cluster_id: str) -> list[str]:
    """Directories that hold a meta.properties; one of another cluster or node is an error."""
    found = []
    for directory in node.log_dirs:
        if not (Path(directory) / META_PROPERTIES).exists():
            continue
        meta = read_meta_properties(directory)
        if meta.cluster_id != cluster_id:
            raise StorageToolError(f"{Path(directory) / META_PROPERTIES}: cluster.id is "
                                   f"{meta.cluster_id}, not {cluster_id}: the directory "
                                   "belongs to another cluster")
        if meta.node_id != node.node_id:
            raise StorageToolError(f"{Path(directory) / META_PROPERTIES}: node.id is "
                                   f"{meta.node_id}, not {node.node_id}")
        found.append(directory)
    return found


def bootstrap_checkpoint(metadata_version: int, levels: Mapping[str, int], now_ms: int) -> bytes:
    """``bootstrap.checkpoint``: FeatureLevelRecords (metadata.version, then the other features
    above level 0 except kraft.version, which lives in the Raft log) as a snapshot file."""
    from ..controller.bootstrap import BootstrapMetadata

    others = {k: v for k, v in levels.items() if k != KRAFT_VERSION}
    return BootstrapMetadata.from_version(metadata_version, others,
                                          "format command").checkpoint(now_ms)


def voters_snapshot(voters: Sequence[Voter], kraft_version: int, listener: str,
                    now_ms: int) -> bytes:
    """The bootstrap snapshot ``00000000000000000000-0000000000.checkpoint`` of a dynamic
    quorum: one control batch (SnapshotHeader, KRaftVersion, Voters), then the footer."""
    header = M.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=now_ms)
    version = M.KRaftVersionRecord(version=0, k_raft_version=kraft_version)
    voter_set = M.VotersRecord(version=0, voters=tuple(
        M.VotersRecord.Voter(
            voter_id=v.node_id, voter_directory_id=v.directory_id,
            endpoints=(M.VotersRecord.Endpoint(name=listener, host=v.host, port=v.port),),
            k_raft_version_feature=M.VotersRecord.KRaftVersionFeature(
                min_supported_version=0, max_supported_version=1))
        for v in voters))
    pairs = [encode_control(m, 0) for m in (header, version, voter_set)]
    first = RecordBatch.build(0, [v for _, v in pairs], keys=[k for k, _ in pairs], control=True,
                              timestamp_ms=now_ms, leader_epoch=0)
    fk, fv = encode_control(M.SnapshotFooterRecord(version=0), 0)
    footer = RecordBatch.build(len(pairs), [fv], keys=[fk], control=True, timestamp_ms=now_ms,
                               leader_epoch=0)
    return encode_batch(first) + encode_batch(footer)


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# ------------------------------------------------------------------ info


@dataclass
class StorageInfo:
    """What ``info`` found: the directories, the (first) metadata, the problems."""

    directories: list[str]
    found: list[str] = field(default_factory=list)
    metadata: MetaProperties | None = None
    problems: list[str] = field(default_factory=list)

    def text(self) -> str:
        """Kafka's ``kafka-storage info`` output."""
        if not self.directories:
            return "No directories specified.\n"
        lines: list[str] = []
        if self.found:
            lines.append("Found log directory:" if len(self.found) == 1 else
                         "Found log directories:")
            lines += [f"  {d}" for d in self.found] + [""]
        if self.metadata is not None:
            props = ", ".join(f"{k}={v}" for k, v in sorted(self.metadata.to_properties().items()))
            lines += [f"Found metadata: {{{props}}}", ""]
        if self.problems:
            lines.append("Found problem:" if len(self.problems) == 1 else "Found problems:")
            lines += [f"  {p}" for p in self.problems] + [""]
        return "\n".join(lines) + "\n"


def storage_info(directories: Sequence[str | os.PathLike]) -> StorageInfo:
    """Check each directory as ``kafka-storage info`` does (KRaft mode)."""
    info = StorageInfo(sorted(os.fspath(d) for d in directories))
    for directory in info.directories:
        path = Path(directory)
        if not path.is_dir():
            what = "is not a directory" if path.exists() else "does not exist"
            info.problems.append(f"{directory} {what}")
            continue
        info.found.append(directory)
        if not (path / META_PROPERTIES).exists():
            info.problems.append(f"{directory} is not formatted.")
            continue
        try:
            meta = read_meta_properties(path)
        except MetaPropertiesError as e:
            info.problems.append(f"Error loading {path / META_PROPERTIES}: {e.problem}"
                                 + (f" (key {e.key})" if e.key else ""))
            continue
        if info.metadata is None:
            info.metadata = meta
        elif info.metadata.cluster_id != meta.cluster_id:
            info.problems.append("Mismatched cluster IDs between storage directories.")
        elif info.metadata.node_id != meta.node_id:
            info.problems.append("Mismatched node IDs between storage directories.")
    if info.metadata is not None and info.metadata.version == 0:
        info.problems.append("The kafka configuration file appears to be for a cluster in KRaft "
                             "mode, but the directories are formatted for legacy mode.")
    return info
