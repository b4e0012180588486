"""ApiVersions lists exactly the APIs each listener serves within Kafka 4.x's scope for it (the
schemas' "listeners"): a broker does not advertise the controller-only AssignReplicasToDirs, a
controller does not advertise the broker-only DescribeClientQuotas, and neither serves them."""

from __future__ import annotations

from gateway_helpers import RawClient

from kraft_testkit.gateway import apis
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol import rpc

#: what the kit's listeners serve, checked by hand against Kafka's request schemas
BROKER_KEYS = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
               26, 27, 28, 29, 30, 31,
               32, 33, 35, 36, 37, 38, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 55, 57, 60, 64,
               65, 66, 68, 69, 80, 81}
CONTROLLER_KEYS = {17, 18, 19, 20, 29, 30, 31, 32, 33, 36, 37, 38, 43, 44, 45, 46, 49, 50, 51,
                   55, 57, 60, 64, 73, 80, 81}


def _advertised(port: int) -> set[int]:
    client = RawClient(port)
    answer = client.request(M.ApiVersionsRequest(client_software_name="t",
                                                 client_software_version="1"), 3)
    client.close()
    assert answer.error_code == 0
    return {k.api_key for k in answer.api_keys}


def test_every_served_api_has_kafkas_listener_scope():
    served = {cls._spec.api_key for table in (apis.BROKER_HANDLERS, apis.CONTROLLER_HANDLERS)
              for cls in table}
    assert served <= set(apis.KAFKA_LISTENERS), sorted(served - set(apis.KAFKA_LISTENERS))


def test_api_versions_lists_the_listeners_apis(kraft_bootstrap, kraft_cluster):
    broker = _advertised(kraft_bootstrap.address(kraft_cluster.broker_ids[0])[1])
    controller = _advertised(kraft_bootstrap.address(kraft_cluster.controller_ids[0])[1])
    assert broker == BROKER_KEYS
    assert controller == CONTROLLER_KEYS
    assert 73 not in broker and 48 not in controller


def test_an_api_outside_the_listeners_scope_closes_the_connection(kraft_bootstrap,
                                                                  kraft_cluster):
    client = RawClient(kraft_bootstrap.address(kraft_cluster.broker_ids[0])[1])
    R = M.AssignReplicasToDirsRequest
    client.send_bytes(rpc.encode_request(R(broker_id=0, broker_epoch=1, directories=()), 0, 1))
    assert client.closed_by_peer()
    assert any("api key 73 is not served by a broker listener" in line
               for line in kraft_bootstrap.lines)
