"""A cluster's data directory: one folder per node, in Kafka's layout, and who it belongs to.

``Cluster(storage="tmpdir", data_dir=...)`` on a directory that already holds a cluster reopens
it: the cluster id and each node's directory id come from the nodes' ``meta.properties`` (as a
Kafka node reads them at start), not from the seed, so a reopened cluster is the same cluster
whatever seed drives the new run. A folder whose ``meta.properties`` is damaged is left for its
node to refuse at start (the node then stays down with a
:class:`~kraft_testkit.errors.StorageError`); folders that disagree on the cluster id are refused
here, as no Kafka cluster can be made of them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kraft_testkit.errors import ConfigError, StorageError
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.state import META_PROPERTIES, read_meta_properties


def node_dir(data_dir: str, node: int, roles: tuple[str, ...]) -> str:
    """``controller-1000``, ``broker-0`` or ``combined-0`` under ``data_dir``."""
    role = "combined" if len(roles) == 2 else roles[0]
    return os.path.join(data_dir, f"{role}-{node}")


def found_controllers(data_dir: str) -> list[int]:
    """Ids of the formatted controller (and combined) folders under ``data_dir``."""
    return sorted(int(name.split("-", 1)[1]) for name in os.listdir(data_dir)
                  if name.split("-", 1)[0] in ("controller", "combined")
                  and name.split("-", 1)[-1].isdigit()
                  and os.path.isfile(os.path.join(data_dir, name, META_PROPERTIES)))


def check_voters(data_dir: str, controller_ids: list[int]) -> None:
    """A reopened kraft.version 0 cluster keeps its voters: the quorum is static, so controller
    folders other than the configured controllers are refused."""
    found = sorted(int(name.split("-", 1)[1]) for name in os.listdir(data_dir)
                   if name.split("-", 1)[0] in ("controller", "combined")
                   and name.split("-", 1)[-1].isdigit()
                   and os.path.isfile(os.path.join(data_dir, name, META_PROPERTIES)))
    if found and found != sorted(controller_ids):
        raise ConfigError(
            f"data_dir {data_dir} holds a cluster whose controllers are {found}, but this "
            f"Cluster has {sorted(controller_ids)}: with kraft_version=0 the voter set is static; "
            f"reopen it with controllers={len(found)} and the same combined= setting (or, for a "
            f"cluster built with kraft_version=1, with kraft_version=1: its voters are in the log)")


def read_identity(data_dir: str, roles: Mapping[int, tuple[str, ...]]
                  ) -> tuple[str | None, dict[int, Uuid]]:
    """The cluster id and the directory ids the nodes' folders already carry (if any)."""
    cluster_id: str | None = None
    first = ""
    directories: dict[int, Uuid] = {}
    for node, node_roles in sorted(roles.items()):
        path = os.path.join(node_dir(data_dir, node, node_roles), META_PROPERTIES)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise StorageError(path, f"cannot be read: {e}") from None
        try:
            props = read_meta_properties(raw, path, node_id=node)
        except StorageError:
            continue  # the node itself refuses it when it starts, naming the problem
        if cluster_id is None:
            cluster_id, first = props.cluster_id, path
        elif props.cluster_id != cluster_id:
            raise StorageError(path, f"cluster.id is {props.cluster_id!r}, but {first} says "
                                     f"{cluster_id!r}: these folders are not one cluster")
        if props.directory_id is not None:
            directories[node] = props.directory_id
    return cluster_id, directories
