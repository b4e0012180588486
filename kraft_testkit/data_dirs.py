"""A cluster's data directory: one folder per node, in Kafka's layout, and who it belongs to.

``Cluster(storage="tmpdir", data_dir=...)`` on a directory that already holds a cluster reopens
it: the cluster id and each node's directory id come from the nodes' ``meta.properties`` (as a
Kafka node reads them at start), not from the seed, so a reopened cluster is the same cluster
whatever seed drives the new run. A folder whose ``meta.properties`` is damaged is left for its
node to refuse at start (the node then stays down with a
:class:`~kraft_testkit.errors.StorageError`), and so is a folder of another cluster among the
cluster's folders; folders split evenly between two cluster ids are refused here, as no Kafka
cluster can be made of them, and so is a data_dir whose folders hold files but none a
``meta.properties``. A node folder that holds files but no
``meta.properties`` while other folders are formatted is not formatted: that node refuses to start
(:func:`unformatted_nodes`), as a Kafka node does until ``kafka-storage format`` ran; a folder
that does not exist yet (a node added on a reopen) is formatted by the kit, as on the first run.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping

from kraft_testkit.errors import ConfigError, StorageError
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.state import META_PROPERTIES, read_meta_properties


def node_dir(data_dir: str, node: int, roles: tuple[str, ...]) -> str:
    """``controller-1000``, ``broker-0`` or ``combined-0`` under ``data_dir``."""
    role = "combined" if len(roles) == 2 else roles[0]
    return os.path.join(data_dir, f"{role}-{node}")


def found_controllers(data_dir: str) -> list[int]:
    """Ids of the controller (and combined) folders under ``data_dir`` that hold a node: formatted,
    or holding files (a controller whose ``meta.properties`` is damaged or gone is still one of
    the cluster's voters; it refuses to start, it does not change the quorum)."""
    found = []
    for name in os.listdir(data_dir):
        role, _, node = name.partition("-")
        folder = os.path.join(data_dir, name)
        if role in ("controller", "combined") and node.isdigit() and os.path.isdir(folder) and (
                os.path.isfile(os.path.join(folder, META_PROPERTIES)) or any(os.scandir(folder))):
            found.append(int(node))
    return sorted(found)


def check_voters(data_dir: str, controller_ids: list[int]) -> None:
    """A reopened kraft.version 0 cluster keeps its voters: the quorum is static, so controller
    folders other than the configured controllers are refused."""
    found = found_controllers(data_dir)
    if found and found != sorted(controller_ids):
        raise ConfigError(
            f"data_dir {data_dir} holds a cluster whose controllers are {found}, but this "
            f"Cluster has {sorted(controller_ids)}: with kraft_version=0 the voter set is static; "
            f"reopen it with controllers={len(found)} and the same combined= setting (or, for a "
            f"cluster built with kraft_version=1, with kraft_version=1: its voters are in the log)")


def read_identity(data_dir: str, roles: Mapping[int, tuple[str, ...]]
                  ) -> tuple[str | None, dict[int, Uuid]]:
    """The cluster id and the directory ids the nodes' folders already carry (if any).

    The cluster id is the one most folders carry: a folder of another cluster among them is that
    node's damage (it refuses to start, naming its file); folders split evenly between two ids
    are no cluster at all, and refused here.
    """
    found: dict[int, tuple[str, str, Uuid | None]] = {}  # node -> (path, cluster id, dir id)
    for node, node_roles in sorted(roles.items()):
        path = os.path.join(node_dir(data_dir, node, node_roles), META_PROPERTIES)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise StorageError(path, f"cannot be read: {e}") from None
        try:
            props = read_meta_properties(raw, path, node_id=node)
        except StorageError:
            continue  # the node itself refuses it when it starts, naming the problem
        found[node] = (path, props.cluster_id, props.directory_id)
    if not found:
        return None, {}
    votes = Counter(cluster for _, cluster, _ in found.values())
    (cluster_id, most), *rest = votes.most_common()
    if rest and rest[0][1] == most:
        first = next(p for p, c, _ in found.values() if c == cluster_id)
        other = next(p for p, c, _ in found.values() if c == rest[0][0])
        raise StorageError(other, f"cluster.id is {rest[0][0]!r}, but {first} says "
                                  f"{cluster_id!r}, and as many folders hold each: these "
                                  f"folders are not one cluster")
    return cluster_id, {n: d for n, (_, c, d) in found.items()
                        if c == cluster_id and d is not None}


def unformatted_nodes(data_dir: str, roles: Mapping[int, tuple[str, ...]]
                      ) -> dict[int, StorageError]:
    """The nodes whose folder holds files but no ``meta.properties``, in a data_dir where other
    node folders are formatted; each with the :class:`StorageError` it starts with (the path is
    relative to the node's folder, which the simulator adds)."""
    folders = {n: node_dir(data_dir, n, r) for n, r in roles.items()}
    if not any(os.path.isfile(os.path.join(d, META_PROPERTIES)) for d in folders.values()):
        used = sorted(d for d in folders.values() if os.path.isdir(d) and any(os.scandir(d)))
        if used:  # every meta.properties gone: Kafka refuses each of these directories
            raise StorageError(os.path.join(used[0], META_PROPERTIES), (
                f"not found, nor in any other node folder under {data_dir}, while "
                f"{len(used)} of them hold files (a cluster's logs whose identity is gone): "
                "no node starts on an unformatted directory; format them with 'kraft-testkit "
                "storage format' and the cluster id, or empty data_dir for a new cluster"))
        return {}  # a new data_dir, or one the kit has not formatted yet: the kit formats it
    refused = {}
    for node, folder in sorted(folders.items()):
        if os.path.isdir(folder) and not os.path.exists(os.path.join(folder, META_PROPERTIES)) \
                and any(os.scandir(folder)):
            refused[node] = StorageError(
                META_PROPERTIES, "not found: the node's directory holds files but is not "
                "formatted, while the cluster's other directories are (Kafka refuses to start "
                "on it: format it with 'kraft-testkit storage format', or empty the folder and "
                "the kit formats it as a new node)")
    return refused
