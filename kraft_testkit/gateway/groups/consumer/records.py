"""The consumer group records of ``__consumer_offsets`` as Kafka 4.2.1 writes them
(``GroupCoordinatorRecordHelpers``): a key is its int16 type (3-8) then the key at version 0, a
value its int16 version (0) then the value; a null value is a tombstone. ``replay`` rebuilds the
groups from a partition's log as Kafka's ``GroupMetadataManager#replay`` does."""

from __future__ import annotations

import struct
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid

from .group import LEAVE_GROUP_MEMBER_EPOCH, ConsumerGroup, Member
from .java_order import string_order, uuid_order

METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = 6, 7, 8
TYPES = frozenset(range(3, 9))
_KEYS = {METADATA: "ConsumerGroupMetadataKey", PARTITION_METADATA:
         "ConsumerGroupPartitionMetadataKey", MEMBER_METADATA: "ConsumerGroupMemberMetadataKey",
         TARGET_ASSIGNMENT_METADATA: "ConsumerGroupTargetAssignmentMetadataKey",
         TARGET_ASSIGNMENT_MEMBER: "ConsumerGroupTargetAssignmentMemberKey",
         CURRENT_MEMBER_ASSIGNMENT: "ConsumerGroupCurrentMemberAssignmentKey"}
_VALUES = {k: v[:-3] + "Value" for k, v in _KEYS.items()}
_SHORT = struct.Struct(">h")
Record = tuple[bytes, bytes | None]


def _key(kind: int, group_id: str, member_id: str | None = None) -> bytes:
    cls = getattr(M, _KEYS[kind])
    body = cls(group_id=group_id) if member_id is None else \
        cls(group_id=group_id, member_id=member_id)
    return _SHORT.pack(kind) + body.encode(0)


def _value(kind: int, message: Any) -> bytes:
    return _SHORT.pack(0) + message.encode(0)


def _topic_partitions(cls: Any, assignment: dict) -> tuple:
    return tuple(cls(topic_id=t, partitions=tuple(sorted(assignment[t])))
                 for t in uuid_order(assignment))


def epoch_record(group_id: str, epoch: int, metadata_hash: int) -> Record:
    """``newConsumerGroupEpochRecord``."""
    return _key(METADATA, group_id), _value(METADATA, M.ConsumerGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash))


def member_record(group_id: str, m: Member) -> Record:
    """``newConsumerGroupMemberSubscriptionRecord``."""
    return _key(MEMBER_METADATA, group_id, m.member_id), _value(
        MEMBER_METADATA, M.ConsumerGroupMemberMetadataValue(
            instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=tuple(string_order(m.subscribed_topic_names)),
            subscribed_topic_regex=m.subscribed_topic_regex,
            rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor))


def target_member_record(group_id: str, member_id: str, assignment: dict) -> Record:
    """``newConsumerGroupTargetAssignmentRecord``."""
    V = M.ConsumerGroupTargetAssignmentMemberValue
    return _key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), _value(
        TARGET_ASSIGNMENT_MEMBER, V(topic_partitions=_topic_partitions(V.TopicPartition,
                                                                        assignment)))


def target_epoch_record(group_id: str, epoch: int) -> Record:
    """``newConsumerGroupTargetAssignmentEpochRecord``."""
    return _key(TARGET_ASSIGNMENT_METADATA, group_id), _value(
        TARGET_ASSIGNMENT_METADATA, M.ConsumerGroupTargetAssignmentMetadataValue(
            assignment_epoch=epoch))


def current_assignment_record(group_id: str, m: Member) -> Record:
    """``newConsumerGroupCurrentAssignmentRecord``."""
    V = M.ConsumerGroupCurrentMemberAssignmentValue
    return _key(CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id), _value(
        CURRENT_MEMBER_ASSIGNMENT, V(
            member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
            state=m.state, assigned_partitions=_topic_partitions(V.TopicPartitions, m.assigned),
            partitions_pending_revocation=_topic_partitions(V.PendingTopicPartitions,
                                                            m.pending_revocation)))


def tombstone(kind: int, group_id: str, member_id: str | None = None) -> Record:
    return _key(kind, group_id, member_id), None


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """``removeMember``: current assignment, target assignment, subscription."""
    return [tombstone(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
            tombstone(TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
            tombstone(MEMBER_METADATA, group_id, member_id)]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """``ConsumerGroup#createGroupTombstoneRecords``."""
    g = group.group_id
    out = [tombstone(CURRENT_MEMBER_ASSIGNMENT, g, m) for m in group.members]
    out += [tombstone(TARGET_ASSIGNMENT_MEMBER, g, m) for m in group.members]
    out.append(tombstone(TARGET_ASSIGNMENT_METADATA, g))
    out += [tombstone(MEMBER_METADATA, g, m) for m in group.members]
    out.append(tombstone(PARTITION_METADATA, g))
    out.append(tombstone(METADATA, g))
    return out


def _assignment(tps: Any) -> dict:
    return {Uuid(tp.topic_id): frozenset(tp.partitions) for tp in tps if tp.partitions}


def apply(groups: dict[str, ConsumerGroup], record: Record) -> None:
    """Replay one record (``GroupMetadataManager#replay`` for types 3-8)."""
    raw_key, raw_value = record
    (kind,) = _SHORT.unpack_from(raw_key, 0)
    key = getattr(M, _KEYS[kind]).decode(raw_key[2:], 0)
    value = None
    if raw_value is not None:
        (version,) = _SHORT.unpack_from(raw_value, 0)
        value = getattr(M, _VALUES[kind]).decode(raw_value[2:], version)
    group = groups.get(key.group_id)
    if value is not None and group is None:
        group = groups[key.group_id] = ConsumerGroup(key.group_id)
    if group is None:
        return
    if kind == METADATA:
        if value is None:
            del groups[key.group_id]
        else:
            group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif kind == PARTITION_METADATA:
        group.has_partition_metadata_record = value is not None
    elif kind == MEMBER_METADATA:
        old = group.members.get(key.member_id)
        if value is None:
            group.remove_member(key.member_id)
            return
        base = old if old is not None else Member(key.member_id)
        from dataclasses import replace
        group.update_member(replace(
            base, instance_id=value.instance_id, rack_id=value.rack_id,
            client_id=value.client_id, client_host=value.client_host,
            subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor))
    elif kind == TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = -1 if value is None else value.assignment_epoch
    elif kind == TARGET_ASSIGNMENT_MEMBER:
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            group.target[key.member_id] = _assignment(value.topic_partitions)
    elif kind == CURRENT_MEMBER_ASSIGNMENT:
        from dataclasses import replace
        old = group.members.get(key.member_id)
        if value is None:
            if old is not None:
                group.update_member(replace(
                    old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                    previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, assigned={},
                    pending_revocation={}))
            return
        base = old if old is not None else Member(key.member_id)
        group.update_member(replace(
            base, member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch, state=value.state,
            assigned=_assignment(value.assigned_partitions),
            pending_revocation=_assignment(value.partitions_pending_revocation)))


def is_consumer_record(raw_key: bytes | None) -> bool:
    return raw_key is not None and len(raw_key) >= 2 and _SHORT.unpack_from(raw_key, 0)[0] in TYPES
