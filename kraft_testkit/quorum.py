"""A bare KRaft quorum in one process: Raft replicas under the deterministic simulator.

>>> q = Quorum(voters=3, seed=7)                                 # wire mode on, invariants on
>>> q.run_until(lambda q: q.active_controller is not None, timeout_ms=10_000)
>>> offset = q.append([b"hello"])                                # returns once committed
>>> old = q.active_controller
>>> q.faults.kill(old)
>>> q.run_until(lambda q: q.active_controller not in (None, old), timeout_ms=10_000)
>>> q.describe_quorum()                                          # a DescribeQuorumResponse
>>> q.trace.digest()                                             # same seed, same digest

Voters get node ids ``1..voters``, observers the ids after them. Each replica's state machine is a
:class:`~kraft_testkit.raft.listener.DigestListener` (how many records it applied, and their
checksum), so replicas can be compared however they caught up. Configuration overrides use
Kafka's names (``{"controller.quorum.election.timeout.ms": 500}``), plus
``metadata.log.max.record.bytes.between.snapshots`` for the listener's snapshots.

Faults (``q.faults``): ``kill``, ``start``, ``restart``, ``stop`` (graceful: a leader resigns
first), ``pause``/``resume``, ``skew``, ``wipe_disk``. A voter whose disk is wiped comes back
formatted with a new directory id and, as KIP-853 prescribes, is no longer the voter the others
know: it becomes an observer (it catches up, never votes, never stands), because it forgot the
votes it cast. The quorum still needs a majority of its original voters. The network
(``q.network``): ``partition``, ``isolate``, ``one_way``, ``heal``, ``drop``/``delay``/``hold``
(by protocol class, e.g. ``M.VoteRequest``, or a predicate), ``set_profile`` (latency, loss,
duplication, reordering).

KIP-853 (``kraft_version=1``): the voters are formatted with ``--initial-controllers`` and the
voter set lives in the log. ``add_controller()`` starts a new replica formatted with neither flag
(an observer), ``add_voter(node)`` / ``remove_voter(node)`` send AddRaftVoter / RemoveRaftVoter
to the leader and return once the change is committed, ``voter_set()`` is the leader's set, and
``faults.replace_disk(node)`` gives a node an empty disk (a new directory id). ``q.voters`` and
``q.observers`` stay the node ids as built (added controllers join ``observers``); the voter set
in effect is ``voter_set()``. docs/kip-853.md.

Liveness: :meth:`Quorum.converge` heals every fault and waits (60 virtual seconds by default)
until one leader leads every replica and all have the same log and high watermark.

Errors: :class:`~kraft_testkit.raft.errors.NotLeader` when there is no leader to append to or it
lost leadership first; :class:`~kraft_testkit.sim.NoProgress` (seed and trace tail) when time ran
out; :class:`~kraft_testkit.sim.InvariantViolation` as soon as a safety invariant breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kraft_testkit.arg_checks import an_int, bad
from kraft_testkit.errors import ConfigError
from kraft_testkit.protocol.codegen import Message
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import membership, rpc
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.errors import NotLeader
from kraft_testkit.raft.invariants import RaftInvariants
from kraft_testkit.raft.listener import DEFAULT_SNAPSHOT_BYTES, DigestListener
from kraft_testkit.raft.node import replica_factory
from kraft_testkit.raft.replica import LEADER, RaftReplica
from kraft_testkit.sim import LinkProfile, NoProgress, Simulation, Topology
from kraft_testkit.sim.facade import SimulationFacade
from kraft_testkit.sim.rng import RngTree

ADMIN_NODE_ID = -1  # where voter change requests come from (an admin client)
SNAPSHOT_BYTES_KEY = "metadata.log.max.record.bytes.between.snapshots"

__all__ = ["NoProgress", "NotLeader", "Quorum"]


class Quorum(SimulationFacade):
    """``voters`` Raft voters (and ``observers`` non-voting replicas) driven by one seed."""

    def __init__(self, voters: int = 3, *, seed: int = 0, observers: int = 0, wire: bool = True,
                 config: Mapping[str, object] | None = None, link: LinkProfile | None = None,
                 invariants: bool = True, trace_keep: int | None = 10_000,
                 kraft_version: int = 0) -> None:
        if type(voters) is not int or voters < 1:
            raise ConfigError(f"voters must be an int >= 1, got {voters!r}")
        if type(observers) is not int or observers < 0:
            raise ConfigError(f"observers must be an int >= 0, got {observers!r}")
        if kraft_version not in (0, 1):
            raise ConfigError(f"kraft_version must be 0 or 1, got {kraft_version!r}")
        self.kraft_version = kraft_version
        overrides = dict(config or {})
        snapshot_bytes = overrides.pop(SNAPSHOT_BYTES_KEY, DEFAULT_SNAPSHOT_BYTES)
        if type(snapshot_bytes) is str and snapshot_bytes.isdigit():
            snapshot_bytes = int(snapshot_bytes)
        if type(snapshot_bytes) is not int or snapshot_bytes < 1:
            raise ConfigError(f"{SNAPSHOT_BYTES_KEY} must be an integer >= 1, got {snapshot_bytes!r}")
        self.config = RaftConfig.from_kafka(overrides)
        self.link = link
        self.snapshot_bytes = snapshot_bytes
        self.voters = list(range(1, voters + 1))
        self.observers = list(range(voters + 1, voters + observers + 1))
        names = RngTree(seed).child("quorum")
        self.cluster_id = str(Uuid.random(names.child("cluster-id")))
        self.directory_ids = {n: Uuid.random(names.child("directory", n))
                              for n in self.voters + self.observers}
        self.sim = Simulation(seed, link=link, codec=rpc.RaftCodec() if wire else None,
                              trace_keep=trace_keep)
        self.sim.replay_hint = f"Quorum(voters={voters}, observers={observers}, seed={seed}" + \
            (f", config={config!r}" if config else "") + \
            (f", kraft_version={kraft_version}" if kraft_version else "") + ") and the same steps"
        self.invariants = RaftInvariants()
        if invariants:
            self.sim.add_invariant(self.invariants, "raft")
        self.endpoints: dict[int, tuple] = {}  # a node's own listeners from its next start
        factory = replica_factory(
            {v: self.directory_ids[v] for v in self.voters}, config=self.config,
            cluster_id=self.cluster_id, listener=lambda _: DigestListener(snapshot_bytes),
            directory_ids=self.directory_ids, kraft_version=kraft_version,
            endpoints=self.endpoints,
            bootstrap_servers=(lambda: self.nodes) if kraft_version else None)
        self._factory = factory
        for node in self.voters + self.observers:
            self.sim.add_node(node, factory)
        self._admin: Any = None
        self._correlation = 0
        self.faults = Faults(self)
        self.network = NetworkControl(self)

    # ------------------------------------------------------------------ looking

    @property
    def nodes(self) -> list[int]:
        return self.voters + self.observers

    def replica(self, node: int) -> RaftReplica | None:
        """The running replica of ``node`` (None while it is down)."""
        machine = self.sim.process(node).machine
        return machine if isinstance(machine, RaftReplica) else None

    def replicas(self) -> list[RaftReplica]:
        """Every running replica, by node id."""
        return [r for n in self.nodes if (r := self.replica(n)) is not None]

    def listener(self, node: int) -> DigestListener | None:
        r = self.replica(node)
        return r.listener if r is not None else None  # type: ignore[return-value]

    def _leader(self) -> RaftReplica | None:
        best = None
        for r in self.replicas():
            if r.role == LEADER and (best is None or r.epoch > best.epoch):
                best = r
        return best

    @property
    def leader_id(self) -> int | None:
        """The replica leading the highest epoch among running ones (None: no leader)."""
        r = self._leader()
        return r.id if r is not None else None

    @property
    def active_controller(self) -> int | None:
        """The leader once its epoch is established (its first record of the epoch committed)."""
        r = self._leader()
        if r is None or r._lead is None or r.hw <= r._lead.epoch_start:
            return None
        return r.id

    @property
    def epoch(self) -> int:
        """The highest epoch any running replica knows."""
        return max((r.epoch for r in self.replicas()), default=0)

    @property
    def high_watermark(self) -> int:
        """The leader's high watermark (without a leader, the largest any running replica knows)."""
        r = self._leader()
        if r is not None:
            return r.hw
        return max((r.hw for r in self.replicas()), default=0)

    def describe_quorum(self) -> Message:
        """The DescribeQuorumResponse the leader would send (NOT_LEADER_OR_FOLLOWER without one)."""
        r = self._leader()
        if r is not None:
            return r.describe_quorum()
        return rpc.describe_quorum_response(E.NOT_LEADER_OR_FOLLOWER, -1, self.epoch, -1, [], [])

    def status(self) -> str:
        """One line per node: role, epoch, leader, log bounds, high watermark."""
        lines = []
        for n in self.nodes:
            r = self.replica(n)
            state = self.sim.process(n).state.value
            lines.append(f"node {n}: {state}" if r is None else f"node {n}: {r!r} ({state})")
        return "\n".join(lines)

    # ------------------------------------------------------------------ running

    def append(self, records: Iterable[bytes | str], timeout_ms: int = 10_000) -> int:
        """Append records to the leader in one batch; returns the last one's offset once committed.

        :class:`NotLeader` when no replica leads now or the leader loses its epoch before the
        records commit (they may still commit later: the outcome is unknown, as for a Kafka
        client); :class:`NoProgress` when they did not commit within ``timeout_ms``.
        """
        if not isinstance(records, (list, tuple)) or not records or not all(
                type(r) in (bytes, bytearray, str) for r in records):
            raise bad("append", "records", records, "a non-empty list of records (bytes or str)")
        an_int("append", "timeout_ms", timeout_ms, 0)
        values = [r.encode() if isinstance(r, str) else bytes(r) for r in records]
        leader = self._leader()
        if leader is None:
            raise NotLeader(-1, None, self.epoch)
        epoch = leader.epoch
        offset = self._call(leader.id, lambda r, now: r.append(values, now),
                            f"append {len(values)} records")

        def committed(q: Quorum) -> bool:
            if q.replica(leader.id) is not leader or leader.epoch != epoch \
                    or leader.role != LEADER:
                raise NotLeader(leader.id, leader.leader_id, leader.epoch)
            return leader.hw > offset
        committed.__name__ = f"offset {offset} committed"
        self.run_until(committed, timeout_ms)
        return offset

    def converge(self, timeout_ms: int = 60_000) -> int:
        """Heal every fault, then wait until one leader leads every replica, all caught up.

        The liveness check of a fault run: returns the virtual ms it took after healing, or
        raises :class:`NoProgress`.
        """
        self.network.heal()
        self.network.clear_filters()
        self.sim.network.set_profile(self.link or LinkProfile())
        for n in self.nodes:
            state = self.sim.process(n).state.value
            if state == "paused":
                self.sim.resume(n)
            elif state != "running":
                self.sim.start(n)
        return self.run_until(Quorum.converged, timeout_ms)

    def converged(self) -> bool:
        """Every node is up and follows one established leader, with the same log and watermark."""
        leader = self._leader()
        if leader is None or leader._lead is None or leader._lead.pending:
            return False
        end = leader.log.end_offset
        if leader.hw != end:
            return False
        for n in self.nodes:
            r = self.replica(n)
            if r is None or r.epoch != leader.epoch or r.leader_id != leader.id \
                    or r.log.end_offset != end or r.hw != end:
                return False
        return True

    def _call(self, node: int, fn: Callable[[RaftReplica, int], Any], what: str = "call") -> Any:
        """Call the API of a running replica and apply what it asks for (writes, sends, timer)."""
        process = self.sim.process(node)
        if not isinstance(process.machine, RaftReplica) or process.state.value != "running":
            raise NotLeader(node, None, self.epoch)
        result = []

        def call(replica: RaftReplica, now: int) -> Any:
            result.append(fn(replica, now))
            return replica.poll(now)
        process.call(call, what)
        if self.sim.check_invariants:
            self.sim.check_now()
        return result[0]

    # ------------------------------------------------------------------ KIP-853 voter changes

    def add_controller(self) -> int:
        """Start a new replica (the next node id) formatted with neither ``--standalone`` nor
        ``--initial-controllers``: an observer that fetches until :meth:`add_voter` adds it."""
        node = max(self.nodes) + 1
        self.observers.append(node)
        self.sim.add_node(node, self._factory)
        return node

    def voter_set(self) -> Any:
        """The leader's voter set in effect (:class:`~kraft_testkit.raft.voters.VoterSet`;
        None without a leader or with static voters)."""
        r = self._leader()
        return r.history.latest if r is not None and r.dynamic else None

    def add_voter(self, node: int, timeout_ms: int = 30_000) -> Message:
        """AddRaftVoter for ``node`` with its current directory id; returns the response once
        the VotersRecord is committed (:class:`KafkaApiError` on an error code)."""
        an_int("add_voter", "timeout_ms", timeout_ms, 0)
        replica = self.replica(node)
        if replica is None:
            raise ConfigError(f"node {node} is not running: a new voter must be a running observer")
        body = membership.add_voter_request(self.cluster_id, node, replica.dir,
                                            timeout_ms=timeout_ms)
        return self._change_voters(body, timeout_ms)

    def remove_voter(self, node: int, directory_id: Uuid | None = None,
                     timeout_ms: int = 30_000) -> Message:
        """RemoveRaftVoter for ``node`` (by default with the directory id the voter set knows)."""
        an_int("remove_voter", "timeout_ms", timeout_ms, 0)
        if directory_id is not None and not isinstance(directory_id, Uuid):
            raise bad("remove_voter", "directory_id", directory_id,
                      "a Uuid (Uuid.parse('...')) or None (the one the voter set holds)")
        if directory_id is None:  # the leader's set names it: wait for a leader first
            self.run_until(lambda q: q.leader_id is not None, timeout_ms=timeout_ms)
            directory_id = membership.voter_directory(self.voter_set(), node)
        body = membership.remove_voter_request(self.cluster_id, node, directory_id)
        return self._change_voters(body, timeout_ms)

    def _change_voters(self, body: Message, timeout_ms: int) -> Message:
        return membership.change_voters(
            self, body, leader=lambda: self.leader_id, ask=self._ask, timeout_ms=timeout_ms,
            retry_backoff_ms=self.config.retry_backoff_ms,
            request_timeout_ms=self.config.request_timeout_ms)

    def _ask(self, dest: int, body: Message, wait_ms: int) -> Message | None:
        if self._admin is None:
            from kraft_testkit.admin import AdminClientNode

            self.sim.add_node(ADMIN_NODE_ID, AdminClientNode)
            self._admin = self.sim.process(ADMIN_NODE_ID).machine
        self._correlation += 1
        cid = self._correlation
        self.sim.network.send(ADMIN_NODE_ID, dest, rpc.request(cid, body))
        try:
            self.run_until(lambda q: cid in q._admin.responses, wait_ms)
        except NoProgress:
            return None
        return self._admin.responses.pop(cid)[1]

    def __repr__(self) -> str:
        return (f"Quorum(seed={self.seed}, voters={len(self.voters)}, "
                f"observers={len(self.observers)}, now={self.now_ms} ms, leader={self.leader_id}, "
                f"epoch={self.epoch})")


class Faults:
    """Node faults, taking effect at the current virtual instant: ``quorum.faults.kill(2)``."""

    def __init__(self, quorum: Quorum) -> None:
        self._q = quorum
        self._sim = quorum.sim

    def kill(self, node: int) -> None:
        """Crash: unsynced writes are lost (the replica syncs every log change, so none are)."""
        self._sim.kill(node)

    def start(self, node: int) -> None:
        """Start a stopped or killed node over what its disk kept (:class:`StorageError`, the
        node staying down, when its files are damaged)."""
        self._sim.start(node)

    def restart(self, node: int, *, graceful: bool = False) -> None:
        """Kill (or stop gracefully) and start again."""
        if graceful and self._sim.process(node).up:
            self.stop(node)
        self._sim.restart(node)

    def stop(self, node: int) -> None:
        """Graceful shutdown: a leader resigns first (EndQuorumEpoch names its successors)."""
        replica = self._q.replica(node)
        if replica is not None and replica.role == LEADER and \
                self._sim.process(node).state.value == "running":
            self._q._call(node, lambda r, now: r.resign(now), "resign")
        self._sim.stop(node)

    def pause(self, node: int) -> None:
        self._sim.pause(node)

    def resume(self, node: int) -> None:
        self._sim.resume(node)

    def wipe_disk(self, node: int, *, start: bool = True) -> None:
        """Kill ``node`` if it runs, give it an empty disk, and (by default) start it again.

        It comes back formatted with a new directory id: an observer, not the voter it was
        (KIP-853), since it forgot the votes it cast.
        """
        if self._sim.process(node).up:
            self._sim.kill(node)
        self._sim.wipe(node)
        if start:
            self._sim.start(node)

    def replace_disk(self, node: int, *, start: bool = True) -> None:
        """KIP-853's motivating case: the node's disk failed and a new, empty one is formatted
        (neither flag), so the same node id comes back with a new directory id, an observer.
        Remove the old (id, directory id) and add the new one to make it a voter again."""
        self.wipe_disk(node, start=start)

    def skew(self, node: int, skew_ms: int) -> None:
        """The node's clock reads virtual time + ``skew_ms`` from now on."""
        self._sim.set_skew(node, skew_ms)


def _match(match: Any) -> Any:
    """Let filters name protocol classes (``M.FetchRequest``): they match envelopes' bodies."""
    if isinstance(match, type) and issubclass(match, Message):
        return rpc.carrying(match)
    if isinstance(match, tuple) and any(isinstance(m, type) and issubclass(m, Message)
                                        for m in match):
        return rpc.carrying(*match)
    return match


class NetworkControl:
    """The network between the replicas: partitions, filters and link behaviour.

    ``match`` arguments take a protocol class (``M.VoteRequest``), a tuple of them, or a
    predicate on the message.
    """

    def __init__(self, quorum: Quorum) -> None:
        self._net = quorum.sim.network

    def partition(self, *groups: int | Iterable[int]) -> Topology:
        """Nodes in different groups cannot talk: ``partition({1, 2}, {3, 4, 5})``."""
        return self._net.partition(*(_group("partition", g) for g in groups))

    def isolate(self, node: int) -> Topology:
        return self._net.isolate(an_int("isolate", "node", node))

    def one_way(self, srcs: int | Iterable[int], dsts: int | Iterable[int]) -> Topology:
        """Messages from ``srcs`` to ``dsts`` are lost; the other way still works."""
        return self._net.partition_one_way(_group("one_way", srcs), _group("one_way", dsts))

    def apply(self, topology: Topology) -> Topology:
        return self._net.apply(topology)

    def heal(self, topology: Topology | None = None) -> None:
        """Undo one partition, or all of them."""
        if topology is not None and not isinstance(topology, Topology):
            raise bad("heal", "topology", topology, "what partition/isolate/one_way returned, "
                                                    "or None (heal all)")
        self._net.heal(topology)

    def drop(self, match: Any = None, **kwargs: Any) -> Any:
        """Lose matching messages (``src=``, ``dst=``, ``count=`` narrow it)."""
        return self._net.drop(_match(match), **kwargs)

    def delay(self, ms: int, match: Any = None, **kwargs: Any) -> Any:
        return self._net.delay(ms, _match(match), **kwargs)

    def hold(self, match: Any = None, **kwargs: Any) -> Any:
        """Keep matching messages aside until :meth:`release`."""
        return self._net.hold(_match(match), **kwargs)

    def release(self, match: Any = None) -> int:
        return self._net.release(_match(match))

    def remove_filter(self, rule: Any) -> None:
        self._net.remove_filter(rule)

    def clear_filters(self) -> None:
        self._net.clear_filters()

    def set_profile(self, profile: LinkProfile, *, src: Any = None, dst: Any = None) -> None:
        """Latency, loss (``drop``), duplication and reordering of links (all by default):
        ``set_profile(LinkProfile(drop=0.1, latency=Uniform(1, 5)))``."""
        self._net.set_profile(profile, src=src, dst=dst)

    @property
    def stats(self) -> Mapping[str, int]:
        return self._net.stats

    @property
    def held(self) -> Sequence[Any]:
        return self._net.held


def _group(where: str, nodes: Any) -> Any:
    """A node id, or a list or set of them (what the network's partitions take)."""
    if type(nodes) is int or isinstance(nodes, (list, tuple, set, frozenset, range)) and all(
            type(n) is int for n in nodes):
        return nodes
    raise bad(where, "nodes", nodes, "a node id (int) or a list or set of node ids")
