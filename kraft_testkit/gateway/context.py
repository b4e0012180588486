"""What a request handler sees (the node it arrived at, the header) and what it may answer.

A handler returns a response message, ``None`` (no response: ``acks=0``), or a :class:`Pending`
when the answer needs the simulation to move (a controller commit, ``acks=all``) or a client's
long poll to wait (Fetch ``max_wait_ms``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kraft_testkit.protocol.codegen import Message


@dataclass
class RequestContext:
    gateway: Any          # the Gateway (cluster, data plane, addresses)
    node: int             # the node whose listener the request reached
    role: str             # "broker" or "controller" listener
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    connection: Any = None  # the Connection (SASL state lives there)

    @property
    def cluster(self) -> Any:
        return self.gateway.cluster

    @property
    def now_ms(self) -> int:
        return self.gateway.cluster.now_ms


class Pending:
    """An answer to come. ``poll()`` gives the response once ready (else None); at the deadline
    ``expire()`` gives the answer Kafka gives when time runs out (None: close the connection).

    ``virtual_deadline_ms`` marks waits that need virtual time to pass (stepping mode runs the
    simulation for them); ``wall_deadline`` marks client long polls, which wait in wall time.
    ``wants_time``, when given, says whether the simulation can bring the answer right now (a
    long poll below the log end can; one at the log end waits for another client).
    """

    def __init__(self, poll: Callable[[], Message | None], expire: Callable[[], Message | None],
                 *, virtual_deadline_ms: int | None = None,
                 wall_deadline: float | None = None,
                 wants_time: Callable[[], bool] | None = None) -> None:
        self.poll = poll
        self.expire = expire
        self.virtual_deadline_ms = virtual_deadline_ms
        self.wall_deadline = wall_deadline
        self.wants_time = wants_time

    @property
    def needs_simulation(self) -> bool:
        if self.virtual_deadline_ms is None:
            return False
        return self.wants_time is None or self.wants_time()
