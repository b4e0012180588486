"""The incremental invariant checks (only the nodes an event touched) against the full ones
(every node after every event): the same run, the same planted bug, the same violation at the
same event. Without a bug both runs end in the same state (checkers only look)."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.controller import replication
from kraft_testkit.sim import InvariantViolation


def _scenario(incremental: bool, seed: int) -> Cluster:
    c = Cluster(3, 3, seed=seed, boot=False)
    c.invariants.incremental = incremental  # False: every node after every event
    c.run_until(lambda c: c.active_controller is not None and c.all_brokers_running(), 60_000)
    c.create_topic("t", 3, 3)
    c.network.isolate(c.brokers[0])  # its lease runs out: the controller fences it
    c.run_for(15_000)
    c.network.heal()
    c.faults.kill(c.active_controller)
    c.run_for(10_000)
    return c


@pytest.mark.parametrize("seed", [1, 2])
def test_a_planted_bug_is_caught_at_the_same_event_either_way(monkeypatch, seed):
    # the bug: fencing a broker no longer moves its leaderships away
    monkeypatch.setattr(replication, "handle_broker_fenced", lambda ctx, broker_id: [])
    caught = []
    for incremental in (True, False):
        with pytest.raises(InvariantViolation) as err:
            _scenario(incremental, seed)
        e = err.value
        caught.append((e.invariant, e.detail, e.now_ms, e.trace_tail))
    assert caught[0] == caught[1]
    assert caught[0][0] == "fenced brokers lead nothing"


def test_without_a_bug_both_ways_end_in_the_same_state():
    full, incremental = _scenario(False, 3), _scenario(True, 3)
    assert full.trace.digest() == incremental.trace.digest()
    assert full.metadata == incremental.metadata
