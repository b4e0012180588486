"""The ``kraft_bootstrap`` fixture: the test's cluster served on loopback to real Kafka clients.

Registered from ``pytest_kraft.plugin`` with one line; the gateway (sockets, a thread) is
imported only when a test asks for the fixture.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kraft_gateway(speed=None, sasl=False): how kraft_bootstrap moves virtual time while "
        "clients are connected (None: step on demand; a number: paced to the wall clock at "
        "that speed), and whether its listeners require SASL")


@pytest.fixture
def kraft_bootstrap(request: pytest.FixtureRequest, kraft_cluster):
    """A started :class:`kraft_testkit.gateway.Gateway` over ``kraft_cluster``:
    ``kraft_bootstrap.bootstrap_servers`` for clients, ``kraft_bootstrap.hold()`` for faults."""
    from kraft_testkit.gateway import serve

    marker = request.node.get_closest_marker("kraft_gateway")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    with serve(kraft_cluster, speed=kwargs.get("speed"), sasl=kwargs.get("sasl", False)) as srv:
        yield srv
