"""The broker as a pure state machine: lifecycle (KIP-631, KIP-343), replicas and ISR, metadata.

>>> logic = BrokerLogic(4, cluster_id, NodeConfig(), random.Random(7))   # doctest: +SKIP
>>> effects = logic.start(now_ms)            # registration goes to the active controller
>>> logic.on_leader_change(1, 3, now_ms)     # the Raft leader is the active controller
>>> logic.on_metadata(image, now_ms)         # each committed image from the metadata observer
>>> logic.on_message(src, msg, now_ms)       # responses, replica fetches, metadata requests
>>> logic.on_timer(effects.timer_ms)

Modules: ``logic`` (:class:`BrokerLogic`, the one class a broker node composes), ``lifecycle``
(registration, heartbeats, broker states, self-fencing), ``replicas`` (local replicas, replica
fetching, ISR shrink/expand), ``alter_partition`` (AlterPartition requests to the controller),
``metadata_view`` (the MetadataResponse a broker serves), ``state`` (:class:`BrokerState`),
``backoff``, ``channel`` (outbox with correlation ids, event log).
"""

from .alter_partition import AlterPartitionManager, IsrChange, IsrChangeResult
from .backoff import ExponentialBackoff
from .channel import EventLog, Outbox
from .lifecycle import Lifecycle
from .logic import BrokerLogic, default_listeners
from .metadata_view import alive_broker_ids, metadata_response, reported_controller_id
from .replicas import FollowerState, LocalReplica, PendingIsr, ReplicaManager
from .state import BrokerState

__all__ = [
    "AlterPartitionManager", "BrokerLogic", "BrokerState", "EventLog", "ExponentialBackoff",
    "FollowerState", "IsrChange", "IsrChangeResult", "Lifecycle", "LocalReplica", "Outbox",
    "PendingIsr", "ReplicaManager", "alive_broker_ids", "default_listeners",
    "metadata_response", "reported_controller_id",
]
