"""Is the cluster idle right now? The conservative test a bulk step starts from.

A bulk step (benchmarks/README.md, "What the bulk step still has to do") may only compute a
stretch in which nothing happens but the steady traffic it models: the Raft fetches (voters
and brokers long-polling the leader), the brokers' heartbeats on the controller channel and
the active controller's NoOps. :func:`why_not_idle` lists every reason the present instant
is not such a stretch's start; an empty list means idle. It errs on the side of "not idle":
a reason it names may be harmless, but an instant it calls idle has none of these:

- a node that is not running (down, paused, killed), has a clock skew, an overdue timer or
  queued messages;
- a network partition, a filter, a held message, or a link that loses, duplicates or
  reorders (the computed loops assume FIFO links without loss: ``LinkClock``);
- anything in the scheduler's heap but node timers and messages of the modelled kinds
  (Fetch and BrokerHeartbeat requests and answers to or from a controller): a scheduled
  fault action, an admin request or its answer, a vote, a registration, an AlterPartition, a
  snapshot fetch, and the brokers' replica fetches of topic partitions (broker to broker:
  not modelled yet, so a cluster with a replicated topic is never idle);
- no single leader, a voter that does not follow it in its epoch, or an active controller
  that is not the Raft leader (an election is under way);
- a controller write waiting for its commit other than a heartbeat's answer;
- a broker that is not RUNNING, fenced, in controlled shutdown or unregistered, follows a
  topic partition (its replica fetcher's request may be parked at the partition's leader, out
  of the heap) or has an AlterPartition in flight;
- a replica more than two offsets behind the leader's log end or high watermark (idle, the
  leader appends one NoOp record every 500 ms; a replica may hold the newest one and not yet
  know that the one before was committed: its high watermark two behind).
"""

from __future__ import annotations

from typing import Any

#: The messages a bulk step models; anything else in flight means the cluster is busy.
MODELLED_MESSAGES = frozenset({"FetchRequest", "FetchResponse", "BrokerHeartbeatRequest",
                               "BrokerHeartbeatResponse"})


#: How far behind the leader's log end and high watermark a replica may be and count as
#: caught up: idle, it may hold the newest NoOp but not yet know the commit of the one before.
CAUGHT_UP_OFFSETS = 2


def why_not_idle(cluster: Any, *, links: bool = True,
                 allowed: Any = frozenset()) -> list[str]:
    """Every reason the cluster is not in an idle stretch now (empty: idle). ``links=False``
    skips the links' profiles (a caller that checked them and knows they cannot change);
    ``allowed``: more scheduler callbacks that count as idle traffic (a fast path's own)."""
    reasons: list[str] = []
    sim = cluster.sim
    reasons += _process_reasons(cluster)
    if links:
        reasons += _network_reasons(sim.network, list(cluster.roles))
    else:
        reasons += _network_reasons(sim.network, [])
    reasons += _heap_reasons(sim, set(cluster.controller_ids), allowed)
    if reasons:  # the Raft and broker checks read running machines only
        return reasons
    reasons += _quorum_reasons(cluster)
    if not reasons:
        reasons += _broker_reasons(cluster)
    return reasons


def is_idle(cluster: Any, **options: Any) -> bool:
    """True when :func:`why_not_idle` finds nothing."""
    return not why_not_idle(cluster, **options)


def _process_reasons(cluster: Any) -> list[str]:
    reasons = []
    for n in sorted(cluster.roles):
        p = cluster.sim.process(n)
        if p.state.value != "running":
            reasons.append(f"node {n} is {p.state.value}")
        elif p.skew_ms:
            reasons.append(f"node {n} has a clock skew of {p.skew_ms} ms")
        elif p._timer_overdue or p._inbox:  # noqa: SLF001 - a paused node's leftovers
            reasons.append(f"node {n} has an overdue timer or queued messages")
    return reasons


def _network_reasons(network: Any, nodes: list[int]) -> list[str]:
    reasons = []
    if network.partitions:
        reasons.append(f"{len(network.partitions)} network partition(s) in force")
    if network.filters:
        reasons.append(f"{len(network.filters)} network filter(s) installed")
    if network.held:
        reasons.append(f"{len(network.held)} message(s) held")
    for src in nodes:
        for dst in nodes:
            if src == dst:
                continue
            profile = network.profile(src, dst)
            if profile.drop or profile.duplicate or profile.reorder or not profile.fifo:
                reasons.append(f"the link {src} -> {dst} loses, duplicates or reorders")
                return reasons
    return reasons


def _heap_reasons(sim: Any, controllers: set[int], allowed: Any) -> list[str]:
    """Every pending event must be a node's timer or a modelled message (one end a
    controller: the metadata partition's fetches, the heartbeats)."""
    network = sim.network
    arrive = network._arrive_cb  # noqa: SLF001 - the network's one delivery callback
    timers = {p._timer_cb for p in sim.processes.values()}  # noqa: SLF001
    reasons = []
    for entry in sim.scheduler._heap:  # noqa: SLF001 - read only
        fn, arg = entry[3], entry[4]
        if fn is None:  # cancelled
            continue
        if fn is arrive:
            kind = type(arg.msg).__name__
            body = getattr(arg.msg, "body", None)
            name = type(body).__name__ if body is not None else kind
            if name not in MODELLED_MESSAGES or (arg.src not in controllers and
                                                 arg.dst not in controllers):
                reasons.append(f"a {name} from {arg.src} to {arg.dst} is in flight")
        elif fn not in timers and fn not in allowed:
            reasons.append(f"a scheduled action ({getattr(fn, '__name__', fn)!r}) is pending")
    return reasons


def _quorum_reasons(cluster: Any) -> list[str]:
    leaders = [n for n in cluster.controller_ids if cluster.replica(n).is_leader]
    if len(leaders) != 1:
        return [f"{len(leaders)} Raft leaders among the voters"]
    leader = cluster.replica(leaders[0])
    reasons = []
    active = cluster.active_controller
    if active is None or active.id != leader.id:
        reasons.append("the active controller is not the Raft leader")
    ctrl = cluster.controller_node(leader.id).controller
    for w in ctrl._waiting:  # noqa: SLF001 - what waits for a commit
        name = type(w.response).__name__ if w.response is not None else "a write"
        if name != "BrokerHeartbeatResponse":
            reasons.append(f"the controller waits for the commit of {name}")
    end, hw = leader.log_end_offset, leader.hw
    for n in sorted(cluster.roles):
        r = cluster.replica(n)
        if r is leader:
            continue
        if r.epoch != leader.epoch or r.leader_id != leader.id:
            reasons.append(f"node {n} does not follow {leader.id} in epoch {leader.epoch}")
        elif end - r.log_end_offset > CAUGHT_UP_OFFSETS or hw - r.hw > CAUGHT_UP_OFFSETS:
            reasons.append(f"node {n} is behind the leader (log end {r.log_end_offset} of "
                           f"{end}, high watermark {r.hw} of {hw})")
    return reasons


def _broker_reasons(cluster: Any) -> list[str]:
    reasons = []
    for b in cluster.broker_ids:
        s = cluster.broker_state(b)
        if s.state != "RUNNING" or not s.registered or s.fenced or s.in_controlled_shutdown:
            reasons.append(f"broker {b} is {s.state} (registered {s.registered}, fenced "
                           f"{s.fenced}, in controlled shutdown {s.in_controlled_shutdown})")
            continue
        logic = cluster.broker(b).logic
        if logic.replicas.followed():  # its replica fetcher long-polls another broker
            reasons.append(f"broker {b} follows topic partitions (replica Fetch loop)")
        if logic.alter.in_flight:
            reasons.append(f"broker {b} has an AlterPartition in flight")
    return reasons
