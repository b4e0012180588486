"""The warp with dead nodes (kraft_testkit/fastforward/dead_nodes.py): after a controller
failover the cluster is idle but for the new leader asking the dead voter, every request
timeout, to acknowledge its epoch; a dead follower voter or a dead broker sends nothing and is
sent nothing. The warp computes all of it. Warped and stepped runs are compared as the
differential test compares them (files, images, Raft request ids and connections, timers,
links), plus the network's counters (what is sent to a dead node vanishes at its door)."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.cluster import Cluster, node_id
from kraft_testkit.fastforward import dead_nodes, quorum_model
from kraft_testkit.fastforward.observer_loop import NotModelled
from test_fastforward_differential import _state
from test_fastforward_replicas import _replica_state


def _stats(c: Cluster) -> dict:
    return {k: c.sim.network.stats[k] for k in ("sent", "delivered", "vanished", "dropped")}


def _failover(seed: int, fast_forward: bool, stops: tuple[int, ...] = (),
              restart_at: int | None = None) -> tuple[dict, dict, Cluster]:
    """bench_cluster.py's failover scenario (3 + 3, a topic of 6 partitions RF=3, the
    active controller killed, run to 30 virtual s), with ``run_for`` calls ending at the
    virtual instants ``stops`` if given; ``restart_at``: the dead controller started again
    then."""
    c = Cluster(3, 3, seed=seed, fast_forward=fast_forward, trace_keep=None)
    c.create_topic("t", 6, 3)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    for at in stops:
        c.run_for(at - c.now_ms)
    if restart_at is not None:
        c.run_for(restart_at - c.now_ms)
        c.faults.start(old)
    c.run_for(30_000 - c.now_ms)
    return _state(c), _stats(c), c


@pytest.mark.parametrize("seed", [1, 2, 3, 7])
def test_a_failover_warps_with_the_dead_voter_as_stepping_runs_it(seed):
    stepped, stepped_stats, _ = _failover(seed, False)
    fast, fast_stats, c = _failover(seed, True)
    assert stepped.keys() == fast.keys()
    for key in stepped:
        assert stepped[key] == fast[key], key
    assert fast_stats == stepped_stats
    assert stepped_stats["vanished"] > 5  # the leader kept asking the dead voter
    # the public switch took the fast path over most of the 26 virtual s after the election
    assert c.fast_forward_stats["virtual ms warped"] > 20_000


@pytest.mark.parametrize("seed", [4, 6])
def test_stretches_that_end_with_a_request_on_its_way_to_the_dead_voter(seed):
    """Stops 1 ms after the leader asked the dead voter (from 8 virtual s on, when the warp
    takes the stretches): requests still in flight are handed back, the leader's connection
    and request id set from the model."""
    _, _, plain = _failover(seed, False)
    sends = sorted({at for at, kind, _, _, what in plain.sim.trace.events()
                    if kind == "send" and what == "BeginQuorumEpochRequest" and
                    8_000 < at < 29_000})
    assert len(sends) >= 8
    stops = tuple(at + 1 for at in sends)
    stepped, stepped_stats, _ = _failover(seed, False, stops)
    fast, fast_stats, c = _failover(seed, True, stops)
    for key in stepped:
        assert stepped[key] == fast[key], key
    assert fast_stats == stepped_stats
    assert c.fast_forward_stats["stretches"] >= len(stops)


def test_the_dead_voter_started_again_after_a_warp_rejoins_as_when_stepped():
    stepped, stepped_stats, _ = _failover(5, False, restart_at=18_000)
    fast, fast_stats, c = _failover(5, True, restart_at=18_000)
    for key in stepped:
        assert stepped[key] == fast[key], key
    assert fast_stats == stepped_stats
    ends = {c.replica(n).log_end_offset for n in c.controllers}
    assert len(ends) == 1  # the restarted voter caught up


def test_a_planted_bug_in_the_requests_to_the_dead_voter_is_caught(monkeypatch):
    """The model's resend interval one ms short shows in the leader's connection."""
    stepped, _, _ = _failover(1, False)
    real = dead_nodes.DeadVoter._begin_due

    def early(self, at):  # noqa: ANN001, ANN202
        real(self, at)
        self.begin_at -= 1

    monkeypatch.setattr(dead_nodes.DeadVoter, "_begin_due", early)
    fast, _, _ = _failover(1, True)
    assert fast["raft internals"] != stepped["raft internals"] or \
        fast["links"] != stepped["links"]


def test_only_the_compact_warp_takes_a_dead_voter():
    """The replay path (a delivery hook) steps such a stretch, with the same result."""
    c = Cluster(3, 3, seed=1, fast_forward=True)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 10_000)
    c.run_for(3_000)
    with pytest.raises(NotModelled, match="dead node"):
        quorum_model.predict_quorum(c, c.now_ms + 5_000, steps=False, compact=False)
    assert quorum_model.predict_quorum(c, c.now_ms + 5_000, steps=False, compact=True).begins


@pytest.mark.parametrize("seed", [1, 2])
def test_a_dead_follower_voter_warps_as_stepping_runs_it(seed):
    """A follower voter killed (it had acknowledged the epoch: nothing is sent to it): the
    leader and the live follower go on, warped as stepped."""
    def run(fast_forward: bool) -> tuple[dict, dict, Cluster]:
        c = Cluster(3, 4, seed=seed, fast_forward=fast_forward)
        c.run_for(5_000)
        c.faults.kill(next(n for n in c.controllers if n != c.active_controller))
        c.run_for(60_000)
        return _state(c), _stats(c), c

    stepped, stepped_stats, _ = run(False)
    fast, fast_stats, c = run(True)
    for key in stepped:
        assert stepped[key] == fast[key], key
    assert fast_stats == stepped_stats
    assert c.fast_forward_stats["virtual ms warped"] > 55_000


def _dead_broker(seed: int, fast_forward: bool, rf: int, restart: bool = False
                 ) -> tuple[dict, dict, Cluster]:
    c = Cluster(3, 4, seed=seed, fast_forward=fast_forward)
    if rf:
        c.create_topic("one", 4, rf)
    c.run_for(5_000)
    b = c.brokers[1]
    c.faults.kill(b)
    c.run_for(40_000)
    if restart:
        c.faults.start(b)
        c.run_for(20_000)
    return _state(c), _stats(c), c


@pytest.mark.parametrize("seed, rf, restart", [(1, 0, False), (2, 1, False), (3, 1, True)])
def test_a_dead_broker_warps_as_stepping_runs_it(seed, rf, restart):
    """A broker killed: the warp runs up to where its lease runs out, the fencing is
    stepped, then the warp goes on with the broker dead (and after it is started again)."""
    stepped, stepped_stats, _ = _dead_broker(seed, False, rf, restart)
    fast, fast_stats, c = _dead_broker(seed, True, rf, restart)
    for key in stepped:
        assert stepped[key] == fast[key], key
    assert fast_stats == stepped_stats
    assert c.fast_forward_stats["fallback: horizon (a broker's lease)"] >= 1
    assert c.fast_forward_stats["virtual ms warped"] > (50_000 if restart else 35_000)
    assert c.broker_state(c.brokers[1]).fenced is not restart


def test_a_lease_expiry_test_warps_to_the_lease_end():
    """What a lease-expiry test does: kill a broker, advance past the session timeout,
    see it fenced; warped up to the lease's end."""
    c = Cluster(3, 3, seed=4, fast_forward=True)
    c.run_for(3_000)
    b = c.brokers[0]
    c.faults.kill(b)
    c.run_for(10_000)  # broker.session.timeout.ms is 9000
    assert c.broker_state(b).fenced
    assert c.fast_forward_stats["fallback: horizon (a broker's lease)"] == 1
    assert c.fast_forward_stats["virtual ms warped"] > 5_000


def schedule(seed: int, fast_forward: bool, **cluster: object) -> tuple[list, int]:
    """A random schedule (benchmarks/dead_nodes_sweep.py runs it over many seeds) on 3 + 3..5:
    the active controller or a follower voter killed (one controller down at a time), brokers
    killed, whatever is down started again, topics of RF 1-3, idle stretches of 0.8-45
    virtual s; after every step the replica state of test_fastforward_replicas.py and the
    network's counters. Returns them and the virtual ms warped. ``cluster``: more
    ``Cluster`` arguments (links, settings)."""
    r = random.Random(seed)
    brokers = r.choice([3, 4, 5])
    c = Cluster(3, brokers, seed=seed, fast_forward=fast_forward, **cluster)
    c.run_for(8_000)
    c.create_topic("a", partitions=r.randint(1, 6), replication_factor=r.choice([1, 2, 3]))
    states = []
    for step in range(8):
        what, ms = r.random(), r.choice([777, 3_000, 20_000, 45_000])
        down = [n for n in c.roles if not c.sim.process(n).up]
        if what < 0.2 and not any(n in c.controller_ids for n in down):
            leader = c.active_controller
            leader = None if leader is None else node_id(leader)
            others = [n for n in c.controller_ids if n != leader]
            c.faults.kill(leader if leader is not None and r.random() < 0.5 else r.choice(others))
            c.run_until(lambda c: c.active_controller is not None, timeout_ms=15_000)
        elif what < 0.4:
            b = c.broker_ids[r.randrange(brokers)]
            if c.sim.process(b).up:
                c.faults.kill(b)
        elif what < 0.6:
            for n in down:
                c.faults.start(n)
        elif what < 0.65:
            c.create_topic(f"t{step}", partitions=2, replication_factor=r.choice([1, 2, 3]))
        c.run_for(ms)
        states.append((_replica_state(c), _stats(c)))
    return states, (c.fast_forward_stats or {}).get("virtual ms warped", 0)


@pytest.mark.parametrize("seed", [0, 3, 7, 10])
def test_a_random_schedule_of_kills_and_restarts_warps_as_stepped(seed):
    """``schedule`` on a few seeds: every step's state and network counters equal."""
    stepped, _ = schedule(seed, False)
    warped, ms = schedule(seed, True)
    assert [i for i, (a, b) in enumerate(zip(stepped, warped)) if a != b] == []
    assert ms > 30_000


def test_a_warped_failover_gives_the_same_trace_for_the_same_seed():
    """Determinism within the warp's mode: the dead voter's stretch included."""
    digests = {_failover(3, True)[2].sim.trace.digest() for _ in range(2)}
    assert len(digests) == 1


@pytest.mark.parametrize("seed, restart", [(1, False), (2, True)])
def test_a_dead_broker_with_replicated_partitions_warps(seed, restart):
    """RF=3: the partitions the dead broker hosted keep an ISR without it, which the model
    covers (a dead replica neither fetches nor is looked at by the ISR check)."""
    stepped, stepped_stats, _ = _dead_broker(seed, False, 3, restart)
    fast, fast_stats, c = _dead_broker(seed, True, 3, restart)
    for key in stepped:
        assert stepped[key] == fast[key], key
    assert fast_stats == stepped_stats
    assert c.fast_forward_stats["virtual ms warped"] > (45_000 if restart else 30_000)
