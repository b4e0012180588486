"""Reads a node answers itself, from the metadata image it has replayed: DescribeConfigs,
DescribeAcls and DescribeClientQuotas.

Kafka 4.x brokers do not forward these: ``KafkaApis`` answers DescribeConfigs with
``ConfigHelper`` over its own metadata cache, DescribeAcls with its authorizer (fed by the
same metadata) and DescribeClientQuotas with ``KRaftMetadataCache.describeClientQuotas``.
Controllers answer DescribeConfigs and DescribeAcls the same way, each from its own committed
image (``ControllerApis``), active or not; they do not serve DescribeClientQuotas at all.

So the answer is what *this* node has seen: a broker cut off from the controllers still
answers, with its possibly stale image, and ``BROKER <id>`` names only the node asked
(INVALID_REQUEST "Unexpected broker id, expected <id> or empty string, ..." otherwise, as
Kafka's ``ConfigHelper``). The answer goes out at once; no simulation time passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft_testkit.controller import acls, configs, quotas
from kraft_testkit.metadata import MetadataImage

from .context import Pending, RequestContext

#: how long a read waits for a starting broker (a client's default ``request.timeout.ms``)
STARTUP_WAIT_MS = 30_000


def _image_and_config(ctx: RequestContext) -> tuple[MetadataImage, Any]:
    """The image this listener's node has replayed and its static config (broker or
    controller part, by the listener the request reached)."""
    machine = ctx.cluster.controller_node(ctx.node)
    if machine is None:  # the gateway closes a dead node's sockets before this
        return MetadataImage.EMPTY, None
    if ctx.role == "controller":
        return machine.controller.committed, machine.controller.config
    return machine.image, machine.logic.config


def _once_caught_up(ctx: RequestContext, answer: Callable[[], Any]) -> Any:
    """``answer()`` now, or once a starting broker has caught up: Kafka's ``BrokerServer``
    enables request processing only after the broker replayed the metadata log and published
    its first image, so a restarted broker never answers from an empty image (the simulation
    runs for the wait; a broker still starting after STARTUP_WAIT_MS gets the connection
    closed, as a client's request timeout would end it)."""
    def starting() -> bool:
        machine = ctx.cluster.controller_node(ctx.node)
        return machine is not None and machine.state_name == "STARTING"

    if ctx.role != "broker" or not starting():
        return answer()
    return Pending(lambda: None if starting() else answer(), lambda: None,
                   virtual_deadline_ms=ctx.now_ms + STARTUP_WAIT_MS)


def describe_configs(ctx: RequestContext, req: Any) -> Any:
    def answer() -> Any:
        image, config = _image_and_config(ctx)
        return configs.describe_configs(image, req, node_id=ctx.node, config=config,
                                        version=ctx.version)
    return _once_caught_up(ctx, answer)


def describe_acls(ctx: RequestContext, req: Any) -> Any:
    return _once_caught_up(ctx, lambda: acls.describe_acls(_image_and_config(ctx)[0], req))


def describe_client_quotas(ctx: RequestContext, req: Any) -> Any:
    return _once_caught_up(
        ctx, lambda: quotas.describe_client_quotas(_image_and_config(ctx)[0], req))
