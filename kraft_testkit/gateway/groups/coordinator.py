"""The classic group coordinator behind the gateway, shaped as Kafka 4.2 places it:

* a group lives in partition ``abs(groupId.hashCode()) % offsets.topic.num.partitions`` of the
  real topic ``__consumer_offsets`` (created on the first FindCoordinator, compacted, with
  ``offsets.topic.replication.factor`` replicas), and its coordinator is that partition's leader;
* the coordinator's state for a partition (a *shard*) is what replaying the partition's log
  gives (offset commits, group metadata, Kafka's record formats); a broker that becomes leader
  loads it from its own replica, so the group goes on with its committed offsets after the
  old coordinator's broker dies;
* every change is a record batch appended to the leader's log; the answer waits until the
  high watermark covers it (Kafka's coordinator runtime writes with acks=all).

Time: member sessions and rebalance timeouts run on the *session clock*, virtual time minus the
stretches the gateway jumped over while clients waited (gateway/autojump.py): during a jump
the clients' heartbeat threads would have kept running, so a jump never expires a session.
Time the test runs itself (``srv.run_for``) and paced time count in full.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.error_codes import ErrorCode
from kraft_testkit.sim.rng import RngTree

from . import records
from .consumer.java_order import java_string_hash
from .group import COMPLETING, EMPTY, PREPARING, STABLE, ClassicGroup, Member

E = ErrorCode
OFFSETS_TOPIC = "__consumer_offsets"
GROUP_MIN_SESSION_TIMEOUT_MS = 6_000           # group.min.session.timeout.ms
GROUP_MAX_SESSION_TIMEOUT_MS = 1_800_000       # group.max.session.timeout.ms
GROUP_INITIAL_REBALANCE_DELAY_MS = 3_000       # group.initial.rebalance.delay.ms
OFFSET_METADATA_MAX_BYTES = 4096               # offset.metadata.max.bytes


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass
class Shard:
    """The coordinator state of one ``__consumer_offsets`` partition on its leader."""

    broker: int
    partition: int
    topic_id: Any
    leader_epoch: int
    groups: dict[str, ClassicGroup] = field(default_factory=dict)
    offsets: dict[str, dict[tuple[str, int], tuple[int, int, str, int]]] = \
        field(default_factory=dict)
    #: TxnOffsetCommit offsets waiting for their transaction's marker: pid -> group -> offsets
    pending_txn: dict[int, dict[str, dict[tuple[str, int], tuple[int, int, str, int]]]] = \
        field(default_factory=dict)
    #: KIP-848 consumer groups (groups/consumer): group id -> ConsumerGroup
    consumer_groups: dict[str, Any] = field(default_factory=dict)


class Write:
    """Records appended to a shard's log, waiting for the high watermark to cover them."""

    def __init__(self, coordinator: GroupCoordinator, shard: Shard, end: int,
                 on_commit: Any) -> None:
        self.coordinator, self.shard, self.end, self.on_commit = coordinator, shard, end, on_commit
        self.result: int | None = None   # None while waiting, else an error code

    def poll(self) -> int | None:
        if self.result is not None:
            return self.result
        c = self.coordinator
        if not c.is_current(self.shard):
            self.result = E.NOT_COORDINATOR
        elif c.plane.advance_high_watermark(self.shard.broker, self.shard.topic_id,
                                            self.shard.partition) >= self.end:
            if self.on_commit is not None:
                self.on_commit()
            self.result = E.NONE
        return self.result


class CoordinatorShards:
    """What the group and the transaction coordinator share (Kafka's ``CoordinatorRuntime``): a
    key's partition of the internal topic ``TOPIC``, a shard per partition this broker leads,
    loaded from its own replica once per leader epoch (``_load``, the subclass's)."""

    TOPIC: str
    cluster: Any
    plane: Any
    shards: dict

    def topic(self, broker: int) -> Any:
        machine = self.cluster.broker(broker)
        return None if machine is None else machine.image.topic(self.TOPIC)

    def shard_for(self, broker: int, key: str) -> tuple[Any, int]:
        """The shard coordinating ``key`` at ``broker``, or (None, NOT_COORDINATOR /
        COORDINATOR_NOT_AVAILABLE)."""
        topic = self.topic(broker)
        if topic is None:
            return None, E.COORDINATOR_NOT_AVAILABLE
        return self._shard(broker, topic, partition_for(key, len(topic.partitions)))

    def _shard(self, broker: int, topic: Any, partition: int) -> tuple[Any, int]:
        rep = self.plane.leader_replica(broker, topic.id, partition)
        machine = self.cluster.broker(broker)
        if rep is None or rep.leader != broker or machine is None or \
                not machine.logic.replicas.leader_serving or not machine.logic.serving:
            return None, E.NOT_COORDINATOR
        shard = self.shards.get((broker, partition))
        if shard is None or shard.leader_epoch != rep.leader_epoch or shard.topic_id != topic.id:
            shard = self._load(broker, topic.id, partition, rep.leader_epoch)
        return shard, E.NONE

    def leads(self, broker: int, topic_id: Any, partition: int) -> bool:
        """True when ``broker`` itself knows it leads the partition (its metadata may lag the
        broker a client asked: a coordinator is named only once it can serve)."""
        rep = self.plane.leader_replica(broker, topic_id, partition)
        return rep is not None and rep.leader == broker

    def is_current(self, shard: Any) -> bool:
        rep = self.plane.leader_replica(shard.broker, shard.topic_id, shard.partition)
        return rep is not None and rep.leader == shard.broker and \
            rep.leader_epoch == shard.leader_epoch and \
            self.shards.get((shard.broker, shard.partition)) is shard

    def _load(self, broker: int, topic_id: Any, partition: int, epoch: int) -> Any:
        raise NotImplementedError


class GroupCoordinator(CoordinatorShards):
    """Every broker's group coordinator shards, kept by the gateway (see the module doc)."""

    TOPIC = OFFSETS_TOPIC

    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway
        self.cluster = gateway.cluster
        self.plane = gateway.data_plane
        self.shards: dict[tuple[int, int], Shard] = {}
        self._member_ids = RngTree(self.cluster.seed).child("gateway", "member-id")
        self.creating: Any = None   # the CreateTopics call for __consumer_offsets, once sent
        from .consumer.manager import ConsumerGroupManager
        self.consumer = ConsumerGroupManager(self)

    # ------------------------------------------------------------------ configuration

    @property
    def num_partitions(self) -> int:
        """``offsets.topic.num.partitions`` (``Cluster(configs=...)``, default 50)."""
        return self.cluster.config.offsets_topic_num_partitions

    @property
    def replication_factor(self) -> int:
        """``offsets.topic.replication.factor`` (default 3: a smaller cluster must lower it)."""
        return self.cluster.config.offsets_topic_replication_factor

    def session_now(self) -> int:
        return self.cluster.now_ms - self.gateway.autojumped_ms

    def random_bits(self, bits: int) -> int:
        """Seeded randomness for member ids (a v0 ConsumerGroupHeartbeat without one)."""
        return self._member_ids.getrandbits(bits)

    def new_member_id(self, client_id: str | None) -> str:
        """``clientId-<uuid>`` as Kafka names members, the uuid from the cluster's seed."""
        raw = self._member_ids.getrandbits(128)
        h = f"{raw:032x}"
        return f"{client_id or ''}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    # ------------------------------------------------------------------ shards

    def _load(self, broker: int, topic_id: Any, partition: int, epoch: int) -> Shard:
        """Become coordinator of a partition: replay the broker's own replica of its log."""
        log = self.plane.log(broker, topic_id, partition)
        pending: dict = {}
        offsets, groups = records.replay((b.data for b in log.batches), pending)
        shard = Shard(broker, partition, topic_id, epoch, offsets=offsets, pending_txn=pending)
        now = self.session_now()
        for group_id, value in groups.items():
            g = ClassicGroup(group_id, generation=value.generation,
                             protocol_type=value.protocol_type or None,
                             protocol=value.protocol, leader=value.leader)
            for mv in value.members:
                g.members[mv.member_id] = Member(
                    mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host,
                    mv.session_timeout, mv.rebalance_timeout, value.protocol_type,
                    [(value.protocol or "", mv.subscription)], assignment=mv.assignment,
                    last_seen=now)
            g.state = STABLE if g.members else EMPTY
            shard.groups[group_id] = g
        from .consumer import records as consumer_records
        for rec in records.consumer_records(b.data for b in log.batches):
            consumer_records.apply(shard.consumer_groups, rec)
        for group_id in offsets:
            shard.groups.setdefault(group_id, ClassicGroup(group_id))
        for group_id in shard.consumer_groups:
            shard.groups.pop(group_id, None)
        self.consumer.loaded(shard, now)
        self.shards[(broker, partition)] = shard
        return shard

    def write(self, shard: Shard, recs: list[records.Record], on_commit: Any = None) -> Write:
        log = self.plane.log(shard.broker, shard.topic_id, shard.partition)
        now = self.cluster.now_ms
        log.append([records.batch(recs, shard.leader_epoch, now)], shard.leader_epoch, now)
        self.plane.appended(shard.broker, shard.topic_id, shard.partition)
        return Write(self, shard, log.log_end_offset, on_commit)

    def end_transaction(self, broker: int, partition: int, producer_id: int,
                        commit: bool) -> None:
        """A transaction marker reached ``__consumer_offsets-partition`` at ``broker``: the
        producer's TxnOffsetCommit offsets become the group's (commit) or go (abort)."""
        shard = self.shards.get((broker, partition))
        if shard is None or not self.is_current(shard):
            return  # a coordinator loading the partition later replays the marker
        for group_id, offsets in shard.pending_txn.pop(producer_id, {}).items():
            if commit:
                shard.offsets.setdefault(group_id, {}).update(offsets)
                if group_id not in shard.consumer_groups:
                    shard.groups.setdefault(group_id, ClassicGroup(group_id))

    # ------------------------------------------------------------------ timers

    def tick(self) -> None:
        """Expire sessions and complete rebalances whose time came (session clock)."""
        now = self.session_now()
        virtual_now = self.cluster.now_ms
        for shard in list(self.shards.values()):
            if not self.is_current(shard):
                continue
            for group in list(shard.groups.values()):
                self._expire_members(shard, group, now)
                if group.ready_to_complete(now, virtual_now):
                    self.complete_join(shard, group)
            if shard.consumer_groups:
                fenced = self.consumer.expired(shard, now)
                if fenced:
                    self.write(shard, fenced)

    def _expire_members(self, shard: Shard, group: ClassicGroup, now: int) -> None:
        if group.state == EMPTY:
            return
        gone = [m for m in group.members.values()
                if m.join is None and m.sync is None and
                now - m.last_seen >= m.session_timeout_ms]
        if group.state == PREPARING and group.initial_deadline is None and \
                group.rebalance_deadline is not None and now >= group.rebalance_deadline:
            gone += [m for m in group.members.values() if m.join is None and m not in gone]
        for m in gone:
            self.remove_member(shard, group, m.member_id)

    def remove_member(self, shard: Shard, group: ClassicGroup, member_id: str) -> None:
        """A member left or its session expired: the others rebalance (or the group empties)."""
        member = group.remove(member_id)
        if member is None:
            return
        for waiter in (member.join, member.sync):
            if waiter is not None and not waiter.done:
                waiter.resolve(("error", E.UNKNOWN_MEMBER_ID))
        if group.state in (STABLE, COMPLETING):
            self.prepare(group)
        if not group.members and group.state == PREPARING and group.initial_deadline is None:
            self.complete_join(shard, group)

    def prepare(self, group: ClassicGroup) -> None:
        group.prepare_rebalance(self.session_now(), self.cluster.now_ms,
                                GROUP_INITIAL_REBALANCE_DELAY_MS)

    def complete_join(self, shard: Shard, group: ClassicGroup) -> None:
        """The rebalance ends: a new generation, its protocol and leader; every parked
        JoinGroup is answered (the leader gets the members' subscriptions)."""
        for m in [m for m in group.members.values() if m.join is None]:
            group.remove(m.member_id)  # did not rejoin in time
        group.generation += 1
        group.initial_deadline = group.rebalance_deadline = None
        if not group.members:
            group.state, group.protocol, group.leader = EMPTY, None, None
            self.write(shard, [records.group_metadata(group, self.cluster.now_ms)])
            return
        group.protocol = group.select_protocol()
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.state = COMPLETING
        now = self.session_now()
        for m in group.members.values():
            m.last_seen = now
            m.assignment = b""
            waiter, m.join = m.join, None
            if waiter is not None:
                waiter.resolve(("joined", joined_response(group, m.member_id)))

    def sync_done(self, shard: Shard, group: ClassicGroup,
                  assignments: dict[str, bytes]) -> Write:
        """The leader's assignment: stored, written, and the group Stable; every parked
        SyncGroup is answered once the write commits."""
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        group.state = STABLE
        generation = group.generation

        def answer() -> None:
            for m in group.members.values():
                if m.sync is not None and group.generation == generation:
                    m.sync.resolve(("synced", m.assignment))
                    m.sync = None
        return self.write(shard, [records.group_metadata(group, self.cluster.now_ms)], answer)

    def groups_here(self, broker: int) -> list[ClassicGroup]:
        out = []
        for (b, _), shard in sorted(self.shards.items(), key=lambda kv: kv[0]):
            if b == broker and self.is_current(shard):
                out.extend(shard.groups.values())
                out.extend(shard.consumer_groups.values())
        return out

    def create_request(self) -> Any:
        """The CreateTopics for ``__consumer_offsets`` (as Kafka's auto-topic manager asks)."""
        R = M.CreateTopicsRequest
        configs = (("cleanup.policy", "compact"), ("compression.type", "producer"),
                   ("segment.bytes", str(100 * 1024 * 1024)))
        return R(topics=(R.CreatableTopic(
            name=OFFSETS_TOPIC, num_partitions=self.num_partitions,
            replication_factor=self.replication_factor,
            configs=tuple(R.CreatableTopicConfig(name=k, value=v)
                          for k, v in configs)),), timeout_ms=30_000)




def joined_response(group: ClassicGroup, member_id: str) -> Any:
    """The JoinGroup answer of the group's current generation (the leader gets the members'
    subscriptions, the others none)."""
    R = M.JoinGroupResponse
    members: tuple = ()
    if member_id == group.leader:
        members = tuple(R.JoinGroupResponseMember(
            member_id=m.member_id, group_instance_id=m.instance_id,
            metadata=m.metadata_for(group.protocol)) for m in group.members.values())
    return R(throttle_time_ms=0, error_code=0, generation_id=group.generation,
             protocol_type=group.protocol_type, protocol_name=group.protocol,
             leader=group.leader or "", skip_assignment=False, member_id=member_id,
             members=members)
