"""A tree of named random streams grown from one seed.

Each stream is a :class:`random.Random` seeded by hashing the root seed with the stream's path
(``("network", "link-1-2")``). Streams are independent of each other and of the order in which
they are created, so a new consumer of randomness never shifts the numbers an old one sees, and
the same seed gives the same numbers in every process (no ``hash()``, whose value for a str changes
from one process to the next).
"""

from __future__ import annotations

import hashlib
import random

from kraft_testkit.sim.errors import InvalidArgument
from kraft_testkit.sim.streams import compact_json  # json.dumps(..., separators=(",", ":"))


def check_seed(seed: object) -> int:
    """Return ``seed`` if it is a plain int; a clear error otherwise."""
    if type(seed) is not int:
        raise InvalidArgument(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    return seed


def _derive(seed: int, path: tuple[str, ...]) -> int:
    canonical = compact_json([seed, *path]).encode()
    return int.from_bytes(hashlib.sha256(canonical).digest(), "big")


class RngTree(random.Random):
    """A ``random.Random`` that can also grow named children: ``tree.child("network")``.

    Its seed (sha256 of the path, then the Mersenne Twister's seeding) is worked out at its
    first draw: many trees only grow children (``process/<n>``, ``node``) or are never drawn
    from (a process's crash stream until it is killed), and a boot builds about forty. The
    draws are the same as if it had been seeded at once: nothing else reads the generator."""

    def __init__(self, seed: int, path: tuple[str, ...] = ()) -> None:
        self.root_seed = check_seed(seed)
        self.path = path
        self.gauss_next = None
        self._seeded = False

    def _seed_now(self) -> None:
        self._seeded = True
        super().seed(_derive(self.root_seed, self.path))

    def random(self) -> float:
        if not self._seeded:
            self._seed_now()
        return super().random()

    def getrandbits(self, k: int) -> int:
        if not self._seeded:
            self._seed_now()
        return super().getrandbits(k)

    def getstate(self) -> tuple:
        if not self._seeded:
            self._seed_now()
        return super().getstate()

    def setstate(self, state: tuple) -> None:
        self._seeded = True
        super().setstate(state)

    def seed(self, a: object = None, version: int = 2) -> None:  # an explicit reseed wins
        self._seeded = True
        super().seed(a, version)

    def child(self, *names: str | int) -> RngTree:
        """The stream at ``path + names``; the same names always give the same stream."""
        for name in names:
            if type(name) not in (str, int):
                raise InvalidArgument(f"stream names are str or int, got {name!r}")
        return RngTree(self.root_seed, self.path + tuple(str(n) for n in names))

    def __reduce__(self) -> tuple[object, ...]:  # copy and pickle keep the path and the position
        return (RngTree, (self.root_seed, self.path), self.getstate())

    def __repr__(self) -> str:
        return f"RngTree(seed={self.root_seed}, path={'/'.join(self.path) or '/'})"
