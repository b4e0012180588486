"""``Cluster(fast_forward=True)`` against stepping (kraft_testkit/fastforward/bulk.py): same
seeds, faults and admin requests before, between and after idle stretches (a broker killed
and restarted, a controller failover, a partition that fences a broker, a pause, topic
creations); every node's files byte for byte, every node's encoded image, the cluster's image,
the Raft log ends and high watermarks, DescribeQuorum and the links' message counters equal.
Raft's request ids, deadlines and connections and every node's timer
equal. The trace digests differ by design: a computed fetch records no events, and a replayed
answer's events are recorded when the broker is filled in. A planted bug in the fill-in is
caught."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward import bulk
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


def _scenario(seed: int, brokers: int, fast_forward: bool, *, short: bool = False) -> tuple:
    c = Cluster(3, brokers, seed=seed, fast_forward=fast_forward)
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
    assert c.fast_forward_stats["computed"] > 0  # the public switch really took the fast path


def test_the_fast_forward_computes_fetches():
    c = Cluster(3, 4, seed=3)
    loops = bulk.BrokerLoops(c)
    loops.run_for(20_000)
    assert loops.stats["computed"] > 40 and loops.stats["materialized"] == \
        loops.stats["detached"] > 5
    assert not loops.detached


def test_a_planted_bug_in_the_batched_fill_in_is_caught(monkeypatch):
    """A window filled in as one answer must move the broker's request ids on as its
    answers would have."""
    stepped, _ = _scenario(4, 4, False, short=True)
    real = bulk.BrokerLoops._can_batch

    def no_request_ids(self, d, process):
        ok = real(self, d, process)
        if ok:
            process.machine.raft._cid -= len(d.answers) - 1
        return ok

    monkeypatch.setattr(bulk.BrokerLoops, "_can_batch", no_request_ids)
    fast, _ = _scenario(4, 4, True, short=True)
    assert stepped["raft internals"] != fast["raft internals"]


def test_a_planted_bug_in_the_fill_in_is_caught(monkeypatch):
    stepped, _ = _scenario(4, 4, False, short=True)
    real = bulk.BrokerLoops._response

    def stale_high_watermark(self, d, cid, offset, end, hw, start):
        return real(self, d, cid, offset, end, max(0, hw - 1), start)

    monkeypatch.setattr(bulk.BrokerLoops, "_response", stale_high_watermark)
    fast, _ = _scenario(4, 4, True, short=True)
    assert stepped != fast
    assert stepped["raft"] != fast["raft"]


def test_fast_forward_must_be_a_bool():
    from kraft_testkit.errors import ConfigError
    with pytest.raises(ConfigError, match="fast_forward"):
        Cluster(1, 0, fast_forward="yes")
