"""Stepping mode's time model: virtual time jumps when a client waits on the cluster.

Trio's ``MockClock(autojump_threshold=0)`` is the model: when every task is blocked, the clock
jumps to the next deadline. Here a client's request is what blocks, and what it waits for is a
state of the simulation: a committed batch (Fetch below the log end, ``acks=all``), brokers that
have caught up with the controller (Metadata), a leader that is alive again or replaced, a node
that answers again. Each such wait becomes a :class:`~.context.Pending` whose ``poll`` says when
the state is reached; the gateway runs the simulation, event by event, until the first wait is
answered or its bound passes: as far as the request needs and no further.

What the waits look at lives here, so the handlers and the loop share one definition of
"caught up".
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.admin import ADMIN_NODE_ID
from kraft_testkit.sim import NoProgress

#: how long a client's wait may move virtual time beyond the controller's own clocks: the
#: broker session timeout (a dead leader is fenced and replaced within it) plus this margin
WAIT_MARGIN_MS = 5_000
#: how long the test's ``hold()``/``call()`` lets brokers catch up with the controller after it
SETTLE_LIMIT_MS = 5_000


def wait_bound_ms(cluster: Any) -> int:
    """The longest a client's wait moves virtual time: a dead broker is fenced after
    ``broker.session.timeout.ms`` and its partitions move; anything longer is not coming."""
    return cluster.config.broker_session_timeout_ms + WAIT_MARGIN_MS


def _leader_of_quorum(cluster: Any) -> int | None:
    active = cluster.active_controller
    return None if active is None else active.id


def _lags(cluster: Any, n: int, leader: int, target: int) -> bool:
    """Broker ``n`` runs, can reach the active controller ``leader`` and has not replayed up to
    ``target`` (it will catch up by itself, given time)."""
    process = cluster.sim.process(n)
    if not process.up or process.state.value != "running":
        return False
    network = cluster.sim.network
    if network.blocked(n, leader) or network.blocked(leader, n):
        return False
    return process.machine.metadata_offset < target


def lagging_brokers(cluster: Any) -> list[int]:
    """Running brokers that can reach the active controller but have not replayed everything
    it committed."""
    leader = _leader_of_quorum(cluster)
    if leader is None:
        return []
    target = cluster.metadata.provenance.offset
    return [n for n in cluster.broker_ids if _lags(cluster, n, leader, target)]


def broker_lags(cluster: Any, broker: int) -> bool:
    """:func:`lagging_brokers` for one broker, without looking at the others."""
    leader = _leader_of_quorum(cluster)
    return leader is not None and _lags(cluster, broker, leader,
                                        cluster.metadata.provenance.offset)


def down(cluster: Any, node: int) -> bool:
    """True when ``node``'s process is not running (killed, stopped, failed or paused)."""
    process = cluster.sim.process(node)
    return not process.up or process.state.value != "running"


def leads_nothing_dead(cluster: Any, image: Any, wanted: list | None) -> bool:
    """True when no partition of the ``wanted`` topics (names or ids; every topic: None) names
    a leader that is down in ``image``: a client would be sent to a closed door.

    Polled after every event while a Metadata request waits, so it looks at the brokers first
    and walks partitions only while some broker is down."""
    dead = {n for n in cluster.broker_ids if down(cluster, n)}
    if not dead:
        return True
    topics = list(image.topics) if wanted is None else [image.topic(w) for w in wanted]
    for topic in topics:
        if topic is None:
            continue
        for reg in topic.partitions.values():
            if reg.leader in dead:
                return False
    return True


def node_silent(cluster: Any, node: int) -> bool:
    """True when ``node`` is up but neither reads nor answers its clients (paused, or cut off
    from the clients' side of the network)."""
    process = cluster.sim.process(node)
    if not process.up:
        return False
    network = cluster.sim.network
    return process.state.value != "running" or network.blocked(ADMIN_NODE_ID, node) \
        or network.blocked(node, ADMIN_NODE_ID)


def settle(cluster: Any, limit_ms: int = SETTLE_LIMIT_MS) -> None:
    """Run the simulation until every broker that can reach the active controller has replayed
    what it committed (at most ``limit_ms``): what the test did under ``hold()`` is what the
    clients see next."""
    if not lagging_brokers(cluster):
        return
    try:
        cluster.sim.run_until(lambda _: not lagging_brokers(cluster), limit_ms)
    except NoProgress:
        pass
