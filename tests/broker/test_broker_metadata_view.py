"""What a broker's MetadataResponse shows (Kafka's KRaftMetadataCache rules)."""

from __future__ import annotations

import random

from broker_helpers import (
    CLUSTER,
    E,
    Harness,
    broker_record,
    change_record,
    make_image,
    partition_record,
    uid,
)

from kraft_testkit.broker import metadata_response, reported_controller_id
from kraft_testkit.metadata import DirectoryId
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import rpc


def _controller_record(cid: int):
    cls = M.RegisterControllerRecord
    return cls(controller_id=cid, incarnation_id=uid(900 + cid), zk_migration_ready=False,
               end_points=[cls.ControllerEndpoint(name="CONTROLLER", host=f"c{cid}", port=9093,
                                                  security_protocol=0)],
               features=[])


def _image(**kw):
    parts = [partition_record(1, 0, [1, 2, 3]),
             partition_record(1, 1, [3, 2], leader=3),
             partition_record(2, 0, [2, 4], leader=-1, isr=[])]
    return make_image({1: 10, 2: 20, 3: 30, 4: 40}, fenced=[3],
                      topics={"orders": 1, "__consumer_offsets": 2}, partitions=parts,
                      extra=[_controller_record(9)], **kw)


def _by_name(resp):
    return {t.name: t for t in resp.topics}


def test_brokers_list_omits_fenced_brokers_and_controllers():
    resp = metadata_response(_image(), cluster_id=CLUSTER)
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == \
        [(1, "broker-1", 9092), (2, "broker-2", 9092), (4, "broker-4", 9092)]
    assert resp.cluster_id == CLUSTER
    resp = metadata_response(_image(), cluster_id=CLUSTER, fenced=[2])
    assert [b.node_id for b in resp.brokers] == [1, 4]


def test_partitions_show_leaders_replicas_isr_and_offline_replicas():
    topics = _by_name(metadata_response(_image(), cluster_id=CLUSTER))
    assert list(topics) == ["__consumer_offsets", "orders"]  # all topics, by name
    orders = topics["orders"]
    assert orders.error_code == E.NONE and orders.topic_id == uid(1) and not orders.is_internal
    p0, p1 = orders.partitions
    assert (p0.partition_index, p0.error_code, p0.leader_id, p0.leader_epoch) == (0, E.NONE, 1, 0)
    assert list(p0.replica_nodes) == [1, 2, 3] and list(p0.isr_nodes) == [1, 2, 3]
    assert list(p0.offline_replicas) == [3]  # fenced
    # a fenced leader is still a registered broker with the listener: Kafka shows it
    assert (p1.leader_id, p1.error_code, list(p1.offline_replicas)) == (3, E.NONE, [3])
    offsets = topics["__consumer_offsets"]
    assert offsets.is_internal
    (q,) = offsets.partitions
    assert (q.leader_id, q.error_code) == (-1, E.LEADER_NOT_AVAILABLE)
    assert list(q.replica_nodes) == [2, 4] and list(q.isr_nodes) == []


def test_leader_without_the_listener_is_not_available():
    image = make_image({1: 10}, topics={"t": 1}, partitions=[partition_record(1, 0, [1])])
    resp = metadata_response(image, cluster_id=CLUSTER, listener="SSL")
    (p,) = resp.topics[0].partitions
    assert (p.leader_id, p.error_code, list(p.offline_replicas)) == \
        (-1, E.LEADER_NOT_AVAILABLE, [1])
    assert list(resp.brokers) == []


def test_unregistered_and_offline_directory_replicas_are_offline():
    image = make_image({1: 10}, topics={"t": 1},
                       partitions=[partition_record(1, 0, [1, 7])],
                       extra=[change_record(1, 0, replicas=[1, 7],
                                            directories=[DirectoryId.LOST, DirectoryId.LOST])])
    (p,) = metadata_response(image, cluster_id=CLUSTER).topics[0].partitions
    assert list(p.offline_replicas) == [1, 7]


def test_requested_topics_and_unknown_ones():
    resp = metadata_response(_image(), cluster_id=CLUSTER,
                             topics=["orders", "nope", Uuid(b"\x07" * 16)])
    orders, nope, by_id = resp.topics
    assert orders.name == "orders"
    assert (nope.name, nope.error_code, list(nope.partitions)) == \
        ("nope", E.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert (by_id.name, by_id.error_code) == (None, E.UNKNOWN_TOPIC_ID)
    assert metadata_response(_image(), cluster_id=CLUSTER, topics=[uid(1)]).topics[0].name \
        == "orders"
    assert metadata_response(_image(), cluster_id=CLUSTER, topics=[]).topics == ()


def test_controller_id_is_a_random_alive_broker():
    image = _image()
    seen = {reported_controller_id(image, random.Random(s)) for s in range(40)}
    assert seen == {1, 2, 4}  # never the fenced broker, never a controller
    assert reported_controller_id(image, random.Random(5)) == \
        reported_controller_id(image, random.Random(5))
    nobody = make_image({1: 10}, fenced=[1])
    assert reported_controller_id(nobody) == -1
    assert metadata_response(nobody, cluster_id=CLUSTER).controller_id == -1


def test_metadata_request_served_by_the_broker_round_trips_the_wire():
    h = Harness(1)
    h.at(10)
    h.to_running(_image())
    req = M.MetadataRequest(topics=(M.MetadataRequest.MetadataRequestTopic(name="orders"),))
    h.deliver(77, rpc.request(3, req))
    (dst, resp), = h.take(M.MetadataResponse)
    assert dst == 77 and resp.correlation_id == 3
    assert [t.name for t in resp.body.topics] == ["orders"]
    assert resp.body.controller_id in (1, 2, 4)
    data = resp.body.encode(12)
    assert M.MetadataResponse.decode(data, 12) == resp.body


def test_registered_listener_names_and_racks_show():
    image = make_image(extra=[broker_record(5, 50, listener="EXTERNAL", rack="east")])
    resp = metadata_response(image, cluster_id=None, listener="EXTERNAL")
    assert [(b.node_id, b.rack) for b in resp.brokers] == [(5, "east")]
