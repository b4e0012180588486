"""The test's admin client, a node of its own on the simulated network.

Admin operations are real Kafka requests from a real peer: they cross the same network (so a
partition can cut the admin off too), are encoded to Kafka bytes in wire mode, and reach the
active controller like any client's. The :class:`~kraft_testkit.cluster.Cluster` facade puts a
request on the wire and runs the simulation until the answer is back.
"""

from __future__ import annotations

from .raft import rpc
from .sim.node import Effects, NodeContext

ADMIN_NODE_ID = -1


class AdminClientNode:
    """Keeps every response that arrives, by correlation id; sends nothing on its own."""

    def __init__(self, ctx: NodeContext) -> None:
        self.node_id = ctx.node_id
        self.responses: dict[int, tuple[int, object]] = {}

    def on_start(self, now_ms: int) -> Effects | None:
        return None

    def on_message(self, src: int, msg: object, now_ms: int) -> Effects | None:
        if isinstance(msg, rpc.Response):
            self.responses[msg.correlation_id] = (src, msg.body)
        return None

    def on_timer(self, now_ms: int) -> Effects | None:
        return None
