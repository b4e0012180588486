"""A toy node for tests, benchmarks and examples: a gossiping counter that persists its value.

Every ``period_ms`` (plus seeded jitter) a node bumps its counter, appends it to its ``log`` file
as an 8-byte record, and pings its peers with the new value; a node that hears a larger value adopts
and logs it, and answers with an :class:`Ack`. With ``durable=True`` it syncs before it sends, so
no value it ever sent can be missing from its disk after a crash; recovery drops a torn last record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from kraft_testkit.sim.node import Append, Effects, NodeContext, NodeFactory, Truncate

LOG = "log"
RECORD = 8


@dataclass(frozen=True, slots=True)
class Ping:
    value: int


@dataclass(frozen=True, slots=True)
class Ack:
    value: int


def logged_value(data: bytes | None) -> int:
    """The last whole record of a log file (0 when there is none)."""
    if not data or len(data) < RECORD:
        return 0
    end = len(data) - len(data) % RECORD
    return int.from_bytes(data[end - RECORD : end], "big")


class GossipCounter:
    """The state machine; build it through :func:`gossip`."""

    def __init__(
        self, ctx: NodeContext, peers: Sequence[int], period_ms: int, durable: bool
    ) -> None:
        self.node_id = ctx.node_id
        self.peers = [p for p in peers if p != ctx.node_id]
        self.period_ms = period_ms
        self.durable = durable
        self.rng = ctx.rng
        log = ctx.disk.get(LOG, b"")
        self.torn = len(log) % RECORD
        self.value = logged_value(log)
        self.log_size = len(log) - self.torn
        self.acks = 0
        self.messages = 0

    def _next_tick(self, now_ms: int) -> int:
        return now_ms + self.period_ms + self.rng.randint(0, self.period_ms // 2)

    def on_start(self, now_ms: int) -> Effects:
        effects = Effects(timer_ms=self._next_tick(now_ms))
        if self.torn:  # recovery: cut the torn tail before appending after it
            effects.write(Truncate(LOG, self.log_size))
            effects.sync = True
        return effects

    def _log(self, effects: Effects) -> Effects:
        effects.write(Append(LOG, self.value.to_bytes(RECORD, "big")))
        effects.sync = self.durable
        self.log_size += RECORD
        return effects

    def on_timer(self, now_ms: int) -> Effects:
        self.value += 1
        effects = self._log(Effects(timer_ms=self._next_tick(now_ms)))
        for peer in self.peers:
            effects.send(peer, Ping(self.value))
        return effects

    def on_message(self, src: int, msg: object, now_ms: int) -> Effects | None:
        self.messages += 1
        if isinstance(msg, Ack):
            self.acks += 1
            return None
        assert isinstance(msg, Ping), msg
        effects = Effects()
        if msg.value > self.value:
            self.value = msg.value
            self._log(effects)
        return effects.send(src, Ack(self.value))


def gossip(peers: Sequence[int], *, period_ms: int = 10, durable: bool = True) -> NodeFactory:
    """A factory of :class:`GossipCounter` nodes talking to ``peers``."""
    return lambda ctx: GossipCounter(ctx, peers, period_ms, durable)


class ToyCodec:
    """Wire mode for the toy messages: JSON bytes, no pickle."""

    _TYPES: ClassVar[dict[str, type[Ping | Ack]]] = {"Ping": Ping, "Ack": Ack}

    def encode(self, msg: object) -> bytes:
        return json.dumps([type(msg).__name__, msg.value]).encode()  # type: ignore[attr-defined]

    def decode(self, data: bytes) -> object:
        name, value = json.loads(data)
        return self._TYPES[name](value)
