"""Admin RPCs a broker forwards to the active controller, sent as raw Kafka frames to a broker's
socket: the answers are the controller's, and the state is what ``cluster.metadata`` shows."""

from __future__ import annotations

from gateway_helpers import RawClient, port_of

from kraft_testkit.protocol import messages as M


def _client(srv) -> RawClient:
    return RawClient(port_of(srv.bootstrap_servers, 2))


def test_describe_quorum_through_a_broker(kraft_bootstrap, kraft_cluster):
    R = M.DescribeQuorumRequest
    answer = _client(kraft_bootstrap).request(R(topics=(R.TopicData(
        topic_name="__cluster_metadata", partitions=(R.PartitionData(partition_index=0),)),)), 2)
    partition = answer.topics[0].partitions[0]
    assert partition.error_code == 0
    assert partition.leader_id == kraft_cluster.active_controller.id
    assert sorted(v.replica_id for v in partition.current_voters) == kraft_cluster.controller_ids


def test_client_quotas_round_trip(kraft_bootstrap, kraft_cluster):
    A = M.AlterClientQuotasRequest
    client = _client(kraft_bootstrap)
    entry = A.EntryData(entity=(A.EntityData(entity_type="user", entity_name="alice"),),
                        ops=(A.OpData(key="producer_byte_rate", value=1024.0, remove=False),))
    assert client.request(A(entries=(entry,), validate_only=False), 1).entries[0].error_code == 0
    assert kraft_cluster.metadata.client_quotas.get(("user", "alice")) == \
        {"producer_byte_rate": 1024.0}
    D = M.DescribeClientQuotasRequest
    described = client.request(D(components=(D.ComponentData(
        entity_type="user", match_type=0, match="alice"),), strict=False), 1)
    assert described.error_code == 0
    assert [(v.key, v.value) for v in described.entries[0].values] == \
        [("producer_byte_rate", 1024.0)]


def test_reassignment_through_a_broker(kraft_bootstrap, kraft_cluster):
    with kraft_bootstrap.hold() as c:
        c.create_topic("moving", partitions=1, replication_factor=2)
        before = list(c.metadata.topic("moving").partitions[0].replicas)
    target = [b for b in kraft_cluster.broker_ids if b not in before] + before[:1]
    R = M.AlterPartitionReassignmentsRequest
    client = _client(kraft_bootstrap)
    answer = client.request(R(timeout_ms=30_000, topics=(R.ReassignableTopic(
        name="moving", partitions=(R.ReassignablePartition(partition_index=0,
                                                           replicas=tuple(target)),)),)), 0)
    assert answer.error_code == 0 and answer.responses[0].partitions[0].error_code == 0
    kraft_bootstrap.run_until(
        lambda c: list(c.metadata.topic("moving").partitions[0].replicas) == target, 60_000)
    listed = client.request(M.ListPartitionReassignmentsRequest(timeout_ms=30_000, topics=None), 0)
    assert listed.error_code == 0 and listed.topics == ()


def test_unregister_a_dead_broker(kraft_bootstrap, kraft_cluster):
    victim = kraft_cluster.brokers[0]
    with kraft_bootstrap.hold() as c:
        c.faults.kill(victim)
        c.run_until(lambda c: c.broker_state(victim).fenced, 30_000)
    answer = _client(kraft_bootstrap).request(M.UnregisterBrokerRequest(broker_id=victim.id), 0)
    assert answer.error_code == 0
    assert kraft_cluster.metadata.cluster.broker(victim.id) is None


def test_update_features_upgrades_metadata_version(kraft_cluster_factory):
    from kraft_testkit import serve

    cluster = kraft_cluster_factory(metadata_version=14)
    with serve(cluster) as srv:
        R = M.UpdateFeaturesRequest
        update = R.FeatureUpdateKey(feature="metadata.version", max_version_level=19,
                                    upgrade_type=1)
        answer = _client(srv).request(R(timeout_ms=30_000, feature_updates=(update,)), 1)
        assert answer.error_code == 0 and answer.results[0].error_code == 0
        assert cluster.metadata.features.metadata_version == 19
        # from 3.7 on controllers register; a downgrade needs every one to support the level
        srv.run_until(lambda c: all(c.metadata.cluster.controller(n) is not None
                                    for n in c.controller_ids), 30_000)
        # v0's AllowDowngrade reaches the controller as a safe downgrade; 3.7-IV3 -> IV4
        # changed no metadata, so Kafka allows it
        down = R.FeatureUpdateKey(feature="metadata.version", max_version_level=18,
                                  allow_downgrade=True)
        answer = _client(srv).request(R(timeout_ms=30_000, feature_updates=(down,)), 0)
        assert answer.results[0].error_code == 0
        assert cluster.metadata.features.metadata_version == 18


def test_combined_mode_nodes_serve_as_brokers(kraft_cluster_factory):
    from gateway_helpers import metadata

    from kraft_testkit import serve

    cluster = kraft_cluster_factory(controllers=3, brokers=3, combined=True)
    with serve(cluster) as srv:
        assert srv.bootstrap_servers == srv.bootstrap_controllers  # one listener per node
        answer = metadata(RawClient(port_of(srv.bootstrap_servers)))
        assert sorted(b.node_id for b in answer.brokers) == cluster.broker_ids


def test_describe_log_dirs_names_the_real_directory(kraft_cluster_factory, tmp_path):
    import os

    from kraft_testkit import serve

    cluster = kraft_cluster_factory(storage="tmpdir", data_dir=tmp_path)
    with serve(cluster) as srv:
        broker = cluster.brokers[1]
        answer = RawClient(srv.address(broker)[1]).request(M.DescribeLogDirsRequest(topics=None), 4)
        log_dir = answer.results[0].log_dir
        assert log_dir == os.path.join(str(tmp_path), f"broker-{broker.id}")
        assert os.path.isdir(log_dir)


def test_a_broker_cut_off_from_the_controllers_cannot_forward(kraft_bootstrap, kraft_cluster):
    from kraft_testkit.protocol.error_codes import ErrorCode

    cut_off, other = kraft_cluster.brokers[0], kraft_cluster.brokers[1]
    kraft_bootstrap.call(lambda c: c.network.partition([cut_off], c.controllers))
    R = M.CreateTopicsRequest
    body = R(topics=(R.CreatableTopic(name="t", num_partitions=1, replication_factor=2),),
             timeout_ms=8_000)
    start = kraft_cluster.now_ms
    answer = RawClient(kraft_bootstrap.address(cut_off)[1]).request(body, 7)
    assert answer.topics[0].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert kraft_cluster.now_ms - start >= 8_000  # the client's own timeout, in virtual time
    assert RawClient(kraft_bootstrap.address(other)[1]).request(body, 7).topics[0].error_code == 0
