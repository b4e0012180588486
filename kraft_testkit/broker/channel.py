"""How the broker's parts send: requests in correlation-id envelopes, and a timeline of events.

Requests leave as :func:`kraft_testkit.raft.rpc.request` envelopes (the Raft layer's), so the
correlation id travels in the Kafka request header in wire mode. The simulated network may delay
and duplicate messages; a part that sent a request keeps its correlation id and drops any answer
that does not carry it, as Kafka's network client drops responses it no longer expects.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.raft import rpc

CONTROLLER_CHANNEL = "controller"
"""The connection a node keeps to the active controller, apart from its Raft client's (Kafka's
``NodeToControllerChannelManager``): registrations, heartbeats and AlterPartition travel on it,
so they never queue behind the metadata fetches on the same pair of nodes. UnregisterBroker is
not among them: in Kafka it is an admin API (an admin client sends it to any broker, which
forwards it; ``KafkaApis.handleUnregisterBrokerRequest``), never the broker's own lifecycle
traffic, so it does not queue behind heartbeats."""

_CONTROLLER_CHANNEL_BODIES = (
    M.BrokerRegistrationRequest, M.BrokerRegistrationResponse,
    M.BrokerHeartbeatRequest, M.BrokerHeartbeatResponse,
    M.AlterPartitionRequest, M.AlterPartitionResponse,
    M.ControllerRegistrationRequest, M.ControllerRegistrationResponse,
    M.AssignReplicasToDirsRequest, M.AssignReplicasToDirsResponse,
)


def channel_of(msg: object) -> str | None:
    """The simulated network's ``channel_of``: the controller channel for the requests Kafka
    sends through it (and their responses), the default (Raft) connection for the rest."""
    body = getattr(msg, "body", msg)
    return CONTROLLER_CHANNEL if isinstance(body, _CONTROLLER_CHANNEL_BODIES) else None


class Outbox:
    """What the broker sends during one call, in order; correlation ids count up from 1."""

    __slots__ = ("_last_cid", "sends")

    def __init__(self) -> None:
        self.sends: list[tuple[int, object]] = []
        self._last_cid = 0

    def request(self, dst: int, body: Any) -> int:
        """Queue a request to node ``dst``; returns its correlation id."""
        self.sends.append((dst, rpc.request(self.next_cid(), body)))
        return self._last_cid

    def next_cid(self) -> int:
        """The next correlation id, counted as used (a request sent but not queued here)."""
        self._last_cid = (self._last_cid + 1) & 0x7FFFFFFF
        return self._last_cid

    def respond(self, dst: int, correlation_id: int | None, body: Any) -> None:
        """Answer a request (a bare body when the request came without an envelope)."""
        msg = body if correlation_id is None else rpc.response(correlation_id, body)
        self.sends.append((dst, msg))

    def drain(self) -> list[tuple[int, object]]:
        out, self.sends = self.sends, []
        return out


class EventLog(list):
    """``(now_ms, text)`` entries: the broker's story, for timelines and failure reports."""

    def add(self, now_ms: int, text: str) -> None:
        self.append((now_ms, text))

    def texts(self) -> list[str]:
        return [text for _, text in self]
