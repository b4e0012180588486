"""One classic consumer group as Kafka 4.2's group coordinator keeps it (``ClassicGroup``):
members, generation, the chosen protocol, and the state machine

    Empty -> PreparingRebalance -> CompletingRebalance -> Stable -> PreparingRebalance ...

A join moves the group to PreparingRebalance; the rebalance completes once every member has
rejoined (or the rebalance timeout passes, dropping the others); the new generation's leader
sends the assignment in SyncGroup and the group is Stable. Pure state: time comes in as
``now`` (the coordinator's session clock), answers go out through the waiting requests'
:class:`Waiter` objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")


@dataclass
class Waiter:
    """A request parked on the group (JoinGroup, SyncGroup): ``answer`` is set once resolved."""

    answer: Any = None
    done: bool = False

    def resolve(self, answer: Any) -> None:
        self.answer, self.done = answer, True


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]      # (name, metadata), in the member's preference
    assignment: bytes = b""
    last_seen: int = 0                       # session clock at its last join/sync/heartbeat
    join: Waiter | None = None               # its JoinGroup, while the rebalance runs
    sync: Waiter | None = None               # its SyncGroup, while the leader has not synced
    joined_generation: bool = False          # rejoined in the running rebalance

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def same_protocols(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass
class ClassicGroup:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)   # join order kept
    rebalance_deadline: int | None = None   # session clock: members not rejoined by then go
    initial_deadline: int | None = None     # virtual ms: group.initial.rebalance.delay.ms
    pending_ids: set[str] = field(default_factory=set)  # member ids given with MEMBER_ID_REQUIRED

    # ------------------------------------------------------------------ looking

    def by_instance(self, instance_id: str) -> Member | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def all_joined(self) -> bool:
        return all(m.join is not None for m in self.members.values())

    def select_protocol(self) -> str | None:
        """Kafka's vote: among the protocols every member supports, each member votes for its
        most preferred one; the most votes wins (ties: the first candidate met)."""
        members = list(self.members.values())
        if not members:
            return None
        common = [name for name, _ in members[0].protocols
                  if all(any(n == name for n, _ in m.protocols) for m in members)]
        if not common:
            return None
        votes: dict[str, int] = dict.fromkeys(common, 0)
        for m in members:
            for name, _ in m.protocols:
                if name in votes:
                    votes[name] += 1
                    break
        return max(common, key=lambda n: votes[n])

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """A joining member fits when the protocol type matches and, in a non-empty group, it
        shares a protocol with every member."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        names = {n for n, _ in protocols}
        return any(all(any(n == name for n, _ in m.protocols) for m in self.members.values())
                   for name in names)

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when unknown."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return None
        out: set[str] = set()
        for m in self.members.values():
            topics = consumer_subscription_topics(m.metadata_for(self.protocol))
            if topics is None:
                return None
            out |= topics
        return out

    # ------------------------------------------------------------------ moving

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if self.leader is None:
            self.leader = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and self.leader == member_id:
            self.leader = next(iter(self.members), None)
        if not self.members:
            self.protocol_type = self.protocol_type if self.state != EMPTY else None
        return member

    def prepare_rebalance(self, now: int, virtual_now: int, initial_delay_ms: int) -> None:
        """Start a rebalance: members must rejoin by the largest rebalance timeout; a group
        that was empty waits ``group.initial.rebalance.delay.ms`` for more members first."""
        was_empty = self.state == EMPTY
        for m in self.members.values():
            if m.sync is not None:  # a sync waiting on the old generation learns it is over
                m.sync.resolve(("error", 27))  # REBALANCE_IN_PROGRESS
                m.sync = None
        self.state = PREPARING
        timeout = max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        self.rebalance_deadline = now + timeout
        self.initial_deadline = virtual_now + initial_delay_ms if was_empty else None

    def ready_to_complete(self, now: int, virtual_now: int) -> bool:
        if self.state != PREPARING:
            return False
        if self.initial_deadline is not None:
            return virtual_now >= self.initial_deadline
        return self.all_joined() or (self.rebalance_deadline is not None and
                                     now >= self.rebalance_deadline)


def consumer_subscription_topics(metadata: bytes) -> set[str] | None:
    """The topics of a ConsumerProtocolSubscription (any version: they come first)."""
    try:
        pos = 2
        count = int.from_bytes(metadata[pos:pos + 4], "big", signed=True)
        pos += 4
        topics = set()
        for _ in range(max(count, 0)):
            n = int.from_bytes(metadata[pos:pos + 2], "big", signed=True)
            pos += 2
            topics.add(metadata[pos:pos + n].decode())
            pos += n
        return topics
    except (ValueError, UnicodeDecodeError):
        return None
