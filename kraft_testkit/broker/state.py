"""Kafka's broker states (KIP-631), with the numeric values Kafka exposes in metrics."""

from __future__ import annotations

from enum import IntEnum


class BrokerState(IntEnum):
    """Where a broker is in its life, as ``org.apache.kafka.metadata.BrokerState`` numbers it.

    NOT_RUNNING -> STARTING (registered, catching up on metadata) -> RECOVERY (reconciling its
    local replicas with the metadata, waiting to be unfenced) -> RUNNING ->
    PENDING_CONTROLLED_SHUTDOWN (asking the controller to move leaders away) -> SHUTTING_DOWN.
    """

    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7
    UNKNOWN = 127

    def __str__(self) -> str:
        return self.name


#: states in which the broker hosts replicas: it fetches as a follower and serves as a leader
REPLICA_STATES = frozenset({BrokerState.RECOVERY, BrokerState.RUNNING,
                            BrokerState.PENDING_CONTROLLED_SHUTDOWN})
#: states in which the broker serves clients (unless it fenced itself, KIP-343)
SERVING_STATES = frozenset({BrokerState.RUNNING, BrokerState.PENDING_CONTROLLED_SHUTDOWN})
