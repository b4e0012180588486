"""``kraft-testkit cluster add-controller | remove-controller``: KIP-853 voter changes, as
Kafka's ``kafka-metadata-quorum.sh add-controller`` / ``remove-controller`` make them.

The target is a kit cluster's data directory built with ``kraft_version=1`` (its quorum-state
files are data_version 1): the cluster is reopened on it (as ``cluster unregister`` does), the
change is committed, every controller's files hold it, and the cluster is closed again. On a
directory whose voters are static (kraft.version 0) the answer is Kafka's UNSUPPORTED_VERSION.
``add-controller`` starts a new controller folder (formatted with neither
``--standalone`` nor ``--initial-controllers``) and adds it as a voter.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..protocol.error_codes import KafkaApiError
from ..protocol.uuid import Uuid
from ..raft.errors import UNSUPPORTED_VERSION
from .cluster_tool import ClusterToolError, DirectoryTarget, reopen_kit_cluster


def _reopen(target: Any) -> Any:
    if not isinstance(target, DirectoryTarget):
        return target
    dynamic = any(n.epoch >= 0 and n.data_version == 1 for n in target.nodes)
    return reopen_kit_cluster(target, kraft_version=1 if dynamic else 0)


@contextmanager
def _changing(target: Any) -> Iterator[Any]:
    """The cluster to change (a directory is reopened); on success every running controller's
    log holds what the leader committed, then a reopened directory is closed; on an error it
    is closed at once."""
    cluster = _reopen(target)
    if not isinstance(target, DirectoryTarget):
        yield cluster
        return
    try:
        yield cluster
        committed = cluster.replica(cluster.active_controller).hw
        cluster.run_until(lambda c: all(
            (r := c.replica(h)) is None or r.log.end_offset >= committed
            for h in c.controllers), timeout_ms=60_000)
    finally:
        cluster.close()


def add_controller(target: Any) -> str:
    """Start a new controller and add it to the voters; returns Kafka-like text."""
    with _changing(target) as cluster:
        if cluster.voter_set() is None:  # before a new folder is made: the voters are static
            raise KafkaApiError(UNSUPPORTED_VERSION, "Cluster doesn't support adding voter "
                                "because the kraft.version feature is 0", api="AddRaftVoter")
        node = cluster.add_controller()
        cluster.add_voter(node)
        directory = cluster.replica(node).dir
    return f"Added controller {node.id} with directory id {directory}"


def remove_controller(target: Any, controller_id: int, directory_id: str | None = None) -> str:
    """Remove the voter (``controller_id``, ``directory_id``; by default the directory id the
    voter set holds for it)."""
    with _changing(target) as cluster:
        voters = cluster.voter_set()
        if directory_id is not None:
            try:
                key = Uuid.parse(directory_id)
            except Exception:  # noqa: BLE001 (any parse failure is the same user error)
                raise ClusterToolError(f"--controller-directory-id {directory_id!r} is not a "
                                       "base64 uuid") from None
        elif voters is not None and controller_id in voters:
            key = voters.keys[controller_id]
        else:
            raise ClusterToolError(f"controller {controller_id} is not a voter ({voters}); "
                                   "give --controller-directory-id to name a key anyway")
        cluster.remove_voter(controller_id, key)
        cluster.run_until(lambda c: c.active_controller is not None, timeout_ms=30_000)
    return f"Removed controller {controller_id} with directory id {key}"
