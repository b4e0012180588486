"""The consumer group paths of Kafka 4.2.1's ``GroupMetadataManager`` (and the request checks of
``GroupCoordinatorService#consumerGroupHeartbeat``), over one ``__consumer_offsets`` shard.

A heartbeat builds the records Kafka builds (member subscription, group epoch, target
assignment, current assignment), replays them into the shard's groups (``records.apply``) and
hands them to the caller to append; the answer goes out once they are committed. Timers (the
session timeout, the rebalance timeout of a member that must revoke) run on the coordinator's
session clock (see ``groups/coordinator.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.protocol.uuid import Uuid

from . import records as R
from .assignors import ASSIGNORS, GroupSpec, MemberSpec, PartitionAssignorError, assign
from .group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    FencedMemberEpoch,
    Member,
    reconcile,
)
from .java_order import copy_table_size, string_order, uuid_order
from .metadata_hash import metadata_hash

E = ErrorCode
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Outcome:
    """What a heartbeat gives: the answer's fields and the records to write."""

    member_id: str
    member_epoch: int
    assignment: dict | None = None     # topic id -> partitions, when the answer carries it
    records: list = None  # type: ignore[assignment]


def validate(req: Any, version: int, assignors: tuple[str, ...]) -> None:
    """``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
    def not_empty(value: str | None, message: str) -> None:
        if value is not None and not value.strip():
            raise HeartbeatError(E.INVALID_REQUEST, message)
    epoch = req.member_epoch
    if version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0 or \
            epoch == LEAVE_GROUP_MEMBER_EPOCH:
        not_empty(req.member_id, "MemberId can't be empty.")
    not_empty(req.group_id, "GroupId can't be empty.")
    not_empty(req.instance_id, "InstanceId can't be empty.")
    not_empty(req.rack_id, "RackId can't be empty.")
    regex = getattr(req, "subscribed_topic_regex", None)
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise HeartbeatError(E.INVALID_REQUEST,
                                 "RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or len(req.topic_partitions):
            raise HeartbeatError(E.INVALID_REQUEST,
                                 "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and regex is None:
            raise HeartbeatError(E.INVALID_REQUEST, "Either SubscribedTopicNames or "
                                 "SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise HeartbeatError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise HeartbeatError(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is "
                             f"not supported. Supported assignors: {', '.join(assignors)}.")
    if regex is not None:
        try:
            re.compile(regex)
        except re.error as e:
            raise HeartbeatError(E.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{regex}` "
                                 f"is not a valid regular expression: {e}.") from None


def subscribed_names(member: Member, image: Any) -> set[str]:
    """The member's topic names, plus the topics its regex matches (resolved at once here;
    Kafka resolves regexes in the background)."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        pattern = re.compile(member.subscribed_topic_regex)
        names |= {t for t in image.topics.topics_by_name if pattern.fullmatch(t)}
    return names


def topic_ids(names: set[str], image: Any) -> list:
    """``TopicIds``: the ids of the names that exist, in Java's iteration order."""
    out = []
    for name in string_order(names, copy_table_size(len(names))):
        topic = image.topic(name)
        if topic is not None:
            out.append(topic.id)
    return out


def _owned(req: Any) -> list | None:
    if req.topic_partitions is None:
        return None
    return [(Uuid(tp.topic_id), list(tp.partitions)) for tp in req.topic_partitions]


def _is_subset(owned: list | None, target: dict) -> bool:
    if owned is None:
        return False
    return all(t in target and set(ps) <= target[t] for t, ps in owned)


def check_epoch(member: Member, epoch: int, owned: list | None) -> None:
    """``throwIfConsumerGroupMemberEpochIsInvalid``."""
    if epoch == 0:
        return
    if epoch > member.member_epoch:
        raise HeartbeatError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater "
                             f"member epoch ({epoch}) than the one known by the group "
                             f"coordinator ({member.member_epoch}). The member must abandon "
                             "all its partitions and rejoin.")
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch or
                                        not _is_subset(owned, member.assigned)):
        raise HeartbeatError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller "
                             f"member epoch ({epoch}) than the one known by the group "
                             f"coordinator ({member.member_epoch}). The member must abandon "
                             "all its partitions and rejoin.")


class ConsumerGroupManager:
    """The consumer group logic over a shard's ``consumer_groups``."""

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator
        #: the assignor call (Kafka's ``ConsumerGroupPartitionAssignor#assign``); the parity
        #: tests put Kafka's MockPartitionAssignor here
        self.assign_fn = assign

    @property
    def config(self) -> Any:
        return self.coordinator.cluster.config

    @property
    def assignors(self) -> tuple[str, ...]:
        names = tuple(n.strip() for n in self.config.group_consumer_assignors.split(",")
                      if n.strip())
        return tuple(n for n in names if n in ASSIGNORS) or ("uniform",)

    def image(self, shard: Any) -> Any:
        return self.coordinator.cluster.broker(shard.broker).image

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(self, shard: Any, req: Any, version: int, client_id: str,
                  client_host: str) -> Outcome:
        validate(req, version, self.assignors)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(shard, req)
        group_id, epoch, iid = req.group_id, req.member_epoch, req.instance_id
        owned = _owned(req)
        recs: list = []
        group = shard.consumer_groups.get(group_id)
        if group is None:
            if epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND,
                                     f"Consumer group {group_id} not found.")
            classic = shard.groups.get(group_id)
            if classic is not None and classic.members:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND,
                                     f"Group {group_id} is not a consumer group.")
            group = ConsumerGroup(group_id)
        member_id = req.member_id or \
            str(Uuid(self.coordinator.random_bits(128).to_bytes(16, "big")))
        replaced: Member | None = None
        if iid is None:
            member = group.members.get(member_id)
            if member is None:
                if epoch != 0:
                    raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a "
                                         f"member of group {group_id}.")
                member = Member(member_id)
            check_epoch(member, epoch, owned)
        else:
            existing = group.static_member(iid)
            if epoch == 0:
                if existing is None:
                    member = group.members.get(member_id) or Member(member_id)
                else:
                    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise HeartbeatError(E.UNRELEASED_INSTANCE_ID, f"Static member "
                                             f"{member_id} with instance id {iid} cannot join "
                                             "the group because the instance id is owned by "
                                             f"{existing.member_id} member.")
                    member = replace(existing, member_id=member_id, member_epoch=0,
                                     previous_member_epoch=0)
                    replaced = existing
                    recs += R.member_tombstones(group_id, existing.member_id)
                    recs.append(R.member_record(group_id, member))
                    recs.append(R.target_member_record(group_id, member_id,
                                                       group.target.get(existing.member_id, {})))
                    recs.append(R.current_assignment_record(group_id, member))
            else:
                if existing is None:
                    raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {iid} is unknown.")
                if existing.member_id != member_id:
                    raise HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {member_id} "
                                         f"with instance id {iid} was fenced by member "
                                         f"{existing.member_id}.")
                member = existing
                check_epoch(member, epoch, owned)
        regex = getattr(req, "subscribed_topic_regex", None)
        updated = replace(
            member,
            instance_id=iid if iid is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            server_assignor=req.server_assignor if req.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=tuple(req.subscribed_topic_names)
            if req.subscribed_topic_names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=regex if regex is not None else member.subscribed_topic_regex,
            client_id=client_id, client_host=client_host)
        image = self.image(shard)
        changed = False
        if updated.subscription_key() != member.subscription_key():
            recs.append(R.member_record(group_id, updated))
            changed = frozenset(updated.subscribed_topic_names) != \
                frozenset(member.subscribed_topic_names) or \
                updated.subscribed_topic_regex != member.subscribed_topic_regex
        others = [m for mid, m in group.members.items()
                  if mid != member_id and (replaced is None or mid != replaced.member_id)]
        everyone = others + [updated]
        group_epoch = group.group_epoch
        names_all = set().union(*(subscribed_names(m, image) for m in everyone))
        new_hash = metadata_hash(names_all, image)
        if group_epoch == 0 or changed or new_hash != group.metadata_hash:
            group_epoch += 1
            recs.append(R.epoch_record(group_id, group_epoch, new_hash))
            if group.has_partition_metadata_record:
                recs.append(R.tombstone(R.PARTITION_METADATA, group_id))
        if group_epoch > group.assignment_epoch:
            target = self._update_target(group, group_epoch, everyone, updated, replaced,
                                         image, recs)
            target_epoch = group_epoch
        else:
            target_epoch = group.assignment_epoch
            target = group.target_of(updated.member_id, updated.instance_id)
        final = updated
        if changed or not updated.reconciled_to(target_epoch):
            ids = set(topic_ids(subscribed_names(updated, image), image))
            try:
                final = reconcile(updated, target_epoch, target, ids,
                                  group.current_partition_epoch, owned, changed)
            except FencedMemberEpoch as e:
                raise HeartbeatError(E.FENCED_MEMBER_EPOCH, str(e)) from None
            if final != updated:
                recs.append(R.current_assignment_record(group_id, final))
        self._replay(shard, recs)
        g = shard.consumer_groups.get(group_id)
        if g is not None:  # an empty classic group of this id (offsets only) is replaced
            shard.groups.pop(group_id, None)
        now = self.coordinator.session_now()
        if g is not None and member_id in g.members:
            g.session_deadlines[member_id] = now + self.config.group_consumer_session_timeout_ms
            if final != updated:
                if final.state == UNREVOKED_PARTITIONS:
                    g.rebalance_deadlines[member_id] = (now + final.rebalance_timeout_ms,
                                                        final.member_epoch)
                else:
                    g.rebalance_deadlines.pop(member_id, None)
        full = req.rebalance_timeout_ms != -1 and owned is not None and \
            (req.subscribed_topic_names is not None or regex is not None)
        give = epoch == 0 or full or final.assigned != member.assigned
        return Outcome(final.member_id, final.member_epoch,
                       final.assigned if give else None, recs)

    def _update_target(self, group: ConsumerGroup, group_epoch: int, everyone: list[Member],
                       updated: Member, replaced: Member | None, image: Any,
                       recs: list) -> dict:
        """``updateTargetAssignment`` / ``TargetAssignmentBuilder#build``."""
        counts = group.assignor_counts()
        old = group.members.get(updated.member_id) or replaced
        if old is not None and old.server_assignor is not None:
            counts[old.server_assignor] -= 1
        if updated.server_assignor is not None:
            counts[updated.server_assignor] = counts.get(updated.server_assignor, 0) + 1
        name = self.assignors[0]
        best = -1
        for n in string_order(k for k, v in counts.items()):
            if counts[n] > best and counts[n] > 0:
                name, best = n, counts[n]
        by_id = {m.member_id: m for m in everyone}
        order = string_order(list(group.members) + [updated.member_id])
        order = [mid for mid in order if mid in by_id]
        specs = []
        names_per = {}
        for mid in order:
            m = by_id[mid]
            names_per[mid] = subscribed_names(m, image)
            prior = group.target.get(mid, {})
            if mid == updated.member_id and replaced is not None:
                prior = group.target.get(replaced.member_id, {})
            specs.append(MemberSpec(mid, m.instance_id, m.rack_id,
                                    tuple(topic_ids(names_per[mid], image)),
                                    {t: prior[t] for t in uuid_order(prior)}))
        homogeneous = all(not m.subscribed_topic_regex for m in everyone) and \
            len({frozenset(v) for v in names_per.values()}) <= 1
        inverted = group.inverted_target()

        def partitions_of(topic_id: Any) -> int:
            t = image.topic(topic_id)
            return -1 if t is None else len(t.partitions)
        try:
            result = self.assign_fn(name, GroupSpec(specs, homogeneous, inverted), partitions_of)
        except PartitionAssignorError as e:
            raise HeartbeatError(E.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target "
                                 f"assignment for epoch {group_epoch}: {e}") from None
        for mid in order:
            new = result.get(mid, {})
            if group.target.get(mid) != new or mid not in group.target:
                recs.append(R.target_member_record(group.group_id, mid, new))
        recs.append(R.target_epoch_record(group.group_id, group_epoch))
        return result.get(updated.member_id, {})

    # ------------------------------------------------------------------ leaving, fencing

    def _leave(self, shard: Any, req: Any) -> Outcome:
        """``consumerGroupLeave``."""
        group = shard.consumer_groups.get(req.group_id)
        if group is None:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
        iid = req.instance_id
        if iid is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a "
                                     f"member of group {req.group_id}.")
        else:
            member = group.static_member(iid)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {iid} is unknown.")
            if member.member_id != req.member_id:
                raise HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {req.member_id} "
                                     f"with instance id {iid} was fenced by member "
                                     f"{member.member_id}.")
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                gone = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                               pending_revocation={})
                recs = [R.current_assignment_record(group.group_id, gone)]
                self._replay(shard, recs)
                return Outcome(member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, None, recs)
        recs = self.fence(shard, group, [member])
        return Outcome(req.member_id, req.member_epoch, None, recs)

    def fence(self, shard: Any, group: ConsumerGroup, members: list[Member]) -> list:
        """``consumerGroupFenceMembers``: the members' records go, the group epoch moves."""
        recs: list = []
        for m in members:
            recs += R.member_tombstones(group.group_id, m.member_id)
        image = self.image(shard)
        gone = {m.member_id for m in members}
        names = set().union(*(subscribed_names(m, image) for mid, m in group.members.items()
                              if mid not in gone))
        recs.append(R.epoch_record(group.group_id, group.group_epoch + 1,
                                   metadata_hash(names, image)))
        self._replay(shard, recs)
        return recs

    def _replay(self, shard: Any, recs: list) -> None:
        for rec in recs:
            R.apply(shard.consumer_groups, rec)

    # ------------------------------------------------------------------ timers

    def expired(self, shard: Any, now: int) -> list:
        """Fence the members whose session or rebalance timeout passed; the records to write."""
        out: list = []
        for group in list(shard.consumer_groups.values()):
            late = [mid for mid, at in group.session_deadlines.items() if now >= at]
            late += [mid for mid, (at, epoch) in group.rebalance_deadlines.items()
                     if now >= at and mid in group.members and
                     group.members[mid].member_epoch == epoch and mid not in late]
            members = [group.members[mid] for mid in late if mid in group.members]
            for mid in late:
                group.session_deadlines.pop(mid, None)
                group.rebalance_deadlines.pop(mid, None)
            if members:
                out += self.fence(shard, group, members)
        return out

    def loaded(self, shard: Any, now: int) -> None:
        """A coordinator that loaded a shard starts every member's timers afresh (``onLoaded``)."""
        for group in shard.consumer_groups.values():
            for mid, m in group.members.items():
                group.session_deadlines[mid] = now + self.config.group_consumer_session_timeout_ms
                if m.state == UNREVOKED_PARTITIONS:
                    group.rebalance_deadlines[mid] = (now + m.rebalance_timeout_ms,
                                                      m.member_epoch)
