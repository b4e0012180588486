"""Bad bytes on the socket: the node answers as Kafka does (an error response, or a closed
connection), logs one line, and the cluster goes on unharmed."""

from __future__ import annotations

import struct

import pytest
from gateway_helpers import RawClient, metadata, port_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol import rpc
from kraft_testkit.protocol.error_codes import ErrorCode


def _still_serving(srv, cluster) -> None:
    """A fresh connection gets a good Metadata answer and the simulation still moves."""
    client = RawClient(port_of(srv.bootstrap_servers, 1))
    try:
        answer = metadata(client)
        assert sorted(b.node_id for b in answer.brokers) == cluster.broker_ids
    finally:
        client.close()
    srv.run_for(2_000)  # invariants are checked after every event
    assert srv.failure is None


def _header(api_key: int, version: int, cid: int = 1) -> bytes:
    return struct.pack(">hhi", api_key, version, cid) + struct.pack(">h", 4) + b"test"


CLOSING_CASES = {
    "shorter than a header": struct.pack(">i", 3) + b"\x00\x03\x00",
    "negative size": struct.pack(">i", -5) + b"\x00" * 8,
    "huge size": struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 8,
    "unknown api key": struct.pack(">i", 14) + _header(999, 0) + b"\x00\x00",
    "api not served by a broker": struct.pack(">i", 14) + _header(52, 0) + b"\x00\x00",
    "unsupported version": struct.pack(">i", 14) + _header(3, 99) + b"\x00\x00",
    "size cuts the body": (lambda f: struct.pack(">i", 14) + f[4:18])(
        rpc.encode_request(M.MetadataRequest(topics=(M.MetadataRequest.MetadataRequestTopic(
            name="a-long-topic-name"),)), 1, 7)),
    "garbage": b"\x00\x00\x00\x10" + bytes(range(200, 216)),
}


@pytest.mark.parametrize("name", sorted(CLOSING_CASES))
def test_bad_frame_closes_the_connection_with_one_log_line(name, kraft_bootstrap, kraft_cluster):
    before = len(kraft_bootstrap.lines)
    client = RawClient(port_of(kraft_bootstrap.bootstrap_servers))
    client.send_bytes(CLOSING_CASES[name])
    assert client.closed_by_peer()
    client.close()
    assert len(kraft_bootstrap.lines) == before + 1
    assert "closing" in kraft_bootstrap.lines[-1]
    _still_serving(kraft_bootstrap, kraft_cluster)


def test_api_versions_at_an_unknown_version_is_answered_at_v0(kraft_bootstrap):
    client = RawClient(port_of(kraft_bootstrap.bootstrap_servers))
    frame = bytearray(rpc.encode_request(M.ApiVersionsRequest(), 0, 42))
    struct.pack_into(">h", frame, 6, 77)  # a version from the future
    client.send_bytes(bytes(frame))
    answer = client.read_response(18, 0)
    assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any(k.api_key == 3 for k in answer.api_keys)  # what the client may speak instead
    client.close()


def test_a_corrupt_record_batch_is_corrupt_message(kraft_bootstrap, kraft_cluster):
    with kraft_bootstrap.hold() as c:
        c.create_topic("t", partitions=1, replication_factor=1)
        leader = c.metadata.topic("t").partitions[0].leader
        # the leader serves "t" once it has replayed the topic (a client would retry till then)
        c.run_until(lambda c: c.broker(leader).image.topic("t") is not None, timeout_ms=5_000)
    client = RawClient(kraft_bootstrap.address(leader)[1])
    P = M.ProduceRequest
    bad = b"\x00" * 12 + b"\x00\x00\x00\x00\x02" + b"\xde\xad\xbe\xef" + b"\x00" * 40
    bad = bad[:8] + struct.pack(">i", len(bad) - 12) + bad[12:]
    answer = client.request(P(acks=1, timeout_ms=1000, topic_data=(P.TopicProduceData(
        name="t", partition_data=(P.PartitionProduceData(index=0, records=bad),)),)), 9)
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.CORRUPT_MESSAGE
    client.close()
    assert any("CRC32C" in line for line in kraft_bootstrap.lines)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(min_size=1, max_size=64), keep_header=st.booleans())
def test_fuzzed_bytes_never_harm_the_cluster(kraft_bootstrap, kraft_cluster, data, keep_header):
    """Random bytes (or a valid header with a random body) get an answer or a close; either
    way the gateway keeps serving and the loop never fails."""
    payload = _header(3, 12) + data if keep_header else data
    client = RawClient(port_of(kraft_bootstrap.bootstrap_servers), timeout=2.0)
    client.send_bytes(struct.pack(">i", len(payload)) + payload)
    try:
        client.sock.recv(1 << 16)  # an answer, or EOF when the gateway closed the connection
    except (ConnectionResetError, TimeoutError, OSError):
        pass
    client.close()
    assert kraft_bootstrap.failure is None
    _still_serving(kraft_bootstrap, kraft_cluster)


FUZZED_APIS = [(0, 9), (1, 12), (1, 16), (2, 7), (3, 12), (3, 4), (19, 7), (20, 6), (22, 4),
               (23, 4), (32, 4), (33, 1), (36, 2), (44, 1), (50, 0), (60, 1), (17, 1)]


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(api=st.sampled_from(FUZZED_APIS), body=st.binary(max_size=80))
def test_fuzzed_bodies_never_crash_a_handler(kraft_bootstrap, kraft_cluster, api, body):
    """Random bodies behind valid headers of the served APIs: each gets an answer or a closed
    connection, and no handler ever fails on what decoded."""
    payload = _header(*api) + (b"\x00" if api[1] >= _flexible_from(api[0]) else b"") + body
    client = RawClient(port_of(kraft_bootstrap.bootstrap_servers), timeout=2.0)
    client.send_bytes(struct.pack(">i", len(payload)) + payload)
    try:
        client.sock.recv(1 << 16)
    except (ConnectionResetError, TimeoutError, OSError):
        pass
    client.close()
    assert kraft_bootstrap.failure is None
    assert kraft_bootstrap.handler_errors == []


def _flexible_from(api_key: int) -> int:
    """The first flexible version (its request header carries a tag buffer after client id)."""
    flexible = M.REQUESTS[api_key]._spec.flexible
    return flexible.lo if flexible.lo <= flexible.hi else 1 << 15
