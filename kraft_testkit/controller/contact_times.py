"""The active controller's broker contact times (Kafka 4.2.1's ``BrokerHeartbeatTracker``).

One entry per (broker id, broker epoch): the last time that incarnation was in contact. Kafka
writes it on every heartbeat that reaches the active controller, *before* it checks the epoch
(``QuorumController#processBrokerHeartbeat`` calls ``ClusterControlManager#trackBrokerHeartbeat``
first), so a fenced broker, a stale epoch or an unknown id get an entry too; activation
(``ClusterControlManager#activate``) gives one to each *unfenced* registered broker at that
instant; a registration writes none. Nothing else removes an entry but expiry:
``maybeRemoveExpired`` takes out the first expired one, and the lease task decides what it meant
(``ReplicationControlManager#maybeFenceOneStaleBroker``).

Which expired entry comes first is the iteration order of Kafka's ``ConcurrentHashMap``
(record ``BrokerIdAndEpoch``: hash ``31 * id + Long.hashCode(epoch)``): bins by spread hash,
each bin in insertion order, split on resize as ``ConcurrentHashMap#transfer`` splits it. Not
modelled: tree bins (8 colliding entries in one bin), which no test cluster comes near.
"""

from __future__ import annotations

from collections.abc import Iterator

Key = tuple[int, int]  # (broker id, broker epoch)

_INITIAL_CAPACITY = 16  # ConcurrentHashMap's default table size


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def java_hash(key: Key) -> int:
    """``BrokerIdAndEpoch#hashCode``: a Java record's (31 * id + Long.hashCode(epoch))."""
    broker_id, epoch = key
    e = epoch & 0xFFFFFFFFFFFFFFFF
    return _int32(31 * broker_id + _int32(e ^ (e >> 32)))


def spread(h: int) -> int:
    """``ConcurrentHashMap#spread``."""
    u = h & 0xFFFFFFFF
    return (u ^ (u >> 16)) & 0x7FFFFFFF


def is_expired(contact_ms: int, now_ms: int, session_timeout_ms: int) -> bool:
    """``BrokerHeartbeatTracker#isExpired``: later than contact + timeout (at exactly that
    instant the session is still valid)."""
    return now_ms > contact_ms and contact_ms + session_timeout_ms < now_ms


class BrokerHeartbeatTracker:
    """Contact times per (id, epoch), iterated in Kafka's order."""

    __slots__ = ("_bins", "_times", "_size_ctl", "session_timeout_ms")

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._times: dict[Key, int] = {}
        self._bins: list[list[Key]] = [[] for _ in range(_INITIAL_CAPACITY)]
        self._size_ctl = _INITIAL_CAPACITY - (_INITIAL_CAPACITY >> 2)

    def __len__(self) -> int:
        return len(self._times)

    def contact_time(self, broker_id: int, epoch: int) -> int | None:
        return self._times.get((broker_id, epoch))

    def update(self, broker_id: int, epoch: int, now_ms: int) -> None:
        """``updateContactTime``: the entry's time is now (a new entry goes to its bin's end)."""
        key = (broker_id, epoch)
        if key not in self._times:
            bins = self._bins
            bins[spread(java_hash(key)) & (len(bins) - 1)].append(key)
            if len(self._times) + 1 >= self._size_ctl:
                self._resize()
        self._times[key] = now_ms

    def _resize(self) -> None:
        """``ConcurrentHashMap#transfer`` of list bins: each bin splits into bin i and i + n;
        the nodes after the last change of side keep their order, the ones before it are
        prepended one by one (so reversed)."""
        old = self._bins
        n = len(old)
        new: list[list[Key]] = [[] for _ in range(2 * n)]
        for i, chain in enumerate(old):
            if not chain:
                continue
            bits = [spread(java_hash(k)) & n for k in chain]
            last = 0
            for j in range(1, len(chain)):
                if bits[j] != bits[last]:
                    last = j
            low: list[Key] = []
            high: list[Key] = []
            (low if bits[last] == 0 else high).extend(chain[last:])
            for j in range(last):
                (low if bits[j] == 0 else high).insert(0, chain[j])
            new[i], new[i + n] = low, high
        self._bins = new
        self._size_ctl = 2 * n - (n >> 1)

    def remove(self, broker_id: int, epoch: int) -> None:
        key = (broker_id, epoch)
        if self._times.pop(key, None) is not None:
            self._bins[spread(java_hash(key)) & (len(self._bins) - 1)].remove(key)

    def keys(self) -> Iterator[Key]:
        """Entries in Kafka's iteration order."""
        for chain in self._bins:
            yield from chain

    def has_valid_session(self, broker_id: int, epoch: int, now_ms: int) -> bool:
        """``hasValidSession``: an entry that has not expired (no entry: no session)."""
        t = self._times.get((broker_id, epoch))
        return t is not None and not is_expired(t, now_ms, self.session_timeout_ms)

    def maybe_remove_expired(self, now_ms: int) -> Key | None:
        """``maybeRemoveExpired``: take out the first expired entry in iteration order."""
        times, timeout = self._times, self.session_timeout_ms
        for key in self.keys():
            if is_expired(times[key], now_ms, timeout):
                self.remove(*key)
                return key
        return None

    def oldest_ms(self) -> int | None:
        """The earliest contact time of any entry (None: no entries): the first to expire."""
        return min(self._times.values()) if self._times else None

    def items(self) -> list[tuple[Key, int]]:
        """(key, contact time) in iteration order (for inspection and the idle warp)."""
        return [(k, self._times[k]) for k in self.keys()]
