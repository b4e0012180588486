"""Names for a cluster's hosts, racks and topics: short and stable by default, or realistic.

``Cluster(..., names="faker")`` gives every node a hostname such as
``kafka-moon-wells-0.forbes.net``, spreads brokers over racks named like data-centre zones
(``zw-sandersberg-a``) when ``racks=N`` is asked for, and makes ``cluster.names.topic()`` hand
out topic names such as ``orders.networked-events``. The names come from a per-cluster Faker
seeded from the cluster seed (never Faker's global seed), so the same seed gives the same names
in any process; they are drawn at build time (Faker takes about 0.3 ms a name).

The default (``names="short"``) keeps the kit's stable names: ``broker-0``, ``controller-1000``,
``rack-0``, ``topic-0``. Faker is imported only for ``names="faker"`` (``pip install
'kraft-testkit[names]'``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .errors import ConfigError
from .sim.rng import RngTree

STYLES = ("short", "faker")


class ClusterNames:
    """Hostnames of nodes, racks of brokers, and a stream of topic names for one cluster."""

    style = "short"

    def __init__(self, seed: int, controller_ids: Sequence[int], broker_ids: Sequence[int],
                 combined: bool = False) -> None:
        self.seed = seed
        self.hosts: dict[int, str] = {}
        for n in controller_ids:
            self.hosts[n] = self._host(n, "controller")
        for n in broker_ids:
            if n not in self.hosts:  # a combined node keeps one name
                self.hosts[n] = self._host(n, "broker")
        self._topics = 0
        self._racks: list[str] = []  # the cluster's racks, in the order brokers got them

    def _host(self, node: int, role: str) -> str:
        return f"{role}-{node}"

    def rack_names(self, count: int) -> list[str]:
        """``count`` distinct rack names: the cluster's own racks first (in the order the
        brokers were spread over them), then new names; the same call answers the same."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"rack_names takes a count, an int >= 0, got {count!r}")
        names = list(self._racks[:count])
        for name in self._new_rack_names(count + len(self._racks)):
            if len(names) >= count:
                break
            if name not in names and name not in self._racks:
                names.append(name)
        return names

    def _new_rack_names(self, count: int) -> list[str]:
        return [f"rack-{i}" for i in range(count)]

    def racks(self, racks: Sequence[str] | int | None, broker_ids: Sequence[int]) -> dict[int, str]:
        """A rack per broker: ``racks`` as a list (one per broker) or a number of racks to
        spread the brokers over round-robin (rack-aware placement then spreads replicas)."""
        if racks is None:
            return {}
        if isinstance(racks, bool) or not isinstance(racks, (int, list, tuple)):
            raise ConfigError(f"racks is a number of racks or a list of one rack per broker, "
                              f"got {racks!r}")
        if isinstance(racks, int):
            if racks < 1:
                raise ConfigError(f"racks must be >= 1, got {racks}")
            names = self._new_rack_names(racks)
            self._racks = list(names)
            return {b: names[i % racks] for i, b in enumerate(broker_ids)}
        if len(racks) != len(broker_ids):
            raise ConfigError(f"racks lists one rack per broker: {len(broker_ids)} brokers, "
                              f"{len(racks)} racks")
        self._racks = list(dict.fromkeys(racks))
        return dict(zip(broker_ids, racks))

    def topic(self) -> str:
        """The next topic name (a new one each call; the sequence is fixed by the seed)."""
        name = self._topic_name(self._topics)
        self._topics += 1
        return name

    def topics(self, count: int) -> list[str]:
        return [self.topic() for _ in range(count)]

    def _topic_name(self, index: int) -> str:
        return f"topic-{index}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} style={self.style} seed={self.seed}>"


class FakerNames(ClusterNames):
    """Realistic names from a Faker instance seeded (``seed_instance``) from the cluster seed."""

    style = "faker"

    def __init__(self, seed: int, controller_ids: Sequence[int], broker_ids: Sequence[int],
                 combined: bool = False, *, locale: str | None = None) -> None:
        try:
            from faker import Faker
        except ImportError as e:
            raise ConfigError("names='faker' needs Faker: pip install 'kraft-testkit[names]'") \
                from e
        self.faker = Faker(locale) if locale else Faker()
        self.faker.seed_instance(RngTree(seed).child("names").getrandbits(63))
        self.domain = self.faker.domain_name()
        self._used: set[str] = set()
        self._zone_prefix: str | None = None
        super().__init__(seed, controller_ids, broker_ids, combined)

    def _unique(self, make: Any) -> str:
        for _ in range(100):
            name = make()
            if name not in self._used:
                self._used.add(name)
                return name
        raise ConfigError("Faker ran out of distinct names; use names='short'")  # pragma: no cover

    def _host(self, node: int, role: str) -> str:
        return self._unique(lambda: f"kafka-{self.faker.domain_word()}-{node}.{self.domain}")

    def _new_rack_names(self, count: int) -> list[str]:
        """Zones of one region and city, drawn once per names object (so asking twice
        gives the same names)."""
        if self._zone_prefix is None:
            self._zone_prefix = f"{self.faker.country_code().lower()}-{_slug(self.faker.city())}"
        region_city = self._zone_prefix
        zones = "abcdefghijklmnopqrstuvwxyz"
        if count <= len(zones):
            return [f"{region_city}-{zones[i]}" for i in range(count)]
        return [f"{region_city}-{i}" for i in range(count)]

    def _topic_name(self, index: int) -> str:
        return self._unique(lambda: f"{_slug(self.faker.word())}."
                                    f"{_slug(self.faker.catch_phrase().split()[-1])}-events")


def _slug(text: str) -> str:
    return "-".join("".join(ch for ch in part.lower() if ch.isalnum()) for part in text.split()) \
        or "x"


def cluster_names(style: str | None, seed: int, controller_ids: Iterable[int],
                  broker_ids: Iterable[int], combined: bool = False) -> ClusterNames:
    """The names object for ``Cluster(names=style)``; a ConfigError names the allowed styles."""
    style = "short" if style is None else style
    if style not in STYLES:
        raise ConfigError(f"names must be one of {', '.join(STYLES)}, got {style!r}")
    cls = FakerNames if style == "faker" else ClusterNames
    return cls(seed, list(controller_ids), list(broker_ids), combined)
