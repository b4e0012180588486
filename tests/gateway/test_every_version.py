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
        client = RawClient(srv.address(node)[1], timeout=10)
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
