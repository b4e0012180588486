"""AlterConfigs (33), the legacy whole-set form, as a KRaft broker serves it: the resource's
dynamic configs become exactly the given set (keys left out are deleted). The request is
forwarded as the IncrementalAlterConfigs the controller runs (SET each given key, DELETE each
other key the resource has now), and the answer is given back in AlterConfigs' shape.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.protocol import messages as M

from .context import Pending, RequestContext
from .forwarding import forward

SET, DELETE = 0, 1
_IA = M.IncrementalAlterConfigsRequest
_AR = M.AlterConfigsResponse


def as_incremental(req: Any, image: Any) -> Any:
    resources = []
    for r in req.resources:
        given = {c.name: c.value for c in r.configs}
        ops = [_IA.AlterableConfig(name=k, config_operation=SET, value=v)
               for k, v in given.items()]
        current = image.configs.get(r.resource_type, r.resource_name)
        ops += [_IA.AlterableConfig(name=k, config_operation=DELETE, value=None)
                for k in sorted(current) if k not in given]
        resources.append(_IA.AlterConfigsResource(resource_type=r.resource_type,
                                                  resource_name=r.resource_name,
                                                  configs=tuple(ops)))
    return _IA(resources=tuple(resources), validate_only=req.validate_only)


def as_legacy(response: Any) -> Any:
    return _AR(throttle_time_ms=response.throttle_time_ms, responses=tuple(
        _AR.AlterConfigsResourceResponse(error_code=r.error_code, error_message=r.error_message,
                                         resource_type=r.resource_type,
                                         resource_name=r.resource_name)
        for r in response.responses))


def alter_configs(ctx: RequestContext, req: Any) -> Pending:
    machine = ctx.cluster.controller_node(ctx.node)
    image = machine.image if ctx.role == "broker" else machine.controller.committed
    inner = forward(ctx, as_incremental(req, image))

    def poll() -> Any:
        answer = inner.poll()
        return None if answer is None else as_legacy(answer)

    return Pending(poll, lambda: as_legacy(inner.expire()),
                   virtual_deadline_ms=inner.virtual_deadline_ms)
