"""Two views of one cluster, named for what a test looks at: the controller quorum and the
broker fleet (the ``controller_quorum`` and ``broker_fleet`` fixtures).

>>> q = QuorumView(c)                 # or cluster.quorum
>>> q.leader, q.epoch, q.high_watermark
(<controller 1000>, 1, 13)
>>> old = q.kill_leader()             # returns the node it killed
>>> q.wait_for_leader(other_than=old)
>>> f = BrokerFleet(c)                # or cluster.fleet; a sequence of broker handles
>>> f.isolate(f[0]); c.run_until(lambda c: f.state(f[0]).fenced, timeout_ms=20_000)
>>> f.leaders()                       # partitions led per broker id
{0: 0, 1: 3, 2: 3}
>>> f.roll()                          # a rolling restart, one broker at a time

Both hold the cluster (``.cluster``) and change it only through its public operations, so what
a view does is what the same calls on the cluster would do.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from .errors import ConfigError
from .handles import BrokerStatus, NodeHandle

if TYPE_CHECKING:
    from .cluster import Cluster
    from .protocol.codegen import Message
    from .raft.voters import VoterSet
    from .sim.network import Topology

DEFAULT_TIMEOUT_MS = 30_000


class _View:
    """What both views share: the cluster, time, and (for older tests) attribute access that
    falls through to the cluster with a DeprecationWarning."""

    _kind = "view"

    def __init__(self, cluster: "Cluster") -> None:
        self.cluster = cluster

    @property
    def now_ms(self) -> int:
        return self.cluster.now_ms

    def run_until(self, predicate: Any, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> int:
        """``cluster.run_until``: the predicate gets the cluster."""
        return self.cluster.run_until(predicate, timeout_ms)

    def run_for(self, ms: int) -> None:
        self.cluster.run_for(ms)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "cluster":
            raise AttributeError(name)
        value = getattr(self.cluster, name)  # AttributeError if the cluster has none either
        warnings.warn(f"{self._kind}.{name} reaches through to the cluster; use "
                      f"{self._kind}.cluster.{name}", DeprecationWarning, stacklevel=2)
        return value


class QuorumView(_View):
    """The controllers of a cluster as a Raft quorum: who votes, who leads, in which epoch, how
    far the log is committed; kill or isolate the leader; add and remove voters (KIP-853)."""

    _kind = "controller_quorum"

    @property
    def controllers(self) -> list[NodeHandle]:
        """Every controller node (voters and observers), by id."""
        return list(self.cluster.controllers)

    @property
    def voters(self) -> list[NodeHandle]:
        """The voters in effect, by id: the leader's voter set (KIP-853, ``kraft_version=1``),
        else the voters a running controller knows (``controller.quorum.voters``)."""
        voter_set = self.cluster.voter_set()
        if voter_set is not None:
            ids = sorted(voter_set)
        else:
            known = [r.voters for h in self.cluster.controllers
                     if (r := self.cluster.replica(h)) is not None]
            ids = sorted(known[0]) if known else [h.id for h in self.cluster.controllers]
        return [self.cluster.node(n) for n in ids]

    @property
    def observers(self) -> list[NodeHandle]:
        """Controllers that fetch the log without a vote (added by ``add_controller``, or
        removed from the voter set)."""
        voters = set(self.voters)
        return [h for h in self.cluster.controllers if h not in voters]

    @property
    def leader(self) -> NodeHandle | None:
        """The running controller that is Raft leader of the highest epoch (None during an
        election). It may not act as active controller yet: see :attr:`active`."""
        best = None
        for h in self.cluster.controllers:
            r = self.cluster.replica(h)
            if r is not None and r.is_leader and self.cluster.sim.process(h.id).state.value \
                    == "running" and (best is None or r.epoch > best[0]):
                best = (r.epoch, h)
        return best[1] if best else None

    @property
    def active(self) -> NodeHandle | None:
        """The active controller (the leader once it took over the metadata log), or None."""
        return self.cluster.active_controller

    active_controller = active  # the Cluster's name, for tests written against it

    @property
    def epoch(self) -> int:
        """The highest epoch any running controller knows (-1 when none runs)."""
        epochs = [r.epoch for h in self.cluster.controllers
                  if (r := self.cluster.replica(h)) is not None]
        return max(epochs, default=-1)

    @property
    def high_watermark(self) -> int:
        """The end of the committed metadata log (the leader's, else the highest any running
        controller knows; 0 when none runs)."""
        leader = self.leader
        if leader is not None:
            return self.cluster.replica(leader).hw
        return max((r.hw for h in self.cluster.controllers
                    if (r := self.cluster.replica(h)) is not None), default=0)

    def describe_quorum(self) -> "Message":
        """A DescribeQuorumResponse as the active controller answers it (``NoProgress`` when
        there is none)."""
        return self.cluster.describe_quorum()

    def voter_set(self) -> "VoterSet | None":
        return self.cluster.voter_set()

    def wait_for_leader(self, *, other_than: NodeHandle | int | None = None,
                        timeout_ms: int = DEFAULT_TIMEOUT_MS) -> NodeHandle:
        """Run until an active controller (other than ``other_than``) serves; returns it.
        ``NoProgress`` after ``timeout_ms`` of virtual time."""
        old = None if other_than is None else self.cluster.node(other_than).id
        self.cluster.run_until(
            lambda c: (a := c.active_controller) is not None and a.id != old, timeout_ms)
        return self.cluster.active_controller

    def kill_leader(self, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> NodeHandle:
        """Crash the active controller (waiting up to ``timeout_ms`` for one); returns it."""
        leader = self.wait_for_leader(timeout_ms=timeout_ms)
        self.cluster.faults.kill(leader)
        return leader

    def isolate_leader(self, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
                       ) -> tuple[NodeHandle, "Topology"]:
        """Cut the active controller off the network; returns it and the cut
        (``cluster.network.heal(cut)`` undoes it)."""
        leader = self.wait_for_leader(timeout_ms=timeout_ms)
        return leader, self.cluster.network.isolate(leader)

    def add_controller(self) -> NodeHandle:
        """A new controller node, an observer until :meth:`add_voter` (``kraft_version=1``)."""
        return self.cluster.add_controller()

    def add_voter(self, node: NodeHandle | int, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
                  ) -> "Message":
        """AddRaftVoter; returns once the new voter set is committed (see docs/kip-853.md)."""
        return self.cluster.add_voter(node, timeout_ms=timeout_ms)

    def remove_voter(self, node: NodeHandle | int, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
                     ) -> "Message":
        """RemoveRaftVoter; returns once the new voter set is committed."""
        return self.cluster.remove_voter(node, timeout_ms=timeout_ms)

    def __iter__(self) -> Iterator[NodeHandle]:
        return iter(self.voters)

    def __len__(self) -> int:
        return len(self.voters)

    def __contains__(self, node: object) -> bool:
        return node in self.voters

    def __repr__(self) -> str:
        leader = self.leader
        return (f"<QuorumView voters={[h.id for h in self.voters]} "
                f"leader={None if leader is None else leader.id} epoch={self.epoch} "
                f"high_watermark={self.high_watermark}>")


class BrokerFleet(_View, Sequence[NodeHandle]):
    """The brokers of a cluster: a sequence of their handles (``fleet[0]``, ``len(fleet)``,
    ``for b in fleet``, equal to ``cluster.brokers``) with their states and fleet operations."""

    _kind = "broker_fleet"

    @property
    def brokers(self) -> list[NodeHandle]:
        return list(self.cluster.brokers)

    @property
    def ids(self) -> list[int]:
        return [h.id for h in self.cluster.brokers]

    @overload
    def __getitem__(self, index: int) -> NodeHandle: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeHandle]: ...

    def __getitem__(self, index: int | slice) -> NodeHandle | list[NodeHandle]:
        return self.cluster.brokers[index]

    def __len__(self) -> int:
        return len(self.cluster.brokers)

    def __iter__(self) -> Iterator[NodeHandle]:
        return iter(list(self.cluster.brokers))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BrokerFleet):
            return other.cluster is self.cluster
        if isinstance(other, (list, tuple)):
            return list(self.cluster.brokers) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so not hashable

    def state(self, broker: NodeHandle | int) -> BrokerStatus:
        """``cluster.broker_state(broker)``: process, lifecycle state, registration."""
        return self.cluster.broker_state(broker)

    def states(self) -> dict[int, BrokerStatus]:
        """Every broker's :class:`~kraft_testkit.handles.BrokerStatus`, by id."""
        return {h.id: self.cluster.broker_state(h) for h in self.cluster.brokers}

    @property
    def fenced(self) -> list[NodeHandle]:
        """Brokers the committed metadata says are fenced (or not registered)."""
        return [h for h in self.cluster.brokers if self.cluster.broker_state(h).fenced]

    @property
    def unfenced(self) -> list[NodeHandle]:
        return [h for h in self.cluster.brokers if not self.cluster.broker_state(h).fenced]

    @property
    def running(self) -> list[NodeHandle]:
        """Brokers whose lifecycle state is RUNNING."""
        return [h for h in self.cluster.brokers
                if self.cluster.broker_state(h).state == "RUNNING"]

    def leaders(self) -> dict[int, int]:
        """How many partitions each broker leads in the committed metadata (every broker
        listed, 0 for none)."""
        image = self.cluster.metadata
        return {h.id: len(image.partitions_led_by(h.id)) for h in self.cluster.brokers}

    def led_by(self, broker: NodeHandle | int) -> list[tuple[str, int]]:
        """``(topic, partition)`` of every partition ``broker`` leads."""
        return self.cluster.metadata.partitions_led_by(self.cluster.node(broker).id)

    def kill(self, broker: NodeHandle | int) -> None:
        self.cluster.faults.kill(self._broker(broker))

    def start(self, broker: NodeHandle | int) -> None:
        self.cluster.faults.start(self._broker(broker))

    def stop(self, broker: NodeHandle | int, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """Graceful stop: controlled shutdown first (leaders move away)."""
        self.cluster.faults.stop(self._broker(broker), timeout_ms=timeout_ms)

    def isolate(self, broker: NodeHandle | int) -> "Topology":
        """Cut one broker off the network; ``cluster.network.heal(cut)`` undoes it."""
        return self.cluster.network.isolate(self._broker(broker))

    def wait_unfenced(self, brokers: Sequence[NodeHandle | int] | None = None, *,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS) -> int:
        """Run until ``brokers`` (default: all) are RUNNING and unfenced; returns the virtual
        ms it took. After a heal the broker is unfenced once a retried heartbeat gets through
        and it has caught up; after a restart once its old session expired (about 10 s), so
        wait on this, not on a fixed time."""
        ids = [self._broker(b).id for b in (brokers if brokers is not None
                                             else self.cluster.brokers)]
        return self.cluster.run_until(
            lambda c: all((s := c.broker_state(n)).state == "RUNNING" and not s.fenced
                          for n in ids), timeout_ms)

    def roll(self, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """A rolling restart: each broker in turn stops gracefully (controlled shutdown),
        starts, and is RUNNING, unfenced and caught up with the metadata log before the next
        one goes; each new incarnation waits out its predecessor's session (about 10 s: Kafka
        4.2.1 gives DUPLICATE_BROKER_REGISTRATION until then, clean shutdown or not).
        ``NoProgress`` if a broker does not come back within ``timeout_ms``."""
        for h in list(self.cluster.brokers):
            self.cluster.faults.stop(h, timeout_ms=timeout_ms)
            self.cluster.faults.start(h)
            self.wait_unfenced([h], timeout_ms=timeout_ms)
        self.cluster.wait_brokers_caught_up(timeout_ms=timeout_ms)

    def _broker(self, broker: NodeHandle | int) -> NodeHandle:
        handle = self.cluster.node(broker)
        if not handle.is_broker:
            raise ConfigError(f"node {handle.id} is not a broker; brokers are "
                              f"{self.ids}")
        return handle

    def __repr__(self) -> str:
        return f"<BrokerFleet {list(self.cluster.brokers)!r}>"
