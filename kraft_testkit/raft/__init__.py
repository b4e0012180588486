"""KRaft's Raft (KIP-595, KIP-630) as a pure state machine, for the deterministic simulator.

Modules: ``replica`` (:class:`RaftReplica`, the roles and RPC handlers), ``log`` (the replicated
log in Kafka's segment files), ``snapshot`` (``.checkpoint`` files), ``state`` (``quorum-state``
and ``meta.properties``), ``rpc`` (request/response envelopes, message builders, wire codec),
``listener`` (what the state machine above sees), ``config`` (Kafka's settings), ``invariants``
(safety checks for simulations), ``node`` (a simulator node factory), ``errors``.
The user-facing quorum is :class:`kraft_testkit.quorum.Quorum`.
"""

from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.errors import NotLeader, RaftError
from kraft_testkit.raft.invariants import RaftInvariants
from kraft_testkit.raft.listener import DigestListener, RaftListener
from kraft_testkit.raft.node import replica_factory
from kraft_testkit.raft.replica import RaftReplica
from kraft_testkit.raft.snapshot import Snapshot

__all__ = ["DigestListener", "NotLeader", "RaftConfig", "RaftError", "RaftInvariants",
           "RaftListener", "RaftReplica", "Snapshot", "replica_factory"]
