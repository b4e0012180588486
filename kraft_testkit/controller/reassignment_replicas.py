"""The replica-list arithmetic of a partition reassignment (KIP-455 as KIP-631 runs it).

While a reassignment runs, the partition's replicas are the target followed by the replicas
being removed; ``adding`` are target replicas that were not replicas before, ``removing`` the
old replicas the target drops. It completes once the ISR, without the removed replicas, holds
every target replica; cancelling it takes the added replicas back out (Kafka's
``PartitionReassignmentReplicas`` and ``PartitionReassignmentRevert``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..metadata import PartitionRegistration


class ReassignmentReplicas(NamedTuple):
    """The three lists a reassignment writes into a PartitionChangeRecord."""

    removing: tuple[int, ...]
    adding: tuple[int, ...]
    replicas: tuple[int, ...]

    @classmethod
    def between(cls, current: Sequence[int], target: Sequence[int]) -> ReassignmentReplicas:
        """Moving from ``current`` to ``target``: sorted differences, as Kafka's TreeSets give."""
        removing = tuple(sorted(set(current) - set(target)))
        adding = tuple(sorted(set(target) - set(current)))
        return cls(removing, adding, tuple(target) + removing)

    @classmethod
    def of(cls, partition: PartitionRegistration) -> ReassignmentReplicas:
        return cls(partition.removing_replicas, partition.adding_replicas, partition.replicas)

    @property
    def in_progress(self) -> bool:
        return bool(self.removing or self.adding)

    def completed(self, isr: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """(replicas, isr) once the reassignment can finish with this ISR, else None."""
        if not self.in_progress:
            return None
        new_isr, new_replicas = tuple(isr), self.replicas
        if self.removing:
            new_isr = tuple(r for r in isr if r not in self.removing)
            new_replicas = tuple(r for r in self.replicas if r not in self.removing)
            if not new_isr or not new_replicas:
                return None
        if not set(new_replicas) <= set(new_isr):
            return None
        return new_replicas, new_isr

    def original_replicas(self) -> tuple[int, ...]:
        """The replicas before the reassignment: the current ones minus those being added."""
        return tuple(r for r in self.replicas if r not in self.adding)


def is_reassigning(partition: PartitionRegistration) -> bool:
    return bool(partition.removing_replicas or partition.adding_replicas)


class Revert(NamedTuple):
    """What cancelling a reassignment leaves: the original replicas, the ISR without added
    replicas, and whether that needed an unclean choice (every ISR member was being added, so the
    first original replica is put back in the ISR; allowed only with unclean election on)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    unclean: bool

    @classmethod
    def of(cls, partition: PartitionRegistration) -> Revert:
        ongoing = ReassignmentReplicas.of(partition)
        replicas = ongoing.original_replicas()
        isr = tuple(r for r in partition.isr if r not in ongoing.adding)
        if isr:
            return cls(replicas, isr, False)
        return cls(replicas, replicas[:1], True)
