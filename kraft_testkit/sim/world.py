"""The simulation: one seed, one clock, one network, the node processes and their disks.

Everything that runs node code runs from here, one event at a time, in an order fixed by the
seed. Fault actions (kill, pause, partition...) take effect at the current virtual instant; node
code runs when time runs (:meth:`Simulation.step`, :meth:`~Simulation.run_for`,
:meth:`~Simulation.run_until`), except ``on_start``, which runs inside :meth:`~Simulation.start`.
Invariant checkers, when enabled, run after every event and every fault action.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from types import MappingProxyType

from kraft_testkit.sim.disk import Disk, MemoryDisk, PieceStore
from kraft_testkit.sim.errors import InvalidArgument, InvariantViolation, NoProgress, UnknownNode
from kraft_testkit.sim.link import LinkProfile, check_probability
from kraft_testkit.sim.network import ChannelOf, Codec, Network
from kraft_testkit.sim.node import NodeFactory
from kraft_testkit.sim.process import Process
from kraft_testkit.sim.rng import RngTree, check_seed
from kraft_testkit.sim.scheduler import Scheduler
from kraft_testkit.sim.trace import Trace

Invariant = Callable[["Simulation"], object]
"""Returns None/True when fine; False or an AssertionError (with a message) is a violation."""


def _name_of(fn: Callable[..., object]) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


class Simulation:
    """A deterministic world of nodes: same seed, same run, byte for byte."""

    def __init__(
        self,
        seed: int = 0,
        *,
        link: LinkProfile | None = None,
        codec: Codec | None = None,
        torn_tail_probability: float = 0.5,
        trace_keep: int | None = 10_000,
        invariants: Iterable[Invariant] = (),
        check_invariants: bool = True,
        tail_events: int = 30,
        channel_of: ChannelOf | None = None,
    ) -> None:
        """Build an empty world; add nodes with :meth:`add_node`.

        ``link``: the default behaviour of every link (latency 1-5 ms, FIFO, no loss).
        ``codec``: wire mode, every message is encoded on send and decoded on arrival.
        ``torn_tail_probability``: on a crash, the chance a file that grew since its last sync
        keeps a torn part of its unsynced tail. ``trace_keep``: events kept in memory for
        :meth:`Trace.tail` and :meth:`Trace.events` (None: all). ``invariants``: checkers, as for
        :meth:`add_invariant`. ``tail_events``: how many events errors show. ``channel_of``:
        the connection a message travels on (see :class:`~kraft_testkit.sim.network.Network`).
        """
        self.seed = check_seed(seed)
        self.replay_hint: str | None = None
        """How errors say to replay this run (a facade sets its own: ``Cluster(seed=7, ...)``)."""
        self.rng = RngTree(seed)
        self.trace = Trace(trace_keep)
        self.scheduler = Scheduler(self.rng.child("scheduler"))
        #: packed file pieces shared by this simulation's disks (sim/disk.py PieceStore)
        self.disk_pieces = PieceStore()
        self._processes: dict[int, Process] = {}
        self._processes_view = MappingProxyType(self._processes)  # live, read-only; made once
        self._touched: set[int] = set()  # nodes whose code ran or state changed since a check
        self.touched: frozenset[int] | None = None
        """While incremental invariants run after one event: the nodes it touched (None during
        a full check). See :meth:`add_invariant`."""
        self.network = Network(
            self.scheduler,
            self.rng.child("network"),
            self.trace,
            self._processes,
            LinkProfile() if link is None else link,
            codec,
            channel_of,
        )
        self.torn_tail_probability = check_probability(
            "torn_tail_probability", torn_tail_probability
        )
        self.check_invariants = check_invariants
        self.tail_events = tail_events
        self._invariants: list[tuple[str, Invariant]] = []
        for check in invariants:
            self.add_invariant(check)

    # ---- nodes -------------------------------------------------------------------------------

    def add_node(
        self,
        node_id: int,
        factory: NodeFactory,
        *,
        start: bool = True,
        skew_ms: int = 0,
        disk: Disk | None = None,
    ) -> Process:
        """Add a node process (started at once unless ``start=False``) with its own disk."""
        if type(node_id) is not int:
            raise InvalidArgument(f"node ids are ints, got {node_id!r}")
        if node_id in self._processes:
            raise InvalidArgument(f"node {node_id} already exists")
        process = Process(
            node_id,
            factory,
            MemoryDisk(self.disk_pieces) if disk is None else disk,
            scheduler=self.scheduler,
            network=self.network,
            trace=self.trace,
            rng=self.rng.child("process", node_id),
            skew_ms=skew_ms,
            touched=self._touched,
        )
        self._processes[node_id] = process
        if start:
            process.start()  # at build time a damaged disk only leaves the node failed
            self._after_action()
        return process

    def process(self, node_id: int) -> Process:
        try:
            return self._processes[node_id]
        except (KeyError, TypeError):
            raise UnknownNode(f"no node {node_id!r}; nodes are {self.nodes}") from None

    @property
    def processes(self) -> Mapping[int, Process]:
        return self._processes_view

    @property
    def nodes(self) -> list[int]:
        return sorted(self._processes)

    # ---- faults and lifecycle (take effect now) ----------------------------------------------

    def start(self, node_id: int) -> None:
        """Start a node that is new, stopped, killed or failed: a fresh state machine over its
        disk. A node whose files are damaged does not come up: it is left ``failed`` with the
        :class:`~kraft_testkit.errors.StorageError` in ``process.failure``, which is raised."""
        process = self.process(node_id)
        process.start()
        self._after_action()
        _raise_failure(process)

    def stop(self, node_id: int) -> None:
        """Graceful shutdown: everything is synced first."""
        self.process(node_id).stop()
        self._after_action()

    def kill(self, node_id: int, *, torn_tail_probability: float | None = None) -> None:
        """Crash: unsynced writes are lost, an unsynced append may survive torn."""
        p = (
            self.torn_tail_probability
            if torn_tail_probability is None
            else check_probability("torn_tail_probability", torn_tail_probability)
        )
        self.process(node_id).kill(p)
        self._after_action()

    def crash_in_writes(self, node_id: int, ops: int,
                        torn_tail_probability: float | None = None) -> None:
        """The node crashes after ``ops`` more disk operations, in the middle of a step."""
        p = (self.torn_tail_probability if torn_tail_probability is None
             else check_probability("torn_tail_probability", torn_tail_probability))
        self.process(node_id).crash_in_writes(ops, p)
        self._after_action()

    def restart(self, node_id: int, *, graceful: bool = False) -> None:
        """Stop (or kill) the node if it is up, then start it again."""
        process = self.process(node_id)
        if process.up:
            if graceful:
                process.stop()
            else:
                process.kill(self.torn_tail_probability)
        process.start()
        self._after_action()
        _raise_failure(process)

    def pause(self, node_id: int) -> None:
        self.process(node_id).pause()
        self._after_action()

    def resume(self, node_id: int) -> None:
        self.process(node_id).resume()
        self._after_action()

    def wipe(self, node_id: int) -> None:
        """Give a down node an empty disk."""
        self.process(node_id).wipe()
        self._after_action()

    def damage(self, node_id: int, file: str, offset: int, xor: int = 0xFF) -> None:
        """Flip bits of one byte of a file on a down node's disk."""
        self.process(node_id).damage(file, offset, xor)
        self._after_action()

    def set_skew(self, node_id: int, skew_ms: int) -> None:
        """The node's clock reads virtual time + ``skew_ms`` from now on."""
        self.process(node_id).skew_ms = skew_ms
        self._after_action()

    def note(self, text: str) -> None:
        """Put a line of the test's own into the trace (it counts in the digest)."""
        self.trace.record(self.scheduler.now_ms, "note", None, None, str(text))

    # ---- time --------------------------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    def step(self) -> bool:
        """Run the next event; False when nothing is left to run."""
        ran = self.scheduler.step()
        if ran and self.check_invariants and self._invariants:
            self._check_event()
        return ran

    def run_for(self, ms: int) -> None:
        """Run every event due in the next ``ms`` milliseconds; the clock ends ``ms`` later."""
        if type(ms) is not int or ms < 0:
            raise InvalidArgument(f"run_for needs an int >= 0 of ms, got {ms!r}")
        end = self.scheduler.now_ms + ms
        self.scheduler.run(
            end, self._check_event if self.check_invariants and self._invariants else None
        )
        self.scheduler.advance_to(end)

    def run_until(self, predicate: Callable[[Simulation], object], timeout_ms: int) -> int:
        """Run until ``predicate(sim)`` holds; return the ms it took. :class:`NoProgress` otherwise."""
        if type(timeout_ms) is not int or timeout_ms < 0:
            raise InvalidArgument(f"run_until needs timeout_ms as an int >= 0, got {timeout_ms!r}")
        start = self.scheduler.now_ms
        if predicate(self):
            return 0
        if self.check_invariants and self._invariants:
            check = self._check_event

            def done() -> object:
                check()
                return predicate(self)
        else:
            done = partial(predicate, self)
        if self.scheduler.run(start + timeout_ms, done):
            return self.scheduler.now_ms - start
        if self.scheduler.next_at() is None:
            raise self._no_progress(
                f"{_name_of(predicate)} never held, and nothing is left to happen"
            )
        self.scheduler.advance_to(start + timeout_ms)
        raise self._no_progress(f"{_name_of(predicate)} still false after {timeout_ms} ms")

    def _no_progress(self, reason: str) -> NoProgress:
        return NoProgress(
            reason, seed=self.seed, now_ms=self.now_ms, trace_tail=self.trace.tail(self.tail_events),
            replay=self.replay_hint,
        )

    # ---- invariants --------------------------------------------------------------------------

    def add_invariant(self, check: Invariant, name: str | None = None) -> None:
        """Run ``check(sim)`` after every event and fault action while ``check_invariants`` is on.

        A checker whose ``incremental`` attribute is true may read :attr:`touched` after an
        event: the nodes whose code ran or whose process changed since the last check (node
        state machines only change when their own code runs). It is None in a full check.
        """
        if not callable(check):
            raise InvalidArgument(f"an invariant must be callable, got {check!r}")
        self._invariants.append((name or _name_of(check), check))

    def check_now(self) -> None:
        """Run every invariant once over every node; :class:`InvariantViolation` on the first
        that fails."""
        self._touched.clear()
        self._run_checks()

    def _check_event(self) -> None:
        """The check after one event: incremental checkers see only the nodes it touched."""
        touched = frozenset(self._touched)
        self._touched.clear()
        invariants = self._invariants
        if len(invariants) == 1:  # a cluster's one checker: _run_checks without its loop
            name, check = invariants[0]
            # only a checker that says it is incremental is handed the touched nodes (asked
            # each time: a test may switch it)
            self.touched = touched if getattr(check, "incremental", False) else None
            try:
                ok = check(self)
            except AssertionError as error:
                raise self._violation(name, str(error) or "assertion failed") from error
            finally:
                self.touched = None
            if ok is False:
                raise self._violation(name, "returned False")
            return
        self._run_checks(touched)

    def _run_checks(self, touched: frozenset[int] | None = None) -> None:
        try:
            for name, check in self._invariants:
                # only a checker that says it is incremental is handed the touched nodes
                self.touched = touched if getattr(check, "incremental", False) else None
                try:
                    ok = check(self)
                except AssertionError as error:
                    raise self._violation(name, str(error) or "assertion failed") from error
                if ok is False:
                    raise self._violation(name, "returned False")
        finally:
            self.touched = None

    def _violation(self, name: str, detail: str) -> InvariantViolation:
        return InvariantViolation(
            name,
            detail,
            seed=self.seed,
            now_ms=self.now_ms,
            trace_tail=self.trace.tail(self.tail_events),
            replay=self.replay_hint,
        )

    def _after_action(self) -> None:
        if self.check_invariants and self._invariants:
            self.check_now()

    def __repr__(self) -> str:
        return f"Simulation(seed={self.seed}, now={self.now_ms} ms, nodes={self.nodes})"


def _raise_failure(process: Process) -> None:
    """A start asked for by a test that left the node failed raises why (the rest goes on)."""
    if process.failure is not None:
        raise process.failure
