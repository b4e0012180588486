"""Controller metrics (KIP-631's list, as numbers): commit latency, fenced and active broker
counts, metadata lag, snapshot lag, on the active controller and the others."""

from __future__ import annotations

import pytest
from cluster_scn_helpers import Spy, fenced_at

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol import messages as M
from kraft_testkit.sim import NoProgress

SEEDS = range(5)


@pytest.mark.parametrize("seed", SEEDS)
def test_metrics_after_boot_and_on_every_controller(seed):
    c = Cluster(3, 3, seed=seed)
    c.create_topic("t", 3, 3)
    m = c.controller_metrics()
    assert m is c.controller_metrics(c.active_controller)
    assert m.active is True
    assert (m.active_broker_count, m.fenced_broker_count) == (3, 0)
    assert m.commit_latency_ms, "requests were answered: their commit latency is recorded"
    assert all(0 <= x < 200 for x in m.commit_latency_ms)
    assert m.commit_latency_avg_ms > 0  # a commit needs a follower's fetch round trip
    assert m.committed_records > 0 and m.last_committed_offset >= c.metadata.offset
    c.run_until(lambda c: c.controller_metrics().metadata_lag == 0, 1_000)
    assert m.last_applied_offset == m.last_committed_offset
    assert m.snapshot_offset_lag == m.last_committed_offset - m.last_snapshot_offset
    assert m.last_snapshot_offset == -1  # nothing near the default 20 MiB yet
    others = [h for h in c.controllers if h != c.active_controller]
    # the followers learn the high watermark one fetch later
    c.run_until(lambda c: all(c.controller_metrics(h).last_committed_offset
                              >= m.last_committed_offset for h in others), 1_000)
    for h in others:
        other = c.controller_metrics(h)
        assert other.active is False
        assert other.metadata_lag == 0
        assert (other.active_broker_count, other.fenced_broker_count) == (3, 0)
        assert other.commit_latency_ms == []  # only the active controller answers requests
    assert m.commit_rate_per_sec(1000) == m.committed_records


@pytest.mark.parametrize("seed", SEEDS)
def test_fenced_and_active_broker_counts_follow_the_leases(seed):
    c = Cluster(3, 4, seed=seed)
    b = seed % 4
    c.network.isolate(b)
    fenced_at(c, b)
    m = c.controller_metrics()
    assert (m.active_broker_count, m.fenced_broker_count) == (3, 1)
    c.network.heal()
    c.run_until(lambda c: c.controller_metrics().fenced_broker_count == 0, 20_000)
    assert c.controller_metrics().active_broker_count == 4
    # a controlled shutdown fences too
    c.controlled_shutdown(b)
    m = c.controller_metrics()
    assert (m.active_broker_count, m.fenced_broker_count) == (3, 1)
    # failover: the new active controller counts the same from the log
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 20_000)
    m = c.controller_metrics()
    assert (m.active, m.active_broker_count, m.fenced_broker_count) == (True, 3, 1)


def hold_commits_during_a_create(c: Cluster, hold_ms: int) -> object:
    """Hold the followers' Raft fetches while a CreateTopics waits for its commit; release."""
    active = c.active_controller
    followers = [h.id for h in c.controllers if h != active]
    c.network.hold(M.FetchRequest, src=followers, dst=active.id)
    R = M.CreateTopicsRequest
    with pytest.raises(NoProgress):
        c.request(R(topics=[R.CreatableTopic(name="slow", num_partitions=1, replication_factor=1,
                                             assignments=[], configs=[])],
                    timeout_ms=1000, validate_only=False), timeout_ms=hold_ms)
    return active


@pytest.mark.parametrize("seed", SEEDS)
def test_metadata_lag_while_commits_are_held(seed):
    c = Cluster(3, 3, seed=seed)
    active = hold_commits_during_a_create(c, 400)
    m = c.controller_metrics(active)
    assert m.active and m.metadata_lag > 0
    assert m.last_applied_offset > m.last_committed_offset
    assert c.metadata.topic("slow") is None                                    # not committed
    assert c.controller_node(active).controller.image.topic("slow") is not None  # pending
    c.network.clear_filters()
    c.network.release()
    c.run_until(lambda c: c.controller_metrics(active).metadata_lag == 0
                and c.metadata.topic("slow") is not None, 5_000)


@pytest.mark.parametrize("seed", range(2))
def test_commit_latency_counts_the_time_commits_were_held(seed):
    c = Cluster(3, 3, seed=seed)
    spy = Spy(c)
    active = hold_commits_during_a_create(c, 400)
    c.network.clear_filters()
    c.network.release()
    c.run_until(lambda c: c.metadata.topic("slow") is not None, 5_000)
    c.run_for(20)
    sent = [t for t, s, d, cid, b in spy.requests
            if d == active.id and isinstance(b, M.CreateTopicsRequest)]
    answered = [t for t, s, d, cid, b in spy.responses
                if s == active.id and isinstance(b, M.CreateTopicsResponse)]
    assert len(sent) == len(answered) == 1
    # appended when it arrived; committed at most one link latency (5 ms) before the answer
    # arrived
    assert max(c.controller_metrics(active).commit_latency_ms) >= answered[0] - sent[0] - 5
