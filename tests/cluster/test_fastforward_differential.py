"""``Cluster(fast_forward=True)`` against stepping (kraft_testkit/fastforward/warp.py): same
seeds, faults and admin requests before, between and after idle stretches (a broker killed
and restarted, a controller failover, a partition that fences a broker, a pause, topic
creations); every node's files byte for byte, every node's encoded image, the cluster's image,
the Raft log ends and high watermarks, DescribeQuorum and the links' message counters equal.
Raft's request ids, deadlines and connections and every node's timer
equal. The trace digests differ by design: a computed event records nothing, a stretch
records one ``warp`` line. Planted bugs in the model and in the materialization are caught."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward import compact, quorum_model, warp
from kraft_testkit.fastforward.bulk import InexactFastForward
from kraft_testkit.sim.node import NEVER
from test_cluster_advance_boundaries import cluster_state


def _state(c: Cluster) -> dict:
    state = cluster_state(c)
    del state["digest"]
    state["raft"] = {n: (c.replica(n).log_end_offset, c.replica(n).hw) for n in c.roles
                     if c.sim.process(n).up}
    state["raft internals"] = {  # the request ids and deadlines a later event reads
        n: (r._cid, r._deadline, r._timer_at, sorted((d, k.cid, k.sent_at, k.backoff_until)
                                                     for d, k in r._conns.items()))
        for n in c.roles if c.sim.process(n).up for r in [c.replica(n)]}
    state["timers"] = {n: c.sim.process(n)._timer_node_ms for n in c.roles}
    state["describe quorum"] = repr(c.describe_quorum())
    net = c.sim.network
    state["links"] = sorted((src, str(dst), link.sent, link.last_at)
                            for src, row in net._links.items() for dst, link in row.items())
    return state


def _scenario(seed: int, brokers: int, fast_forward: bool, *, short: bool = False,
              **cluster: object) -> tuple:
    c = Cluster(3, brokers, seed=seed, fast_forward=fast_forward, **cluster)
    c.create_topic("before", 3, 1)
    c.run_for(12_000)                              # idle
    if short:
        return _state(c), c
    c.faults.kill(c.brokers[1])                    # a broker killed after an idle stretch
    c.run_for(4_000)
    c.faults.start(c.brokers[1])
    c.run_for(9_000)
    old = c.active_controller
    c.faults.kill(old)                             # a controller failover
    c.run_for(6_000)
    c.faults.start(old)
    c.run_for(8_000)
    c.network.isolate(c.brokers[0])                # its lease runs out
    c.run_for(12_000)
    c.network.heal()
    c.faults.pause(c.controllers[1])
    c.run_for(2_500)
    c.faults.resume(c.controllers[1])
    c.run_for(7_000)
    c.create_topic("after", 2, 1)                  # an admin request after an idle stretch
    for _ in range(7):                             # stops in the middle of stretches
        c.run_for(1_300)
    c.faults.restart(c.brokers[-1])
    c.run_for(15_000)
    return _state(c), c


@pytest.mark.parametrize("seed, brokers", [(1, 4), (2, 4), (5, 10), (8, 10)])
def test_fast_forward_leaves_every_byte_as_stepping_does(seed, brokers):
    stepped, _ = _scenario(seed, brokers, False)
    fast, c = _scenario(seed, brokers, True)
    assert stepped.keys() == fast.keys()
    for key in stepped:
        assert stepped[key] == fast[key], key
    assert c.all_brokers_running()
    assert c.fast_forward_stats["stretches"] > 0  # the public switch really took the fast path


def test_a_planted_bug_in_the_materialization_is_caught(monkeypatch):
    """A broker's request id left one off by the materialization shows."""
    stepped, _ = _scenario(4, 4, False, short=True)
    real = compact.materialize_compact

    def off_by_one(self, pred):
        real(self, pred)
        self.c.replica(0)._cid += 1

    monkeypatch.setattr(compact, "materialize_compact", off_by_one)
    fast, _ = _scenario(4, 4, True, short=True)
    assert stepped["raft internals"] != fast["raft internals"]


def test_a_planted_bug_in_the_model_is_caught(monkeypatch):
    """A heartbeat answered one interval step late in the model: the materialization finds
    the broker's logic sending it elsewhere, or the state differs."""
    stepped, _ = _scenario(4, 4, False, short=True)
    monkeypatch.setattr(quorum_model._Model, "_logic_wake",
                        staticmethod(lambda loop: setattr(loop, "logic_wake", NEVER)))
    try:
        fast, _ = _scenario(4, 4, True, short=True)
    except InexactFastForward:  # the warp's check, or a broker's answer run refusing
        return
    assert stepped != fast


def test_fast_forward_must_be_a_bool():
    from kraft_testkit.errors import ConfigError
    with pytest.raises(ConfigError, match="fast_forward"):
        Cluster(1, 0, fast_forward="yes")


def test_a_node_that_lags_has_less_room_before_a_snapshot_by_bytes():
    """Snapshots by bytes every 4,000 bytes and a NoOp every 200 ms: the room before a node's
    next snapshot counts from its own high watermark (a broker restarted in the scenario
    lags, and committed past its room: the warp raised in the middle of a stretch)."""
    kw = {"configs": {"metadata.max.idle.interval.ms": 200,
                      "metadata.log.max.record.bytes.between.snapshots": 4000}}
    stepped, _ = _scenario(13, 4, False, **kw)
    fast, c = _scenario(13, 4, True, **kw)
    assert {key for key in stepped if stepped[key] != fast[key]} == set()
    assert c.fast_forward_stats["stretches"] > 0
