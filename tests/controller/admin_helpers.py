"""Shared builders for the admin control-module tests: images, contexts, request pieces."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from kraft_testkit.config import NodeConfig
from kraft_testkit.controller.result import ControllerContext, ControllerResult
from kraft_testkit.metadata import MetadataImage, versions
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid

LATEST_MV = versions.LATEST
BROKERS = (1, 2, 3)
TOPICS = ("orders", "payments")
NODE_ID = 1  # the node that runs the controller in these tests (also a broker: combined mode)


def uid(n: int) -> Uuid:
    return Uuid((7000 + n).to_bytes(16, "big"))


def broker_record(broker_id: int, epoch: int) -> M.RegisterBrokerRecord:
    return M.RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uid(100 + broker_id), broker_epoch=epoch,
        end_points=[M.RegisterBrokerRecord.BrokerEndpoint(
            name="PLAINTEXT", host="localhost", port=9092 + broker_id, security_protocol=0)],
        features=[M.RegisterBrokerRecord.BrokerFeature(
            name="metadata.version", min_supported_version=1, max_supported_version=LATEST_MV)],
        rack=None, fenced=False)


def base_image(*, mv: int | None = LATEST_MV, brokers: Iterable[int] = BROKERS,
               topics: Iterable[str] = TOPICS) -> MetadataImage:
    """A cluster with metadata.version ``mv`` (None: not recorded), registered brokers (epoch
    100 + id) and single-partition topics."""
    records: list[Any] = []
    if mv is not None:
        records.append(M.FeatureLevelRecord(name="metadata.version", feature_level=mv))
    for b in brokers:
        records.append(broker_record(b, 100 + b))
    for i, name in enumerate(topics):
        records.append(M.TopicRecord(name=name, topic_id=uid(i)))
        records.append(M.PartitionRecord(partition_id=0, topic_id=uid(i), replicas=[1], isr=[1],
                                         leader=1, leader_epoch=0, partition_epoch=0))
    return MetadataImage.EMPTY.replay(records)


def context(image: MetadataImage | None = None, *, now_ms: int = 1_000_000, seed: int = 7,
            node_id: int = NODE_ID, **extra: Any) -> ControllerContext:
    return ControllerContext(image=base_image() if image is None else image, now_ms=now_ms,
                             rng=random.Random(seed), config=NodeConfig(),
                             cluster_id="kraft-testkit-cluster", node_id=node_id,
                             extra=dict(extra))


def apply(image: MetadataImage, result: ControllerResult) -> MetadataImage:
    """The image after replaying the result's records (what the quorum controller does)."""
    return image.replay(result.records)


def messages(result: ControllerResult) -> list[Any]:
    return [r.message for r in result.records]


def roundtrip(message: Any, version: int) -> Any:
    """Encode and decode at ``version``: proves a response is wire-valid."""
    return type(message).decode(message.encode(version), version)


# ---------------------------------------------------------------- configs

IAC = M.IncrementalAlterConfigsRequest
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


def op(name: str, operation: int, value: str | None = None) -> Any:
    return IAC.AlterableConfig(name=name, config_operation=operation, value=value)


def resource(rtype: int, name: str, *ops: Any) -> Any:
    return IAC.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=ops)


def alter_configs(*resources: Any, validate_only: bool = False) -> M.IncrementalAlterConfigsRequest:
    return IAC(resources=resources, validate_only=validate_only)


def describe(rtype: int, name: str, keys: Iterable[str] | None = None, *,
             synonyms: bool = False, docs: bool = False) -> M.DescribeConfigsRequest:
    return M.DescribeConfigsRequest(
        resources=[M.DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=rtype, resource_name=name,
            configuration_keys=None if keys is None else list(keys))],
        include_synonyms=synonyms, include_documentation=docs)


# ---------------------------------------------------------------- quotas

ACQ = M.AlterClientQuotasRequest


def quota_entry(entity: dict[str, str | None] | list[tuple[str, str | None]],
                *ops: tuple[str, float | None]) -> Any:
    """``ops``: (key, value) to set, (key, None) to remove."""
    pairs = entity.items() if isinstance(entity, dict) else entity
    return ACQ.EntryData(
        entity=[ACQ.EntityData(entity_type=t, entity_name=n) for t, n in pairs],
        ops=[ACQ.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])


def alter_quotas(*entries: Any, validate_only: bool = False) -> M.AlterClientQuotasRequest:
    return ACQ(entries=entries, validate_only=validate_only)


def quota_filter(*components: tuple[str, int, str | None], strict: bool = False
                 ) -> M.DescribeClientQuotasRequest:
    DCQ = M.DescribeClientQuotasRequest
    return DCQ(components=[DCQ.ComponentData(entity_type=t, match_type=m, match=v)
                           for t, m, v in components], strict=strict)


# ---------------------------------------------------------------- ACLs

# resource types, pattern types, operations, permissions (Kafka's codes)
R_TOPIC, R_GROUP, R_CLUSTER = 2, 3, 4
P_ANY, P_MATCH, P_LITERAL, P_PREFIXED = 1, 2, 3, 4
OP_ANY, OP_ALL, OP_READ, OP_WRITE = 1, 2, 3, 4
ANY, DENY, ALLOW = 1, 2, 3


def acl(resource_type: int = R_TOPIC, name: str = "orders", pattern: int = P_LITERAL,
        principal: str = "User:alice", host: str = "*", operation: int = OP_READ,
        permission: int = ALLOW) -> Any:
    return M.CreateAclsRequest.AclCreation(
        resource_type=resource_type, resource_name=name, resource_pattern_type=pattern,
        principal=principal, host=host, operation=operation, permission_type=permission)


def create_acls(*creations: Any) -> M.CreateAclsRequest:
    return M.CreateAclsRequest(creations=creations)


def delete_filter(resource_type: int = 1, name: str | None = None, pattern: int = P_ANY,
                  principal: str | None = None, host: str | None = None,
                  operation: int = OP_ANY, permission: int = ANY) -> Any:
    return M.DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=resource_type, resource_name_filter=name,
        pattern_type_filter=pattern, principal_filter=principal, host_filter=host,
        operation=operation, permission_type=permission)


def describe_acls(resource_type: int = 1, name: str | None = None, pattern: int = P_ANY,
                  principal: str | None = None, host: str | None = None,
                  operation: int = OP_ANY, permission: int = ANY) -> M.DescribeAclsRequest:
    return M.DescribeAclsRequest(
        resource_type_filter=resource_type, resource_name_filter=name,
        pattern_type_filter=pattern, principal_filter=principal, host_filter=host,
        operation=operation, permission_type=permission)


# ---------------------------------------------------------------- SCRAM

AUSC = M.AlterUserScramCredentialsRequest
SHA256, SHA512 = 1, 2


def upsert(user: str, mechanism: int = SHA256, iterations: int = 4096,
           salt: bytes = b"salt-1234", salted: bytes = b"\x01" * 32) -> Any:
    return AUSC.ScramCredentialUpsertion(name=user, mechanism=mechanism, iterations=iterations,
                                         salt=salt, salted_password=salted)


def delete_credential(user: str, mechanism: int = SHA256) -> Any:
    return AUSC.ScramCredentialDeletion(name=user, mechanism=mechanism)


def alter_scram(deletions: Iterable[Any] = (), upsertions: Iterable[Any] = ()) -> Any:
    return AUSC(deletions=list(deletions), upsertions=list(upsertions))
