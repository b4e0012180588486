"""``kraft-testkit simulate --cluster``: random fault schedules against a whole KRaft cluster.

Each seed boots a :class:`~kraft_testkit.cluster.Cluster` (controllers and brokers), creates two
topics, then applies a schedule drawn from the seed: node faults (kill, graceful stop, restart,
pause, disk wipe, clock skew), network faults (partitions, one-way links, isolations, loss,
delays, duplicates, reordering) and client-like admin traffic (topic creation, partition growth,
reassignments, config changes) sent without waiting, as a client would. The cluster's safety
invariants (Raft's and KIP-631's, :mod:`kraft_testkit.invariants`) run after every event. After
the schedule every fault heals and the cluster must be live again within
:data:`LIVENESS_BOUND_MS`: an active controller, every broker running and unfenced, every
partition with a leader.

A seed's outcome depends only on the seed and the options (``--workers`` changes wall time only).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .quorum_runs import Fault, SeedResult

if TYPE_CHECKING:
    from kraft_testkit.cluster import Cluster
    from kraft_testkit.sim import LinkProfile

LIVENESS_BOUND_MS = 60_000
NODE_FAULTS = ("kill", "stop", "restart", "pause", "wipe", "skew")
NET_FAULTS = ("partition", "one-way", "isolate", "drop", "delay", "duplicate", "reorder")
ADMIN_TRAFFIC = ("create-topic", "create-partitions", "reassign", "alter-config")
FAULT_KINDS = NODE_FAULTS + NET_FAULTS + ADMIN_TRAFFIC
LINK_FAULTS = {"drop": ("drop", 0.2), "duplicate": ("duplicate", 0.2), "reorder": ("reorder", 0.3)}


def cluster_schedule(seed: int, nodes: list[int], duration_ms: int,
                     kinds: tuple[str, ...] = FAULT_KINDS) -> list[Fault]:
    """A fault or request every 0.5-5 s, each fault lasting 0.5-10 s, from the seed's
    ``cluster-faults`` stream (so it does not move when the cluster's own draws change)."""
    from kraft_testkit.sim.rng import RngTree

    rng = RngTree(seed).child("cluster-faults")
    out, t = [], 0
    while True:
        t += rng.randint(500, 5_000)
        if t >= duration_ms:
            return out
        out.append(Fault(t, rng.choice(kinds), rng.choice(nodes), rng.randint(500, 10_000)))


class ClusterRun:
    """Applies a schedule to a cluster and remembers what to undo, so heals do not collide."""

    def __init__(self, c: Cluster, seed: int, base: LinkProfile) -> None:
        from kraft_testkit.sim.rng import RngTree

        self.c = c
        self.base = base
        self.rng = RngTree(seed).child("cluster-admin")  # admin choices, apart from the faults
        self.link: dict[str, object] = {}
        self.wiped_controllers: set[int] = set()
        self.timeline: list[tuple[int, int, Callable[[], object]]] = []
        self.topics = 0
        self._seq = 0
        self._cid = 1 << 30  # admin correlation ids apart from the facade's own requests

    def at(self, when: int, action: Callable[[], object]) -> None:
        self._seq += 1
        self.timeline.append((when, self._seq, action))

    def state(self, node: int) -> str:
        return self.c.sim.process(node).state.value

    # ------------------------------------------------------------- faults

    def apply(self, f: Fault) -> None:
        c, node, end = self.c, f.node, f.at_ms + f.duration_ms
        state = self.state(node)
        if f.kind in ADMIN_TRAFFIC:
            self.admin(f.kind)
        elif f.kind in ("kill", "stop") and state == "running":
            if f.kind == "kill":
                c.sim.kill(node)
            else:
                c.sim.stop(node)  # the process is stopped cleanly (everything synced)
            self.at(end, lambda: self.start(node))
        elif f.kind == "restart" and state == "running":
            c.sim.restart(node)
        elif f.kind == "pause" and state == "running":
            c.sim.pause(node)
            self.at(end, lambda: self.state(node) == "paused" and c.sim.resume(node))
        elif f.kind == "wipe" and state != "paused" and self._may_wipe(node):
            if c.sim.process(node).up:
                c.sim.kill(node)
            c.sim.wipe(node)
            self.at(end, lambda: self.start(node))
        elif f.kind == "skew" and c.sim.process(node).skew_ms == 0:
            skew = self.rng.choice((-1, 1)) * self.rng.randint(1, 3_000)
            c.sim.set_skew(node, skew)
            self.at(end, lambda: c.sim.set_skew(node, 0))
        elif f.kind in ("partition", "one-way", "isolate"):
            self.cut(f.kind, node, end)
        elif f.kind == "delay" and "latency" not in self.link:
            from kraft_testkit.sim import Uniform

            self.set_link("latency", Uniform(1, 300))
            self.at(end, lambda: self.set_link("latency", None))
        elif f.kind in LINK_FAULTS and LINK_FAULTS[f.kind][0] not in self.link:
            key, value = LINK_FAULTS[f.kind]
            self.set_link(key, value)
            self.at(end, lambda: self.set_link(key, None))

    def _may_wipe(self, node: int) -> bool:
        """Brokers may lose their disks at will; controllers only a minority in a run (a wiped
        voter forgets its vote, so more would let two leaders win one epoch)."""
        if node not in self.c.controller_ids:
            return True
        if node in self.wiped_controllers or \
                len(self.wiped_controllers) >= (len(self.c.controller_ids) - 1) // 2:
            return False
        self.wiped_controllers.add(node)
        return True

    def cut(self, kind: str, node: int, end: int) -> None:
        from kraft_testkit.sim import topology
        from kraft_testkit.sim.rng import RngTree

        net = self.c.sim.network
        everyone = [n.id for n in self.c.nodes]
        if kind == "partition":
            cut = net.apply(topology.split(everyone, RngTree(self.c.seed).child("split", end)))
        elif kind == "one-way":
            cut = net.partition_one_way(node, [n for n in everyone if n != node])
        else:
            cut = net.isolate(node)
        self.at(end, lambda: cut in net.partitions and net.heal(cut))

    def set_link(self, key: str, value: object | None) -> None:
        if value is None:
            self.link.pop(key, None)
        else:
            self.link[key] = value
        self.c.sim.network.set_profile(replace(self.base, **self.link))  # type: ignore[arg-type]

    def start(self, node: int) -> None:
        if self.state(node) in ("killed", "stopped", "new"):
            self.c.sim.start(node)

    # ------------------------------------------------------------- admin traffic

    def admin(self, kind: str) -> None:
        """Send one admin request and do not wait: the answer (or its loss) is the cluster's
        business; the invariants judge what it does with it."""
        from kraft_testkit.admin import ADMIN_NODE_ID
        from kraft_testkit.protocol import messages as M
        from kraft_testkit.raft import rpc

        c, rng = self.c, self.rng
        active = c.active_controller
        dest = active.id if active is not None else rng.choice(c.controller_ids)
        brokers = c.broker_ids
        body: Any
        if kind == "create-topic" or not c.metadata.topics:
            self.topics += 1
            R = M.CreateTopicsRequest
            body = R(topics=[R.CreatableTopic(
                name=f"traffic-{self.topics}", num_partitions=rng.randint(1, 4),
                replication_factor=min(len(brokers), rng.randint(1, 3)), assignments=(),
                configs=())], timeout_ms=30_000, validate_only=False)
        else:
            topics = sorted(c.metadata.topics, key=lambda t: t.name)
            topic = rng.choice(topics)
            if kind == "create-partitions":
                R = M.CreatePartitionsRequest
                body = R(topics=[R.CreatePartitionsTopic(
                    name=topic.name, count=len(topic.partitions) + 1, assignments=None)],
                    timeout_ms=30_000, validate_only=False)
            elif kind == "reassign":
                R = M.AlterPartitionReassignmentsRequest
                rf = len(topic.partitions[0].replicas) if topic.partitions else 1
                target = rng.sample(brokers, min(rf, len(brokers)))
                body = R(timeout_ms=30_000, topics=[R.ReassignableTopic(
                    name=topic.name, partitions=[R.ReassignablePartition(
                        partition_index=rng.randrange(max(1, len(topic.partitions))),
                        replicas=target)])])
            else:
                R = M.IncrementalAlterConfigsRequest
                body = R(resources=[R.AlterConfigsResource(
                    resource_type=2, resource_name=topic.name, configs=[R.AlterableConfig(
                        name="retention.ms", config_operation=0,
                        value=str(rng.randint(1, 100) * 60_000))])], validate_only=False)
        self._cid += 1
        c.sim.network.send(ADMIN_NODE_ID, dest, rpc.request(self._cid, body))
        c._admin.responses.clear()  # noqa: SLF001 - nobody waits for these answers

    # ------------------------------------------------------------- the end

    def heal_all(self) -> None:
        """Undo every fault still in place: links, cuts, pauses, skews, down nodes."""
        c = self.c
        self.timeline.clear()
        c.sim.network.heal()
        c.sim.network.clear_filters()
        self.link.clear()
        c.sim.network.set_profile(self.base)
        for h in c.nodes:
            process = c.sim.process(h.id)
            if process.skew_ms:
                c.sim.set_skew(h.id, 0)
            if process.state.value == "paused":
                c.sim.resume(h.id)
            elif not process.up:
                c.sim.start(h.id)


def data_lost(image: Any, partition: Any) -> bool:
    """Every ISR member's copy sits on a directory its broker no longer has (its disk was wiped:
    it came back with a new directory id). Kafka keeps such a partition offline rather than
    elect an out-of-sync replica (unclean election is off by default), and so does the kit."""
    from kraft_testkit.controller.eligibility import is_directory_online, replica_directory

    return partition.leader == -1 and all(
        not is_directory_online(image, r, replica_directory(partition, r)) for r in partition.isr)


def live(c: Cluster) -> bool:
    """The liveness goal after heal: an active controller, every broker running unfenced and
    not self-fenced, every partition of the committed image with a leader (except those whose
    in-sync copies were all lost with wiped disks: see :func:`data_lost`)."""
    if c.active_controller is None:
        return False
    image = c.metadata
    for b in c.broker_ids:
        machine = c.broker(b)
        if machine is None or machine.state_name != "RUNNING" or machine.self_fenced:
            return False
        reg = image.cluster.broker(b)
        if reg is None or reg.fenced:
            return False
    return all(p.leader != -1 or data_lost(image, p)
               for topic in image.topics for p in topic.partitions.values())


def gave_up(c: Cluster) -> list[int]:
    """Broker processes whose broker logic stopped (e.g. registration timed out): a real broker
    process exits then, and its supervisor (systemd, Kubernetes) starts it again."""
    return [b for b in c.broker_ids if (m := c.broker(b)) is not None
            and m.state_name in ("SHUTTING_DOWN", "NOT_RUNNING")]


def run_cluster_seed(seed: int, *, controllers: int = 3, brokers: int = 3,
                     minutes: float = 10.0, faults: str = "random", wire: bool = True,
                     schedule: list[Fault] | None = None) -> SeedResult:
    """Run one seed: boot, topics, the schedule with invariants on, heal, check liveness."""
    from kraft_testkit.cluster import Cluster
    from kraft_testkit.errors import KraftError
    from kraft_testkit.protocol.error_codes import KafkaApiError
    from kraft_testkit.sim import InvariantViolation, LinkProfile, NoProgress

    started, cpu0 = time.perf_counter(), time.process_time()
    duration = int(minutes * 60_000)
    result = SeedResult(seed, True)
    c = None
    try:
        # stepped: a seed's invariants are checked after every event (a warp checks them once
        # per idle stretch)
        c = Cluster(controllers, brokers, seed=seed, wire=wire, trace_keep=2_000,
                    fast_forward=False)
        c.create_topic("t0", 6, min(3, brokers))
        c.create_topic("t1", 2, min(2, brokers))
        nodes = c.controller_ids + c.broker_ids
        if schedule is None:
            schedule = cluster_schedule(seed, nodes, duration) if faults == "random" else []
        result.faults = len(schedule)
        run = ClusterRun(c, seed, LinkProfile())
        start = c.now_ms
        for f in schedule:
            run.at(start + f.at_ms, lambda f=f: run.apply(f))
        while run.timeline:
            run.timeline.sort()
            when, _, action = run.timeline.pop(0)
            if when >= start + duration:
                break
            if when > c.now_ms:
                c.run_for(when - c.now_ms)
            action()
        if c.now_ms < start + duration:
            c.run_for(start + duration - c.now_ms)
        run.heal_all()
        deadline = c.now_ms + LIVENESS_BOUND_MS
        try:
            while not live(c):
                for b in gave_up(c):
                    c.sim.restart(b)
                c.run_until(lambda c: live(c) or bool(gave_up(c)),
                            max(1, deadline - c.now_ms))
        except NoProgress as e:
            result.ok, result.kind = False, "liveness"
            result.detail = (f"not live {LIVENESS_BOUND_MS} ms after the last heal: "
                             f"{_why_not_live(c)}")
            result.trace_tail = list(e.trace_tail)
    except InvariantViolation as e:
        result.ok, result.kind = False, "invariant"
        result.detail = f"{e.invariant}: {e.detail}"
        result.trace_tail = list(e.trace_tail)
    except (KraftError, KafkaApiError) as e:
        result.ok, result.kind, result.detail = False, "error", f"{type(e).__name__}: {e}"
    if c is not None:
        result.digest = c.trace.digest()
        result.events = c.sim.scheduler.executed
        result.commits = c.metadata.provenance.offset
    result.wall_s = time.perf_counter() - started
    result.cpu_s = time.process_time() - cpu0
    return result


def _why_not_live(c: Cluster) -> str:
    if c.active_controller is None:
        return "no active controller"
    image = c.metadata
    for b in c.broker_ids:
        machine = c.broker(b)
        reg = image.cluster.broker(b)
        if machine is None or machine.state_name != "RUNNING" or machine.self_fenced \
                or reg is None or reg.fenced:
            state = "down" if machine is None else machine.state_name
            return f"broker {b} is {state}, registered {reg is not None}, " \
                   f"fenced {reg is None or reg.fenced}"
    for topic in image.topics:
        for pid, p in topic.partitions.items():
            if p.leader == -1 and not data_lost(image, p):
                return f"{topic.name}-{pid} has no leader (replicas {list(p.replicas)})"
    return "live now"


def run_one(args: tuple) -> SeedResult:
    """Pool entry point: ``(seed, controllers, brokers, minutes, faults, wire)``."""
    seed, controllers, brokers, minutes, faults, wire = args
    try:
        return run_cluster_seed(seed, controllers=controllers, brokers=brokers,
                                minutes=minutes, faults=faults, wire=wire)
    except Exception as e:  # noqa: BLE001 - a crash in node code is a finding, not the end
        import traceback
        return SeedResult(seed, False, "error", f"{type(e).__name__}: {e}",
                          trace_tail=traceback.format_exc().splitlines()[-12:])


def replay_command(args: Any, seed: int) -> str:
    parts = ["kraft-testkit simulate --cluster", f"--controllers {args.controllers}",
             f"--brokers {args.brokers}", f"--seeds {seed}:{seed + 1}",
             f"--minutes {args.minutes:g}", f"--faults {args.faults}"]
    if not args.wire:
        parts.append("--no-wire")
    return " ".join(parts)
