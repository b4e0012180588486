"""``__consumer_offsets`` records in Kafka's format: building the batches the coordinator
appends and replaying a partition's log into offsets and group metadata."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.records import RecordBatch, iter_batches

OFFSET_COMMIT_TYPE, GROUP_METADATA_TYPE = 1, 2
OFFSET_COMMIT_VALUE_VERSION = 4      # Kafka 4.2 writes v4 (v1 only with an expire timestamp)
GROUP_METADATA_VALUE_VERSION = 3     # GroupCoordinatorRecordHelpers.GROUP_METADATA_VALUE_VERSION
_TYPE = struct.Struct(">h")

Record = tuple[bytes, bytes | None]   # key, value (None: a tombstone)


def offset_commit(group: str, topic: str, partition: int, offset: int, leader_epoch: int,
                  metadata: str, now_ms: int) -> Record:
    key = _TYPE.pack(OFFSET_COMMIT_TYPE) + M.OffsetCommitKey(
        group=group, topic=topic, partition=partition).encode(0)
    value = _TYPE.pack(OFFSET_COMMIT_VALUE_VERSION) + M.OffsetCommitValue(
        offset=offset, leader_epoch=leader_epoch, metadata=metadata,
        commit_timestamp=now_ms).encode(OFFSET_COMMIT_VALUE_VERSION)
    return key, value


def offset_tombstone(group: str, topic: str, partition: int) -> Record:
    return _TYPE.pack(OFFSET_COMMIT_TYPE) + M.OffsetCommitKey(
        group=group, topic=topic, partition=partition).encode(0), None


def group_metadata(group: Any, now_ms: int) -> Record:
    """The group's GroupMetadataValue (members, generation, assignment), Kafka's v3."""
    V = M.GroupMetadataValue
    members = tuple(V.MemberMetadata(
        member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
        session_timeout=m.session_timeout_ms, subscription=m.metadata_for(group.protocol),
        assignment=m.assignment) for m in group.members.values())
    value = V(protocol_type=group.protocol_type or "", generation=group.generation,
              protocol=group.protocol, leader=group.leader if members else None,
              current_state_timestamp=now_ms, members=members)
    return (_TYPE.pack(GROUP_METADATA_TYPE) + M.GroupMetadataKey(group=group.group_id).encode(0),
            _TYPE.pack(GROUP_METADATA_VALUE_VERSION) + value.encode(GROUP_METADATA_VALUE_VERSION))


def group_tombstone(group_id: str) -> Record:
    return _TYPE.pack(GROUP_METADATA_TYPE) + M.GroupMetadataKey(group=group_id).encode(0), None


def batch(records: list[Record], leader_epoch: int, now_ms: int) -> bytes:
    """One v2 batch of ``records`` (its base offset is stamped when appended)."""
    return RecordBatch.build(0, [v for _, v in records], keys=[k for k, _ in records],
                             timestamp_ms=now_ms, leader_epoch=leader_epoch).encode()


def replay(raw_batches: Iterable[bytes], pending: dict | None = None) -> tuple[dict, dict]:
    """(offsets, groups) from a partition's batches: offsets[group][(topic, partition)] =
    (offset, leader epoch, metadata, commit timestamp); groups[group] = GroupMetadataValue.
    A tombstone removes; a later record replaces (as compaction keeps the last).

    Offsets in a transactional batch (TxnOffsetCommit) count once the producer's commit marker
    follows; those still waiting for a marker are left in ``pending`` (pid -> group -> offsets).
    """
    offsets: dict[str, dict[tuple[str, int], tuple[int, int, str, int]]] = {}
    groups: dict[str, Any] = {}
    waiting: dict[int, dict[str, dict]] = {} if pending is None else pending
    for raw in raw_batches:
        for _, b in iter_batches(raw):
            if b.is_control:
                done = waiting.pop(b.producer_id, {})
                key = b.records[0].key if b.records else None
                if key is not None and len(key) >= 4 and key[2:4] == b"\0\1":  # commit
                    for group_id, mine in done.items():
                        offsets.setdefault(group_id, {}).update(mine)
                continue
            if b.is_transactional:
                for r in b.records:
                    if r.key is None or r.value is None or \
                            _TYPE.unpack_from(r.key, 0)[0] != OFFSET_COMMIT_TYPE:
                        continue
                    k = M.OffsetCommitKey.decode(r.key[2:], 0)
                    (version,) = _TYPE.unpack_from(r.value, 0)
                    v = M.OffsetCommitValue.decode(r.value[2:], version)
                    waiting.setdefault(b.producer_id, {}).setdefault(k.group, {})[
                        (k.topic, k.partition)] = (v.offset, v.leader_epoch, v.metadata,
                                                   v.commit_timestamp)
                continue
            for r in b.records:
                if r.key is None or len(r.key) < 2:
                    continue
                (kind,) = _TYPE.unpack_from(r.key, 0)
                if kind == OFFSET_COMMIT_TYPE:
                    k = M.OffsetCommitKey.decode(r.key[2:], 0)
                    mine = offsets.setdefault(k.group, {})
                    if r.value is None:
                        mine.pop((k.topic, k.partition), None)
                        continue
                    (version,) = _TYPE.unpack_from(r.value, 0)
                    v = M.OffsetCommitValue.decode(r.value[2:], version)
                    mine[(k.topic, k.partition)] = (v.offset, v.leader_epoch, v.metadata,
                                                    v.commit_timestamp)
                elif kind == GROUP_METADATA_TYPE:
                    k = M.GroupMetadataKey.decode(r.key[2:], 0)
                    if r.value is None:
                        groups.pop(k.group, None)
                        offsets.pop(k.group, None)
                        continue
                    (version,) = _TYPE.unpack_from(r.value, 0)
                    groups[k.group] = M.GroupMetadataValue.decode(r.value[2:], version)
    return offsets, groups


def consumer_records(raw_batches: Iterable[bytes]) -> list[Record]:
    """The KIP-848 consumer group records (types 3-8) of a partition's batches, in log order."""
    out: list[Record] = []
    for raw in raw_batches:
        for _, b in iter_batches(raw):
            if b.is_control or b.is_transactional:
                continue
            for r in b.records:
                if r.key is not None and len(r.key) >= 2 and \
                        3 <= _TYPE.unpack_from(r.key, 0)[0] <= 8:
                    out.append((bytes(r.key), None if r.value is None else bytes(r.value)))
    return out
