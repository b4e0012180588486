"""A consumer group (KIP-848) as Kafka 4.2.1 keeps it: ``ConsumerGroup``, ``ConsumerGroupMember``
and ``CurrentAssignmentBuilder``.

The group epoch moves when the members or their subscriptions change; the target assignment
(computed by the server-side assignor) is stamped with the group epoch it was computed for; each
member reconciles towards it on its heartbeats, one step at a time: it first gives up what the
target takes away (UNREVOKED_PARTITIONS: its epoch stays until it no longer owns them), then
takes what the target gives it, except partitions another member still owns
(UNRELEASED_PARTITIONS), which it gets once released. A partition is thus never owned twice.

Pure state: the coordinator (``manager``) builds records and replays them here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

Assignment = dict[Any, frozenset[int]]
STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, UNKNOWN = 0, 1, 2, 127
STATE_NAMES = {STABLE: "STABLE", UNREVOKED_PARTITIONS: "UNREVOKED_PARTITIONS",
               UNRELEASED_PARTITIONS: "UNRELEASED_PARTITIONS", UNKNOWN: "UNKNOWN"}
LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH = -1, -2
G_EMPTY, G_ASSIGNING, G_RECONCILING, G_STABLE, G_DEAD = (
    "Empty", "Assigning", "Reconciling", "Stable", "Dead")


class FencedMemberEpoch(Exception):
    """FENCED_MEMBER_EPOCH: the member must abandon its partitions and rejoin."""


@dataclass(frozen=True)
class Member:
    """``ConsumerGroupMember``: subscription (record type 5) and assignment state (type 8)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def subscription_key(self) -> tuple:
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                frozenset(self.subscribed_topic_names), self.subscribed_topic_regex,
                self.rebalance_timeout_ms, self.server_assignor)

    def reconciled_to(self, epoch: int) -> bool:
        """``isReconciledTo``."""
        return self.state == STABLE and self.member_epoch == epoch


@dataclass
class ConsumerGroup:
    """``ConsumerGroup``: members, epochs, target assignment, who owns which partition."""

    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    partition_epochs: dict[tuple[Any, int], int] = field(default_factory=dict)
    has_partition_metadata_record: bool = False
    #: timers, on the coordinator's session clock: member -> deadline; member -> (deadline, epoch)
    session_deadlines: dict[str, int] = field(default_factory=dict)
    rebalance_deadlines: dict[str, tuple[int, int]] = field(default_factory=dict)

    type = "consumer"
    protocol_type = "consumer"

    @property
    def state(self) -> str:
        """``maybeUpdateGroupState``: Empty, Assigning, Reconciling or Stable."""
        if not self.members:
            return G_EMPTY
        if self.group_epoch > self.assignment_epoch:
            return G_ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return G_RECONCILING
        return G_STABLE

    def current_partition_epoch(self, topic_id: Any, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> Member | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str, instance_id: str | None) -> Assignment:
        """``targetAssignment(memberId, instanceId)``: a static member's is its instance's."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            return self.target.get(previous, {}) if previous is not None else {}
        return self.target.get(member_id, {})

    def inverted_target(self) -> set[tuple[Any, int]]:
        return {(t, p) for a in self.target.values() for t, ps in a.items() for p in ps}

    def assignor_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        return counts

    # ------------------------------------------------------------------ replay

    def update_member(self, new: Member) -> None:
        """``updateMember``: partition epochs follow the member's assignment."""
        old = self.members.get(new.member_id)
        if old is not None:
            self._remove_epochs(old)
        self.members[new.member_id] = new
        for a in (new.assigned, new.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    prev = self.partition_epochs.get((t, p))
                    if prev is not None and prev >= new.member_epoch:
                        raise RuntimeError(  # Kafka's IllegalStateException: a kit bug
                            f"cannot set the epoch of {t}-{p} to {new.member_epoch}: "
                            f"still owned at epoch {prev}")
                    self.partition_epochs[(t, p)] = new.member_epoch
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._remove_epochs(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.session_deadlines.pop(member_id, None)
        self.rebalance_deadlines.pop(member_id, None)

    def _remove_epochs(self, old: Member) -> None:
        for a in (old.assigned, old.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    if self.partition_epochs.get((t, p)) == old.member_epoch:
                        del self.partition_epochs[(t, p)]


def reconcile(member: Member, target_epoch: int, target: Assignment,
              subscribed_ids: set, current_partition_epoch: Any,
              owned: list[tuple[Any, list[int]]] | None,
              subscription_changed: bool = False) -> Member:
    """``CurrentAssignmentBuilder#build``: the member's next state towards the target.
    ``owned`` is what the member says it owns (None: not in this heartbeat)."""
    def owns_revoked(pending: Assignment) -> bool:
        if owned is None:
            return True
        return any(p in pending.get(t, ()) for t, ps in owned for p in ps)

    def next_assignment(epoch: int, assigned: Assignment) -> Member:
        unreleased = False
        new_assigned: dict[Any, set[int]] = {}
        revoking: Assignment = {}
        pending_assignment: dict[Any, set[int]] = {}
        for t in set(target) | set(assigned):
            want = target.get(t, frozenset()) if t in subscribed_ids else frozenset()
            have = assigned.get(t, frozenset())
            keep = have & want
            give_up = have - keep
            to_get = set(want - keep)
            held = {p for p in to_get if current_partition_epoch(t, p) != -1 and
                    p not in member.pending_revocation.get(t, ())}
            unreleased = bool(held) or unreleased
            to_get -= held
            if keep:
                new_assigned[t] = set(keep)
            if give_up:
                revoking[t] = frozenset(give_up)
            if to_get:
                pending_assignment[t] = to_get
        frozen = {t: frozenset(p) for t, p in new_assigned.items()}
        if revoking and owns_revoked(revoking):
            return replace(member, state=UNREVOKED_PARTITIONS, member_epoch=epoch,
                           previous_member_epoch=member.member_epoch, assigned=frozen,
                           pending_revocation=revoking)
        for t, ps in pending_assignment.items():
            new_assigned.setdefault(t, set()).update(ps)
        state = UNRELEASED_PARTITIONS if unreleased else STABLE
        return replace(member, state=state, member_epoch=target_epoch,
                       previous_member_epoch=member.member_epoch,
                       assigned={t: frozenset(p) for t, p in new_assigned.items()},
                       pending_revocation={})

    def update_current(assigned: Assignment) -> Member:
        if not subscribed_ids and not member.pending_revocation:
            new_assigned: Assignment = {}
            pending = dict(assigned)
        else:
            new_assigned = dict(assigned)
            pending = dict(member.pending_revocation)
            for t, ps in assigned.items():
                if t not in subscribed_ids:
                    del new_assigned[t]
                    pending[t] = pending.get(t, frozenset()) | ps
        if new_assigned == assigned:
            return member
        if pending and owns_revoked(pending):
            return replace(member, state=UNREVOKED_PARTITIONS, assigned=new_assigned,
                           pending_revocation=pending)
        return replace(member, assigned=new_assigned)

    if member.state == STABLE:
        if member.member_epoch != target_epoch:
            return next_assignment(member.member_epoch, member.assigned)
        if subscription_changed:
            return update_current(member.assigned)
        return member
    if member.state == UNREVOKED_PARTITIONS:
        if owns_revoked(member.pending_revocation):
            return update_current(member.assigned) if subscription_changed else member
        return next_assignment(member.member_epoch, member.assigned)
    if member.state == UNRELEASED_PARTITIONS:
        return next_assignment(member.member_epoch, member.assigned)
    if owned is None or owned:
        raise FencedMemberEpoch("The consumer group member is in a unknown state. "
                                "The member must abandon all its partitions and rejoin.")
    return next_assignment(target_epoch, member.assigned)
