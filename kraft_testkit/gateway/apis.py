"""Which API each listener serves, at which versions, and the handler that answers it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft_testkit.protocol import messages as M

from . import cluster_apis, data_apis, legacy_configs, local_reads, producer_ids, sasl
from .context import RequestContext
from .forwarding import CLIENT_CONTROLLER_APIS, forward

Handler = Callable[[RequestContext, Any], Any]

#: Kafka 4.0 dropped these old versions; the kit's declarations reach further back
KAFKA_4_BASELINE = {1: 4, 17: 1, 19: 2, 20: 1, 29: 1, 30: 1, 31: 1, 32: 1, 38: 1}


def _api_versions(ctx: RequestContext, req: Any) -> Any:
    return cluster_apis.api_versions_response(ctx, ctx.gateway.apis(ctx.role))


_COMMON: dict[type, Handler] = {
    M.ApiVersionsRequest: _api_versions,
    M.DescribeClusterRequest: cluster_apis.describe_cluster,
    M.SaslHandshakeRequest: sasl.handshake,
    M.SaslAuthenticateRequest: sasl.authenticate,
    M.DescribeUserScramCredentialsRequest: sasl.describe_user_scram_credentials,
}
_COMMON.update({cls: forward for cls in CLIENT_CONTROLLER_APIS})
_COMMON[M.AlterConfigsRequest] = legacy_configs.alter_configs
# reads a Kafka node answers from its own image, never forwarded (gateway/local_reads.py)
_COMMON[M.DescribeConfigsRequest] = local_reads.describe_configs
_COMMON[M.DescribeAclsRequest] = local_reads.describe_acls
_COMMON[M.DescribeClientQuotasRequest] = local_reads.describe_client_quotas
_COMMON[M.CreateDelegationTokenRequest] = sasl.create_delegation_token

BROKER_HANDLERS: dict[type, Handler] = dict(_COMMON)
BROKER_HANDLERS.update({
    M.MetadataRequest: cluster_apis.metadata,
    M.ProduceRequest: data_apis.produce,
    M.FetchRequest: data_apis.fetch,
    M.ListOffsetsRequest: data_apis.list_offsets,
    M.OffsetForLeaderEpochRequest: data_apis.offset_for_leader_epoch,
    M.InitProducerIdRequest: producer_ids.init_producer_id,
    M.DescribeLogDirsRequest: data_apis.describe_log_dirs,
})
CONTROLLER_HANDLERS: dict[type, Handler] = dict(_COMMON)


def handlers_for(role: str) -> dict[int, tuple[type, Handler]]:
    table = BROKER_HANDLERS if role == "broker" else CONTROLLER_HANDLERS
    return {cls._spec.api_key: (cls, fn) for cls, fn in table.items()}


def version_ranges(role: str) -> dict[int, range]:
    out = {}
    for key, (cls, _) in handlers_for(role).items():
        v = cls._spec.versions
        out[key] = range(max(v.lo, KAFKA_4_BASELINE.get(key, 0)), v.hi + 1)
    return out
