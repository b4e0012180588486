"""The facade users hold: a whole KRaft cluster (controllers + brokers) in one process.

>>> c = Cluster(controllers=3, brokers=3, seed=7)        # boots until every broker is RUNNING
>>> c.create_topic("orders", partitions=6, replication_factor=3)
>>> old = c.active_controller
>>> c.faults.kill(old)
>>> c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=10_000)
>>> c.metadata.topic("orders").partitions[0].leader      # the committed metadata image

Everything runs under the simulator's virtual clock, so a 30-second failover takes
milliseconds of wall time, and the same seed replays the same run (``c.trace.digest()``).
Controllers get node ids 1000, 1001, ... (as in Kafka's test harness); brokers 0, 1, ...

Size: this is the one class a test holds, so every public verb lives here, each a few lines
that check their arguments and hand the work to the module that owns it (admin_ops,
voter_ops, faults, views, sim). Splitting it would scatter the surface users read, not
the logic, which is already elsewhere.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .admin import ADMIN_NODE_ID, AdminClientNode
from .admin_ops import AdminOperations
from .config import KEYS as NODE_KEYS
from .config import NodeConfig
from .data_dirs import check_voters, found_controllers, node_dir, read_identity, unformatted_nodes
from .voter_ops import VoterOps
from .errors import ConfigError, KraftError, StorageError
from .handles import BrokerStatus, NodeHandle, node_id
from .metadata import MetadataImage
from .protocol.codegen import Message
from .protocol.error_codes import ErrorCode
from .protocol.records import iter_batches
from .protocol.uuid import Uuid
from .quorum import NetworkControl
from .raft import rpc
from .raft.config import KEYS as RAFT_KEYS, removed_hint
from .raft.config import RaftConfig
from .raft.state import META_PROPERTIES
from .sim import LinkProfile, NoProgress, Simulation
from .sim.errors import NodeStateError
from .sim.process import ProcessState
from .sim.directory_disk import DirectoryDisk
from .sim.facade import SimulationFacade
from .sim.rng import RngTree

if TYPE_CHECKING:
    from .committed import CommittedRecord
    from .views import BrokerFleet, QuorumView

CONTROLLER_ID_BASE = 1000
#: where virtual time 0 sits on the real clock, for record batch timestamps: a fixed instant
#: (2026-01-01T00:00:00Z), so the same seed writes the same bytes; set
#: ``configs={"testkit.log.time.base.ms": ...}`` for another (e.g. the wall clock at build time)
DEFAULT_START_MS = 1_767_225_600_000

_DEFAULTS = {"configs": None, "combined": False, "metadata_version": 29, "wire": True,
             "broker_self_fencing": False, "seed_defaults": False, "features": None,
             "kraft_version": 0, "names": "short", "racks": None, "link": None,
             "fast_forward": True}
STORAGES = ("memory", "tmpdir")
REQUEST_TIMEOUT_MS = 5_000


def split_configs(configs: Mapping[str, object] | None) -> tuple[dict, dict]:
    """Kafka-named settings into (Raft settings, node settings); unknown keys are an error."""
    raft, node = {}, {}
    for key, value in (configs or {}).items():
        if key in RAFT_KEYS:
            raft[key] = value
        elif key in NODE_KEYS:
            node[key] = value
        else:
            known = sorted(set(RAFT_KEYS) | set(NODE_KEYS))
            raise ConfigError(f"unknown configuration key {key!r}{removed_hint(key)}; "
                              f"known keys: {', '.join(known)}")
    return raft, node


class Cluster(VoterOps, SimulationFacade, AdminOperations):
    """``controllers`` controller nodes and ``brokers`` broker nodes, driven by one seed.

    Keyword arguments:

    * ``seed``: every random choice of the run flows from it (same seed, same trace digest);
    * ``storage``: ``"memory"`` or ``"tmpdir"`` (each node's files in Kafka's layout under
      ``data_dir``, a fresh temporary directory unless given);
    * ``configs``: settings by Kafka name (``{"broker.session.timeout.ms": 12000}``);
    * ``seed_defaults``: the seeds' timeouts (18000/3000) instead of released Kafka's (9000/2000);
    * ``broker_self_fencing``: KIP-343 as the seed document proposed it (a broker that cannot reach
      the controller for ``broker.heartbeat.timeout.ms`` fences itself and stops serving). Off by
      default, as in released Kafka, where a cut-off broker serves on until the controller fences
      it and it learns so from the metadata log;
    * ``racks``: a rack per broker (a list) or a number of racks to spread brokers over;
    * ``metadata_version``: the bootstrap metadata.version (level or name; default 4.2-IV1, Kafka
      4.2's latest production level; a non-production level needs
      ``configs={"unstable.feature.versions.enable": True}``);
    * ``features``: other finalized feature levels at bootstrap, as ``kafka-storage format
      --feature`` sets them (``{"eligible.leader.replicas.version": 0}``); unnamed features get
      their default level at that metadata.version;
    * ``wire``: encode every message to Kafka bytes and back (default on);
    * ``combined``: ``process.roles=broker,controller`` on nodes 0..controllers-1 (brokers
      beyond them are broker-only); otherwise controllers are separate nodes 1000, 1001, ...;
    * ``invariants``: check the cluster's safety invariants after every event (default on);
    * ``link``: the network's default :class:`~kraft_testkit.sim.LinkProfile` (latency, loss...);
    * ``boot``: run until a controller is active and every broker is RUNNING before returning
      (default on; :class:`NoProgress` after ``boot_timeout_ms`` of virtual time);
    * ``trace_keep``: how many trace events to keep for ``trace.tail`` (the digest covers all).
    * ``names``: ``"short"`` (``broker-0``, ``rack-0``) or ``"faker"``: realistic hostnames,
      racks and ``cluster.names.topic()`` names from the seed (:mod:`kraft_testkit.names`).
    """

    DEFAULT_TIMEOUT_MS = 30_000

    def __new__(cls, *args: Any, **kwargs: Any) -> "Cluster":
        from .cluster_args import check_cluster_arguments

        check_cluster_arguments(cls.__init__, args, kwargs)  # one ConfigError per bad argument
        return super().__new__(cls)

    def __init__(self, controllers: int = 3, brokers: int = 3, *, seed: int = 0,
                 storage: str = "memory", data_dir: str | os.PathLike | None = None,
                 configs: Mapping[str, object] | None = None, seed_defaults: bool = False,
                 broker_self_fencing: bool = False,
                 racks: Sequence[str] | int | None = None, metadata_version: int | str = 29,
                 wire: bool = True, invariants: bool = True, link: LinkProfile | None = None,
                 boot: bool = True, boot_timeout_ms: int = 60_000, combined: bool = False,
                 trace_keep: int | None = 10_000, names: str = "short",
                 features: Mapping[str, int] | None = None, kraft_version: int = 0,
                 fast_forward: bool = True) -> None:
        from .controller.handlers import build_controller
        from .invariants import ClusterInvariants
        from .node import KraftNode

        # the arguments' types and ranges were checked by __new__ (cluster_args.py)
        self.kraft_version = kraft_version
        if features and "kraft.version" in features:  # `storage format --feature kraft.version=N`
            level = features["kraft.version"]
            if level != kraft_version:  # Kafka's Formatter words it so
                raise ConfigError(
                    f"Cannot set kraft.version to {level!r} "
                    + ("if KIP-853 configuration is present" if kraft_version else
                       "unless KIP-853 configuration is present")
                    + f" (here: kraft_version={kraft_version}). Try removing the feature for "
                      "kraft.version.")
            features = {k: v for k, v in features.items() if k != "kraft.version"}
        if storage not in STORAGES:
            raise ConfigError(f"storage must be one of {', '.join(STORAGES)}, got {storage!r}")
        raft_overrides, node_overrides = split_configs(configs)
        self.raft_config = RaftConfig.from_kafka(raft_overrides)
        if "testkit.log.time.base.ms" not in raft_overrides:  # record timestamps: a real instant
            self.raft_config = replace(self.raft_config, log_time_base_ms=DEFAULT_START_MS)
        if broker_self_fencing:
            node_overrides.setdefault("testkit.broker.self.fencing.enable", True)
        self.config = NodeConfig.from_kafka(node_overrides, seed_defaults=seed_defaults)
        self.storage = storage
        self.combined = combined
        self.data_dir = None
        self._owns_data_dir = storage == "tmpdir" and data_dir is None
        if storage == "tmpdir":
            self.data_dir = os.fspath(data_dir) if data_dir is not None else \
                tempfile.mkdtemp(prefix="kraft-testkit-")
        self.metadata_version = _checked_metadata_version(metadata_version, features,
                                                          self.config)
        # what `kafka-storage format` writes in every node's metadata log directory
        # (Formatter#doFormat); the kit's controllers take the same levels from the arguments
        self._bootstrap_file = _bootstrap_checkpoint(self.metadata_version, features,
                                                     self.config, self.raft_config)
        if "testkit.supported.metadata.version.min" not in node_overrides:
            # below 3.3-IV3 (which 4.x cannot run) the nodes are 3.x software: they announce
            # metadata.version from 3.0-IV1
            from .metadata import feature_versions as FV
            from .metadata import versions as V

            floor = FV.node_minimum_metadata_version(V.get(self.metadata_version).level)
            self.config = replace(self.config, supported_metadata_version_min=floor)
        id_rng = RngTree(seed).child("cluster")
        self.cluster_id = str(Uuid.random(id_rng.child("cluster-id")))
        # combined mode (process.roles=broker,controller): nodes 0..n-1 are controllers too
        base = 0 if combined else CONTROLLER_ID_BASE
        self.controller_ids = [base + i for i in range(controllers)]
        self.broker_ids = list(range(brokers))
        self.roles: dict[int, tuple[str, ...]] = {}
        for n in self.controller_ids:
            self.roles[n] = ("controller",)
        for n in self.broker_ids:
            self.roles[n] = tuple(sorted(self.roles.get(n, ()) + ("broker",)))
        from .names import cluster_names

        self.names = cluster_names(names, seed, self.controller_ids, self.broker_ids, combined)
        self.racks = self.names.racks(racks, self.broker_ids)
        hosts = self.names.hosts if self.names.style != "short" else {}
        self.directory_ids = {n: Uuid.random(id_rng.child("directory", n)) for n in self.roles}
        unformatted: dict[int, StorageError] = {}
        if self.data_dir is not None:  # reopening: the folders say who they belong to
            if os.path.isdir(self.data_dir) and kraft_version == 0:
                check_voters(self.data_dir, self.controller_ids)
            elif os.path.isdir(self.data_dir):  # KIP-853: the voters are in the log
                for n in found_controllers(self.data_dir):
                    if n not in self.roles:
                        self.roles[n] = ("controller",)
                        self.controller_ids.append(n)
                        self.directory_ids[n] = Uuid.random(id_rng.child("directory", n))
            if os.path.isdir(self.data_dir):
                unformatted = unformatted_nodes(self.data_dir, self.roles)
            found_cluster, found_dirs = read_identity(self.data_dir, self.roles)
            self.cluster_id = found_cluster or self.cluster_id
            self.directory_ids.update(found_dirs)
        bootstrap = self.controller_ids[:controllers]  # with kraft.version 1: --initial-controllers
        voters = {c: self.directory_ids[c] for c in bootstrap}
        self._id_rng = id_rng
        from .broker.channel import channel_of

        self.sim = Simulation(seed, link=link, codec=rpc.RaftCodec() if wire else None,
                              trace_keep=trace_keep, channel_of=channel_of)
        shape = [f"controllers={controllers}", f"brokers={brokers}", f"seed={seed}"]
        shape += [f"{k}={v!r}" for k, v in (("configs", configs), ("combined", combined),
                                             ("metadata_version", metadata_version),
                                             ("wire", wire), ("seed_defaults", seed_defaults),
                                             ("broker_self_fencing", broker_self_fencing),
                                             ("features", features),
                                             ("kraft_version", kraft_version),
                                             ("names", names), ("racks", racks), ("link", link),
                                             ("fast_forward", fast_forward))
                  if v != _DEFAULTS[k]]
        self.sim.replay_hint = f"Cluster({', '.join(shape)}) and the same steps"
        self.fast_forward = fast_forward  # run_for warps idle stretches (fastforward/warp.py)
        #: what the warp did so far (stretches, events computed, virtual ms warped, fallbacks)
        self.fast_forward_stats: Counter[str] = Counter()
        self.invariants = ClusterInvariants(self)
        if invariants:
            self.sim.add_invariant(self.invariants, "cluster")

        def factory(ctx):
            if ctx.node_id in unformatted and ctx.disk and META_PROPERTIES not in ctx.disk:
                raise unformatted[ctx.node_id]  # a wiped (empty) disk is formatted again
            return KraftNode(
                ctx, roles=self.roles[ctx.node_id], voters=voters, cluster_id=self.cluster_id,
                raft_config=self.raft_config, config=self.config,
                directory_id=self.directory_ids[ctx.node_id], rack=self.racks.get(ctx.node_id),
                host=hosts.get(ctx.node_id), kraft_version=kraft_version,
                bootstrap_servers=list(self.controller_ids) if kraft_version else None,
                bootstrap_checkpoint=self._bootstrap_file,
                controller_factory=lambda nid, rng: build_controller(
                    nid, rng, cluster_id=self.cluster_id, config=self.config,
                    metadata_version=metadata_version, features_levels=features))

        self._factory = factory
        for n in sorted(self.roles):
            self.sim.add_node(n, factory, disk=self._disk(n))
        self.sim.add_node(ADMIN_NODE_ID, AdminClientNode)
        self._admin: AdminClientNode = self.sim.process(ADMIN_NODE_ID).machine
        self._correlation = 0
        handles = {n: NodeHandle(n, roles, self) for n, roles in sorted(self.roles.items())}
        self.controllers = [handles[n] for n in self.controller_ids]
        self.brokers = [handles[n] for n in self.broker_ids]
        self.faults = ClusterFaults(self)
        self.network = ClusterNetwork(self)
        if boot:  # a node whose files are damaged stays down (failed_nodes); the rest boot
            self.run_until(lambda c: c._booted_brokers_running() and
                           c.active_controller is not None, timeout_ms=boot_timeout_ms)

    def _disk(self, node: int):
        if self.data_dir is None:
            return None
        folder = node_dir(self.data_dir, node, self.roles[node])
        try:
            return DirectoryDisk(folder, self.sim.disk_pieces)
        except OSError as e:  # a read-only or missing parent, a file in the way...
            raise StorageError(folder, f"cannot be created or read: {e.strerror or e}") from None

    @property
    def failed_nodes(self) -> dict[int, StorageError]:
        """Nodes that refused to start because their files are damaged, with the reason."""
        return {n: p.failure for n, p in self.sim.processes.items()
                if p.state.value == "failed" and p.failure is not None}

    def run_for(self, ms: int) -> None:
        """Let ``ms`` virtual milliseconds pass; idle stretches are computed, then materialized
        (kraft_testkit/fastforward/warp.py), unless the cluster was built with
        ``fast_forward=False``, which steps every event."""
        if not self.fast_forward or type(ms) is not int or ms < 0:
            return super().run_for(ms)
        from .fastforward.warp import QuorumWarp
        warp = QuorumWarp(self)
        try:
            warp.run_for(ms)
        finally:
            self.fast_forward_stats.update(warp.stats)
        return None

    def __repr__(self) -> str:
        active = self.active_controller
        return (f"<Cluster seed={self.seed} controllers={self.controller_ids} "
                f"brokers={self.broker_ids} active={None if active is None else active.id} "
                f"now={self.now_ms} ms storage={self.storage}; replay: {self.sim.replay_hint}>")

    # ------------------------------------------------------------- looking

    @property
    def nodes(self) -> list[NodeHandle]:
        return sorted(set(self.controllers) | set(self.brokers), key=lambda h: h.id)

    def node(self, node: NodeHandle | int) -> NodeHandle:
        nid = node_id(node)
        for h in self.nodes:
            if h.id == nid:
                return h
        raise ConfigError(f"no node {nid}; controllers {self.controller_ids}, "
                          f"brokers {self.broker_ids}")

    def controller_node(self, node: NodeHandle | int) -> Any:
        """The running node machine (a :class:`~.node.KraftNode`; None while down)."""
        process = self.sim.process(self.node(node).id)
        return process.machine if process.up else None

    def replica(self, node: NodeHandle | int) -> Any:
        machine = self.controller_node(node)
        return machine.raft if machine is not None else None

    @property
    def active_controller(self) -> NodeHandle | None:
        """The controller that is Raft leader and acts as active controller, or None."""
        best = None
        for h in self.controllers:
            if self.sim.process(h.id).state is not ProcessState.RUNNING:  # a paused leader serves nobody
                continue
            m = self.controller_node(h)
            if m is not None and m.controller.active and m.raft.is_leader:
                if best is None or m.raft.epoch > best[0]:
                    best = (m.raft.epoch, h)
        return best[1] if best else None

    @property
    def metadata(self) -> MetadataImage:
        """The committed metadata image (of the active controller, else the most advanced one)."""
        best = None
        for h in self.controllers:
            m = self.controller_node(h)
            if m is None:
                continue
            img = m.controller.committed
            if best is None or (m.controller.active, img.provenance.offset) > best[0]:
                best = ((m.controller.active, img.provenance.offset), img)
        return best[1] if best else MetadataImage.EMPTY

    def broker(self, node: NodeHandle | int) -> Any:
        """The running node machine of a broker (None while down)."""
        process = self.sim.process(self.node(node).id)
        return process.machine if process.up else None

    def broker_state(self, node: NodeHandle | int) -> "BrokerStatus":
        """What the broker process and the committed metadata say about one broker."""
        nid = node_id(node)
        if nid not in self.broker_ids:
            raise ConfigError(f"no broker {nid}; brokers are {self.broker_ids}")
        reg = self.metadata.cluster.broker(nid)
        b = self.broker(nid)
        return BrokerStatus(
            id=nid, process=self.sim.process(nid).state.value,
            state=b.state_name if b is not None else "NOT_RUNNING",
            registered=reg is not None,
            fenced=reg.fenced if reg is not None else True,
            in_controlled_shutdown=reg.in_controlled_shutdown if reg is not None else False,
            epoch=reg.epoch if reg is not None else -1,
            self_fenced=bool(b is not None and b.self_fenced),
            metadata_offset=b.metadata_offset if b is not None else -1)

    def all_brokers_running(self) -> bool:
        return all((b := self.broker(n)) is not None and b.state_name == "RUNNING"
                   for n in self.broker_ids)

    def _booted_brokers_running(self) -> bool:
        """Boot's condition on the brokers, asked after every event of the boot: every broker
        RUNNING but those that failed to start (``failed_nodes``, asked of that broker alone)."""
        processes = self.sim.processes
        for n in self.broker_ids:
            process = processes[n]
            machine = process.machine if process.up else None
            if machine is None or machine.state_name != "RUNNING":
                if process.failure is None or process.state is not ProcessState.FAILED:
                    return False
        return True

    def describe_quorum(self) -> Message:
        """A DescribeQuorumResponse as the active controller would answer it."""
        active = self.active_controller
        if active is None:
            raise NoProgress("there is no active controller", seed=self.seed, now_ms=self.now_ms,
                             trace_tail=self.trace.tail(20), replay=self.sim.replay_hint)
        return self.replica(active).describe_quorum()

    @property
    def quorum(self) -> "QuorumView":
        """The controllers as a Raft quorum (voters, leader, epoch, high watermark, kill or
        isolate the leader): :class:`~kraft_testkit.views.QuorumView`."""
        from .views import QuorumView

        return QuorumView(self)

    @property
    def fleet(self) -> "BrokerFleet":
        """The brokers as a fleet (states, fenced, leaders per broker, kill, roll, isolate):
        :class:`~kraft_testkit.views.BrokerFleet`."""
        from .views import BrokerFleet

        return BrokerFleet(self)

    def records(self, since: int = 0, *, control: bool = False) -> list["CommittedRecord"]:
        """The committed metadata records from offset ``since`` on (offset, batch epoch,
        timestamp, type, version, value): :func:`kraft_testkit.committed.committed_records`."""
        from .committed import committed_records

        return committed_records(self, since, control=control)

    def wait_brokers_caught_up(self, *, timeout_ms: int = 30_000) -> int:
        """Run until every running broker has applied the metadata committed now (a topic just
        created is then known to every broker's MetadataResponse); returns the offset waited
        for. Brokers learn the log by fetching it, so right after ``create_topic`` a broker
        may still answer UNKNOWN_TOPIC_OR_PARTITION for a moment, as in Kafka."""
        target = self.metadata.offset
        self.run_until(lambda c: all(
            (b := c.broker(n)) is None or c.sim.process(n).state.value != "running"
            or b.metadata_offset >= target for n in c.broker_ids), timeout_ms)
        return target

    def controller_metrics(self, node: NodeHandle | int | None = None) -> Any:
        node = node if node is not None else self.active_controller
        if node is None:
            return None
        if not self.node(node).is_controller:
            raise ConfigError(f"controller_metrics: node {self.node(node).id} is not a "
                              f"controller; controllers are {self.controller_ids}")
        m = self.controller_node(node)
        return m.controller.metrics if m is not None else None

    # ------------------------------------------------------------- running

    def call(self, node: NodeHandle | int, fn: Callable[[Any, int], Any]) -> Any:
        """Call ``fn(machine, now_ms)`` on a running node, then apply what the node asks for."""
        nid = self.node(node).id
        if not callable(fn):
            from .arg_checks import bad
            raise bad("call", "fn", fn, "a callable fn(machine, now_ms)")
        process = self.sim.process(nid)
        if process.state.value != "running":
            raise NodeStateError(f"node {nid} is {process.state.value}, not running")
        now = process.clock_ms
        result = fn(process.machine, now)
        process._apply(process.machine.flush(now))  # noqa: SLF001 (the simulator's applier)
        if self.sim.check_invariants:
            self.sim.check_now()
        return result

    # ------------------------------------------------------------- admin requests

    def request(self, body: Message, *, to: NodeHandle | int | None = None,
                timeout_ms: int = 30_000) -> Message:
        """Send a controller RPC from the admin client and return its response.

        Without ``to`` it goes to the active controller and is retried (like Kafka's admin
        client) on NOT_CONTROLLER and on timeouts until ``timeout_ms`` of virtual time passed.
        """
        from .controller.quorum_controller import HANDLERS

        if to is None and type(body) not in HANDLERS:
            raise ConfigError(
                f"{type(body).__name__} is not a controller RPC (the controller answers "
                f"{', '.join(sorted(t.__name__ for t in HANDLERS))}); brokers answer "
                "MetadataRequest: send it with to=<broker>")
        deadline = self.now_ms + timeout_ms
        while True:
            dest = node_id(to) if to is not None else None
            if dest is None:
                self.run_until(lambda c: c.active_controller is not None,
                               max(1, deadline - self.now_ms))
                dest = self.active_controller.id
            self._correlation = (self._correlation + 1) & 0x7FFFFFFF
            cid = self._correlation
            self.sim.network.send(ADMIN_NODE_ID, dest, rpc.request(cid, body))
            wait = min(REQUEST_TIMEOUT_MS, max(1, deadline - self.now_ms))
            try:
                self.run_until(lambda c: cid in c._admin.responses, wait)
            except NoProgress:
                if to is not None or self.now_ms >= deadline:
                    raise
                continue
            _, response = self._admin.responses.pop(cid)
            if to is None and _not_controller(response) and self.now_ms < deadline:
                self.run_for(self.raft_config.retry_backoff_ms)
                continue
            return response


    # ------------------------------------------------------------- resources

    def close(self) -> None:
        """Remove the temporary data directory this cluster created (``storage="tmpdir"``
        without ``data_dir``); a directory the caller gave is left alone."""
        if self._owns_data_dir and self.data_dir is not None:
            import shutil

            shutil.rmtree(self.data_dir, ignore_errors=True)
            self._owns_data_dir = False

    def wall_clock(self, start: Any = None, **options: Any) -> Any:
        """A context manager: ``time.time()``, ``datetime.now()``... in user code follow this
        cluster's virtual time, on the record timestamps' clock unless ``start`` says where
        (freezegun; see :mod:`kraft_testkit.timewarp`)."""
        from .timewarp import wall_clock

        return wall_clock(self, start, **options)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- lifecycle operations

    def controlled_shutdown(self, broker: NodeHandle | int, *, timeout_ms: int = 30_000) -> None:
        """Shut a broker down the KIP-631 way: it asks to shut down, the controller moves its
        leaders away, and it stops once told it may (then its process is stopped)."""
        nid = node_id(broker)
        if nid not in self.broker_ids:
            raise ConfigError(f"no broker {nid}; brokers are {self.broker_ids}")
        self.call(nid, lambda m, now: m.begin_controlled_shutdown(now))
        self.run_until(lambda c: (b := c.broker(nid)) is None or
                       b.state_name in ("SHUTTING_DOWN", "NOT_RUNNING"), timeout_ms)
        if self.sim.process(nid).up:
            self.sim.stop(nid)

    def dump_log(self, path: str | os.PathLike) -> int:
        """Write the committed metadata log (from the active controller, else the most advanced
        replica) as a Kafka log segment file; returns the number of batches written."""
        best = None
        for h in self.controllers:
            r = self.replica(h)
            if r is not None and (best is None or r.hw > best.hw):
                best = r
        if not isinstance(path, (str, os.PathLike)):
            from .arg_checks import bad
            raise bad("dump_log", "path", path, "a file path (str or os.PathLike)")
        if best is None:
            raise NodeStateError("no controller is running: nothing to dump")
        data = best.log.raw_between(best.log.start_offset, best.hw)
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError as e:
            raise StorageError(os.fspath(path), f"cannot be written: {e.strerror or e}") from None
        return sum(1 for _ in iter_batches(data))


def _not_controller(response: Message) -> bool:
    """NOT_CONTROLLER at the top of a response or in any of its first-level items (CreateTopics
    and others report errors per topic): the admin client retries those elsewhere."""
    if getattr(response, "error_code", 0) == ErrorCode.NOT_CONTROLLER:
        return True
    for value in response:
        if isinstance(value, tuple):
            for item in value:
                if isinstance(item, Message) and \
                        getattr(item, "error_code", 0) == ErrorCode.NOT_CONTROLLER:
                    return True
    return False


def _checked_metadata_version(metadata_version: int | str, features=None,
                              config: NodeConfig | None = None) -> int | str:
    """A bootstrap metadata.version (and feature levels) the controller can write, else a
    ConfigError naming it."""
    from .controller.bootstrap import BootstrapMetadata

    try:
        BootstrapMetadata.from_version(
            metadata_version, features,
            unstable=bool(config and config.unstable_feature_versions_enable))
    except (KraftError, ValueError, KeyError) as e:
        from .metadata import versions as V

        raise ConfigError(
            f"metadata_version {metadata_version!r} cannot bootstrap a cluster ({e}); use a "
            f"level {V.MINIMUM_BOOTSTRAP_VERSION}..{V.LATEST_PRODUCTION} or a name from "
            f"{V.BY_LEVEL[V.MINIMUM_BOOTSTRAP_VERSION].name} to "
            f"{V.BY_LEVEL[V.LATEST_PRODUCTION].name}") from None
    return metadata_version


def _bootstrap_checkpoint(metadata_version: int | str, features, config: NodeConfig,
                          raft_config: RaftConfig) -> bytes:
    """``bootstrap.checkpoint`` as ``kafka-storage format`` writes it for these levels
    (kraft_testkit/tools/storage_tool.py#bootstrap_checkpoint), stamped at virtual 0."""
    from .controller.bootstrap import BootstrapMetadata

    return BootstrapMetadata.from_version(
        metadata_version, features, "format command",
        unstable=config.unstable_feature_versions_enable).checkpoint(raft_config.log_time_base_ms)


class ClusterFaults:
    """Node faults at the current virtual instant: ``cluster.faults.kill(cluster.brokers[0])``.

    Nodes are handles or ids. ``stop`` is graceful: an active controller resigns first
    (EndQuorumEpoch), a broker goes through controlled shutdown when it can.
    """

    def __init__(self, cluster: Cluster) -> None:
        self._c = cluster
        self._sim = cluster.sim

    def kill(self, node: NodeHandle | int) -> None:
        """Crash: what was not fsynced is lost."""
        self._sim.kill(self._c.node(node).id)

    def start(self, node: NodeHandle | int) -> None:
        """Start a down node over its disk; :class:`StorageError` (and the node stays down)
        when its files are damaged."""
        self._sim.start(self._c.node(node).id)

    def restart(self, node: NodeHandle | int, *, graceful: bool = False) -> None:
        from .arg_checks import a_bool
        nid = self._c.node(node).id
        a_bool("faults.restart", "graceful", graceful)
        if graceful and self._sim.process(nid).up:
            self.stop(nid)
        self._sim.restart(nid)

    def stop(self, node: NodeHandle | int, *, timeout_ms: int = 30_000) -> None:
        """Graceful stop. A broker shuts down in a controlled way (leaders move first) when an
        active controller answers within ``timeout_ms``; a leading controller resigns first."""
        from .arg_checks import an_int
        nid = self._c.node(node).id
        an_int("faults.stop", "timeout_ms", timeout_ms, 0)
        process = self._sim.process(nid)
        if process.up and process.state.value == "running":
            machine = process.machine
            if nid in self._c.broker_ids and self._c.config.controlled_shutdown_enable:
                self._c.controlled_shutdown(nid, timeout_ms=timeout_ms)
            elif getattr(machine, "raft", None) is not None and machine.raft.is_leader:
                self._c.call(nid, lambda m, now: m.raft.resign(now))
        if self._sim.process(nid).up:
            self._sim.stop(nid)

    def pause(self, node: NodeHandle | int) -> None:
        self._sim.pause(self._c.node(node).id)

    def resume(self, node: NodeHandle | int) -> None:
        self._sim.resume(self._c.node(node).id)

    def replace_disk(self, node: NodeHandle | int, *, start: bool = True) -> None:
        """KIP-853's motivating case: a failed disk replaced by an empty one, formatted with
        neither flag: the same node id with a new directory id, an observer until
        ``remove_voter`` (old directory id) and ``add_voter`` (new one) make it a voter again."""
        self.wipe_disk(node, start=start)

    def wipe_disk(self, node: NodeHandle | int, *, start: bool = True) -> None:
        """Kill the node if it runs, give it an empty disk, and (by default) start it again."""
        from .arg_checks import a_bool
        nid = self._c.node(node).id
        a_bool("faults.wipe_disk", "start", start)
        if self._sim.process(nid).up:
            self._sim.kill(nid)
        self._sim.wipe(nid)
        if start:
            self._sim.start(nid)

    def skew(self, node: NodeHandle | int, skew_ms: int) -> None:
        self._sim.set_skew(self._c.node(node).id, skew_ms)

    def crash_in_writes(self, node: NodeHandle | int, ops: int = 0) -> None:
        """Arm a crash in the middle of a write: the node dies after ``ops`` more disk
        operations, before that step is synced or anything it meant to send leaves (a kill in
        the middle of a snapshot or a segment roll)."""
        self._sim.crash_in_writes(self._c.node(node).id, ops)

    def damage(self, node: NodeHandle | int, file: str, offset: int, *, xor: int = 0xFF) -> None:
        """Flip bits of the byte at ``offset`` of ``file`` (a name such as
        ``"__cluster_metadata-0/00000000000000000000.log"``) on a down node's disk: bit rot."""
        self._sim.damage(self._c.node(node).id, file, offset, xor)


class ClusterNetwork(NetworkControl):
    """The cluster's network; nodes may be given as handles (``c.brokers[0]``) or ids, and
    must exist (an unknown id is a ConfigError naming the known ones)."""

    def __init__(self, cluster: "Cluster") -> None:
        super().__init__(cluster)
        self._cluster = cluster

    def _id(self, node: Any) -> int:
        return self._cluster.node(node).id

    def _ids(self, nodes: Any) -> Any:
        if isinstance(nodes, (NodeHandle, int)):
            return self._id(nodes)
        if not isinstance(nodes, (list, tuple, set, frozenset, range)):
            raise ConfigError(f"network: {nodes!r:.60} is not allowed; a group of nodes is a "
                              f"node (a handle or an id) or a list or set of them")
        return [self._id(n) for n in nodes]


    def partition(self, *groups: Any) -> Any:
        return super().partition(*(self._ids(g) for g in groups))

    def isolate(self, node: Any) -> Any:
        return super().isolate(self._id(node))

    def one_way(self, srcs: Any, dsts: Any) -> Any:
        return super().one_way(self._ids(srcs), self._ids(dsts))

    def _endpoints(self, kwargs: dict) -> dict:
        """``src=`` and ``dst=`` of a filter as ids (a handle was a bare TypeError)."""
        return {k: self._ids(v) if k in ("src", "dst") and v is not None else v
                for k, v in kwargs.items()}

    def drop(self, match: Any = None, **kwargs: Any) -> Any:
        return super().drop(match, **self._endpoints(kwargs))

    def delay(self, ms: int, match: Any = None, **kwargs: Any) -> Any:
        return super().delay(ms, match, **self._endpoints(kwargs))

    def hold(self, match: Any = None, **kwargs: Any) -> Any:
        return super().hold(match, **self._endpoints(kwargs))
