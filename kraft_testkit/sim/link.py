"""How a network link behaves: latency distributions and fault probabilities.

Profiles are immutable values; the network resolves one per directed link and draws from that
link's own random stream, so the behaviour of one link never depends on traffic elsewhere.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from kraft_testkit.sim.errors import InvalidArgument


class Latency(Protocol):
    """A distribution of one-way delays in whole milliseconds."""

    def sample(self, rng: random.Random) -> int: ...


def _check_ms(name: str, value: object) -> int:
    if type(value) is not int or value < 0:
        raise InvalidArgument(f"{name} must be an int >= 0 (ms), got {value!r}")
    return value


def check_probability(name: str, value: object) -> float:
    if type(value) not in (int, float) or not 0.0 <= value <= 1.0:  # type: ignore[operator]
        raise InvalidArgument(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Fixed:
    """Always ``ms``."""

    ms: int

    def __post_init__(self) -> None:
        _check_ms("Fixed.ms", self.ms)

    def sample(self, rng: random.Random) -> int:
        return self.ms


@dataclass(frozen=True, slots=True)
class Uniform:
    """Uniform over ``[low, high]`` inclusive."""

    low: int
    high: int

    def __post_init__(self) -> None:
        _check_ms("Uniform.low", self.low)
        _check_ms("Uniform.high", self.high)
        if self.high < self.low:
            raise InvalidArgument(f"Uniform needs low <= high, got {self.low} > {self.high}")

    def sample(self, rng: random.Random) -> int:
        return rng.randint(self.low, self.high)


@dataclass(frozen=True, slots=True)
class Normal:
    """Gaussian around ``mean``, rounded and clipped to ``[low, high]`` (high None: no cap)."""

    mean: float
    stddev: float
    low: int = 0
    high: int | None = None

    def __post_init__(self) -> None:
        if type(self.mean) not in (int, float) or type(self.stddev) not in (int, float):
            raise InvalidArgument(
                f"Normal needs numbers, got mean={self.mean!r} stddev={self.stddev!r}"
            )
        if self.stddev < 0:
            raise InvalidArgument(f"Normal.stddev must be >= 0, got {self.stddev}")
        _check_ms("Normal.low", self.low)
        if self.high is not None and _check_ms("Normal.high", self.high) < self.low:
            raise InvalidArgument(f"Normal needs low <= high, got {self.low} > {self.high}")

    def sample(self, rng: random.Random) -> int:
        ms = round(rng.gauss(self.mean, self.stddev))
        if ms < self.low:
            return self.low
        if self.high is not None and ms > self.high:
            return self.high
        return ms


@dataclass(frozen=True, slots=True)
class LinkProfile:
    """Behaviour of one direction of a link.

    ``fifo`` links deliver in send order (like a TCP connection) whatever latencies were drawn;
    ``reorder`` is the probability that a message skips that queue and takes ``reorder_delay`` on
    top of its latency, so later messages overtake it.
    """

    latency: Latency = Uniform(1, 5)
    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_delay: Latency = Uniform(1, 20)
    fifo: bool = True

    def __post_init__(self) -> None:
        for name in ("latency", "reorder_delay"):
            if not callable(getattr(getattr(self, name), "sample", None)):
                raise InvalidArgument(
                    f"LinkProfile.{name} must be a Latency (Fixed, Uniform, Normal...)"
                )
        check_probability("LinkProfile.drop", self.drop)
        check_probability("LinkProfile.duplicate", self.duplicate)
        check_probability("LinkProfile.reorder", self.reorder)
        if type(self.fifo) is not bool:
            raise InvalidArgument(f"LinkProfile.fifo must be a bool, got {self.fifo!r}")
