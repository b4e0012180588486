"""A node process: runs one node's logic against its disk, its clock and the network.

The process is the only place that calls node code and applies the :class:`Effects` it returns
(disk writes, fsync, sends, timer; in that order, so a node persists before it sends). It also
plays the operating system's part in faults: crash (unsynced writes are lost), graceful stop,
restart over the recovered disk, pause (SIGSTOP: messages queue, timers fire late) and clock skew.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from kraft_testkit.errors import StorageError
from kraft_testkit.sim.disk import Disk, write_all
from kraft_testkit.sim.errors import DiskWriteError, EffectsError, InvalidArgument, NodeStateError
from kraft_testkit.sim.network import Network, Packet
from kraft_testkit.sim.node import (
    NEVER,
    Append,
    DiskOp,
    Effects,
    NodeContext,
    NodeFactory,
    Replace,
    StateMachine,
    Truncate,
)
from kraft_testkit.sim.rng import RngTree
from kraft_testkit.sim.scheduler import Handle, Scheduler
from kraft_testkit.sim.streams import stream_key, tie_at
from kraft_testkit.sim.trace import Trace


class ProcessState(Enum):
    NEW = "new"  # added, never started
    RUNNING = "running"
    PAUSED = "paused"  # alive but frozen: nothing runs until resumed
    STOPPED = "stopped"  # shut down gracefully: everything was synced
    KILLED = "killed"  # crashed: unsynced writes are gone
    FAILED = "failed"  # refused to start: its files are damaged (``Process.failure`` says how)


def _describe_op(op: DiskOp) -> str:
    kind = type(op)
    if kind is Append:
        return f"append {op.file} +{len(op.data)}"  # type: ignore[union-attr]
    if kind is Replace:
        return f"replace {op.file} ={len(op.data)}"  # type: ignore[union-attr]
    if kind is Truncate:
        return f"truncate {op.file} @{op.size}"  # type: ignore[union-attr]
    return f"delete {op.file}"


class Process:
    """One node: its state machine (while up), its disk, its clock and its single timer."""

    __slots__ = (
        "_crash_rng",
        "_crash_in_writes",
        "_factory",
        "_inbox",
        "_network",
        "_redeliver_cb",
        "_rng",
        "_sched",
        "_skew_ms",
        "_timer",
        "_timer_cb",
        "_timer_node_ms",
        "_timer_overdue",
        "_timer_ties",
        "_touched",
        "_trace",
        "disk",
        "failure",
        "incarnation",
        "machine",
        "node_id",
        "state",
        "up",
    )

    def __init__(
        self,
        node_id: int,
        factory: NodeFactory,
        disk: Disk,
        *,
        scheduler: Scheduler,
        network: Network,
        trace: Trace,
        rng: RngTree,
        skew_ms: int = 0,
        touched: set[int] | None = None,
    ) -> None:
        """``touched``: a set the process adds its node id to whenever node code runs or its
        state changes (the simulation's incremental invariants look only at those nodes)."""
        if not callable(factory):
            raise InvalidArgument(f"node {node_id}: the factory must be callable, got {factory!r}")
        self.node_id = node_id
        self.state = ProcessState.NEW
        self.up = False
        self.incarnation = 0
        self.machine: StateMachine | None = None
        self.failure: StorageError | None = None  # why the last start failed, if it did
        self.disk = disk
        self._factory = factory
        self._sched = scheduler
        self._network = network
        self._trace = trace
        self._rng = rng.child("node")
        self._crash_rng = rng.child("crash")
        # the tie key of this node's timer due at t: (seed, node, t), however often it was
        # re-armed and whatever else ran (a fast path that skips events moves nothing here)
        self._timer_ties = stream_key(rng.root_seed, (*rng.path, "timer-ties"))
        self._crash_in_writes: tuple[int, float] | None = None
        self._skew_ms = 0
        self._timer: Handle | None = None
        self._timer_node_ms: int | None = None
        self._timer_overdue = False
        self._inbox: list[Packet] = []
        self._timer_cb = self._fire_timer
        self._redeliver_cb = self._redeliver
        self._touched: set[int] = set() if touched is None else touched
        self.skew_ms = skew_ms

    # ---- clock -------------------------------------------------------------------------------

    @property
    def clock_ms(self) -> int:
        """The time the node sees: virtual time plus its skew."""
        return self._sched.now_ms + self._skew_ms

    @property
    def skew_ms(self) -> int:
        return self._skew_ms

    @skew_ms.setter
    def skew_ms(self, skew_ms: int) -> None:
        """Move the node's clock; a pending wake-up keeps its time on the node's clock."""
        if type(skew_ms) is not int:
            raise InvalidArgument(f"clock skew must be an int of ms, got {skew_ms!r}")
        if skew_ms != self._skew_ms:
            self._trace.record(self._sched.now_ms, "skew", self.node_id, None, f"{skew_ms:+d} ms")
        self._skew_ms = skew_ms
        if self._timer is not None and self._timer_node_ms is not None:
            self._arm_timer(self._timer_node_ms)

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Build a fresh state machine over the recovered disk and run its ``on_start``."""
        if self.up:
            raise NodeStateError(f"node {self.node_id} is already {self.state.value}")
        self.incarnation += 1
        context = NodeContext(
            self.node_id, self.disk.view(), self._rng.child(self.incarnation), self.incarnation
        )
        self._trace.record(
            self._sched.now_ms, "start", self.node_id, None, f"incarnation {self.incarnation}"
        )
        try:
            machine = self._factory(context)
        except StorageError as e:
            # As a Kafka node that cannot read its metadata log directory: it does not come up,
            # and the rest of the cluster goes on without it.
            root = getattr(self.disk, "root", None)
            self.failure = e.located(str(root)) if root is not None else e
            self.state = ProcessState.FAILED
            self._trace.record(self._sched.now_ms, "fail", self.node_id, None, str(e))
            return
        self.failure = None
        for method in ("on_start", "on_message", "on_timer"):
            if not callable(getattr(machine, method, None)):
                raise EffectsError(
                    f"node {self.node_id}: the factory built {machine!r}, which has no {method}()"
                )
        self.machine = machine
        self.state = ProcessState.RUNNING
        self.up = True
        self._touched.add(self.node_id)
        self._apply(machine.on_start(self.clock_ms))

    def stop(self) -> None:
        """Graceful shutdown: everything written is synced, then the process is gone."""
        self._require_up("stop")
        self.disk.sync()
        self._go_down(ProcessState.STOPPED)

    def kill(self, torn_tail_probability: float) -> None:
        """Crash: unsynced writes are lost, the tail of an unsynced append may survive torn."""
        self._require_up("kill")
        self._go_down(ProcessState.KILLED)
        self.disk.crash(self._crash_rng, torn_tail_probability)

    def crash_in_writes(self, ops: int, torn_tail_probability: float) -> None:
        """Arm a crash in the middle of a write: the node dies after ``ops`` more disk
        operations (0: before the next one), before the rest of that step is written or synced
        and before anything it meant to send leaves: a kill inside a snapshot or a segment
        roll."""
        self._require_up("crash")
        if type(ops) is not int or ops < 0:
            raise InvalidArgument(f"ops must be an int >= 0, got {ops!r}")
        self._crash_in_writes = (ops, torn_tail_probability)

    def pause(self) -> None:
        """Freeze the process: messages queue at its door, its timer fires only once resumed."""
        if self.state is not ProcessState.RUNNING:
            raise NodeStateError(f"cannot pause node {self.node_id}: it is {self.state.value}")
        self.state = ProcessState.PAUSED
        self._trace.record(self._sched.now_ms, "pause", self.node_id)

    def resume(self) -> None:
        """Thaw: an overdue timer fires first, then the queued messages, all at this instant."""
        if self.state is not ProcessState.PAUSED:
            raise NodeStateError(f"cannot resume node {self.node_id}: it is {self.state.value}")
        self.state = ProcessState.RUNNING
        self._trace.record(
            self._sched.now_ms, "resume", self.node_id, None, f"{len(self._inbox)} queued"
        )
        now = self._sched.now_ms
        tie = None
        if self._timer_overdue:
            self._timer_overdue = False
            tie = tie_at(self._timer_ties, now)
            self._timer = self._sched.call_at(now, self._timer_cb, None, tie)
        for packet in self._inbox:
            tie = Scheduler.tie_of(self._sched.call_at(now, self._redeliver_cb, packet, tie))
        self._inbox.clear()

    def wipe(self) -> None:
        """Replace the disk by an empty one (a lost volume); only while the node is down."""
        if self.up:
            raise NodeStateError(
                f"cannot wipe node {self.node_id} while it is {self.state.value}: stop or kill it first"
            )
        self.disk.wipe()
        self._touched.add(self.node_id)
        self._trace.record(self._sched.now_ms, "wipe", self.node_id)

    def damage(self, file: str, offset: int, xor: int = 0xFF) -> None:
        """Flip bits of one byte of a file on the down node's disk (bit rot, a bad sector)."""
        if self.up:
            raise NodeStateError(
                f"cannot damage node {self.node_id}'s disk while it is {self.state.value}: stop or kill it first"
            )
        files = self.disk.view()
        if file not in files:
            raise InvalidArgument(
                f"node {self.node_id} has no file {file!r}; it has: {', '.join(sorted(files)) or 'none'}"
            )
        data = bytearray(files[file])
        if type(offset) is not int or not 0 <= offset < len(data):
            raise InvalidArgument(
                f"offset must be an int in [0, {len(data)}) for {file!r} ({len(data)} bytes), got {offset!r}"
            )
        if type(xor) is not int or not 1 <= xor <= 0xFF:
            raise InvalidArgument(f"xor must be an int in [1, 255], got {xor!r}")
        data[offset] ^= xor
        self.disk.apply(Replace(file, bytes(data)))
        self.disk.sync()
        self._trace.record(self._sched.now_ms, "damage", self.node_id, None, f"{file} @{offset}")

    def _require_up(self, action: str) -> None:
        if not self.up:
            raise NodeStateError(f"cannot {action} node {self.node_id}: it is {self.state.value}")

    def _fail_on_disk(self, error: DiskWriteError) -> None:
        """The node's write failed on the real disk: it goes down as in a crash (what it had not
        synced is lost, nothing it meant to send leaves) and stays ``failed`` until started."""
        self._go_down(ProcessState.FAILED)
        self.failure = error
        self._trace.record(self._sched.now_ms, "fail", self.node_id, None, str(error))
        self.disk.crash(self._crash_rng, 0.0)

    def _go_down(self, state: ProcessState) -> None:
        self._crash_in_writes = None
        if self._timer is not None:
            Scheduler.cancel(self._timer)
        self._timer = None
        self._timer_node_ms = None
        self._timer_overdue = False
        self._inbox.clear()
        self.machine = None
        self.state = state
        self.up = False
        self._touched.add(self.node_id)
        self._trace.record(
            self._sched.now_ms, "stop" if state is ProcessState.STOPPED else "kill", self.node_id
        )

    # ---- events ------------------------------------------------------------------------------

    def receive(self, packet: Packet) -> None:
        """A message reached the node's door (the network checked it is up and for this incarnation)."""
        now = self._sched.now_ms
        if self.state is ProcessState.PAUSED:
            self._inbox.append(packet)
            self._trace.record(now, "queue", self.node_id, packet.src, type(packet.msg).__name__)
            return
        self._trace.record(now, "recv", self.node_id, packet.src, type(packet.msg).__name__)
        self._touched.add(self.node_id)
        machine = self.machine
        assert machine is not None  # up and not paused: running
        self._apply(machine.on_message(packet.src, packet.msg, now + self._skew_ms))

    def _redeliver(self, packet: Packet) -> None:
        if not self.up or packet.incarnation != self.incarnation:
            self._trace.record(
                self._sched.now_ms, "vanish", packet.src, self.node_id, type(packet.msg).__name__
            )
            return
        self.receive(packet)

    def _fire_timer(self, _: object) -> None:
        self._timer = None
        if self.state is ProcessState.PAUSED:
            self._timer_overdue = True
            return
        self._timer_node_ms = None
        self._trace.record(self._sched.now_ms, "timer", self.node_id)
        self._touched.add(self.node_id)
        machine = self.machine
        assert machine is not None  # timers are cancelled when the process goes down
        self._apply(machine.on_timer(self._sched.now_ms + self._skew_ms))

    def _arm_timer(self, node_ms: int) -> None:
        timer = self._timer
        if timer is not None and node_ms < NEVER:
            at = max(self._sched.now_ms, node_ms - self._skew_ms)
            if timer[0] == at:  # the same instant, hence the same tie key: keep the event
                self._timer_node_ms = node_ms
                return
        if self._timer is not None:
            Scheduler.cancel(self._timer)
            self._timer = None
        if node_ms >= NEVER:
            self._timer_node_ms = None
            return
        self._timer_node_ms = node_ms
        at = node_ms - self._skew_ms
        now = self._sched.now_ms
        at = max(now, at)
        self._timer = self._sched.call_at(at, self._timer_cb, None, tie_at(self._timer_ties, at))

    def call(self, fn: Callable[[StateMachine, int], Effects | None], what: str = "call") -> None:
        """Run ``fn(machine, node clock)`` now, as a request from outside the node (a client's
        append...), and apply the :class:`Effects` it returns. Only while the node runs."""
        if self.state is not ProcessState.RUNNING:
            raise NodeStateError(f"cannot call into node {self.node_id}: it is {self.state.value}")
        self._trace.record(self._sched.now_ms, "call", self.node_id, None, what)
        self._apply(fn(self.machine, self.clock_ms))  # type: ignore[arg-type]

    def _apply(self, effects: Effects | None) -> None:
        """Perform what the node asked for: writes, fsync, sends, timer (persist before send)."""
        self._touched.add(self.node_id)  # also reached by the facade's calls into the machine
        if effects is None:
            return
        if type(effects) is not Effects:
            raise EffectsError(
                f"node {self.node_id} returned {type(effects).__name__}; node methods return Effects or None"
            )
        node_id = self.node_id
        if self._crash_in_writes is not None and effects.writes:
            left, torn = self._crash_in_writes
            if left < len(effects.writes):
                for op in effects.writes[:left]:
                    self.disk.apply(op)
                self._crash_in_writes = None
                self._trace.record(self._sched.now_ms, "disk", node_id, None,
                                   ", ".join(map(_describe_op, effects.writes[:left])) +
                                   f" (crash after {left} of {len(effects.writes)} writes)")
                self._go_down(ProcessState.KILLED)
                self.disk.crash(self._crash_rng, torn)
                return
            self._crash_in_writes = (left - len(effects.writes), torn)
        if effects.writes or effects.sync:
            try:
                write_all(self.disk, effects.writes, effects.sync)
            except DiskWriteError as e:  # a full or failing disk: this node halts, alone
                self._fail_on_disk(e)
                return
            detail = ", ".join(map(_describe_op, effects.writes))
            if effects.sync:
                detail = f"{detail}, sync" if detail else "sync"
            self._trace.record(self._sched.now_ms, "disk", node_id, None, detail)
        if effects.sends:
            send = self._network.send
            for dst, msg in effects.sends:
                if type(dst) is not int:
                    raise EffectsError(
                        f"node {node_id} sent {type(msg).__name__} to {dst!r}; destinations are node ids (int)"
                    )
                send(node_id, dst, msg)
        timer_ms = effects.timer_ms
        if timer_ms is not None:
            if type(timer_ms) is not int:
                raise EffectsError(
                    f"node {node_id} asked for a timer at {timer_ms!r}; timer_ms is an int of ms, None or NEVER"
                )
            self._arm_timer(timer_ms)

    def __repr__(self) -> str:
        return f"Process(node={self.node_id}, {self.state.value}, incarnation={self.incarnation})"
