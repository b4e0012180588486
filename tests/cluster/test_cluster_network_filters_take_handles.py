"""Filters take node handles like partitions do (``src=c.brokers[0]`` was a bare TypeError)."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError


def test_filters_take_handles_and_name_unknown_nodes():
    c = Cluster(3, 3, seed=1, trace_keep=None)
    leader = c.active_controller
    c.network.drop(src=c.brokers[0], dst=[leader], count=3)
    c.network.delay(7, src=[c.brokers[1], c.brokers[2]])
    c.network.hold(dst=c.brokers[2], count=1)
    c.run_for(8_000)
    drops = [e for e in c.sim.trace.events() if e[1] == "drop" and e[2] == 0]
    assert len(drops) == 3 and all(e[3] == leader.id for e in drops)
    with pytest.raises(ConfigError, match="no node 77"):
        c.network.delay(5, src=77)
