"""Kafka's ExponentialBackoff, with the jitter drawn from a seeded ``random.Random``."""

from __future__ import annotations

import math
import random


class ExponentialBackoff:
    """``initial * multiplier ** attempts``, capped at ``maximum``, times a jitter factor in
    ``[1 - jitter, 1 + jitter)`` (Kafka's ``org.apache.kafka.common.utils.ExponentialBackoff``).

    Kafka 3.x's broker lifecycle manager used ``(100 ms, 2, broker.session.timeout.ms, 0.02)``
    between failed registrations and heartbeats; 4.2.1's retries one heartbeat interval later
    (``broker/lifecycle.py``). The jitter comes from a seeded rng, so a seed replays the same
    delays.
    """

    __slots__ = ("_exp_max", "initial_ms", "jitter", "maximum_ms", "multiplier")

    def __init__(self, initial_ms: int, multiplier: float, maximum_ms: int, jitter: float) -> None:
        self.initial_ms = initial_ms
        self.multiplier = multiplier
        self.maximum_ms = maximum_ms
        self.jitter = jitter
        if maximum_ms > initial_ms and multiplier > 1:
            self._exp_max = math.log(maximum_ms / initial_ms) / math.log(multiplier)
        else:
            self._exp_max = 0.0

    def backoff_ms(self, attempts: int, rng: random.Random) -> int:
        if self._exp_max == 0:
            return self.initial_ms
        term = self.initial_ms * self.multiplier ** min(attempts, self._exp_max)
        factor = 1.0 if self.jitter <= 0 else rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(int(factor * term), self.maximum_ms)
