"""Small scripted nodes for the simulator's tests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kraft_testkit.sim import Append, Effects, NodeContext, Simulation


@dataclass(frozen=True)
class Msg:
    n: int


@dataclass(frozen=True)
class Other:
    n: int


class MsgCodec:
    """Wire mode for Msg/Other; counts what it did so tests can see it ran."""

    def __init__(self) -> None:
        self.encoded = 0
        self.decoded = 0

    def encode(self, msg: object) -> bytes:
        self.encoded += 1
        return json.dumps([type(msg).__name__, msg.n]).encode()  # type: ignore[attr-defined]

    def decode(self, data: bytes) -> object:
        self.decoded += 1
        name, n = json.loads(data)
        return {"Msg": Msg, "Other": Other}[name](n)


@dataclass
class Script:
    """What a :class:`Recorder` does: send ``count`` messages to ``dst``, one every ``every_ms``
    from start (all at once ``every_ms`` after start when ``burst``), or wake up at ``wake_at``."""

    dst: int | None = None
    count: int = 0
    every_ms: int = 1
    burst: bool = False
    wake_at: int | None = None
    kinds: tuple[type, ...] = (Msg,)


@dataclass
class Recorder:
    """Records what it sees; sends what its script says."""

    ctx: NodeContext
    script: Script
    received: list[tuple[int, int, object]] = field(default_factory=list)
    timers: list[int] = field(default_factory=list)
    started_at: int | None = None
    sent: int = 0

    def _msg(self) -> object:
        kind = self.script.kinds[self.sent % len(self.script.kinds)]
        self.sent += 1
        return kind(self.sent)

    def on_start(self, now_ms: int) -> Effects:
        self.started_at = now_ms
        s = self.script
        effects = Effects()
        if s.dst is not None and s.count:
            effects.timer_ms = now_ms + s.every_ms
        if s.wake_at is not None:
            effects.timer_ms = s.wake_at
        return effects

    def on_timer(self, now_ms: int) -> Effects | None:
        self.timers.append(now_ms)
        s = self.script
        if s.dst is None or self.sent >= s.count:
            return None
        effects = Effects()
        for _ in range(s.count if s.burst else 1):
            effects.send(s.dst, self._msg())
        if self.sent < s.count:
            effects.timer_ms = now_ms + s.every_ms
        return effects

    def on_message(self, src: int, msg: object, now_ms: int) -> None:
        self.received.append((now_ms, src, msg))


def recorder(script: Script | None = None):
    return lambda ctx: Recorder(ctx, script or Script())


def pair(
    seed: int = 1, script: Script | None = None, **options
) -> tuple[Simulation, Recorder, Recorder]:
    """Node 1 runs ``script`` towards node 2, which only listens."""
    sim = Simulation(seed, **options)
    sim.add_node(2, recorder())
    sim.add_node(1, recorder(script or Script(dst=2, count=10)))
    return sim, sim.process(1).machine, sim.process(2).machine  # type: ignore[return-value]


class Writer:
    """Writes what it is told at start: ``ops`` then optionally sync, then more unsynced ``tail``."""

    def __init__(self, ctx: NodeContext, synced: list, unsynced: list) -> None:
        self.ctx = ctx
        self.synced = synced
        self.unsynced = unsynced

    def on_start(self, now_ms: int) -> Effects:
        return Effects(writes=list(self.synced), sync=True, timer_ms=now_ms + 1)

    def on_timer(self, now_ms: int) -> Effects:
        return Effects(writes=list(self.unsynced))

    def on_message(self, src: int, msg: object, now_ms: int) -> None:
        return None


def writer(synced: list, unsynced: list):
    """A node that syncs ``synced`` at start and writes ``unsynced`` (never synced) 1 ms later."""
    return lambda ctx: (
        Writer(ctx, synced, unsynced) if ctx.incarnation == 1 else Writer(ctx, [], [])
    )


def log_ops(name: str, *chunks: bytes) -> list:
    return [Append(name, c) for c in chunks]
