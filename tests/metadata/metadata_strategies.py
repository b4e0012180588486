"""Hypothesis strategies: sequences of released metadata records that all apply.

A small model tracks what exists (brokers and their epochs, topics and their partitions, ACL
ids, ...) so every drawn record is valid where it lands; a transaction's model changes are
rolled back on Abort. metadata.version is drawn first and gates what may appear (log dirs and
directories only from 3.7-IV2), so an image always writes at its own version without loss.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from kraft_testkit.metadata import DirectoryId
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid

BROKER_POOL = range(5)
TOPIC_NAMES = ["a", "b", "c", "d"]
USERS = ["alice", "bob"]
DIR_POOL = [Uuid(bytes([0x80 + i]) + b"\x11" * 15) for i in range(3)] + \
    [Uuid(bytes([i]) + b"\x22" * 15) for i in range(1, 3)] + \
    [DirectoryId.UNASSIGNED, DirectoryId.LOST]


def uuid_of(n: int) -> Uuid:
    return Uuid((10_000 + n).to_bytes(16, "big"))


@dataclass
class State:
    """What the image holds (only what validity depends on)."""

    brokers: dict[int, int] = field(default_factory=dict)        # id -> epoch
    topics: dict[Uuid, list] = field(default_factory=dict)       # id -> [name, {p: replicas}]
    acls: set[Uuid] = field(default_factory=set)
    scram: set[tuple[str, int]] = field(default_factory=set)
    tokens: set[str] = field(default_factory=set)
    mv: int = 18


@dataclass
class Model:
    state: State
    saved: State | None = None  # the state at BeginTransaction
    counter: int = 0

    def next(self) -> int:
        self.counter += 1
        return self.counter

    @property
    def dirs_ok(self) -> bool:
        return self.state.mv >= 17


def _subset(draw, items, min_size=0) -> list:
    items = list(items)
    if not items:
        return []
    return draw(st.lists(st.sampled_from(items), unique=True, min_size=min(min_size, len(items)),
                         max_size=len(items)))


def _replicas(draw, m: Model) -> list[int]:
    return draw(st.lists(st.sampled_from(list(BROKER_POOL)), unique=True, min_size=1,
                         max_size=3))


def _dirs(draw, m: Model, n: int) -> list[Uuid]:
    if not m.dirs_ok or not draw(st.booleans()):
        return []
    return draw(st.lists(st.sampled_from(DIR_POOL), min_size=n, max_size=n))


# ---------------------------------------------------------------- operations


def op_register_broker(draw, m: Model) -> list:
    broker_id = draw(st.sampled_from(list(BROKER_POOL)))
    epoch = 100 + m.next()
    m.state.brokers[broker_id] = epoch
    log_dirs = draw(st.lists(st.sampled_from(DIR_POOL[:5]), unique=True, max_size=3)) \
        if m.dirs_ok else []
    cls = M.RegisterBrokerRecord
    return [cls(broker_id=broker_id, incarnation_id=uuid_of(m.next()), broker_epoch=epoch,
                end_points=[cls.BrokerEndpoint(name="PLAINTEXT", host=f"h{broker_id}",
                                               port=9092, security_protocol=0)],
                features=[cls.BrokerFeature(name="metadata.version", min_supported_version=1,
                                            max_supported_version=19)],
                rack=draw(st.sampled_from([None, "r1", "r2"])), fenced=draw(st.booleans()),
                in_controlled_shutdown=draw(st.booleans()), log_dirs=log_dirs)]


def op_unregister_broker(draw, m: Model) -> list:
    broker_id = draw(st.sampled_from(sorted(m.state.brokers)))
    epoch = m.state.brokers.pop(broker_id)
    return [M.UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch)]


def op_fence_change(draw, m: Model) -> list:
    broker_id = draw(st.sampled_from(sorted(m.state.brokers)))
    epoch = m.state.brokers[broker_id]
    kind = draw(st.sampled_from(["fence", "unfence", "change"]))
    if kind == "fence":
        return [M.FenceBrokerRecord(id=broker_id, epoch=epoch)]
    if kind == "unfence":
        return [M.UnfenceBrokerRecord(id=broker_id, epoch=epoch)]
    log_dirs = draw(st.lists(st.sampled_from(DIR_POOL[:5]), unique=True, max_size=2)) \
        if m.dirs_ok else []
    return [M.BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=epoch, fenced=draw(st.sampled_from([-1, 0, 1])),
        in_controlled_shutdown=draw(st.sampled_from([0, 1])), log_dirs=log_dirs)]


def op_register_controller(draw, m: Model) -> list:
    cls = M.RegisterControllerRecord
    cid = draw(st.sampled_from([3000, 3001]))
    return [cls(controller_id=cid, incarnation_id=uuid_of(m.next()),
                zk_migration_ready=draw(st.booleans()),
                end_points=[cls.ControllerEndpoint(name="CONTROLLER", host="c", port=cid,
                                                   security_protocol=0)],
                features=[cls.ControllerFeature(name="metadata.version", min_supported_version=1,
                                                max_supported_version=19)])]


def op_create_topic(draw, m: Model) -> list:
    used = {t[0] for t in m.state.topics.values()}
    name = draw(st.sampled_from([n for n in TOPIC_NAMES if n not in used]))
    topic_id = uuid_of(m.next())
    m.state.topics[topic_id] = [name, {}]
    out: list = [M.TopicRecord(name=name, topic_id=topic_id)]
    for p in range(draw(st.integers(0, 2))):
        out.append(_partition_record(draw, m, topic_id, p))
    return out


def _partition_record(draw, m: Model, topic_id: Uuid, p: int) -> Any:
    replicas = _replicas(draw, m)
    isr = _subset(draw, replicas)
    m.state.topics[topic_id][1][p] = replicas
    return M.PartitionRecord(
        partition_id=p, topic_id=topic_id, replicas=replicas, isr=isr,
        removing_replicas=_subset(draw, replicas), adding_replicas=_subset(draw, replicas),
        leader=draw(st.sampled_from(isr + [-1])),
        leader_recovery_state=draw(st.sampled_from([0, 1])),
        leader_epoch=draw(st.integers(0, 3)), partition_epoch=draw(st.integers(0, 3)),
        directories=_dirs(draw, m, len(replicas)))


def op_add_partition(draw, m: Model) -> list:
    topic_id = draw(st.sampled_from(sorted(m.state.topics)))
    p = draw(st.integers(0, 3))  # may replace an existing partition, as snapshots do
    return [_partition_record(draw, m, topic_id, p)]


def op_change_partition(draw, m: Model) -> list:
    choices = sorted((t, p) for t, v in m.state.topics.items() for p in v[1])
    topic_id, p = draw(st.sampled_from(choices))
    parts = m.state.topics[topic_id][1]
    current = parts[p]
    replicas = None
    if draw(st.booleans()):
        # before 3.7-IV2 new replicas would get UNASSIGNED directories, which such a version
        # cannot write; keep to a reordering or subset of the current replicas there
        replicas = _replicas(draw, m) if m.dirs_ok else draw(st.permutations(current))[
            :draw(st.integers(1, len(current)))]
        parts[p] = replicas
    now = parts[p]
    maybe = st.booleans()
    directories = None
    if m.dirs_ok and draw(maybe):
        directories = draw(st.lists(st.sampled_from(DIR_POOL), min_size=len(now),
                                    max_size=len(now)))
    return [M.PartitionChangeRecord(
        partition_id=p, topic_id=topic_id,
        isr=_subset(draw, now) if draw(maybe) else None,
        leader=draw(st.sampled_from([-2, -1] + list(now))),
        replicas=replicas,
        removing_replicas=_subset(draw, now) if draw(maybe) else None,
        adding_replicas=_subset(draw, now) if draw(maybe) else None,
        leader_recovery_state=draw(st.sampled_from([-1, 0, 1])),
        directories=directories)]


def op_remove_topic(draw, m: Model) -> list:
    topic_id = draw(st.sampled_from(sorted(m.state.topics)))
    del m.state.topics[topic_id]
    return [M.RemoveTopicRecord(topic_id=topic_id)]


def op_config(draw, m: Model) -> list:
    names = TOPIC_NAMES[:2] + [t[0] for t in m.state.topics.values()]
    rtype, rname = draw(st.sampled_from([(2, n) for n in names] + [(4, "0"), (4, ""),
                                                                    (16, "m")]))
    return [M.ConfigRecord(resource_type=rtype, resource_name=rname,
                           name=draw(st.sampled_from(["k1", "k2", "k3"])),
                           value=draw(st.sampled_from([None, "v1", "v2"])))]


def op_quota(draw, m: Model) -> list:
    E = M.ClientQuotaRecord.EntityData
    entity = draw(st.sampled_from([
        [E(entity_type="user", entity_name="alice")],
        [E(entity_type="user", entity_name=None)],
        [E(entity_type="user", entity_name="bob"), E(entity_type="client-id", entity_name="c")],
    ]))
    remove = draw(st.booleans())
    return [M.ClientQuotaRecord(entity=entity, key=draw(st.sampled_from(["q1", "q2"])),
                                value=0.0 if remove else float(draw(st.integers(1, 9))),
                                remove=remove)]


def op_producer_ids(draw, m: Model) -> list:
    return [M.ProducerIdsRecord(broker_id=0, broker_epoch=1, next_producer_id=1000 * m.next())]


def op_feature(draw, m: Model) -> list:
    if draw(st.booleans()):
        # metadata.version moves within the range whose shapes the image already uses
        levels = [17, 18, 19] if m.dirs_ok else [15, 16]
        m.state.mv = draw(st.sampled_from(levels))
        return [M.FeatureLevelRecord(name="metadata.version", feature_level=m.state.mv)]
    return [M.FeatureLevelRecord(name=draw(st.sampled_from(["kraft.version", "group.version"])),
                                 feature_level=draw(st.integers(0, 2)))]


def op_misc(draw, m: Model) -> list:
    if draw(st.booleans()):
        return [M.NoOpRecord()]
    return [M.ZkMigrationStateRecord(zk_migration_state=draw(st.integers(0, 4)))]


def op_acl(draw, m: Model) -> list:
    if m.state.acls and draw(st.booleans()):
        acl_id = draw(st.sampled_from(sorted(m.state.acls)))
        m.state.acls.discard(acl_id)
        return [M.RemoveAccessControlEntryRecord(id=acl_id)]
    acl_id = uuid_of(draw(st.integers(900, 903)))
    m.state.acls.add(acl_id)
    return [M.AccessControlEntryRecord(
        id=acl_id, resource_type=2, resource_name=draw(st.sampled_from(["a", "*"])),
        pattern_type=3, principal="User:x", host="*", operation=draw(st.integers(2, 4)),
        permission_type=3)]


def op_scram(draw, m: Model) -> list:
    if m.state.scram and draw(st.booleans()):
        user, mech = draw(st.sampled_from(sorted(m.state.scram)))
        m.state.scram.discard((user, mech))
        return [M.RemoveUserScramCredentialRecord(name=user, mechanism=mech)]
    key = (draw(st.sampled_from(USERS)), draw(st.sampled_from([1, 2])))
    m.state.scram.add(key)
    return [M.UserScramCredentialRecord(name=key[0], mechanism=key[1], salt=b"salt",
                                        stored_key=bytes([m.next() % 256]) * 4,
                                        server_key=b"srv", iterations=4096)]


def op_token(draw, m: Model) -> list:
    if m.state.tokens and draw(st.booleans()):
        token = draw(st.sampled_from(sorted(m.state.tokens)))
        m.state.tokens.discard(token)
        return [M.RemoveDelegationTokenRecord(token_id=token)]
    token = draw(st.sampled_from(["t1", "t2"]))
    m.state.tokens.add(token)
    return [M.DelegationTokenRecord(owner="User:o", requester="User:r", renewers=["User:w"],
                                    issue_timestamp=1, max_timestamp=9,
                                    expiration_timestamp=m.next(), token_id=token)]


def op_transaction(draw, m: Model) -> list:
    if m.saved is None:
        m.saved = copy.deepcopy(m.state)
        return [M.BeginTransactionRecord(name=draw(st.sampled_from([None, "tx"])))]
    if draw(st.booleans()):
        m.saved = None
        return [M.EndTransactionRecord()]
    m.state, m.saved = m.saved, None
    return [M.AbortTransactionRecord(reason="test")]


def _available(m: Model) -> list[Callable]:
    ops = [op_register_broker, op_register_controller, op_config, op_quota,
           op_producer_ids, op_feature, op_misc, op_acl, op_scram, op_token, op_transaction]
    if m.saved is not None:  # an open transaction: close it sooner or later
        ops += [op_transaction] * 2
    if m.state.brokers:
        ops += [op_unregister_broker] + [op_fence_change] * 3
    if len(m.state.topics) < len(TOPIC_NAMES):
        ops += [op_create_topic, op_create_topic]
    if m.state.topics:
        ops += [op_add_partition, op_remove_topic]
    if any(v[1] for v in m.state.topics.values()):
        ops += [op_change_partition, op_change_partition, op_change_partition]
    return ops


@st.composite
def record_sequences(draw, max_ops: int = 30) -> list:
    """A valid record sequence; the first record sets metadata.version."""
    mv = draw(st.sampled_from([15, 16, 17, 18, 19]))
    m = Model(State(mv=mv))
    out: list = [M.FeatureLevelRecord(name="metadata.version", feature_level=mv)]
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(_available(m)))
        out.extend(op(draw, m))
    return out
