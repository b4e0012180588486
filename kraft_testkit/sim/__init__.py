"""The simulator: the only layer of the kit that owns time, randomness, the network and disks.

Node logic elsewhere in the kit is pure (see :mod:`kraft_testkit.sim.node` for the contract); a
:class:`Simulation` runs it under virtual time, a controllable network and simulated disks,
deterministically from one seed::

    from kraft_testkit.sim import Simulation
    from kraft_testkit.sim.toy import gossip

    sim = Simulation(seed=7)
    for node in (1, 2, 3):
        sim.add_node(node, gossip([1, 2, 3]))      # a NodeFactory: NodeContext -> StateMachine
    sim.network.isolate(3)
    sim.kill(2)                                    # unsynced writes are lost
    sim.run_for(500)                               # virtual milliseconds
    sim.network.heal()
    sim.start(2)                                   # a new state machine over the recovered disk
    sim.run_until(lambda s: s.process(2).machine.value > 40, timeout_ms=5_000)
    print(sim.trace.digest(), *sim.trace.tail(5), sep="\\n")

Modules: ``node`` (the contract for node authors), ``world`` (:class:`Simulation`), ``process``,
``network`` with ``link`` (latency, loss), ``topology`` (partition shapes) and ``filters``,
``disk``, ``scheduler``, ``rng``, ``trace``, ``determinism`` (self-check), ``toy`` (a demo node).
"""

from kraft_testkit.sim.determinism import check_determinism
from kraft_testkit.sim.disk import Disk, MemoryDisk
from kraft_testkit.sim.errors import (
    DiskError,
    EffectsError,
    InvalidArgument,
    InvariantViolation,
    KraftError,
    NodeStateError,
    Nondeterminism,
    NoProgress,
    SimulationError,
    UnknownNode,
)
from kraft_testkit.sim.link import Fixed, Latency, LinkProfile, Normal, Uniform
from kraft_testkit.sim.network import Codec, Filter, Network, Packet
from kraft_testkit.sim.node import (
    NEVER,
    Append,
    Delete,
    DiskOp,
    DiskView,
    Effects,
    NodeContext,
    NodeFactory,
    Replace,
    StateMachine,
    Truncate,
)
from kraft_testkit.sim.process import Process, ProcessState
from kraft_testkit.sim.rng import RngTree
from kraft_testkit.sim.scheduler import Scheduler
from kraft_testkit.sim.topology import Topology
from kraft_testkit.sim.trace import Trace
from kraft_testkit.sim.world import Simulation

__all__ = [
    "NEVER",
    "Append",
    "Codec",
    "Delete",
    "Disk",
    "DiskError",
    "DiskOp",
    "DiskView",
    "Effects",
    "EffectsError",
    "Filter",
    "Fixed",
    "InvalidArgument",
    "InvariantViolation",
    "KraftError",
    "Latency",
    "LinkProfile",
    "MemoryDisk",
    "Network",
    "NoProgress",
    "NodeContext",
    "NodeFactory",
    "NodeStateError",
    "Nondeterminism",
    "Normal",
    "Packet",
    "Process",
    "ProcessState",
    "Replace",
    "RngTree",
    "Scheduler",
    "Simulation",
    "SimulationError",
    "StateMachine",
    "Topology",
    "Trace",
    "Truncate",
    "Uniform",
    "UnknownNode",
    "check_determinism",
]
