"""What a warped stretch starts from and what the idle model returns: the prediction, the
messages in flight at the start (found in the scheduler's heap) and the horizon the model
must stop before (``quorum_model.py`` computes the stretch; this module only reads the
cluster)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.fastforward.follower_model import _KINDS, Computed, Loop, _channel
from kraft_testkit.fastforward.observer_loop import LeaderStep, LinkClock, NotModelled
from kraft_testkit.fastforward.replica_loops import REPLICA_KINDS, in_order
from kraft_testkit.metadata.snapshot_generator import BATCH_OVERHEAD, RECORD_OVERHEAD
from kraft_testkit.sim.node import NEVER

#: the horizon's reason where the log cleaners run (once a minute, every node at once): the
#: warp steps through them right after the stretch (warp.QuorumWarp.warp_once)
CLEANER = "log cleaner"
# a NoOpRecord's value: frame version, type 20, version 0, empty tagged fields (4 bytes)
NOOP_BATCH_BYTES = BATCH_OVERHEAD + RECORD_OVERHEAD + 4


@dataclass(slots=True)
class Parked:
    node: int
    offset: int
    deadline: int
    #: where the leader parked it (instant << 32 | tie; ``fast_brokers.PRE`` + i before the
    #: stretch): its place in the leader's list among the fast loops' parked fetches
    pos: int = 0


@dataclass(slots=True)
class QuorumPrediction:
    """What :func:`predict_quorum` computed: every event in run order, the leader's steps,
    and the state where it stopped (``horizon_ms``: the first instant it did not compute)."""

    leader: int
    steps: list[LeaderStep] = field(default_factory=list)
    events: list[Computed] = field(default_factory=list)
    horizon_ms: int = 0
    why_stopped: str = ""
    end_offset: int = 0
    high_watermark: int = 0
    loops: dict[int, Loop] = field(default_factory=dict)
    noops: list[int] = field(default_factory=list)  # instants the NoOps were queued
    drains: list[int] = field(default_factory=list)  # instants they were appended
    #: messages sent in the stretch still in flight at its end: (at, tie, seq, kind, arg)
    in_flight: list[tuple] = field(default_factory=list)
    #: what was in flight at the start: (src, dst, channel) -> (message, heap entry)
    flights: dict[tuple, tuple[Any, list]] = field(default_factory=dict)
    #: the leader's record of each follower (voters and brokers) at the end, as its fetch
    #: handler and its answers to parked fetches leave it: node -> [last fetch ms, end
    #: offset, caught up ms] (the compact path sets it without running the leader's code)
    records: dict[int, list] = field(default_factory=dict)
    #: the fetches parked at the leader at the end, in the leader's order: (node, deadline)
    parked: list[tuple[int, int]] = field(default_factory=list)
    #: the leader's last event in the stretch: (instant, Raft wake-up, node wake-up after it)
    #: (None: it had no event)
    leader_wakes: tuple[int, int, int] | None = None
    #: the followers' fetches that reached the leader and their answers that reached them
    follower_fetches: int = 0
    follower_answers: int = 0
    #: events computed but left out of ``events`` (a compact prediction's)
    omitted: int = 0
    #: the brokers whose fetch loops the model computed out of its heap (``fast_brokers``)
    fast_loops: int = 0
    #: of those, the quiet brokers whose heartbeats ran in their loops too (``fast_beats``)
    fast_beats: int = 0
    #: a compact prediction's leader, for the warp to set instead of replay: the high
    #: watermark's moves (instant, new high watermark), the heartbeat answers' commit
    #: latencies in the order the controller sends them, the heartbeats still waiting for
    #: their commit (broker, offset, arrival), each broker's last heartbeat arrival, and the
    #: check-quorum deadline
    commits: list[tuple[int, int]] = field(default_factory=list)
    latencies: list[int] = field(default_factory=list)
    waiting: list[tuple[int, int, int]] = field(default_factory=list)
    beats: dict[int, int] = field(default_factory=dict)
    check_deadline: int = 0
    #: replica messages in flight at the start behind the first on their link (a broker's
    #: fetch and its answer to the peer's fetch share it): (key, message, heap entry), in order
    more_flights: list[tuple] = field(default_factory=list)
    #: the brokers' replica-fetch links as the model's draws left them: (src, dst, channel)
    links: dict[tuple, LinkClock] = field(default_factory=dict)
    #: the tie of the event the model stopped before, where it stopped inside the instant
    #: ``horizon_ms`` (-1: before the instant)
    stop_tie: int = -1
    #: the BeginQuorumEpoch requests the leader sent a dead voter (``dead_nodes``): (sent,
    #: arrival, tie, request id); the voter; the messages to dead nodes in flight from
    #: before the stretch (heap entries)
    begins: list[tuple[int, int, int, int]] = field(default_factory=list)
    begin_to: int | None = None
    dead_flights: list[list] = field(default_factory=list)

    @property
    def voters(self) -> dict[int, Loop]:
        return {n: lp for n, lp in self.loops.items() if lp.voter}


def _scan_heap(cluster: Any, followers: set[int], leader: int,
               dead: set[int] | None = None) -> tuple[dict, list, int, list]:
    """The follower loops' messages in the heap (and the brokers' replica fetches), by
    (src, dst, channel); the replica messages behind the first on their link, in order; the
    first instant of anything else (other than the nodes' own timers): the model stops
    before it; and the messages on their way to a ``dead`` node (they vanish)."""
    brokers = set(cluster.broker_ids)
    net = cluster.sim.network
    arrive = net._arrive_cb  # noqa: SLF001 - the network's one delivery callback
    nodes = followers | {leader}
    timers = {id(cluster.sim.process(n)._timer) for n in nodes}  # noqa: SLF001
    found: dict[tuple, tuple[Any, list]] = {}
    replica: dict[tuple, list] = {}
    to_dead: list[list] = []
    other = NEVER
    for entry in cluster.sim.scheduler._heap:  # noqa: SLF001
        fn = entry[3]
        if fn is None or id(entry) in timers:
            continue
        packet = entry[4] if fn == arrive else None
        if packet is None or (packet.src not in nodes and packet.dst not in nodes):
            other = min(other, entry[0])
            continue
        name = type(getattr(packet.msg, "body", None)).__name__
        if dead and packet.dst in dead:  # it vanishes at the dead node's door
            to_dead.append(entry)
            continue
        if packet.src in brokers and packet.dst in brokers and name in REPLICA_KINDS and \
                packet.src != packet.dst:  # a replica fetch or its answer (replica_loops)
            replica.setdefault((packet.src, packet.dst, None), []).append((packet.msg, entry))
            continue
        kind = _KINDS.get(name)
        follower = packet.src if kind and kind[1] else packet.dst
        if kind is None or follower not in followers or \
                leader not in (packet.src, packet.dst) or packet.src == packet.dst:
            raise NotModelled(f"a {name} from {packet.src} to {packet.dst} is in flight")
        key = (packet.src, packet.dst, _channel(kind[0]))
        if key in found:
            raise NotModelled(f"two messages in flight from {packet.src} to {packet.dst}")
        found[key] = (packet.msg, entry)
    return found, in_order(replica, found), other, to_dead


def horizon_of(cluster: Any, leader: int, until_ms: int) -> tuple[int, str]:
    """The first instant the model must not compute: ``until_ms`` + 1, or earlier where a
    periodic task it does not model falls due (the reason is returned with it)."""
    best, why = until_ms + 1, "run end"
    for n in sorted(cluster.roles):
        node = cluster.controller_node(n)
        if node is None:
            continue
        if node.raft._clean_at < best:  # noqa: SLF001
            best, why = node.raft._clean_at, f"{CLEANER} on {n}"  # noqa: SLF001
        gen = node.snapshots
        if gen.max_interval_ms and gen.last_ms is not None and \
                gen.last_ms + gen.max_interval_ms < best:
            best, why = gen.last_ms + gen.max_interval_ms, f"snapshot interval on {n}"
    ctrl = cluster.controller_node(leader).controller
    for key, name in (("tokens.next_check_ms", "token expiry check"),
                      ("balance.next_ms", "leader rebalance"), ("unclean.next_ms", "unclean")):
        due = ctrl.soft.get(key)
        if due is not None and due < best:
            best, why = due, name
    return best, why
