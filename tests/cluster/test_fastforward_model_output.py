"""The idle model's full output is what it was before it was made cheaper (the
model's cost): the digests below were recorded with the model at commit e69517a (before any
of the speed-ups), then re-recorded once when a voter's fetch that moves only the leader's
record of it got its ``narrow`` wake-ups too (checked: with those fields cleared the digests
were still e69517a's), and once more when a broker's answer that commits at a due ISR check
became one its logic does not act on where the broker leads nothing (checked: with every
answer's ``defer`` cleared the digests were the model's before), and once when the bootstrap
stopped writing a ZkMigrationStateRecord (as Kafka 4.x: every offset one lower; the event
counts and stop reasons were unchanged), and once when the Raft election dynamics became
Kafka 4.2's (the cluster booted 10 s is another one; the model's code unchanged), 60 virtual s
ahead of a cluster booted 10 s, with and
without the leader's steps. The digest (``fastforward.model_digest.fingerprint``) covers every event with all its
fields, the leader's steps, the NoOps, drains, messages in flight, the loops' final states
and the links' counters. A change of the simulation itself (a link's draws, a timer's tie)
changes them too: then re-record them with the model of a known-good commit, e.g.
``git worktree add /tmp/ref <commit>`` and the loop of this test run there.
"""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward.model_digest import fingerprint
from kraft_testkit.fastforward.quorum_model import predict_quorum

RECORDED = {  # (brokers, seed, steps) -> (digest, events, why the stretch stopped)
    (0, 1, False): ('3fbc3f3cfdb81d4d', 776, 'log cleaner on 1000'),
    (0, 1, True): ('d6c75d7939664443', 776, 'log cleaner on 1000'),
    (0, 2, False): ('27c361fb62430af4', 783, 'log cleaner on 1000'),
    (4, 2, False): ('cbc48b1b833620df', 2118, 'log cleaner on 0'),
    (4, 2, True): ('7de492ccd6fdf23f', 2118, 'log cleaner on 0'),
    (4, 3, False): ('6db9cb43114ed935', 2069, 'log cleaner on 0'),
    (10, 1, False): ('d595c7895647f437', 4074, 'log cleaner on 0'),
    (10, 1, True): ('f9b8b5d12cf1d250', 4074, 'log cleaner on 0'),
    (10, 5, False): ('8b5626efab269486', 4072, 'log cleaner on 0'),
    (10, 5, True): ('1fa28b59a1f46e85', 4072, 'log cleaner on 0'),
}


@pytest.mark.parametrize("brokers, seed, steps", sorted(RECORDED))
def test_the_model_computes_what_it_did_before(brokers: int, seed: int, steps: bool) -> None:
    c = Cluster(3, brokers, seed=seed)
    c.run_for(10_000)
    pred = predict_quorum(c, c.now_ms + 60_000, steps=steps)
    assert (fingerprint(pred), len(pred.events), pred.why_stopped) == \
        RECORDED[(brokers, seed, steps)]


def test_the_digest_sees_one_changed_field() -> None:
    """The digest can fail: one event's tie, one deferred answer, one link counter."""
    c = Cluster(3, 4, seed=2)
    c.run_for(10_000)
    pred = predict_quorum(c, c.now_ms + 20_000, steps=False)
    digest = fingerprint(pred)
    pred.events[100].tie ^= 1
    assert fingerprint(pred) != digest
    pred.events[100].tie ^= 1
    assert fingerprint(pred) == digest
    loop = next(lp for lp in pred.loops.values() if not lp.voter)
    loop.to_node.sent += 1
    assert fingerprint(pred) != digest
