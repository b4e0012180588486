"""kraft.version 0 -> 1 with UpdateFeatures (Kafka 4.1+): the static voters go into the log and
the quorum becomes dynamic, on every controller, surviving restarts; refusals as Kafka's."""

from __future__ import annotations

import json

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.protocol.error_codes import KafkaApiError

QUORUM_STATE = "__cluster_metadata-0/quorum-state"


@pytest.mark.parametrize("seed", [1, 2])
def test_upgrade_makes_the_static_voters_dynamic(seed):
    c = Cluster(3, 1, seed=seed)
    assert c.voter_set() is None
    c.create_topic("before", 1, 1)
    c.update_feature("kraft.version", 1, validate_only=True)
    assert c.voter_set() is None  # validate only: nothing written
    c.update_feature("kraft.version", 1)
    c.run_until(lambda c: all(c.replica(n).dynamic for n in c.controller_ids), 10_000)
    assert c.voter_set().keys == {n: c.replica(n).dir for n in c.controller_ids}
    node = c.add_controller()
    c.add_voter(node)
    c.remove_voter(c.controllers[0])
    for n in c.controller_ids:
        c.faults.restart(n)
    c.run_until(lambda c: c.active_controller is not None, 20_000)
    assert set(c.voter_set()) == {1001, 1002, node.id}
    state = json.loads(c.sim.process(1001).disk.durable()[QUORUM_STATE])
    assert state["data_version"] == 1
    c.create_topic("after", 1, 1)
    c.update_feature("kraft.version", 1)  # already there: NONE


def test_refusals():
    c = Cluster(1, 0, seed=3, kraft_version=1)
    with pytest.raises(KafkaApiError, match="INVALID_UPDATE_VERSION.*downgrade"):
        c.update_feature("kraft.version", 0, upgrade_type="safe_downgrade")
    with pytest.raises(KafkaApiError, match="only supports versions 0-1"):
        c.update_feature("kraft.version", 2)


def test_after_the_upgrade_every_voter_entry_holds_its_real_endpoints():
    """The leader writes its own listeners into the upgrade's VotersRecord (it sends no
    UpdateRaftVoter); the followers correct theirs with UpdateRaftVoter."""
    c = Cluster(3, 1, seed=2, names="faker")
    c.update_feature("kraft.version", 1)
    lead = c.replica(c.active_controller)
    assert lead.history.latest.voters[lead.id].endpoints == lead.endpoints
    c.run_for(120_000)
    lead = c.replica(c.active_controller)
    for v in lead.history.latest.voters.values():
        assert c.replica(v.id).endpoints == v.endpoints, v.id
