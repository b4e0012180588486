"""The loopback front door: real Kafka clients talk to the in-process cluster.

>>> from kraft_testkit import Cluster, serve
>>> with serve(Cluster(seed=7)) as srv:
...     admin = AdminClient({"bootstrap.servers": srv.bootstrap_servers})

See docs/clients.md and :mod:`kraft_testkit.gateway.server` for the threading and time model.
"""

from __future__ import annotations

from typing import Any

from .server import Gateway, GatewayError


def serve(cluster: Any, *, speed: float | None = None, host: str = "127.0.0.1",
          sasl: bool = False) -> Gateway:
    """A started :class:`Gateway` for ``cluster``; use it as a context manager to stop it.

    ``speed`` None steps virtual time on demand; a number paces it to the wall clock
    (``1.0`` real time, ``10.0`` ten times faster). ``sasl=True`` makes every listener
    SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512 against the cluster's SCRAM credentials); without
    it SASL is optional.
    """
    return Gateway(cluster, speed=speed, host=host, sasl=sasl).start()


__all__ = ["Gateway", "GatewayError", "serve"]
