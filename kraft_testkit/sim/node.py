"""The contract between node logic and the simulator.

Node logic (a Raft replica, a controller, a broker) is a pure state machine in the etcd-raft style:
it never sleeps, reads a clock, draws from global ``random`` or touches a socket or a file. The
simulator calls it and it answers with :class:`Effects`, a description of what to persist, what to
send and when to wake up. Only the simulator performs them, which is what makes a run replayable.

For node authors:

* A :data:`NodeFactory` builds a node from a :class:`NodeContext`: its id, a read-only view of the
  files recovered from its disk (name -> bytes, a snapshot taken at start), a seeded
  ``random.Random`` for its own randomness (election jitter...) and its incarnation number. The
  factory runs on the first start and again on every restart: in-memory state does not survive a
  restart, only what the disk kept.
* The simulator calls one method at a time, never concurrently: :meth:`StateMachine.on_start` once
  after (re)start, :meth:`StateMachine.on_message` per delivered message,
  :meth:`StateMachine.on_timer` when the wake-up the node asked for is due. ``now_ms`` is the node's
  own clock (virtual time plus the node's clock skew).
* Each call returns :class:`Effects` (or ``None`` for "nothing"). The simulator applies them in
  this order: the disk writes, in order; then, if ``sync`` is set, an fsync of everything the node
  wrote so far; then the sends; then the timer. Persist before send: a message that leaves with
  ``sync=True`` can rely on the writes of the same ``Effects`` (and all earlier ones) surviving a
  crash. Unsynced writes may be lost on a crash, and the tail of an unsynced append may survive torn
  (cut at an arbitrary byte): recovery code must cope with a partial last record.
* ``timer_ms`` is an absolute time on the node's clock. ``None`` keeps the current wake-up,
  a new value replaces it (there is one timer per node), :data:`NEVER` cancels it. A time already
  past fires as the next event.
* Messages are values: treat received and sent objects as immutable. In wire mode the network
  encodes every message on send and decodes it on arrival, so the receiver gets its own copy;
  without it the receiver gets the sender's object.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeAlias

NEVER: Final = 1 << 62
"""``Effects.timer_ms`` value that cancels the node's pending wake-up."""


@dataclass(frozen=True, slots=True)
class Append:
    """Add ``data`` at the end of ``file`` (created if missing)."""

    file: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Truncate:
    """Cut ``file`` down to ``size`` bytes (at most its current size)."""

    file: str
    size: int


@dataclass(frozen=True, slots=True)
class Replace:
    """Atomically replace the whole content of ``file`` (write-temp-then-rename): never torn."""

    file: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Delete:
    """Remove ``file``; it comes back on a crash unless synced."""

    file: str


DiskOp: TypeAlias = Append | Truncate | Replace | Delete
DiskView: TypeAlias = Mapping[str, bytes]
"""Read-only ``file name -> content`` as recovered at start."""


@dataclass(slots=True)
class Effects:
    """What one step of node logic asks the simulator to do, in this order."""

    writes: list[DiskOp] = field(default_factory=list)
    sync: bool = False
    """fsync everything written so far before any of ``sends`` leaves."""
    sends: list[tuple[int, object]] = field(default_factory=list)
    """``(destination node id, message)`` pairs."""
    timer_ms: int | None = None
    """Absolute node time of the next wake-up; None keeps the current one; NEVER cancels it."""

    def send(self, dst: int, msg: object) -> Effects:
        """Queue a message; returns self so calls chain."""
        self.sends.append((dst, msg))
        return self

    def write(self, op: DiskOp) -> Effects:
        """Queue a disk operation; returns self so calls chain."""
        self.writes.append(op)
        return self


@dataclass(frozen=True, slots=True)
class NodeContext:
    """Everything a node gets when it is built: identity, recovered disk, its own randomness."""

    node_id: int
    disk: DiskView
    rng: random.Random
    incarnation: int
    """1 on the first start, +1 on every restart."""


class StateMachine(Protocol):
    """Node logic as the simulator drives it. Return ``None`` when there is nothing to do."""

    def on_start(self, now_ms: int) -> Effects | None:
        """Called once after (re)start, with the disk already loaded into the context."""

    def on_message(self, src: int, msg: object, now_ms: int) -> Effects | None:
        """A message from node ``src`` arrived."""

    def on_timer(self, now_ms: int) -> Effects | None:
        """The wake-up the node asked for is due (late if the node was paused)."""


NodeFactory: TypeAlias = Callable[[NodeContext], StateMachine]
