"""Kafka's limits at the front door: one request never takes a listener down.

* a frame above ``socket.request.max.bytes`` is refused from its size alone (the body is never
  read) and only that connection closes;
* a record batch above ``max.message.bytes`` gets MESSAGE_TOO_LARGE;
* a CreateTopics asking for 2**31-1 partitions is answered
  with the controller's error, and every listener serves on with the process's memory flat;
* a client that pipelines requests without reading answers is held back (the gateway stops
  reading it), so one connection's memory stays bounded;
"""

from __future__ import annotations

import resource
import struct
import threading
import time

from gateway_helpers import RawClient, metadata, one_record_batch, port_of

from kraft_testkit.gateway.connection import SOCKET_REQUEST_MAX_BYTES
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol import rpc
from kraft_testkit.protocol.error_codes import ErrorCode


def _every_listener_answers(srv, cluster) -> None:
    for node in sorted(set(cluster.broker_ids)):
        client = RawClient(srv.address(node)[1])
        assert metadata(client).cluster_id == cluster.cluster_id
        client.close()
    for node in cluster.controller_ids:
        client = RawClient(srv.address(node)[1])
        answer = client.request(M.ApiVersionsRequest(client_software_name="t",
                                                     client_software_version="1"), 3)
        assert answer.error_code == 0
        client.close()


def test_an_oversized_frame_is_refused_from_its_size(kraft_bootstrap, kraft_cluster):
    client = RawClient(port_of(kraft_bootstrap.bootstrap_servers))
    client.send_bytes(struct.pack(">i", SOCKET_REQUEST_MAX_BYTES + 1))  # no body follows
    assert client.closed_by_peer()
    assert any("socket.request.max.bytes" in line for line in kraft_bootstrap.lines)
    _every_listener_answers(kraft_bootstrap, kraft_cluster)


def test_a_batch_above_max_message_bytes_is_message_too_large(kraft_bootstrap, kraft_cluster):
    kraft_bootstrap.call(lambda c: c.create_topic(
        "small", partitions=1, replication_factor=3, configs={"max.message.bytes": "2000"}))
    leader = kraft_bootstrap.call(lambda c: c.metadata.topic("small").partitions[0].leader)
    client = RawClient(kraft_bootstrap.address(leader)[1])
    P = M.ProduceRequest

    def produce(value: bytes) -> int:
        answer = client.request(P(acks=1, timeout_ms=10_000, topic_data=(P.TopicProduceData(
            name="small", partition_data=(P.PartitionProduceData(
                index=0, records=one_record_batch(value)),)),)), 9)
        return answer.responses[0].partition_responses[0].error_code

    assert produce(b"x" * 3000) == ErrorCode.MESSAGE_TOO_LARGE
    assert produce(b"x" * 1000) == ErrorCode.NONE
    client.close()


def test_a_connection_to_a_silent_node_holds_at_most_one_frame(kraft_bootstrap, kraft_cluster):
    """A paused broker reads nothing: the gateway stops reading the client's bytes once a whole
    frame waits (TCP flow control holds the rest in the client), and answers every request in
    order once the broker resumes."""
    victim = kraft_cluster.brokers[0]
    kraft_bootstrap.call(lambda c: c.faults.pause(victim))
    client = RawClient(kraft_bootstrap.address(victim)[1])
    names = tuple(M.MetadataRequest.MetadataRequestTopic(name=f"{i:x>240}") for i in range(20))
    request = M.MetadataRequest(topics=names, allow_auto_topic_creation=False)
    count = 4_000  # about 5 KB a frame: 20 MB, more than the kernel's buffers hold
    frames = b"".join(rpc.encode_request(request, 12, cid) for cid in range(1, count + 1))
    client.sock.setblocking(False)
    sent, stuck_since = 0, None
    while sent < len(frames):  # until the kernel's buffers are full: the gateway reads no more
        try:
            sent += client.sock.send(frames[sent:sent + 65536])
            stuck_since = None
        except BlockingIOError:
            stuck_since = stuck_since or time.monotonic()
            if time.monotonic() - stuck_since > 1.0:
                break
            time.sleep(0.01)
    assert sent < len(frames)  # held back
    for conn in kraft_bootstrap.call(lambda c: list(kraft_bootstrap._conns.values())):
        assert len(conn.inbuf) <= (1 << 16) + len(frames) // count
    kraft_bootstrap.call(lambda c: c.faults.resume(victim))
    client.sock.setblocking(True)
    client.sock.settimeout(60)
    sender = threading.Thread(target=client.sock.sendall, args=(frames[sent:],), daemon=True)
    sender.start()  # a client writes and reads at once (the answers are 20 MB too)
    for cid in range(1, count + 1):  # every request answered, in order
        size = struct.unpack(">i", client.read_exactly(4))[0]
        assert struct.unpack_from(">i", client.read_exactly(size), 0)[0] == cid
    sender.join(10)
    client.close()
    _every_listener_answers(kraft_bootstrap, kraft_cluster)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def test_a_create_topics_for_two_billion_partitions_is_refused(kraft_bootstrap, kraft_cluster):
    before = _rss_mb()
    client = RawClient(port_of(kraft_bootstrap.bootstrap_servers), timeout=60)
    R = M.CreateTopicsRequest
    answer = client.request(R(topics=(R.CreatableTopic(
        name="huge", num_partitions=2147483647, replication_factor=3),), timeout_ms=30_000), 7)
    result = answer.topics[0]
    assert result.error_code == ErrorCode.POLICY_VIOLATION, result
    client.close()
    assert kraft_cluster.metadata.topic("huge") is None
    _every_listener_answers(kraft_bootstrap, kraft_cluster)
    assert _rss_mb() - before < 100
    assert kraft_bootstrap.handler_errors == []
