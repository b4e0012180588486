"""``encode_quorum_state`` writes the generated JSON text (a hot path of every election): the
bytes must stay those of ``json.dumps(to_json(version) + data_version)``, Kafka's layout."""

import json
import random

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft.state import ElectionState, decode_quorum_state, encode_quorum_state


def _by_json_dumps(state: ElectionState, voters: list[int], version: int, directory: Uuid) -> bytes:
    if version == 1:
        data = M.QuorumStateData(leader_id=state.leader_id, leader_epoch=state.epoch,
                                 voted_id=state.voted_id, voted_directory_id=directory)
    else:
        data = M.QuorumStateData(
            cluster_id="", leader_id=state.leader_id, leader_epoch=state.epoch,
            voted_id=state.voted_id, applied_offset=0,
            current_voters=tuple(M.QuorumStateData.Voter(voter_id=v) for v in sorted(voters)))
    obj = data.to_json(version)
    obj["data_version"] = version
    return json.dumps(obj, separators=(",", ":")).encode()


def test_quorum_state_bytes_are_json_dumps_of_kafkas_fields() -> None:
    rng = random.Random(12)
    for _ in range(300):
        state = ElectionState(epoch=rng.randrange(0, 2**31), leader_id=rng.choice([-1, 0, 7, 3000]),
                              voted_id=rng.choice([-1, 1, 2, 99]))
        voters = rng.sample(range(0, 10_000), rng.randrange(0, 6))
        directory = rng.choice([Uuid.ZERO, Uuid.random(rng)])
        for version in (0, 1):
            got = encode_quorum_state(state, voters, version, directory)
            assert got == _by_json_dumps(state, voters, version, directory)
            assert decode_quorum_state(got) == state
