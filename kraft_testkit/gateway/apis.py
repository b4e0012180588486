"""Which API each listener serves, at which versions, and the handler that answers it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft_testkit.protocol import messages as M

from . import cluster_apis, data_apis, delete_records, legacy_configs, local_reads, sasl
from .groups import apis as group_apis
from .groups import offset_apis
from .txn import admin as txn_admin
from .groups.consumer import apis as consumer_group_apis
from .txn import apis as txn_apis
from .txn import offsets as txn_offsets
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

#: the listeners Kafka 4.x serves each API on (its JSON schema's "listeners", zkBroker gone):
#: ApiVersions lists an API only on the listeners in its scope (``ApiKeys.apisForListener``),
#: so a broker never advertises the controller-only AssignReplicasToDirs (73) and a controller
#: never DescribeClientQuotas (48). Read from apache/kafka 1eb7644349cb, common/message/*.json.
_B, _C, _BC = frozenset({"broker"}), frozenset({"controller"}), frozenset({"broker", "controller"})
KAFKA_LISTENERS: dict[int, frozenset[str]] = {
    0: _B, 1: _BC, 2: _B, 3: _B, 17: _BC, 18: _BC, 19: _BC, 20: _BC, 22: _B, 23: _B, 29: _BC,
    30: _BC, 31: _BC, 32: _BC, 33: _BC, 35: _B, 36: _BC, 37: _BC, 38: _BC, 43: _BC, 44: _BC,
    45: _BC, 46: _BC, 48: _B, 49: _BC, 50: _BC, 51: _BC, 55: _BC, 57: _BC, 60: _BC, 64: _BC,
    73: _C, 80: _BC, 81: _BC,
    21: _B, 8: _B, 9: _B, 10: _B, 11: _B, 12: _B, 13: _B, 14: _B, 15: _B, 16: _B, 42: _B, 47: _B,
    24: _B, 25: _B, 26: _B, 28: _B, 27: _B, 65: _B, 66: _B, 68: _B, 69: _B,
}

BROKER_HANDLERS: dict[type, Handler] = dict(_COMMON)
BROKER_HANDLERS.update({
    M.MetadataRequest: cluster_apis.metadata,
    M.ProduceRequest: data_apis.produce,
    M.FetchRequest: data_apis.fetch,
    M.ListOffsetsRequest: data_apis.list_offsets,
    M.OffsetForLeaderEpochRequest: data_apis.offset_for_leader_epoch,
    M.DeleteRecordsRequest: delete_records.delete_records,
    M.InitProducerIdRequest: txn_apis.init_producer_id,
    M.DescribeLogDirsRequest: data_apis.describe_log_dirs,
    M.FindCoordinatorRequest: group_apis.find_coordinator,
    M.JoinGroupRequest: group_apis.join_group,
    M.SyncGroupRequest: group_apis.sync_group,
    M.HeartbeatRequest: group_apis.heartbeat,
    M.LeaveGroupRequest: group_apis.leave_group,
    M.OffsetCommitRequest: offset_apis.offset_commit,
    M.OffsetFetchRequest: offset_apis.offset_fetch,
    M.ListGroupsRequest: offset_apis.list_groups,
    M.DescribeGroupsRequest: offset_apis.describe_groups,
    M.DeleteGroupsRequest: offset_apis.delete_groups,
    M.OffsetDeleteRequest: offset_apis.offset_delete,
    M.AddPartitionsToTxnRequest: txn_apis.add_partitions_to_txn,
    M.AddOffsetsToTxnRequest: txn_apis.add_offsets_to_txn,
    M.EndTxnRequest: txn_apis.end_txn,
    M.TxnOffsetCommitRequest: txn_offsets.txn_offset_commit,
    M.WriteTxnMarkersRequest: txn_admin.write_txn_markers,
    M.DescribeTransactionsRequest: txn_admin.describe_transactions,
    M.ListTransactionsRequest: txn_admin.list_transactions,
    M.ConsumerGroupHeartbeatRequest: consumer_group_apis.consumer_group_heartbeat,
    M.ConsumerGroupDescribeRequest: consumer_group_apis.consumer_group_describe,
})
CONTROLLER_HANDLERS: dict[type, Handler] = dict(_COMMON)


def handlers_for(role: str) -> dict[int, tuple[type, Handler]]:
    """The APIs a ``role`` listener serves: the kit's handlers within Kafka's scope."""
    table = BROKER_HANDLERS if role == "broker" else CONTROLLER_HANDLERS
    return {cls._spec.api_key: (cls, fn) for cls, fn in table.items()
            if role in KAFKA_LISTENERS.get(cls._spec.api_key, _BC)}  # a test checks coverage


def version_ranges(role: str) -> dict[int, range]:
    out = {}
    for key, (cls, _) in handlers_for(role).items():
        v = cls._spec.versions
        out[key] = range(max(v.lo, KAFKA_4_BASELINE.get(key, 0)), v.hi + 1)
    return out
