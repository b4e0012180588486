"""A KRaft node, as ``process.roles`` makes it: controller, broker, or both (combined mode).

Every node runs one Raft replica of ``__cluster_metadata``: a voter on controllers, an observer
on broker-only nodes. What sits on top depends on the roles:

* **controller**: the :class:`~.controller.quorum_controller.QuorumController`, the replica's
  listener, which turns controller RPCs into records and appends them through the replica;
* **broker**: a :class:`~.broker.node.MetadataListener` replaying the committed log into the
  broker's image, and the :class:`~.broker.logic.BrokerLogic` (registration, heartbeats, ISR).

Routing: controller RPCs to the controller, the broker's own traffic (its answers, replica
fetches) to the broker logic, everything else (Vote, Fetch of the metadata log, ...) to Raft.
After each event the node runs the parts' due work, flushes the replica and returns one
:class:`~.sim.node.Effects` with the earliest wake-up of all parts.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from .broker.lifecycle import APPROVED_SHUTDOWN
from .broker.logic import BrokerLogic
from .broker.state import BrokerState
from .broker.metadata_view import DEFAULT_LISTENER
from .broker.node import MetadataListener
from .config import NodeConfig
from .controller.quorum_controller import HANDLERS, QuorumController
from .metadata import MetadataImage
from .metadata import versions as V
from .metadata.registrations import Endpoint
from .metadata.snapshot_generator import SnapshotGenerator
from .protocol import messages as M
from .protocol.frames import encode_record
from .protocol.records import RecordBatch
from .protocol.uuid import Uuid
from .raft import rpc
from .raft.config import RaftConfig
from .raft.replica import RaftReplica
from .raft.snapshot import Snapshot
from .raft.voters import default_endpoints
from .sim.node import NEVER, Delete, DiskView, Effects, NodeContext, Replace

ROLES = (("controller",), ("broker",), ("broker", "controller"))


class FanOutListener:
    """Hands what Raft commits to several listeners, then asks the node's SnapshotGenerator
    (Kafka runs one on every node, broker or controller) whether to snapshot the image."""

    def __init__(self, *listeners: object, generator: SnapshotGenerator | None = None,
                 image: Callable[[], MetadataImage] | None = None) -> None:
        self.listeners = [lst for lst in listeners if lst is not None]
        self.generator = generator
        self.image = image
        self.now_ms = 0

    def handle_commit(self, batches: Sequence[RecordBatch]) -> Sequence[bytes] | None:
        snapshot = None
        for lst in self.listeners:
            result = lst.handle_commit(batches)
            if snapshot is None:
                snapshot = result
        if snapshot is None and self.generator is not None and self.image is not None:
            image = self.image()
            if self.generator.on_commit(batches, self.now_ms, image.in_transaction):
                snapshot = [encode_record(r) for r in image.write()]
                for lst in self.listeners:
                    if hasattr(lst, "note_snapshot"):
                        lst.note_snapshot(batches[-1].last_offset)
        return snapshot

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        if self.generator is not None:
            self.generator.reset(self.now_ms)
        for lst in self.listeners:
            lst.handle_load_snapshot(snapshot)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        for lst in self.listeners:
            lst.handle_leader_change(leader_id, epoch)


PARTITION_METADATA = "partition.metadata"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"  # Kafka's clean-shutdown file, with the broker epoch
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"  # Kafka's BootstrapDirectory (format writes it)
_METADATA_DIR = "__cluster_metadata-0/"


def partition_metadata(topic_id: Uuid) -> bytes:
    """The ``<topic>-<partition>/partition.metadata`` file Kafka keeps in each replica's dir."""
    return f"version: 0\ntopic_id: {topic_id}\n".encode()


def _clean_shutdown_epoch(data: bytes | None) -> int:
    """The broker epoch in a clean-shutdown file, -1 when there is none (or it is unreadable)."""
    if not data:
        return -1
    import json

    try:
        return int(json.loads(data).get("brokerEpoch", -1))
    except (ValueError, TypeError, AttributeError):
        return -1


def local_replicas_on_disk(disk: DiskView) -> list[tuple[Uuid, str, int]]:
    """(topic id, topic, partition) of every replica directory a broker's disk holds."""
    found = []
    for name, data in disk.items():
        folder, _, leaf = name.rpartition("/")
        if leaf != PARTITION_METADATA or name.startswith(_METADATA_DIR) or "-" not in folder:
            continue
        topic, _, partition = folder.rpartition("-")
        fields = dict(line.split(": ", 1) for line in data.decode().splitlines() if ": " in line)
        if partition.isdigit() and "topic_id" in fields:
            found.append((Uuid.parse(fields["topic_id"]), topic, int(partition)))
    return sorted(found, key=lambda r: (r[1], r[2]))


_NONE: list = []  # no disk op (read only: callers add it to their own lists)


class ControllerRegistrar:
    """A controller announcing itself to the active controller (Kafka's
    ControllerRegistrationManager): from metadata.version 3.7-IV0 on, once its incarnation is
    not in the committed image, it sends ControllerRegistration and retries until it is."""

    RETRY_MS = 1_000

    def __init__(self, node_id: int, rng: random.Random, host: str | None = None,
                 config: NodeConfig | None = None) -> None:
        self.node_id = node_id
        self.host = host or f"controller-{node_id}"
        self.config = config if config is not None else NodeConfig()
        self.incarnation_id = Uuid.random(rng)
        self._cid = 0
        self._in_flight: tuple[int, int] | None = None  # (correlation id, sent at)

    def poll(self, image: MetadataImage, leader: int | None, now_ms: int) -> list:
        reg = image.cluster.controllers.get(self.node_id)
        if reg is not None and reg.incarnation_id == self.incarnation_id:
            return []  # registered (asked after every event of a controller: this first)
        mv = image.metadata_version
        if leader is None or mv is None or not V.is_controller_registration_supported(mv):
            return []
        if self._in_flight is not None and now_ms - self._in_flight[1] < self.RETRY_MS:
            return []
        self._cid += 1
        self._in_flight = (self._cid, now_ms)
        from .controller.features import supported_ranges_of

        R = M.ControllerRegistrationRequest
        body = R(controller_id=self.node_id, incarnation_id=self.incarnation_id,
                 zk_migration_ready=False,
                 listeners=[R.Listener(name="CONTROLLER", host=self.host,
                                       port=9093, security_protocol=0)],
                 features=[R.Feature(name=name, min_supported_version=low,
                                     max_supported_version=high)
                           for name, (low, high) in supported_ranges_of(self.config).items()])
        return [(leader, rpc.request(self._cid, body))]

    def handles(self, msg: object) -> bool:
        return isinstance(getattr(msg, "body", None), M.ControllerRegistrationResponse)

    def on_response(self, msg: object, now_ms: int) -> None:
        if self._in_flight is not None and msg.correlation_id == self._in_flight[0]:
            # success or not, the committed image says whether to try again (after RETRY_MS)
            if msg.body.error_code:
                self._in_flight = (self._in_flight[0], now_ms)


class KraftNode:
    """Simulator node for one ``process.roles`` value (see the module docstring)."""

    def __init__(self, ctx: NodeContext, *, roles: Sequence[str], voters: Mapping[int, Uuid],
                 cluster_id: str, raft_config: RaftConfig, config: NodeConfig,
                 controller_factory: Callable[[int, random.Random], QuorumController] | None = None,
                 directory_id: Uuid | None = None, rack: str | None = None,
                 host: str | None = None, kraft_version: int = 0,
                 bootstrap_servers: Sequence[int] | None = None,
                 bootstrap_checkpoint: bytes | None = None) -> None:
        self.node_id = ctx.node_id
        self._bootstrap_checkpoint = bootstrap_checkpoint  # written when the disk is formatted
        self.roles = tuple(sorted(roles))
        if self.roles not in ROLES:
            raise ValueError(f"process.roles must be controller, broker or both, got {roles}")
        # each part draws its own seed from the node's RNG, always in this order
        self.controller: QuorumController | None = None
        if "controller" in self.roles:
            assert controller_factory is not None
            self.controller = controller_factory(ctx.node_id, random.Random(ctx.rng.getrandbits(64)))
        self.registrar: ControllerRegistrar | None = None
        if self.controller is not None:
            self.registrar = ControllerRegistrar(ctx.node_id, random.Random(ctx.rng.getrandbits(64)),
                                                 host, config)
        logic_rng = random.Random(ctx.rng.getrandbits(64)) if "broker" in self.roles else None
        self.listener = MetadataListener() if "broker" in self.roles else None
        self.snapshots = SnapshotGenerator(config.snapshot_max_new_record_bytes,
                                           config.snapshot_max_interval_ms)
        self._fan_out = FanOutListener(self.controller, self.listener, generator=self.snapshots,
                                       image=self._snapshot_image)
        self.raft = RaftReplica(ctx.node_id, voters=voters, rng=ctx.rng, disk=ctx.disk,
                                config=raft_config, cluster_id=cluster_id,
                                incarnation=ctx.incarnation, listener=self._fan_out,
                                directory_id=directory_id, kraft_version=kraft_version,
                                endpoints=default_endpoints(ctx.node_id, host),
                                can_become_voter=self.controller is not None,
                                bootstrap_servers=bootstrap_servers)
        if self.controller is not None:
            self.controller.raft = self.raft
        self.logic: BrokerLogic | None = None
        if logic_rng is not None:
            local = local_replicas_on_disk(ctx.disk)
            previous_epoch = _clean_shutdown_epoch(ctx.disk.get(CLEAN_SHUTDOWN))
            self.logic = BrokerLogic(ctx.node_id, cluster_id, config, logic_rng, rack=rack,
                                     listeners=None if host is None else (
                                         Endpoint(DEFAULT_LISTENER, host, 9092, 0),),
                                     log_dirs=[self.raft.dir], local_replicas=local,
                                     previous_broker_epoch=previous_epoch)
            self._clean_shutdown_file = CLEAN_SHUTDOWN in ctx.disk
            self._on_disk = {f"{name}-{p}": tid for tid, name, p in local}
        self._raft_wake = NEVER
        self._logic_wake = NEVER
        self._wake: int | None = None
        self._pending: list[Effects | None] = []

    # ------------------------------------------------------------- what tests read

    @property
    def image(self) -> MetadataImage:
        """The broker's committed image (the controller's on a controller-only node)."""
        if self.listener is not None:
            return self.listener.image
        return self.controller.committed  # type: ignore[union-attr]

    def _snapshot_image(self) -> MetadataImage:
        """What this node snapshots: the controller's committed image, else the broker's."""
        if self.controller is not None:
            return self.controller.committed
        return self.listener.image  # type: ignore[union-attr]

    @property
    def state_name(self) -> str:
        return self.logic.state.name if self.logic is not None else "NOT_RUNNING"

    @property
    def self_fenced(self) -> bool:
        return bool(self.logic is not None and self.logic.self_fenced)

    @property
    def metadata_offset(self) -> int:
        return self.image.provenance.offset

    # ------------------------------------------------------------- simulator contract

    def _clock(self, now_ms: int) -> None:
        self._fan_out.now_ms = now_ms
        if self.controller is not None:
            self.controller.now_ms = now_ms  # commits reach it through Raft, without a time

    def on_start(self, now_ms: int) -> Effects | None:
        self._clock(now_ms)
        first = self.raft.on_start(now_ms)
        if self.raft.formatted and self._bootstrap_checkpoint is not None:
            # Kafka's Formatter#doFormat writes bootstrap.checkpoint before meta.properties
            boot = Replace(BOOTSTRAP_CHECKPOINT, self._bootstrap_checkpoint)
            first = Effects([boot]) if first is None else \
                Effects([boot, *first.writes], first.sync, first.sends, first.timer_ms)
        if self.logic is not None:
            self._pending.append(self.logic.start(now_ms))
        return self._finish(first, now_ms)

    def on_message(self, src: int, msg: object, now_ms: int) -> Effects | None:
        self._clock(now_ms)
        if self.controller is not None and isinstance(msg, rpc.Request) and \
                type(msg.body) in HANDLERS:
            self.controller.handle_request(src, msg, now_ms)
            return self._finish(None, now_ms)
        if self.registrar is not None and self.registrar.handles(msg):
            self.registrar.on_response(msg, now_ms)
            return self._finish(None, now_ms)
        if self.logic is not None and self.logic.handles(src, msg):
            self._pending.append(self.logic.on_message(src, msg, now_ms))
            return self._finish(None, now_ms)
        return self._finish(self.raft.on_message(src, msg, now_ms), now_ms)

    def on_timer(self, now_ms: int) -> Effects | None:
        self._clock(now_ms)
        self._wake = None  # it fired: nothing is armed until we ask again
        first = self.raft.on_timer(now_ms) if now_ms >= self._raft_wake else None
        if self.controller is not None:
            self.controller.on_timer(now_ms)
        if self.logic is not None and now_ms >= self._logic_wake:
            self._pending.append(self.logic.on_timer(now_ms))
        return self._finish(first, now_ms)

    # ------------------------------------------------------------- API for the facade

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        if self.logic is None:
            raise ValueError(f"node {self.node_id} is not a broker")
        self._pending.append(self.logic.begin_controlled_shutdown(now_ms))

    def flush(self, now_ms: int) -> Effects | None:
        """Effects of API calls made on the node from outside an event (the facade's calls)."""
        self._clock(now_ms)
        return self._finish(None, now_ms)

    # ------------------------------------------------------------- merging

    def _clean_shutdown(self) -> list:
        """Kafka's clean-shutdown file: written once the broker finished a controlled shutdown
        (its next incarnation sends that epoch as PreviousBrokerEpoch and may register at once),
        deleted once the next incarnation runs."""
        logic = self.logic
        # asked after every event of a broker: the state compared as the enum, not by name
        state = logic.state  # type: ignore[union-attr]
        if self._clean_shutdown_file:
            if state is BrokerState.RUNNING:
                self._clean_shutdown_file = False
                return [Delete(CLEAN_SHUTDOWN)]
        elif state is BrokerState.SHUTTING_DOWN and \
                logic.shutdown_reason == APPROVED_SHUTDOWN:  # type: ignore[union-attr]
            self._clean_shutdown_file = True
            epoch = logic.broker_epoch  # type: ignore[union-attr]
            return [Replace(CLEAN_SHUTDOWN,
                            f'{{"version":0,"brokerEpoch":{epoch}}}'.encode())]
        return _NONE

    def _replica_dirs(self) -> list:
        """Disk ops that make the replica directories match the replicas the broker hosts."""
        # Asked after every event of the broker: the replica manager notes each directory made
        # or gone as it creates or deletes a replica, so this costs what changed, not what is.
        changes = self.logic.replicas.dir_changes  # type: ignore[union-attr]
        if not changes:
            return []
        self.logic.replicas.dir_changes = {}  # type: ignore[union-attr]
        on_disk = self._on_disk
        gone = sorted(name for name, tid in changes.items() if tid is None and name in on_disk)
        made = sorted((name, tid) for name, tid in changes.items()
                      if tid is not None and on_disk.get(name) != tid)
        ops: list = [Delete(f"{name}/{PARTITION_METADATA}") for name in gone]
        ops += [Replace(f"{name}/{PARTITION_METADATA}", partition_metadata(tid))
                for name, tid in made]
        for name in gone:
            del on_disk[name]
        for name, tid in made:
            on_disk[name] = tid
        return ops

    def _finish(self, first: Effects | None, now_ms: int) -> Effects | None:
        # after every event of the node: no list of effects, and each part only when present
        # (the same merge, in the same order: the event's own effects, the poll's, the logic's)
        controller = self.controller
        wake = NEVER
        if controller is not None:
            wake = controller.next_wakeup(now_ms)  # may append (NoOps, fencing, bootstrap)
        second = self.raft.poll(now_ms)
        logic = self.logic
        pending = self._pending
        lst = self.listener
        if lst is not None and logic is not None:
            if lst.leader_changed:
                lst.leader_changed = False
                pending.append(logic.on_leader_change(lst.leader[0], lst.leader[1], now_ms))
            if lst.image_changed:
                lst.image_changed = False
                pending.append(logic.on_metadata(lst.image, now_ms))
        writes: list = []
        sends: list = []
        sync = False
        if first is not None:
            writes += first.writes
            sends += first.sends
            sync = first.sync
            if first.timer_ms is not None:
                self._raft_wake = first.timer_ms
        if second is not None:
            writes += second.writes
            sends += second.sends
            sync = sync or second.sync
            if second.timer_ms is not None:
                self._raft_wake = second.timer_ms
        if pending:
            for e in pending:
                if e is None:
                    continue
                sends += e.sends
                if e.timer_ms is not None:
                    self._logic_wake = e.timer_ms
            pending.clear()
        if logic is not None:
            if logic.replicas.dir_changes:
                writes += self._replica_dirs()
            clean = self._clean_shutdown()
            if clean:
                writes += clean
                sync = True
        if controller is not None:
            sends += controller.take_sends()
            registrar = self.registrar
            sends += registrar.poll(controller.committed, self.raft.leader_id, now_ms)
            if registrar._in_flight is not None and \
                    controller.committed.cluster.controller(self.node_id) is None:
                wake = min(wake, registrar._in_flight[1] + ControllerRegistrar.RETRY_MS)
        timer = min(self._raft_wake, self._logic_wake, wake)
        new_timer = None
        if timer != self._wake:
            new_timer = self._wake = timer
        if not writes and not sends and new_timer is None and not sync:
            return None
        return Effects(writes, sync, sends, new_timer)
