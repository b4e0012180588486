"""One seed of ``kraft-testkit simulate``: a Raft quorum under a random fault schedule.

Each seed builds a :class:`~kraft_testkit.quorum.Quorum` and a fault schedule drawn from the same
seed: kills, graceful stops, restarts, partitions, isolations, packet loss, delays, duplicates,
reordering, pauses and disk wipes (of a minority of voters, at most). A client appends a record
every half second. Safety invariants run after every event; at the end every fault heals and the
quorum must converge (one leader, every replica caught up) within :data:`LIVENESS_BOUND_MS`.

The runner is apart from the command (:mod:`.simulate`) so that what runs seeds elsewhere (the
Spark sweep, the cluster simulation, worker processes) imports it without the command line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the runner's imports load lazily, so `kraft-testkit --help` stays quick
    from kraft_testkit.quorum import Quorum
    from kraft_testkit.sim import LinkProfile

LIVENESS_BOUND_MS = 60_000
APPEND_EVERY_MS = 500
FAULT_KINDS = ("kill", "stop", "restart", "partition", "isolate", "drop", "delay", "duplicate",
               "reorder", "pause", "wipe")


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault: what, on which node, when, and how long before it heals."""

    at_ms: int
    kind: str
    node: int = 0
    duration_ms: int = 0

    def __str__(self) -> str:
        return f"{self.at_ms} ms: {self.kind} n{self.node} for {self.duration_ms} ms"


def random_schedule(seed: int, voters: int, duration_ms: int,
                    kinds: tuple[str, ...] = FAULT_KINDS) -> list[Fault]:
    """A fault every 0.5-5 s, each lasting 0.5-10 s, drawn from the seed's ``faults`` stream."""
    from kraft_testkit.sim.rng import RngTree

    rng = RngTree(seed).child("faults")
    out, t = [], 0
    while True:
        t += rng.randint(500, 5_000)
        if t >= duration_ms:
            return out
        out.append(Fault(t, rng.choice(kinds), rng.randint(1, voters), rng.randint(500, 10_000)))


@dataclass(slots=True)
class SeedResult:
    seed: int
    ok: bool
    kind: str = ""  # "invariant", "liveness", "error" when not ok
    detail: str = ""
    digest: str = ""
    events: int = 0
    faults: int = 0
    commits: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    trace_tail: list[str] = field(default_factory=list)
    virtual_ms: int = 0


class _Run:
    """Applies a schedule to a quorum; knows which faults are active so heals do not collide."""

    def __init__(self, q: Quorum, base: LinkProfile) -> None:
        self.q = q
        self.base = base
        self.link: dict[str, object] = {}
        self.wiped: set[int] = set()
        self.timeline: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0

    def at(self, when: int, action: Callable[[], None]) -> None:
        self._seq += 1
        self.timeline.append((when, self._seq, action))

    def _state(self, node: int) -> str:
        return self.q.sim.process(node).state.value

    def _set_link(self, key: str, value: object | None) -> None:
        if value is None:
            self.link.pop(key, None)
        else:
            self.link[key] = value
        self.q.network.set_profile(replace(self.base, **self.link))  # type: ignore[arg-type]

    def apply(self, f: Fault) -> None:
        from kraft_testkit.sim import Uniform
        from kraft_testkit.sim.rng import RngTree
        from kraft_testkit.sim.topology import split

        q, node, end = self.q, f.node, f.at_ms + f.duration_ms
        faults = q.faults
        state = self._state(node)
        if f.kind in ("kill", "stop") and state == "running":
            (faults.kill if f.kind == "kill" else faults.stop)(node)
            self.at(end, lambda: self._start(node))
        elif f.kind == "restart" and state == "running":
            faults.restart(node)
        elif f.kind == "pause" and state == "running":
            faults.pause(node)
            self.at(end, lambda: self._state(node) == "paused" and faults.resume(node))
        elif f.kind == "wipe" and node not in self.wiped and \
                len(self.wiped) < (len(q.voters) - 1) // 2 and state != "paused":
            self.wiped.add(node)
            faults.wipe_disk(node, start=False)
            self.at(end, lambda: self._start(node))
        elif f.kind == "partition":
            topology = q.network.apply(split(q.nodes, RngTree(q.seed).child("split", f.at_ms)))
            self.at(end, lambda: topology in q.sim.network.partitions and q.network.heal(topology))
        elif f.kind == "isolate":
            topology = q.network.isolate(node)
            self.at(end, lambda: topology in q.sim.network.partitions and q.network.heal(topology))
        elif f.kind in ("drop", "delay", "duplicate", "reorder") and f.kind not in self.link:
            value: dict[str, object] = {"drop": {"drop": 0.2}, "delay": {"latency": Uniform(1, 300)},
                                        "duplicate": {"duplicate": 0.2},
                                        "reorder": {"reorder": 0.3}}[f.kind]
            key, v = next(iter(value.items()))
            self._set_link(key, v)
            self.at(end, lambda: self._set_link(key, None))

    def _start(self, node: int) -> None:
        if self._state(node) in ("killed", "stopped"):
            self.q.faults.start(node)

    def append(self) -> bool:
        from kraft_testkit.raft.errors import NotLeader

        leader = self.q._leader()
        if leader is None or self._state(leader.id) != "running":
            return False
        try:
            self.q._call(leader.id, lambda r, now: r.append([b"x%d" % self.q.now_ms], now),
                         "append")
        except NotLeader:
            return False
        return True


#: snapshots, segment rolls and retention often enough that every seed moves log starts and
#: sends snapshots to lagging replicas (Kafka's defaults would do neither in minutes)
SIMULATE_CONFIG = {"metadata.log.max.record.bytes.between.snapshots": 2_000,
                   "internal.metadata.log.segment.bytes": 3_000,
                   "metadata.max.retention.bytes": 0, "testkit.raft.log.clean.interval.ms": 2_000}


def run_seed(seed: int, *, voters: int = 5, minutes: float = 10.0, faults: str = "random",
             wire: bool = True, schedule: list[Fault] | None = None,
             observers: int = 0) -> SeedResult:
    """Run one seed: build, run the schedule with invariants on, heal, check liveness."""
    from kraft_testkit.errors import KraftError
    from kraft_testkit.quorum import Quorum
    from kraft_testkit.sim import InvariantViolation, LinkProfile, NoProgress

    started, cpu0 = time.perf_counter(), time.process_time()
    duration = int(minutes * 60_000)
    base = LinkProfile()
    q = Quorum(voters, seed=seed, observers=observers, wire=wire, trace_keep=2_000,
               config=SIMULATE_CONFIG)
    if schedule is None:
        schedule = random_schedule(seed, voters, duration) if faults == "random" else []
    run = _Run(q, base)
    for f in schedule:
        run.at(f.at_ms, lambda f=f: run.apply(f))
    for t in range(APPEND_EVERY_MS, duration, APPEND_EVERY_MS):
        run.at(t, run.append)
    result = SeedResult(seed, True, faults=len(schedule))
    try:
        while run.timeline:
            run.timeline.sort()
            when, _, action = run.timeline.pop(0)
            if when > q.now_ms:
                q.run_for(when - q.now_ms)
            action()
        if q.now_ms < duration:
            q.run_for(duration - q.now_ms)
        try:
            q.converge(LIVENESS_BOUND_MS)
        except NoProgress as e:
            result.ok, result.kind, result.detail = False, "liveness", e.reason
            result.trace_tail = e.trace_tail + ["", q.status()]
    except InvariantViolation as e:
        result.ok, result.kind = False, "invariant"
        result.detail = f"{e.invariant}: {e.detail}"
        result.trace_tail = e.trace_tail
    except KraftError as e:
        result.ok, result.kind, result.detail = False, "error", f"{type(e).__name__}: {e}"
    result.digest = q.trace.digest()
    result.events = len(q.trace)
    result.commits = q.high_watermark
    result.virtual_ms = q.now_ms
    result.wall_s = time.perf_counter() - started
    result.cpu_s = time.process_time() - cpu0
    return result


def _run_one(args: tuple[int, int, float, str, bool]) -> SeedResult:
    seed, voters, minutes, faults, wire = args
    try:
        return run_seed(seed, voters=voters, minutes=minutes, faults=faults, wire=wire)
    except Exception as e:  # noqa: BLE001 - a crash in node code is a finding, not the end
        import traceback
        return SeedResult(seed, False, "error", f"{type(e).__name__}: {e}",
                          trace_tail=traceback.format_exc().splitlines()[-12:])
