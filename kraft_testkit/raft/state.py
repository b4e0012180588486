"""The small files beside the log: ``quorum-state`` (the election state) and ``meta.properties``.

``quorum-state`` is Kafka's JSON: data_version 0 with kraft.version 0
(``{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,
"currentVoters":[{"voterId":1},...],"data_version":0}``), data_version 1 with kraft.version 1
(``{"leaderId":1,"leaderEpoch":3,"votedId":-1,"votedDirectoryId":"AAAA...","data_version":1}``). A replica rewrites it (atomically, and
synced) before it acts on a new epoch, vote or leader. ``meta.properties`` is what
``kafka-storage format`` writes: node id, directory id, cluster id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.errors import CorruptFile
from kraft_testkit.storage.meta_properties import (
    MetaProperties,
    meta_properties_from,
    parse_properties,
)

META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "__cluster_metadata-0/partition.metadata"


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What a replica must never forget about elections: its epoch, the leader, its vote."""

    epoch: int = 0
    leader_id: int = -1
    voted_id: int = -1


def encode_quorum_state(state: ElectionState, voters: Iterable[int], version: int = 0,
                        voted_directory_id: Uuid = Uuid.ZERO) -> bytes:
    """data_version 0 (kraft.version 0: the static voters as currentVoters) or 1 (kraft.version
    1, as Kafka 4.x writes it: no voters, the directory id of the vote)."""
    if version == 1:
        data = M.QuorumStateData(leader_id=state.leader_id, leader_epoch=state.epoch,
                                 voted_id=state.voted_id, voted_directory_id=voted_directory_id)
    else:
        data = M.QuorumStateData(
            cluster_id="", leader_id=state.leader_id, leader_epoch=state.epoch,
            voted_id=state.voted_id, applied_offset=0,
            current_voters=tuple(M.QuorumStateData.Voter(voter_id=v) for v in sorted(voters)))
    # json.dumps(to_json + data_version) as Kafka's writer prints it; the generated JSON text is
    # the same bytes several times faster (a replica persists this on every epoch and vote)
    text = data.to_json_text(version)
    return f'{text[:-1]},"data_version":{version}}}'.encode()


#: the fields QuorumStateData has in each data_version: Kafka's reader refuses a file without one
_MANDATORY = {0: ("clusterId", "leaderId", "leaderEpoch", "votedId", "appliedOffset",
                  "currentVoters"),
              1: ("leaderId", "leaderEpoch", "votedId", "votedDirectoryId")}
_KNOWN = {"data_version", "votedDirectoryId", *_MANDATORY[0]}


def decode_quorum_state(raw: bytes, path: str = "quorum-state") -> ElectionState:
    """Read a quorum-state file (data_version 0 or 1); :class:`CorruptFile` names ``path`` and
    the problem when it is not Kafka's QuorumStateData (Kafka refuses to start on such a file)."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise CorruptFile(path, f"not valid JSON of Kafka's QuorumStateData: "
                                f"{type(e).__name__}: {str(e)[:120]}") from None
    if not isinstance(obj, dict):
        raise CorruptFile(path, f"expected a JSON object, found {type(obj).__name__}")
    fields = {}
    for key in ("leaderEpoch", "leaderId", "votedId"):
        value = obj.get(key, 0)
        if type(value) is not int or not -(1 << 31) <= value < (1 << 31):
            raise CorruptFile(path, f"{key} must be a 32-bit integer, found {value!r:.60}")
        fields[key] = value
    if "data_version" not in obj:  # FileQuorumStateStore refuses it
        raise CorruptFile(path, "has no data_version field (Kafka's QuorumStateData needs one)")
    version = obj["data_version"]
    if type(version) is not int or version not in (0, 1):
        raise CorruptFile(path, f"data_version {version!r} is unknown (0 and 1 are)")
    for key in _MANDATORY[version]:  # Kafka's generated JSON reader: every field of the version
        if key not in obj:
            unknown = sorted(k for k in obj if k not in _KNOWN)
            raise CorruptFile(path, f"field {key!r} is missing (mandatory in data_version "
                                    f"{version})" + (f"; unknown fields: {', '.join(unknown)}"
                                                     if unknown else ""))
    state = ElectionState(fields["leaderEpoch"], fields["leaderId"], fields["votedId"])
    if state.epoch < 0:
        return ElectionState()
    return state


def encode_meta_properties(node_id: int, cluster_id: str, directory_id: Uuid) -> bytes:
    return (f"#\n#Written by kraft-testkit\nnode.id={node_id}\ndirectory.id={directory_id}\n"
            f"version=1\ncluster.id={cluster_id}\n").encode()


def read_meta_properties(raw: bytes, path: str = META_PROPERTIES, *,
                         node_id: int | None = None,
                         cluster_id: str | None = None) -> MetaProperties:
    """Parse and check ``meta.properties`` as a Kafka node does before it starts.

    The file's own checks (:mod:`kraft_testkit.storage.meta_properties`: version, ids, a
    reserved directory id) raise its ``MetaPropertiesError``; a KRaft node also needs version 1,
    a directory.id, and, when given, its own ``node_id`` and ``cluster_id``: :class:`CorruptFile` otherwise. All
    are :class:`~kraft_testkit.errors.StorageError` naming the file.
    """
    props = meta_properties_from(parse_properties(raw.decode("utf-8", "replace")), path)
    if props.version != 1:
        raise CorruptFile(path, f"version is {props.version} (ZooKeeper era); KRaft log "
                                f"directories have version=1")
    if props.directory_id is None:  # Kafka would give it a new one: see docs/storage.md
        raise CorruptFile(path, "directory.id is missing: the node's directory id (a voter's "
                                "and a broker's log directory identity) is not known; restore "
                                "the file or format the directory again")
    if node_id is not None and props.node_id != node_id:
        raise CorruptFile(path, f"stored node.id {props.node_id} does not match this node's id "
                                f"{node_id} (a directory of another node?)")
    if cluster_id is not None and props.cluster_id != cluster_id:
        raise CorruptFile(path, f"cluster.id is {props.cluster_id!r}, but this cluster is "
                                f"{cluster_id!r} (a directory of another cluster?)")
    return props


def encode_partition_metadata() -> bytes:
    return f"version: 0\ntopic_id: {Uuid.METADATA_TOPIC_ID}\n".encode()
