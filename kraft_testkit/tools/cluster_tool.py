"""``kraft-testkit cluster cluster-id | unregister | describe-quorum``, as functions.

After Kafka's ``kafka-cluster.sh`` (``ClusterTool``: ``Cluster ID: ...``, ``Broker N is no
longer registered.``) and ``kafka-metadata-quorum.sh describe --status | --replication``. The
target is a running :class:`~kraft_testkit.cluster.Cluster` (the CLI boots one with ``--demo
SEED``) or a data directory: a kit cluster's (``controller-1000/``, ``broker-0/``...), one
node's, or one Kafka wrote. From files, the quorum is read from each node's ``quorum-state``,
``meta.properties`` and log; the high watermark is not stored on disk, so it is computed as the
offset a majority of the voters' logs reach. ``unregister`` on a kit cluster's data directory
reopens the cluster on it to commit the record.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ..errors import KraftError
from ..protocol.errors import DecodeError
from ..protocol.log import iter_log
from ..protocol.uuid import Uuid
from ..storage.meta_properties import FILE_NAME as META_PROPERTIES
from ..storage.meta_properties import MetaProperties, read_meta_properties

METADATA_DIR = "__cluster_metadata-0"


class ClusterToolError(KraftError, ValueError):
    """A target the cluster tool cannot answer for; says which file or node and why."""


@dataclass
class NodeFiles:
    """What one node directory tells about the quorum."""

    path: Path
    meta: MetaProperties | None
    leader_id: int = -1
    epoch: int = -1
    voted_id: int = -1
    voters: list[int] = field(default_factory=list)
    log_end_offset: int = 0
    data_version: int = 0  # of quorum-state: 1 means kraft.version 1 (voters in the log)

    @property
    def node_id(self) -> int | None:
        return None if self.meta is None else self.meta.node_id


@dataclass
class DirectoryTarget:
    """A data directory read as a cluster: one :class:`NodeFiles` per node directory."""

    root: Path
    nodes: list[NodeFiles]


Target = Union["DirectoryTarget", Any]  # or a Cluster


def open_target(directory: str | os.PathLike | None = None, *, demo_seed: int | None = None):
    """A directory, read now; or an in-process 3 + 3 cluster booted with ``demo_seed``."""
    if demo_seed is not None:
        from ..cluster import Cluster

        return Cluster(3, 3, seed=demo_seed)
    if directory is None:
        raise ClusterToolError("give a data directory or a demo seed")
    return read_directory(directory)


def node_directories(path: str | os.PathLike) -> list[Path]:
    """The node directories under ``path`` (itself, its parent for a ``__cluster_metadata-0``
    directory, or its children that hold a meta.properties or a metadata log)."""
    root = Path(path)
    if not root.is_dir():
        what = "not a directory" if root.exists() else "does not exist"
        raise ClusterToolError(f"{root}: {what}")
    if root.name == METADATA_DIR:
        return [root.parent]

    def is_node(p: Path) -> bool:
        return (p / META_PROPERTIES).is_file() or (p / METADATA_DIR).is_dir()

    if is_node(root):
        return [root]
    found = sorted(p for p in root.iterdir() if p.is_dir() and is_node(p))
    if not found:
        raise ClusterToolError(f"{root}: no node directory here (none holds {META_PROPERTIES} "
                               f"or {METADATA_DIR}/)")
    return found


def read_directory(path: str | os.PathLike) -> DirectoryTarget:
    """Read every node directory under ``path``; a damaged file is an error naming it."""
    from ..raft.state import decode_quorum_state

    nodes = []
    for d in node_directories(path):
        meta = read_meta_properties(d) if (d / META_PROPERTIES).is_file() else None
        node = NodeFiles(d, meta)
        qs = d / METADATA_DIR / "quorum-state"
        if qs.is_file():
            raw = qs.read_bytes()
            try:
                state = decode_quorum_state(raw)
                obj = json.loads(raw)
            except (KraftError, ValueError) as e:
                raise ClusterToolError(f"{qs}: {e}") from None
            node.leader_id, node.epoch, node.voted_id = state.leader_id, state.epoch, state.voted_id
            node.voters = sorted(int(v.get("voterId", -1)) for v in obj.get("currentVoters") or ())
            node.data_version = obj.get("data_version", 0)  # 0 or 1: decode checked it
            if node.data_version == 1:  # kraft.version 1: the voters are in the log
                node.voters = _log_voters(d / METADATA_DIR)
        node.log_end_offset = _log_end_offset(d / METADATA_DIR)
        nodes.append(node)
    return DirectoryTarget(Path(path), nodes)


def _log_voters(metadata_dir: Path) -> list[int]:
    """The latest voter set (KIP-853): the newest snapshot's header, then every VotersRecord of
    the segments after it (segments roll, so a change may sit in any of them)."""
    from ..protocol.records import iter_batches
    from ..raft.voters import VoterHistory, snapshot_voters

    history = VoterHistory()
    snapshots = sorted(metadata_dir.glob("*.checkpoint"))
    after = int(snapshots[-1].name.split("-")[0]) if snapshots else 0
    try:
        if snapshots:
            history.reset(*snapshot_voters(snapshots[-1].read_bytes()))
        for segment in sorted(metadata_dir.glob("*.log")):
            for _, batch in iter_batches(segment.read_bytes(), allow_truncated_tail=True):
                if batch.base_offset >= after:  # below it, the snapshot's header has it
                    history.add_batch(batch)
    except DecodeError as e:
        raise ClusterToolError(f"{metadata_dir}: {e}") from None
    return sorted(history.latest) if history.latest is not None else []


def _log_end_offset(metadata_dir: Path) -> int:
    """The offset after the last whole batch of the newest segment that holds one (a roll
    leaves the newest empty; a torn tail is ignored), or the newest snapshot's end."""
    segments = sorted(metadata_dir.glob("*.log")) if metadata_dir.is_dir() else []
    end = 0
    for name in metadata_dir.glob("*.checkpoint") if metadata_dir.is_dir() else ():
        end = max(end, int(name.name.split("-")[0]))
    for segment in reversed(segments):
        last = None
        try:
            for b in iter_log(segment.read_bytes(), decode=False, allow_truncated_tail=True):
                last = b.batch.last_offset + 1
        except DecodeError as e:
            raise ClusterToolError(f"{segment}: {e}") from None
        if last is not None:
            return max(end, last)
    return end


# ------------------------------------------------------------------ cluster-id


def cluster_id(target: Target) -> str:
    """The cluster id: the cluster's own, or the one every node directory's meta.properties
    agrees on (a mismatch is an error naming both files)."""
    if not isinstance(target, DirectoryTarget):
        return target.cluster_id
    seen: dict[str, Path] = {}
    for node in target.nodes:
        if node.meta is not None:
            seen.setdefault(node.meta.cluster_id, node.path / META_PROPERTIES)
    if not seen:
        raise ClusterToolError(f"{target.root}: no {META_PROPERTIES} found: the directory was "
                               "not formatted (kraft-testkit storage format)")
    if len(seen) > 1:
        (a, pa), (b, pb) = list(seen.items())[:2]
        raise ClusterToolError(f"mismatched cluster ids: {pa} says {a}, {pb} says {b}")
    return next(iter(seen))


def cluster_id_text(target: Target) -> str:
    return f"Cluster ID: {cluster_id(target)}"


# ------------------------------------------------------------------ unregister


def unregister(target: Target, broker_id: int) -> str:
    """Unregister a broker through the active controller (UnregisterBroker, KIP-631): its
    registration leaves the metadata.

    On a kit cluster's data directory, the cluster is reopened on it (the broker being removed
    stays down), the controllers commit the UnregisterBrokerRecord, and the files keep it.
    """
    if isinstance(target, DirectoryTarget):
        cluster = reopen_kit_cluster(target, keep_down=(broker_id,))
        try:
            cluster.unregister_broker(broker_id)
            committed = cluster.metadata.offset
            up = [b for b in cluster.broker_ids if b != broker_id]
            cluster.run_until(  # every node's files hold the record before we stop them
                lambda c: all(c.broker_state(b).metadata_offset >= committed for b in up) and
                all((r := c.replica(h)) is not None and r.log.end_offset > committed
                    for h in c.controllers), timeout_ms=60_000)
        finally:
            cluster.close()
    else:
        target.unregister_broker(broker_id)
    return f"Broker {broker_id} is no longer registered."


_KIT_NODE = re.compile(r"^(controller|broker|combined)-(\d+)$")


def reopen_kit_cluster(target: DirectoryTarget, *, keep_down: tuple[int, ...] = (),
                       kraft_version: int = 0):
    """A :class:`~kraft_testkit.cluster.Cluster` reopened on a kit cluster's data directory
    (``controller-1000/``, ``broker-0/``... as ``storage="tmpdir"`` lays them out), booted
    until a controller is active; the nodes in ``keep_down`` are not started."""
    from ..cluster import CONTROLLER_ID_BASE, Cluster

    kinds: dict[str, list[int]] = {"controller": [], "broker": [], "combined": []}
    for node in target.nodes:
        m = _KIT_NODE.match(node.path.name)
        if m is None or node.path.parent != target.root:
            raise ClusterToolError(
                f"{target.root}: not a kit cluster's data directory ({node.path.name} is not "
                "controller-N, broker-N or combined-N): only those can be reopened")
        kinds[m.group(1)].append(int(m.group(2)))
    combined = sorted(kinds["combined"])
    controllers = combined or sorted(kinds["controller"])
    brokers = sorted(kinds["broker"] + combined)
    base = 0 if combined else CONTROLLER_ID_BASE
    if not controllers or controllers != list(range(base, base + len(controllers))) or \
            brokers != list(range(len(brokers))):
        raise ClusterToolError(f"{target.root}: the node folders are not a kit cluster's "
                               f"(controllers {controllers}, brokers {brokers})")
    cluster = Cluster(len(controllers), len(brokers), storage="tmpdir", data_dir=target.root,
                      combined=bool(combined), boot=False, kraft_version=kraft_version)
    for n in keep_down:
        if n not in cluster.broker_ids:
            raise ClusterToolError(f"{target.root}: no broker {n} here; brokers {brokers}")
        cluster.faults.kill(n)
    cluster.run_until(lambda c: c.active_controller is not None, timeout_ms=60_000)
    return cluster


# ------------------------------------------------------------------ describe-quorum


@dataclass(frozen=True)
class ReplicaRow:
    node_id: int
    directory_id: Uuid | None
    log_end_offset: int
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    status: str = "Follower"


@dataclass(frozen=True)
class QuorumDescription:
    """What ``kafka-metadata-quorum describe`` shows, from a running cluster or from files."""

    cluster_id: str
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaRow, ...]
    observers: tuple[ReplicaRow, ...]
    now_ms: int = -1  # the leader's clock (a running cluster); -1 from files
    endpoints: dict[int, tuple[str, ...]] = field(default_factory=dict)  # KIP-853 voters

    @property
    def max_follower_lag(self) -> int:
        ends = [r.log_end_offset for r in self.voters + self.observers]
        leader = next((r.log_end_offset for r in self.voters if r.node_id == self.leader_id),
                      max(ends, default=0))
        return max((leader - e for e in ends), default=0)

    def status_text(self) -> str:
        def voter(r: ReplicaRow) -> str:
            d = "" if r.directory_id is None else f', "directoryId": "{r.directory_id}"'
            eps = ", ".join(f'"{e}"' for e in self.endpoints.get(r.node_id, ()))
            return f'{{"id": {r.node_id}{d}, "endpoints": [{eps}]}}'

        def observer(r: ReplicaRow) -> str:
            d = "" if r.directory_id is None else f', "directoryId": "{r.directory_id}"'
            return f'{{"id": {r.node_id}{d}}}'

        caught = [r.last_caught_up_ms for r in self.voters if r.node_id != self.leader_id]
        lag_ms = -1  # unknown from files: no fetch times are stored
        if self.now_ms >= 0:
            lag_ms = 0 if not caught else (self.now_ms - min(caught) if min(caught) >= 0 else -1)
        rows = [("ClusterId", self.cluster_id), ("LeaderId", self.leader_id),
                ("LeaderEpoch", self.leader_epoch), ("HighWatermark", self.high_watermark),
                ("MaxFollowerLag", self.max_follower_lag), ("MaxFollowerLagTimeMs", lag_ms),
                ("CurrentVoters", "[" + ", ".join(voter(r) for r in self.voters) + "]"),
                ("CurrentObservers", "[" + ", ".join(observer(r) for r in self.observers) + "]")]
        return "\n".join(f"{k + ':':<24}{v}" for k, v in rows)

    def replication_text(self) -> str:
        head = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                "LastCaughtUpTimestamp", "Status")
        leader_end = next((r.log_end_offset for r in self.voters if r.node_id == self.leader_id),
                          self.high_watermark)
        body = [(str(r.node_id), str(r.directory_id or "-"), str(r.log_end_offset),
                 str(max(leader_end - r.log_end_offset, 0)), str(r.last_fetch_ms),
                 str(r.last_caught_up_ms), r.status) for r in self.voters + self.observers]
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                         for row in [head, *body])


def describe_quorum(target: Target) -> QuorumDescription:
    """The quorum as the active controller reports it, or as the files show it."""
    if isinstance(target, DirectoryTarget):
        return _describe_files(target)
    resp = target.describe_quorum()
    part = resp.topics[0].partitions[0]

    def rows(states, voter: bool) -> tuple[ReplicaRow, ...]:
        return tuple(ReplicaRow(
            s.replica_id, s.replica_directory_id, s.log_end_offset, s.last_fetch_timestamp,
            s.last_caught_up_timestamp,
            ("Leader" if s.replica_id == part.leader_id else "Follower") if voter else "Observer")
            for s in states)

    return QuorumDescription(target.cluster_id, part.leader_id, part.leader_epoch,
                             part.high_watermark, rows(part.current_voters, True),
                             rows(part.observers, False), target.now_ms,
                             {n.node_id: tuple(f"{li.name}://{li.host}:{li.port}"
                                               for li in n.listeners) for n in resp.nodes})


def _describe_files(target: DirectoryTarget) -> QuorumDescription:
    states = [n for n in target.nodes if n.epoch >= 0]
    if not states:
        raise ClusterToolError(f"{target.root}: no {METADATA_DIR}/quorum-state found")
    newest = max(states, key=lambda n: (n.epoch, n.leader_id >= 0))
    voter_ids = newest.voters
    by_id = {n.node_id: n for n in target.nodes if n.node_id is not None}
    if len(target.nodes) == 1 and target.nodes[0].node_id is None and voter_ids:
        by_id = {}  # one node without meta.properties: which voter it is, the files do not say

    def row(node_id: int, status: str) -> ReplicaRow:
        n = by_id.get(node_id)
        return ReplicaRow(node_id, None if n is None or n.meta is None else n.meta.directory_id,
                          -1 if n is None else n.log_end_offset, status=status)

    voters = tuple(row(v, "Leader" if v == newest.leader_id else "Follower") for v in voter_ids)
    observers = tuple(row(i, "Observer") for i in sorted(by_id) if i not in voter_ids)
    ends = sorted((r.log_end_offset for r in voters), reverse=True)
    majority = len(voters) // 2 + 1
    hw = ends[majority - 1] if len(ends) >= majority and ends[majority - 1] >= 0 else -1
    try:
        cid = cluster_id(target)
    except ClusterToolError:
        cid = "-"
    return QuorumDescription(cid, newest.leader_id, newest.epoch, hw, voters, observers)


def describe_quorum_text(target: Target, *, replication: bool = False) -> str:
    d = describe_quorum(target)
    return d.replication_text() if replication else d.status_text()
