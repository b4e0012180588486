"""KIP-853 over the gateway: ApiVersions advertises kraft.version [0, 1] (and the finalized
level 1 of a dynamic quorum), and AddRaftVoter / RemoveRaftVoter reach the Raft leader."""

from __future__ import annotations

from gateway_helpers import RawClient, port_of

from kraft_testkit.cluster import Cluster
from kraft_testkit.gateway import serve
from kraft_testkit.protocol import messages as M
from kraft_testkit.raft.voters import default_endpoints


def _features(answer) -> tuple[dict, dict]:
    supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
    finalized = {f.name: f.max_version_level for f in answer.finalized_features}
    return supported, finalized


def test_kraft_version_in_api_versions_and_voter_changes_through_a_broker():
    c = Cluster(1, 1, seed=3, kraft_version=1)
    new = c.add_controller()
    c.run_for(2_000)
    new_dir = c.replica(new).dir
    with serve(c) as srv:
        client = RawClient(port_of(srv.bootstrap_servers, 0))
        supported, finalized = _features(client.request(M.ApiVersionsRequest(), 3))
        assert supported["kraft.version"] == (0, 1)
        assert finalized["kraft.version"] == 1
        add = M.AddRaftVoterRequest(
            cluster_id=c.cluster_id, timeout_ms=30_000, voter_id=new.id,
            voter_directory_id=new_dir, listeners=tuple(
                M.AddRaftVoterRequest.Listener(name=n, host=h, port=p)
                for n, h, p in default_endpoints(new.id)))
        assert client.request(add, 0).error_code == 0
        again = client.request(add, 0)
        assert again.error_code == 126  # DUPLICATE_VOTER
        remove = M.RemoveRaftVoterRequest(cluster_id=c.cluster_id, voter_id=new.id,
                                          voter_directory_id=new_dir)
        assert client.request(remove, 0).error_code == 0
        client.close()
    assert set(c.voter_set()) == {1000}


def test_static_quorum_finalizes_no_kraft_version():
    c = Cluster(1, 1, seed=3)
    with serve(c) as srv:
        client = RawClient(port_of(srv.bootstrap_servers, 0))
        supported, finalized = _features(client.request(M.ApiVersionsRequest(), 3))
        client.close()
    assert supported["kraft.version"] == (0, 1) and "kraft.version" not in finalized
