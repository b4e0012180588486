"""The small files beside the log: ``quorum-state`` (the election state) and ``meta.properties``.

``quorum-state`` is Kafka's JSON (data_version 0, as Kafka 3.x writes it):
``{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,
"currentVoters":[{"voterId":1},...],"data_version":0}``. A replica rewrites it (atomically, and
synced) before it acts on a new epoch, vote or leader. ``meta.properties`` is what
``kafka-storage format`` writes: node id, directory id, cluster id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.errors import LogError

META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "__cluster_metadata-0/partition.metadata"


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What a replica must never forget about elections: its epoch, the leader, its vote."""

    epoch: int = 0
    leader_id: int = -1
    voted_id: int = -1


def encode_quorum_state(state: ElectionState, voters: Iterable[int]) -> bytes:
    data = M.QuorumStateData(
        cluster_id="", leader_id=state.leader_id, leader_epoch=state.epoch,
        voted_id=state.voted_id, applied_offset=0,
        current_voters=tuple(M.QuorumStateData.Voter(voter_id=v) for v in sorted(voters)))
    obj = data.to_json(0)
    obj["data_version"] = 0
    return json.dumps(obj, separators=(",", ":")).encode()


def decode_quorum_state(raw: bytes) -> ElectionState:
    """Read a quorum-state file (data_version 0 or 1)."""
    try:
        obj = json.loads(raw)
        version = obj.get("data_version", 0)
        if version not in (0, 1):
            raise LogError(f"quorum-state data_version {version} is unknown (0 and 1 are)")
        state = ElectionState(int(obj.get("leaderEpoch", 0)), int(obj.get("leaderId", -1)),
                              int(obj.get("votedId", -1)))
    except (ValueError, TypeError, AttributeError) as e:
        raise LogError(f"quorum-state is not valid JSON of Kafka's QuorumStateData: {e}") from None
    if state.epoch < 0:
        return ElectionState()
    return state


def encode_meta_properties(node_id: int, cluster_id: str, directory_id: Uuid) -> bytes:
    return (f"#\n#Written by kraft-testkit\nnode.id={node_id}\ndirectory.id={directory_id}\n"
            f"version=1\ncluster.id={cluster_id}\n").encode()


def decode_meta_properties(raw: bytes) -> dict[str, str]:
    out = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def encode_partition_metadata() -> bytes:
    return f"version: 0\ntopic_id: {Uuid.METADATA_TOPIC_ID}\n".encode()
