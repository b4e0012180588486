"""Every API a listener advertises, at every advertised version: a request built from the
declaration's defaults gets a response the client can decode at that version (or, for
acks=0 produce, none), and no handler or encoder ever fails."""

from __future__ import annotations

import pytest
from gateway_helpers import RawClient

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol import rpc


def _cases(srv, role: str) -> list[tuple[int, int]]:
    return [(k, v) for k, r in sorted(srv.apis(role).items()) for v in r]


@pytest.mark.parametrize("role", ["broker", "controller"])
def test_every_advertised_version_answers(kraft_bootstrap, kraft_cluster, role):
    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("v", partitions=1, replication_factor=3)
        c.run_for(1_000)
    node = kraft_cluster.brokers[0] if role == "broker" else kraft_cluster.controllers[0]
    answered = 0
    for api_key, version in _cases(srv, role):
        body = M.REQUESTS[api_key]()
        if api_key == 0:
            body = body.replace(acks=1)  # acks=0 (the default) gets no answer at all
        client = RawClient(srv.address(node)[1], timeout=60)
        try:
            if api_key in (17, 36):  # SASL needs its own order; one handshake is enough here
                body = M.SaslHandshakeRequest(mechanism="PLAIN") if api_key == 17 else body
                if api_key == 36:
                    client.request(M.SaslHandshakeRequest(mechanism="PLAIN"), 1)
                    body = M.SaslAuthenticateRequest(auth_bytes=b"\0nobody\0x")
            frame = rpc.encode_request(body, version, 5)
            client.send_bytes(frame)
            response = client.read_response(api_key, version)
            assert response is not None
            answered += 1
        finally:
            client.close()
        assert srv.handler_errors == [], (api_key, version)
        assert srv.failure is None
    assert answered == len(_cases(srv, role))


def _rich_requests(version: int, topic_id, batch: bytes) -> dict[int, object]:
    """A request with content for each data-plane and common admin API at ``version``."""
    P, F, L, O = M.ProduceRequest, M.FetchRequest, M.ListOffsetsRequest, \
        M.OffsetForLeaderEpochRequest
    C, D, MD = M.CreateTopicsRequest, M.DescribeConfigsRequest, M.MetadataRequest
    return {
        0: P(acks=-1, timeout_ms=5_000, topic_data=(P.TopicProduceData(
            name="v", partition_data=(P.PartitionProduceData(index=0, records=batch),)),)),
        1: F(max_wait_ms=0, min_bytes=1, topics=(F.FetchTopic(
            topic="v", topic_id=topic_id, partitions=(F.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),)),
        2: L(replica_id=-1, topics=(L.ListOffsetsTopic(name="v", partitions=(
            L.ListOffsetsPartition(partition_index=0, timestamp=-1),)),)),
        3: MD(topics=(MD.MetadataRequestTopic(name="v"),)),
        19: C(topics=(C.CreatableTopic(name=f"new-v{version}", num_partitions=1,
                                       replication_factor=1),), timeout_ms=10_000),
        23: O(topics=(O.OffsetForLeaderTopic(topic="v", partitions=(
            O.OffsetForLeaderPartition(partition=0, leader_epoch=0),)),)),
        32: D(resources=(D.DescribeConfigsResource(resource_type=2, resource_name="v",
                                                   configuration_keys=None),)),
    }


def test_data_plane_and_admin_answers_at_every_version(kraft_bootstrap, kraft_cluster):
    """Requests with content, at every advertised version: the answers decode at that version
    and say what the cluster holds."""
    from gateway_helpers import one_record_batch

    srv = kraft_bootstrap
    with srv.hold() as c:
        c.create_topic("v", partitions=1, replication_factor=3)
        c.run_for(1_000)
        t = c.metadata.topic("v")
    leader = t.partitions[0].leader
    batch = one_record_batch(b"payload")
    ranges = srv.apis("broker")
    for api_key in (0, 1, 2, 3, 19, 23, 32):
        for version in ranges[api_key]:
            client = RawClient(srv.address(leader)[1], timeout=60)
            body = _rich_requests(version, t.id, batch)[api_key]
            answer = client.request(body, version)
            client.close()
            assert srv.handler_errors == [], (api_key, version)
            if api_key == 0:
                assert answer.responses[0].partition_responses[0].error_code == 0
            elif api_key == 1:
                assert answer.responses[0].partitions[0].error_code == 0
                assert b"payload" in answer.responses[0].partitions[0].records
            elif api_key == 2:
                p = answer.topics[0].partitions[0]
                assert p.error_code == 0 and p.offset >= 1
            elif api_key == 3:
                assert answer.topics[0].partitions[0].leader_id == leader
            elif api_key == 19:
                assert answer.topics[0].error_code == 0
            elif api_key == 23:
                assert answer.topics[0].partitions[0].error_code == 0
            elif api_key == 32:
                assert answer.results[0].error_code == 0
