"""How tests name the nodes of a cluster: :class:`NodeHandle` (``cluster.brokers[0]``),
:func:`node_id`, and :class:`BrokerStatus` (``cluster.broker_state(b)``).

Kept apart from :mod:`kraft_testkit.cluster` so the modules that work on a cluster's nodes
(voter changes, the quorum and fleet views, the gateway) need not import the facade itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigError


@dataclass(frozen=True)
class NodeHandle:
    """A node of the cluster, as tests name it: ``c.brokers[0]``, ``c.active_controller``.

    Compares equal to other handles of the same node id (and hashes like it).
    """

    id: int
    roles: tuple[str, ...]
    _cluster: Any

    @property
    def process(self) -> Any:
        return self._cluster.sim.process(self.id)

    @property
    def up(self) -> bool:
        return self.process.up

    @property
    def machine(self) -> Any:
        return self.process.machine

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeHandle):
            return self.id == other.id
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.id)

    def __int__(self) -> int:
        return self.id

    def __index__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"<{'+'.join(self.roles)} {self.id}>"


def node_id(node: NodeHandle | int) -> int:
    """The id of a node given as a handle or an int (anything else is a ConfigError)."""
    if isinstance(node, NodeHandle):
        return node.id
    if isinstance(node, bool) or not isinstance(node, int):
        raise ConfigError(f"a node is a handle (cluster.brokers[0]) or an int id, got {node!r}")
    return int(node)


@dataclass(frozen=True)
class BrokerStatus:
    """A broker as a test sees it: its process, its lifecycle state, its registration."""

    id: int
    process: str
    state: str
    registered: bool
    fenced: bool
    in_controlled_shutdown: bool
    epoch: int
    self_fenced: bool
    metadata_offset: int
