"""Where new partitions' replicas go: Kafka 4.2.1's ``StripedReplicaPlacer``.

Replicas are dealt round-robin across racks (sorted, brokers without a rack first) starting at a
random rack, and round-robin within each rack starting at a random broker; every partition
starts one rack further on, which gives the "striped" pattern. Unfenced brokers are used before
fenced ones and the first replica (the leader) is always unfenced. Brokers in controlled
shutdown are not offered at all. Once as many partitions as there are unfenced brokers have been
placed, racks and brokers are shuffled so that later partitions do not repeat the same sets.

All randomness comes from the ``rng`` given (the controller's seeded one, or Kafka's test
``MockRandom`` through :data:`PLACEMENT_RANDOM_KEY`), drawn in Kafka's order: each rack's broker
offsets and shuffles go rack by rack in Java ``HashMap`` order (``RackList`` keeps its racks in
one), the rack names are shuffled as ``Collections.shuffle`` does. Driven by the same stream the
placer gives ``StripedReplicaPlacerTest``'s assignments exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..metadata import MetadataImage
from ..protocol.error_codes import ErrorCode, KafkaApiError
from .java_random import IntDraws, hash_map_order, java_shuffle, optional_string_hash

#: ``ControllerContext.extra`` key of a random source that replaces ``ctx.rng`` for placement
#: only (a test seam: Kafka's tests drive the placer with their ``MockRandom``)
PLACEMENT_RANDOM_KEY = "placement_random"


class UsableBroker(NamedTuple):
    id: int
    rack: str | None
    fenced: bool


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    """Registered brokers a new replica may go to: all but those in controlled shutdown."""
    brokers = image.cluster.brokers
    make = tuple.__new__  # UsableBroker(...) goes through a Python-level __new__: 3x slower
    return [make(UsableBroker, (b.id, b.rack, b.fenced))
            for b in map(brokers.__getitem__, sorted(brokers))
            if not b.in_controlled_shutdown]


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_REPLICATION_FACTOR, message)


class _BrokerList:
    """Brokers visited round-robin from a moving offset; each epoch visits each broker once."""

    __slots__ = ("brokers", "epoch", "index", "offset")

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, rng: IntDraws) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rng.randrange(len(self.brokers))

    def next(self, epoch: int) -> int:
        """The next broker of this epoch, or -1 once every broker was returned in it."""
        if not self.brokers:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


class _Rack:
    __slots__ = ("fenced", "unfenced")

    def __init__(self) -> None:
        self.fenced = _BrokerList()
        self.unfenced = _BrokerList()

    def next(self, epoch: int) -> int:
        broker = self.unfenced.next(epoch)
        return broker if broker >= 0 else self.fenced.next(epoch)


def _rack_order(rack: str | None) -> tuple[bool, bytes]:
    """``OptionalStringComparator``: no rack first, then ``String.compareTo`` (UTF-16 units)."""
    return (rack is not None, (rack or "").encode("utf-16-be"))


class _RackList:
    def __init__(self, rng: IntDraws, brokers: Iterable[UsableBroker]) -> None:
        self.rng = rng
        self.racks: dict[str | None, _Rack] = {}
        self.total = self.unfenced = 0
        racks = self.racks
        for broker in brokers:
            rack = racks.get(broker.rack)
            if rack is None:  # not setdefault(..., _Rack()): that builds a _Rack per broker
                rack = racks[broker.rack] = _Rack()
            if broker.fenced:
                rack.fenced.brokers.append(broker.id)
            else:
                rack.unfenced.brokers.append(broker.id)
                self.unfenced += 1
            self.total += 1
        # Kafka walks its HashMap of racks for the draws; one rack (the common case) needs no hash
        self.hash_order: list[str | None] = (list(racks) if len(racks) == 1
                                             else hash_map_order(racks, optional_string_hash))
        for name in self.hash_order:
            self.racks[name].fenced.initialize(rng)
            self.racks[name].unfenced.initialize(rng)
        self.names: list[str | None] = sorted(self.racks, key=_rack_order)
        self.epoch = 0
        self.offset = rng.randrange(len(self.names)) if self.names else 0

    def _shuffle(self) -> None:
        java_shuffle(self.names, self.rng)
        for name in self.hash_order:
            java_shuffle(self.racks[name].fenced.brokers, self.rng)
            java_shuffle(self.racks[name].unfenced.brokers, self.rng)

    def _wrap(self, index: int) -> int:
        return 0 if index == len(self.names) else index

    def place(self, replication_factor: int) -> tuple[int, ...]:
        """One partition's replicas (``RackList.place``, with its own checks in its order)."""
        if replication_factor <= 0:
            raise _non_positive(replication_factor)
        if replication_factor > self.total:
            raise _too_few(replication_factor, self.total)
        if self.unfenced == 0:
            raise _invalid("All brokers are currently fenced.")
        if self.epoch == self.unfenced and self.unfenced > 1:
            self._shuffle()
            self.epoch = 0
        if self.offset == len(self.names):
            self.offset = 0
        chosen: list[int] = []
        first = self.offset
        while True:  # the leader: the first unfenced broker from the starting rack on
            broker = self.racks[self.names[first]].unfenced.next(self.epoch)
            if broker >= 0:
                chosen.append(broker)
                break
            first = self._wrap(first + 1)
        index = self.offset
        for _ in range(1, replication_factor):
            broker = -1
            while broker < 0:
                if index == first:
                    first = -1  # the leader's rack already gave its replica this round
                else:
                    broker = self.racks[self.names[index]].next(self.epoch)
                index = self._wrap(index + 1)
            chosen.append(broker)
        self.epoch += 1
        self.offset += 1
        return tuple(chosen)


def _non_positive(replication_factor: int) -> KafkaApiError:
    return _invalid(f"Invalid replication factor {replication_factor}: the replication "
                    "factor must be positive.")


def _too_few(replication_factor: int, total: int) -> KafkaApiError:
    return _invalid(f"The target replication factor of {replication_factor} cannot be "
                    f"reached because only {total} broker(s) are registered.")


def place_replicas(rng: IntDraws, brokers: Iterable[UsableBroker], num_partitions: int,
                   replication_factor: int) -> list[tuple[int, ...]]:
    """Replica lists (leader first) for ``num_partitions`` new partitions
    (``StripedReplicaPlacer#place``).

    Raises KafkaApiError(INVALID_REPLICATION_FACTOR) with Kafka's messages when the factor is not
    positive, no broker is unfenced, or fewer brokers are registered than the factor asks.
    """
    racks = _RackList(rng, brokers)
    if replication_factor <= 0:
        raise _non_positive(replication_factor)
    if racks.unfenced == 0:
        raise _invalid("All brokers are currently fenced.")
    if replication_factor > racks.total:
        raise _too_few(replication_factor, racks.total)
    return [racks.place(replication_factor) for _ in range(num_partitions)]
