"""ApiVersions, Metadata and DescribeCluster: what a client asks first, answered from the
committed metadata the node has replayed, with every address pointing at the gateway's ports.

* ApiVersions lists the APIs the listener serves (a broker listener: data plane, Metadata,
  forwarded admin RPCs; a controller listener: the controller RPCs) with the versions the kit
  declares, and (v3+) the supported and finalized features, as Kafka 4.x does.
* Metadata is the broker's own answer (``broker/metadata_view.py``: fenced brokers left out,
  offline replicas, LEADER_NOT_AVAILABLE), its broker endpoints replaced by loopback addresses.
  Like a KRaft broker it reports a live broker as "controller" (the lowest id: deterministic).
  Topics are not auto-created (``auto.create.topics.enable=false``).
* DescribeCluster: brokers from a broker listener, controllers from a controller listener
  (KIP-919 endpoint types), MISMATCHED_ENDPOINT_TYPE when asked for the other kind.
"""

from __future__ import annotations

from typing import Any

from kraft_testkit.broker.metadata_view import metadata_response, reported_controller_id
from kraft_testkit.controller.features import finalized_features, supported_features_of
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode

from . import autojump
from .context import Pending, RequestContext

_AV = M.ApiVersionsResponse
_DC = M.DescribeClusterResponse
_MD = M.MetadataResponse
ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 1, 2
KRAFT_VERSION = ("kraft.version", 0, 1)  # every node supports static (0) and KIP-853 (1) voters


def node_image(ctx: RequestContext) -> Any:
    """The metadata image the node serving this request has replayed."""
    machine = ctx.cluster.controller_node(ctx.node)
    if machine is None:
        return None
    if ctx.role == "controller":
        return machine.controller.committed
    return machine.image


def api_versions_response(ctx: RequestContext, apis: dict[int, range], error: int = 0) -> Any:
    keys = tuple(_AV.ApiVersion(api_key=k, min_version=r.start, max_version=r.stop - 1)
                 for k, r in sorted(apis.items()))
    image = node_image(ctx)
    supported = [_AV.SupportedFeatureKey(name=name, min_version=r.min, max_version=r.max)
                 for name, r in sorted(supported_features_of(ctx.cluster.config).items())]
    supported.append(_AV.SupportedFeatureKey(name=KRAFT_VERSION[0], min_version=KRAFT_VERSION[1],
                                             max_version=KRAFT_VERSION[2]))
    finalized = []
    epoch = -1
    if image is not None:
        epoch = image.offset
        levels = dict(finalized_features(image))
        raft = ctx.cluster.replica(ctx.node)
        if raft is not None and raft.history.kraft_version > 0:  # it lives in the Raft log
            levels[KRAFT_VERSION[0]] = raft.history.kraft_version
        finalized = [_AV.FinalizedFeatureKey(name=n, max_version_level=lvl, min_version_level=lvl)
                     for n, lvl in sorted(levels.items())]
    return _AV(error_code=error, api_keys=keys, throttle_time_ms=0,
               supported_features=tuple(supported), finalized_features_epoch=epoch,
               finalized_features=tuple(finalized))


def _topics_wanted(req: Any, version: int, image: Any) -> list | None:
    if req.topics is None or (version == 0 and not req.topics):
        return None
    out = []
    for t in req.topics:
        out.append(t.name if t.name is not None else t.topic_id)
    return out


def metadata(ctx: RequestContext, req: Any) -> Any:
    """The broker's answer; in stepping mode it waits (virtual time moves) while the broker has
    not replayed what the controller committed or names a dead leader, since the client would
    only ask again (see gateway/autojump.py)."""
    wanted = _topics_wanted(req, ctx.version, node_image(ctx))
    if ctx.gateway.speed is not None or _metadata_ready(ctx, wanted):
        return _metadata_now(ctx, req)
    gateway = ctx.gateway
    stuck_at = ctx.cluster.metadata.provenance.offset
    if gateway.futile_metadata_wait == stuck_at:
        return _metadata_now(ctx, req)  # the last wait at this offset brought nothing

    def expire() -> Any:
        gateway.futile_metadata_wait = ctx.cluster.metadata.provenance.offset
        return _metadata_now(ctx, req)

    return Pending(lambda: _metadata_now(ctx, req) if _metadata_ready(ctx, wanted) else None,
                   expire, virtual_deadline_ms=ctx.now_ms + autojump.wait_bound_ms(ctx.cluster))


def _metadata_ready(ctx: RequestContext, wanted: list | None) -> bool:
    cluster = ctx.cluster
    machine = cluster.controller_node(ctx.node)
    if machine is None or autojump.broker_lags(cluster, ctx.node):
        return False  # a broker that died meanwhile: its connection closes, nothing to answer
    return autojump.leads_nothing_dead(cluster, machine.image, wanted)


def _metadata_now(ctx: RequestContext, req: Any) -> Any:
    machine = ctx.cluster.controller_node(ctx.node)
    logic = machine.logic
    image = machine.image
    fenced = (ctx.node,) if logic.self_fenced else ()
    response = metadata_response(image, cluster_id=ctx.cluster.cluster_id,
                                 topics=_topics_wanted(req, ctx.version, image),
                                 fenced=fenced,
                                 controller_id=reported_controller_id(image, None, fenced))
    brokers = []
    for b in response.brokers:
        host, port = ctx.gateway.address(b.node_id)
        brokers.append(b.replace(host=host, port=port))
    return response.replace(brokers=tuple(brokers))


def describe_cluster(ctx: RequestContext, req: Any) -> Any:
    wanted = req.endpoint_type if ctx.version >= 1 else ENDPOINT_BROKER
    mine = ENDPOINT_CONTROLLER if ctx.role == "controller" else ENDPOINT_BROKER
    cluster = ctx.cluster
    if wanted != mine:
        return _DC(error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE, endpoint_type=wanted,
                   error_message=f"this is a {ctx.role} listener", cluster_id=cluster.cluster_id)
    image = node_image(ctx)
    if ctx.role == "controller":
        active = cluster.active_controller
        nodes = [(c, None) for c in cluster.controller_ids]
        controller_id = active.id if active is not None else -1
    else:
        nodes = [(b.id, b.rack) for _, b in sorted(image.cluster.brokers.items())
                 if not b.fenced]
        controller_id = reported_controller_id(image, None)
    brokers = []
    for nid, rack in nodes:
        host, port = ctx.gateway.address(nid)
        brokers.append(_DC.DescribeClusterBroker(broker_id=nid, host=host, port=port, rack=rack))
    return _DC(error_code=0, endpoint_type=wanted, cluster_id=cluster.cluster_id,
               controller_id=controller_id, brokers=tuple(brokers))
