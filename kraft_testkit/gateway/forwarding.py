"""Controller RPCs from clients: forwarded to the active controller, or sent to the controller
a ``bootstrap.controllers`` client dialled.

A request that reaches a broker is forwarded as Kafka's ForwardingManager forwards it: to the
active controller, again to the next one when the answer is NOT_CONTROLLER (a failover) or none
comes within the broker's request timeout, until the client's own timeout; then the client gets
REQUEST_TIMED_OUT. A request that reaches a controller directly is answered by that controller:
NOT_CONTROLLER when it is not the active one, as Kafka's controllers answer, and the client
retries (librdkafka and the Java admin client do).

On the simulated network a forwarded request travels from the broker to the controller the
broker knows (so a partition between them cuts forwarding, as in Kafka); the answer reaches the
broker's door, where the gateway picks it up (the node itself ignores answers it did not ask
for). A request to a controller's own listener travels from the clients' side, the kit's admin
node (id -1).
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.admin import ADMIN_NODE_ID
from kraft_testkit.cluster import _not_controller as is_not_controller
from kraft_testkit.controller import handlers as _registers_handlers  # noqa: F401 (fills HANDLERS)
from kraft_testkit.controller.quorum_controller import HANDLERS, _with_error
from kraft_testkit.controller.quorum_controller import _not_controller as not_controller_answer
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.codegen import Message
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.raft import rpc

from .context import Pending, RequestContext

#: the broker's wait for one controller answer (Kafka's controller channel request timeout)
CONTROLLER_REQUEST_TIMEOUT_MS = 5_000
#: the wait when the request names no timeout of its own (the admin client's default)
DEFAULT_CLIENT_TIMEOUT_MS = 30_000
RETRY_BACKOFF_MS = 100
#: how long an answer waits for the brokers to replay what the controller committed
PROPAGATION_WAIT_MS = 5_000

#: controller RPCs a client may send, forwarded to the active controller (the node-to-controller
#: ones stay internal; the reads a node answers itself are in gateway/local_reads.py)
CLIENT_CONTROLLER_APIS = tuple(sorted(
    (cls for cls in HANDLERS if cls not in (
        M.AlterPartitionRequest, M.BrokerRegistrationRequest, M.BrokerHeartbeatRequest,
        M.AllocateProducerIdsRequest, M.ControllerRegistrationRequest,
        M.DescribeConfigsRequest, M.DescribeAclsRequest, M.DescribeClientQuotasRequest)),
    key=lambda c: c._spec.api_key)) + (M.DescribeQuorumRequest, M.AddRaftVoterRequest,
                                       M.RemoveRaftVoterRequest)  # KIP-853: the Raft leader's

#: forwarded reads: they change nothing, so their answers go back at once (no propagation wait)
READ_ONLY_APIS = (M.ListPartitionReassignmentsRequest, M.DescribeQuorumRequest)


def error_response(request: Message, code: int) -> Message:
    """The response Kafka gives ``request`` when it fails as a whole with ``code``."""
    return _with_error(not_controller_answer(request), code)


def newest_shape(body: Message) -> Message:
    """The request as its newest version carries it: the simulated network speaks each API's
    newest version, so fields older versions alone carry must move (DeleteTopics v0-5 names
    its topics in ``topic_names``; v6 in ``topics``)."""
    if isinstance(body, M.DeleteTopicsRequest) and body.topic_names:
        state = M.DeleteTopicsRequest.DeleteTopicState
        return body.replace(topic_names=(), topics=tuple(body.topics) + tuple(
            state(name=n) for n in body.topic_names))
    if isinstance(body, M.UpdateFeaturesRequest) and \
            any(u.allow_downgrade for u in body.feature_updates):
        # v0's AllowDowngrade is v1's UpgradeType SAFE_DOWNGRADE (Kafka's own mapping)
        return body.replace(feature_updates=tuple(
            u.replace(upgrade_type=2 if u.allow_downgrade else u.upgrade_type,
                      allow_downgrade=False) for u in body.feature_updates))
    return body


def _error_codes(msg: Any) -> list[int]:
    """Every ``error_code`` below the top level of a response, depth first."""
    out: list[int] = []
    for value in msg.asdict().values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, Message):
                code = getattr(item, "error_code", None)
                if isinstance(code, int):
                    out.append(code)
                out.extend(_error_codes(item))
    return out


def changed_nothing(body: Message, response: Message) -> bool:
    """True when a write cannot have changed the metadata: it only validated, or it failed as
    a whole, or every one of its results failed. Its answer need not wait for the brokers."""
    if getattr(body, "validate_only", False):
        return True
    if getattr(response, "error_code", 0):
        return True
    nested = _error_codes(response)
    return bool(nested) and all(code != 0 for code in nested)


def _client_timeout(body: Message) -> int:
    timeout = getattr(body, "timeout_ms", None)
    return timeout if isinstance(timeout, int) and timeout > 0 else DEFAULT_CLIENT_TIMEOUT_MS


class ControllerCall:
    """One client request on its way to a controller over the simulated network."""

    def __init__(self, ctx: RequestContext, body: Message, direct_to: int | None) -> None:
        self.cluster = ctx.cluster
        self.gateway = ctx.gateway
        self.body = newest_shape(body)
        self.direct_to = direct_to
        # a broker forwards from itself (a partition between it and the controller cuts it
        # off, as in Kafka); a client that dialled a controller speaks from the clients' side
        self.origin = ctx.node if ctx.role == "broker" and direct_to is None else ADMIN_NODE_ID
        self.deadline_ms = ctx.now_ms + _client_timeout(body)
        self.cid: int | None = None
        self.sent_ms = 0
        self.retry_at_ms = ctx.now_ms
        self.stale: set[int] = set()
        self.answer: Message | None = None
        self.held: Message | None = None   # the controller's answer, until brokers caught up
        self.held_at_ms = 0
        self.offset = -1

    def _send(self, dest: int) -> None:
        c = self.cluster
        c._correlation = (c._correlation + 1) & 0x7FFFFFFF
        self.cid = c._correlation
        self.sent_ms = c.now_ms
        if self.origin != ADMIN_NODE_ID:
            self.gateway.awaiting.add((self.origin, self.cid))
        c.sim.network.send(self.origin, dest, rpc.request(self.cid, self.body))

    def _take(self, cid: int) -> Message | None:
        """The answer to ``cid`` if it has arrived (and forget it)."""
        if self.origin == ADMIN_NODE_ID:
            got = self.cluster._admin.responses.pop(cid, None)
            return None if got is None else got[1]
        return self.gateway.mailbox.pop((self.origin, cid), None)

    def _forget(self, cid: int) -> None:
        if self.origin == ADMIN_NODE_ID:
            self.stale.add(cid)
        else:
            self.gateway.awaiting.discard((self.origin, cid))
            self.gateway.mailbox.pop((self.origin, cid), None)

    def _controller(self) -> int | None:
        """Where to send: the dialled controller, or the one the forwarding broker knows (the
        Raft leader it follows), as Kafka's forwarding manager picks it."""
        if self.direct_to is not None:
            return self.direct_to
        if self.origin != ADMIN_NODE_ID:
            machine = self.cluster.broker(self.origin)
            return None if machine is None else machine.logic.controller_id
        active = self.cluster.active_controller
        return active.id if active is not None else None

    def poll(self) -> Message | None:
        if self.answer is not None:
            return self.answer
        if self.held is not None:
            return self._after_propagation()
        c = self.cluster
        for cid in [x for x in self.stale if x in c._admin.responses]:
            c._admin.responses.pop(cid)
            self.stale.discard(cid)
        now = c.now_ms
        response = self._take(self.cid) if self.cid is not None else None
        if response is not None:
            self.cid = None
            if self.direct_to is None and is_not_controller(response) and now < self.deadline_ms:
                self.retry_at_ms = now + RETRY_BACKOFF_MS
            elif isinstance(self.body, READ_ONLY_APIS) or changed_nothing(self.body, response):
                self.answer = response
                return response
            else:
                self.held, self.held_at_ms = response, now
                self.offset = c.metadata.provenance.offset
                return self._after_propagation()
        if self.cid is not None and now - self.sent_ms >= CONTROLLER_REQUEST_TIMEOUT_MS:
            self._forget(self.cid)
            self.cid = None
            self.retry_at_ms = now
        if self.cid is None and now >= self.retry_at_ms:
            dest = self._controller()
            if dest is not None and c.sim.process(dest).up:
                self._send(dest)
            else:
                self.retry_at_ms = now + RETRY_BACKOFF_MS
        return None

    def _after_propagation(self) -> Message | None:
        """A write's answer once every running broker replayed the committed metadata it may
        depend on (a client that created a topic asks a broker about it next), or after
        PROPAGATION_WAIT_MS. Reads (READ_ONLY_APIS) and writes that changed nothing (only
        validated, or every result failed) skip this."""
        c = self.cluster
        if c.now_ms - self.held_at_ms < PROPAGATION_WAIT_MS:
            for n in c.broker_ids:
                b = c.broker(n)
                if b is not None and c.sim.process(n).state.value == "running" and \
                        b.metadata_offset < self.offset:
                    return None
        self.answer = self.held
        return self.answer

    def expire(self) -> Message:
        if self.held is not None:
            self.answer = self.held
            return self.held
        if self.cid is not None:
            self._forget(self.cid)
        return error_response(self.body, ErrorCode.REQUEST_TIMED_OUT)


def forward(ctx: RequestContext, body: Message) -> Pending:
    """Send ``body`` to the controller (see the module doc) and wait for its answer."""
    call = ControllerCall(ctx, body, ctx.node if ctx.role == "controller" else None)
    call.poll()
    return Pending(call.poll, call.expire, virtual_deadline_ms=call.deadline_ms)
