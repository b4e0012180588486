"""The leader's KIP-853 rules one by one (Kafka 4.x AddVoterHandler / RemoveVoterHandler /
UpdateVoterHandler and the checks before them), each answer read off the wire; and the voter
set and history types on their own."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.frames import decode_control
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.quorum import Quorum
from kraft_testkit.raft import errors as E
from kraft_testkit.raft.membership import add_voter_request, remove_voter_request
from kraft_testkit.raft.voters import Voter, VoterHistory, VoterSet, control_values

D = [Uuid.parse(u) for u in ("AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg",
                             "AAAAAAAAAAAAAAAAAAAAAw", "AAAAAAAAAAAAAAAAAAAABA")]


def _boot(voters=3, seed=1) -> Quorum:
    q = Quorum(voters=voters, kraft_version=1, seed=seed)
    q.run_until(lambda q: q.active_controller is not None, timeout_ms=20_000)
    return q


def _ask(q: Quorum, body, to=None):
    return q._ask(q.leader_id if to is None else to, body, 5_000)


def test_add_voter_checks_in_kafkas_order():
    q = _boot()
    node = q.add_controller()
    q.run_for(1_000)
    new_dir = q.replica(node).dir
    follower = next(n for n in q.voters if n != q.leader_id)
    ok = add_voter_request(q.cluster_id, node, new_dir)
    assert _ask(q, ok.replace(cluster_id="other")).error_code == E.INCONSISTENT_CLUSTER_ID
    assert _ask(q, ok, to=follower).error_code == E.NOT_LEADER_OR_FOLLOWER
    assert _ask(q, ok.replace(voter_directory_id=Uuid.ZERO)).error_code == E.INVALID_REQUEST
    no_controller = ok.replace(listeners=(M.AddRaftVoterRequest.Listener(
        name="PLAINTEXT", host="h", port=1),))
    assert _ask(q, no_controller).error_code == E.INVALID_REQUEST
    assert _ask(q, ok.replace(voter_directory_id=D[3])).error_code == E.REQUEST_TIMED_OUT
    assert _ask(q, add_voter_request(q.cluster_id, follower, D[3])).error_code == \
        E.DUPLICATE_VOTER
    # a second change while the first is pending: REQUEST_TIMED_OUT
    q.network.isolate(node)  # the new voter cannot fetch: {1, 2, 3, node} needs 3 of 4
    other = q.add_controller()
    q.run_for(1_000)
    leader = q.replica(q.leader_id)
    q.sim.network.send(-1, leader.id, __import__("kraft_testkit.raft.rpc", fromlist=["x"])
                       .request(424242, ok))
    q.run_until(lambda q: leader._lead is not None and leader._lead.change is not None, 5_000)
    busy = _ask(q, add_voter_request(q.cluster_id, other, q.replica(other).dir))
    assert busy.error_code == E.REQUEST_TIMED_OUT and "previous" in busy.error_message


def test_remove_voter_checks():
    q = _boot()
    voters = q.voter_set()
    leader = q.leader_id
    gone = remove_voter_request(q.cluster_id, 9, D[0])
    assert _ask(q, gone).error_code == E.VOTER_NOT_FOUND
    wrong_dir = remove_voter_request(q.cluster_id, leader, D[0])
    assert _ask(q, wrong_dir).error_code == E.VOTER_NOT_FOUND
    assert _ask(q, remove_voter_request(q.cluster_id, leader, Uuid.ZERO)).error_code == \
        E.INVALID_REQUEST
    one = _boot(voters=1, seed=2)
    last = remove_voter_request(one.cluster_id, 1, one.voter_set().keys[1])
    assert _ask(one, last).error_code == E.VOTER_NOT_FOUND  # Kafka keeps the last voter
    assert set(q.voter_set()) == set(voters)


def test_update_voter_checks_the_epoch():
    q = _boot()
    leader = q.replica(q.leader_id)
    follower = next(n for n in q.voters if n != leader.id)
    R = M.UpdateRaftVoterRequest
    body = R(cluster_id=q.cluster_id, current_leader_epoch=leader.epoch - 1, voter_id=follower,
             voter_directory_id=q.replica(follower).dir,
             listeners=(R.Listener(name="CONTROLLER", host="moved", port=9093),),
             k_raft_version_feature=R.KRaftVersionFeature(min_supported_version=0,
                                                          max_supported_version=1))
    assert _ask(q, body).error_code == E.FENCED_LEADER_EPOCH
    answer = _ask(q, body.replace(current_leader_epoch=leader.epoch))
    assert answer.error_code == E.NONE and answer.current_leader.leader_id == leader.id
    # The leader appended the new endpoints; the follower itself may put its real ones back
    # (UpdateRaftVoter from its own side) before or after this point, so look at the history.
    assert any(vs.voters[follower].endpoints[0][1] == "moved"
               for _, vs in q.replica(leader.id).history.entries())


def test_voter_set_rules():
    vs = VoterSet([Voter(1, D[0]), Voter(2, D[1])])
    assert vs.add(Voter(2, D[2])) is None  # the id votes already, whatever its directory
    assert set(vs.add(Voter(3, D[2]))) == {1, 2, 3}
    assert vs.remove(2, D[2]) is None and set(vs.remove(2, D[1])) == {1}
    assert VoterSet([Voter(1, D[0])]).remove(1, D[0]) is None
    assert vs.update(Voter(2, D[2], (("CONTROLLER", "h", 1),))) is None
    assert vs.majority == 2 and VoterSet([Voter(i, D[0]) for i in range(5)]).majority == 3
    (k1, v1), (k2, v2) = control_values(vs, 1)
    assert decode_control(k1, v1).message.k_raft_version == 1
    assert VoterSet.from_record(decode_control(k2, v2).message) == vs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.sets(st.integers(1, 4), min_size=1)),
                max_size=8),
       st.integers(0, 45))
def test_history_is_the_latest_set_at_or_before_an_offset(changes, cut):
    """A model check: ``at(o)`` is the set of the last change at or before o; truncating at
    ``cut`` forgets the changes from ``cut`` on and nothing else."""
    history, model = VoterHistory(), {}
    for offset, ids in sorted(changes, key=lambda c: c[0]):
        vs = VoterSet(Voter(i, D[i - 1]) for i in ids)
        history.add_voters(offset, vs)
        model[offset] = vs
    history.truncate(cut)
    model = {o: v for o, v in model.items() if o < cut}
    for probe in range(-1, 46):
        before = [o for o in model if o <= probe]
        assert history.at(probe) == (model[max(before)] if before else None)
    assert history.latest == (model[max(model)] if model else None)


def test_a_slow_commit_is_not_reported_as_a_failure():
    """The leader answers AddRaftVoter at the commit; when that takes longer than one attempt's
    wait, the retry hears DUPLICATE_VOTER for a change that is in: the call succeeds, as the
    change did."""
    q = _boot()
    new = q.add_controller()
    q.run_for(5_000)
    followers = [v for v in q.voters if v != q.leader_id]
    rules = [q.network.delay(2_500, M.FetchRequest, src=f) for f in followers]
    assert q.add_voter(new).error_code == E.NONE
    assert new in q.voter_set()
    for rule in rules:
        q.network.remove_filter(rule)
    q.run_for(5_000)
    assert q.voter_set() is not None and new in q.voter_set()


def test_a_kraft_version_entry_before_later_ones_replaces_them_all():
    from kraft_testkit.raft.voters import VoterHistory

    h = VoterHistory()
    for offset, level in ((-1, 0), (10, 1), (20, 1)):
        h.add_version(offset, level)
    h.add_version(5, 0)
    assert [h.version_at(o) for o in (0, 5, 12, 25)] == [0, 0, 0, 0]


def test_remove_voter_right_after_the_leader_died_waits_for_the_next_leader():
    q = _boot(voters=3, seed=4)
    old = q.leader_id
    q.faults.kill(old)
    assert q.leader_id is None or q.leader_id == old  # nobody leads yet
    other = next(n for n in q.voters if n != old)
    assert q.remove_voter(old).error_code == E.NONE
    assert old not in q.voter_set() and other in q.voter_set()
