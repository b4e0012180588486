"""Building replicas for the simulator: a :data:`~kraft_testkit.sim.node.NodeFactory`.

The factory runs on every (re)start with what the disk kept; a new replica recovers its log,
snapshot and election state from there. A listener is built afresh too (its state lives only in
memory; the replica replays the snapshot and committed log into it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.listener import RaftListener
from kraft_testkit.raft.replica import RaftReplica
from kraft_testkit.sim.node import NodeContext, NodeFactory

ListenerFactory = Callable[[int], RaftListener | None]


def replica_factory(voters: Mapping[int, Uuid], *, config: RaftConfig | None = None,
                    cluster_id: str = "", listener: ListenerFactory | None = None,
                    directory_ids: Mapping[int, Uuid] | None = None,
                    kraft_version: int = 0,
                    endpoints: Mapping[int, tuple] | None = None,
                    bootstrap_servers: Callable[[], list[int]] | None = None) -> NodeFactory:
    """A factory of :class:`RaftReplica` for every node id of one quorum (voters and observers).

    ``voters`` maps voter ids to their directory ids; ``directory_ids`` gives observers theirs
    (others draw one from their random stream when their disk is formatted). With
    ``kraft_version`` 1 the voters are the bootstrap voters (KIP-853; see :class:`RaftReplica`).
    ``endpoints``: a node's own listeners, read at each (re)start (default: its name).
    ``bootstrap_servers``: the node ids an observer asks for the leader, read at each start.
    """
    endpoints = endpoints if endpoints is not None else {}
    voters = dict(voters)
    config = config or RaftConfig()
    dirs = dict(directory_ids or {})

    def build(ctx: NodeContext) -> RaftReplica:
        return RaftReplica(
            ctx.node_id, voters=voters, rng=ctx.rng, disk=ctx.disk, config=config,
            cluster_id=cluster_id, incarnation=ctx.incarnation,
            listener=listener(ctx.node_id) if listener is not None else None,
            directory_id=dirs.get(ctx.node_id, voters.get(ctx.node_id)),
            kraft_version=kraft_version, endpoints=endpoints.get(ctx.node_id),
            bootstrap_servers=bootstrap_servers() if bootstrap_servers is not None else None)

    return build
