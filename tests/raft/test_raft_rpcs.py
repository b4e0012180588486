"""The pure replica, stepped by hand: every RPC's answers and error codes, and its transitions."""

from __future__ import annotations

import json

import pytest
from raft_helpers import CLUSTER, DIRS, Harness, fetch, part, vote

from kraft_testkit.errors import KraftError
from kraft_testkit.protocol import messages as M
from kraft_testkit.protocol.records import iter_batches
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.raft import errors as E
from kraft_testkit.raft import rpc
from kraft_testkit.raft.config import RaftConfig
from kraft_testkit.raft.log import QUORUM_STATE, segment_name
from kraft_testkit.sim.node import Replace

# ------------------------------------------------------------------ start and elections


def test_fresh_replica_formats_its_disk_and_waits_an_election_timeout():
    h = Harness()
    files = h.disk.view()
    assert "meta.properties" in files and b"directory.id=" + str(DIRS[1]).encode() in files[
        "meta.properties"]
    assert json.loads(files[QUORUM_STATE]) == {
        "clusterId": "", "leaderId": -1, "leaderEpoch": 0, "votedId": -1, "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}], "data_version": 0}
    assert files[segment_name(0)] == b""
    assert h.r.role == "unattached" and h.r.epoch == 0
    assert 1000 <= h.timer < 2000  # election timeout with jitter in [timeout, 2 * timeout)


def test_candidate_persists_its_vote_before_asking_and_becomes_leader_on_a_majority():
    h = Harness()
    effects = h.tick()
    assert h.r.role == "candidate" and h.r.epoch == 1
    assert effects.sync and any(isinstance(op, Replace) and op.file == QUORUM_STATE
                                for op in effects.writes)
    state = json.loads(h.disk.durable()[QUORUM_STATE])
    assert (state["leaderEpoch"], state["votedId"]) == (1, 1)
    votes = h.sends(M.VoteRequest)
    assert sorted(d for d, _ in votes) == [2, 3]
    p = rpc.vote_partition(votes[0][1].body)
    assert (p.candidate_epoch, p.candidate_id, p.last_offset_epoch, p.last_offset) == (1, 1, 0, 0)
    h.reply(2, M.VoteRequest, rpc.vote_response(0, 1, -1, True))
    assert h.r.role == "leader"
    # the epoch starts with a LeaderChangeMessage control batch, synced
    batch = next(b for _, b in iter_batches(h.disk.durable()[segment_name(0)]))
    assert batch.is_control and batch.partition_leader_epoch == 1
    assert json.loads(h.disk.durable()[QUORUM_STATE])["leaderId"] == 1
    assert sorted(d for d, _ in h.sends(M.BeginQuorumEpochRequest)) == [2, 3]


def test_vote_is_granted_once_per_epoch_and_persisted_before_the_answer():
    h = Harness()
    resp = h.request(2, vote(epoch=1, candidate=2))
    p = part(resp)
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.NONE, True, 1)
    assert h.r.role == "voted" and h.r.voted_id == 2
    assert h.effects[-1].sync and json.loads(h.disk.durable()[QUORUM_STATE])["votedId"] == 2
    assert part(h.request(3, vote(epoch=1, candidate=3))).vote_granted is False
    assert part(h.request(2, vote(epoch=1, candidate=2))).vote_granted is True  # idempotent
    # a restart remembers the vote
    h.restart()
    assert h.r.role == "voted" and h.r.voted_id == 2
    assert part(h.request(3, vote(epoch=1, candidate=3))).vote_granted is False


def test_vote_is_refused_to_a_candidate_with_a_shorter_log():
    h = Harness()
    h.elect()
    h.request(2, vote(epoch=2, candidate=2, last_epoch=0, last_offset=0))
    assert h.r.role == "unattached" and h.r.epoch == 2  # a higher epoch ends the leadership
    p = part(h.request(3, vote(epoch=3, candidate=3, last_epoch=1, last_offset=1)))
    assert p.vote_granted is True


@pytest.mark.parametrize("body,code", [
    (vote(epoch=1, cluster="other"), E.INCONSISTENT_CLUSTER_ID),
    (vote(epoch=1).replace(topics=()), E.INVALID_REQUEST),
])
def test_vote_top_level_errors(body, code):
    h = Harness()
    resp = h.request(2, body)
    assert resp.error_code == code and not resp.topics
    assert h.r.epoch == 0


@pytest.mark.parametrize("kwargs,code", [
    ({"epoch": 1, "last_epoch": 1}, E.INVALID_REQUEST),  # must be below the candidate's epoch
    ({"epoch": 1, "last_offset": -1}, E.INVALID_REQUEST),
])
def test_vote_partition_errors(kwargs, code):
    h = Harness()
    p = part(h.request(kwargs.get("candidate", 2), vote(**kwargs)))
    assert (p.error_code, p.vote_granted) == (code, False)


def test_a_vote_from_a_non_voter_is_not_refused_for_membership():
    # Kafka 4.x validateVoterOnlyRequest checks no membership (KafkaRaftClientTest
    # #testHandleVoteRequestAsObserver): the candidate counts only its own voters' grants
    h = Harness()
    p = part(h.request(7, vote(epoch=1, candidate=7)))
    assert (p.error_code, p.vote_granted) == (E.NONE, True)
    assert (h.r.role, h.r.epoch, h.r.voted_id) == ("voted", 1, 7)


def test_vote_from_a_stale_epoch_is_fenced():
    h = Harness()
    h.request(2, vote(epoch=5, candidate=2))
    p = part(h.request(3, vote(epoch=4, candidate=3)))
    assert (p.error_code, p.leader_epoch) == (E.FENCED_LEADER_EPOCH, 5)


def test_vote_naming_another_directory_is_refused():
    h = Harness()
    body = rpc.vote_request(CLUSTER, 1, 2, DIRS[2], 1, DIRS[9], 0, 0)  # not our directory id
    p = part(h.request(2, body))
    assert (p.error_code, p.leader_epoch, p.vote_granted) == (E.INVALID_VOTER_KEY, 1, False)


def test_lost_election_backs_off_then_stands_again_in_a_new_epoch():
    h = Harness()
    h.tick()
    h.reply(2, M.VoteRequest, rpc.vote_response(0, 1, -1, False))
    h.reply(3, M.VoteRequest, rpc.vote_response(0, 1, -1, False))
    assert h.r.role == "candidate" and h.r._backoff_until is not None
    assert h.r._backoff_until - h.now <= RaftConfig().election_backoff_max_ms
    h.tick(h.r._backoff_until)
    assert h.r.role == "candidate" and h.r.epoch == 2


def test_single_voter_elects_itself_at_start():
    h = Harness(voters={1: DIRS[1]})
    assert h.r.role == "leader" and h.r.epoch == 1 and h.r.hw == 1


# ------------------------------------------------------------------ BeginQuorumEpoch / EndQuorumEpoch


def test_begin_quorum_epoch_makes_a_follower_and_errors():
    h = Harness()
    good = rpc.begin_epoch_request(CLUSTER, 3, 2, 1, DIRS[1])
    assert part(h.request(2, good)).error_code == E.NONE
    assert (h.r.role, h.r.leader_id, h.r.epoch) == ("follower", 2, 3)
    assert h.request(2, good.replace(cluster_id="x")).error_code == E.INCONSISTENT_CLUSTER_ID
    assert h.request(2, good.replace(topics=())).error_code == E.INVALID_REQUEST
    stale = rpc.begin_epoch_request(CLUSTER, 2, 3, 1, DIRS[1])
    assert part(h.request(3, stale)).error_code == E.FENCED_LEADER_EPOCH
    other = rpc.begin_epoch_request(CLUSTER, 4, 8, 1, DIRS[1])  # a leader outside our voters
    assert part(h.request(8, other)).error_code == E.NONE  # Kafka 4.x checks no membership
    assert (h.r.leader_id, h.r.epoch) == (8, 4) and not h.r.anomalies


def test_end_quorum_epoch_lets_the_first_successor_stand_at_once():
    h = Harness(node_id=2)
    h.follow(leader=1, epoch=1)
    end = rpc.end_epoch_request(CLUSTER, 1, 1, [(2, DIRS[2]), (3, DIRS[3])])
    assert part(h.request(1, end)).error_code == E.NONE
    h.tick(h.now)
    assert h.r.role == "candidate" and h.r.epoch == 2


def test_end_quorum_epoch_second_successor_waits_its_backoff():
    h = Harness(node_id=3)
    h.follow(leader=1, epoch=1)
    h.request(1, rpc.end_epoch_request(CLUSTER, 1, 1, [(2, DIRS[2]), (3, DIRS[3])]))
    assert h.r.role == "follower"
    assert h.timer == h.now + RaftConfig().election_backoff_max_ms // 2


def test_graceful_resignation_names_successors_by_log_length():
    h = Harness()
    h.elect()
    h.request(3, fetch(epoch=1, offset=1, last_epoch=1, replica=3))
    h.request(2, fetch(epoch=1, offset=0, last_epoch=0, replica=2))
    h.r.resign(h.now)
    h._apply(h.r.poll(h.now))
    assert h.r.role == "resigned"
    ends = h.sends(M.EndQuorumEpochRequest)
    assert sorted(d for d, _ in ends) == [2, 3]
    assert rpc.preferred_successors(rpc.vote_partition(ends[0][1].body)) == [3, 2]
    # a resigned leader answers fetches with NOT_LEADER_OR_FOLLOWER
    assert part(h.request(2, fetch(epoch=1, offset=1, last_epoch=1))).error_code == \
        E.NOT_LEADER_OR_FOLLOWER


# ------------------------------------------------------------------ Fetch


@pytest.mark.parametrize("epoch,code", [(0, E.FENCED_LEADER_EPOCH),
                                        (2, E.UNKNOWN_LEADER_EPOCH),
                                        (1, E.NOT_LEADER_OR_FOLLOWER)])
def test_fetch_to_a_non_leader(epoch, code):
    h = Harness(node_id=3)
    h.follow(leader=1, epoch=1)
    p = part(h.request(2, fetch(epoch=epoch, offset=0, last_epoch=0)))
    assert p.error_code == code
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 1)


def test_fetch_request_errors():
    h = Harness()
    h.elect()
    assert h.request(2, fetch(1, 0, 0, cluster="x")).error_code == E.INCONSISTENT_CLUSTER_ID
    bad_topic = fetch(1, 0, 0).replace(topics=(M.FetchRequest.FetchTopic(
        topic_id=DIRS[5], partitions=(M.FetchRequest.FetchPartition(partition=0),)),))
    assert h.request(2, bad_topic).error_code == E.INVALID_REQUEST
    assert part(h.request(2, fetch(1, -1, 0))).error_code == E.INVALID_REQUEST
    assert part(h.request(2, fetch(1, 0, 2))).error_code == E.INVALID_REQUEST  # epoch ahead
    assert h.request(2, fetch(1, 0, 0).replace(max_wait_ms=-1)) is not None


def test_fetch_returns_records_and_advances_the_high_watermark():
    h = Harness()
    h.elect()
    p = part(h.request(2, fetch(1, 0, 0)))
    assert p.error_code == E.NONE and p.records and p.high_watermark == 0
    batches = [b for _, b in iter_batches(p.records)]
    assert [b.base_offset for b in batches] == [0] and batches[0].is_control
    p = part(h.request(2, fetch(1, 1, 1)))  # the follower now has offset 0: majority
    assert h.r.hw == 1 and p.high_watermark == 1 and not p.records


def test_fetch_is_parked_until_new_data_or_its_max_wait():
    h = Harness()
    h.elect()
    h.request(2, fetch(1, 1, 1))
    assert h.request(3, fetch(1, 1, 1, replica=3, max_wait=500)) is None  # parked
    assert h.timer <= h.now + 500
    offset = h.r.append([b"a", b"b"], h.now)
    assert offset == 2
    h.at(h.now + RaftConfig().append_linger_ms).tick(h.now)
    answered = [m for d, m in h.sent if d == 3 and isinstance(m, rpc.Response)]
    assert answered and part(answered[-1].body).records
    # with nothing new, a parked fetch is answered empty at its max wait
    h.request(2, fetch(1, 3, 1, max_wait=500))
    start = h.now
    assert h.request(3, fetch(1, 3, 1, replica=3, max_wait=500)) is None
    h.tick(start + 500)
    last = [m for d, m in h.sent if d == 3 and isinstance(m, rpc.Response)][-1]
    assert part(last.body).records == b""


def test_fetch_with_a_diverging_log_is_told_where_to_truncate():
    h = Harness()
    h.elect()
    p = part(h.request(2, fetch(1, 5, 1)))  # ahead of the leader's log in epoch 1
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (1, 1)
    assert not p.records


def test_follower_truncates_on_divergence_and_refetches():
    h = Harness(node_id=2)
    h.follow(leader=1, epoch=1)
    h.tick(h.now)
    first = h.last_request(1, M.FetchRequest)
    # the old leader of epoch 1 replicated two batches the new leader never had
    from kraft_testkit.protocol.records import RecordBatch, encode_batch
    data = encode_batch(RecordBatch.build(0, [b"x"], timestamp_ms=0, leader_epoch=1)) + \
        encode_batch(RecordBatch.build(1, [b"y"], timestamp_ms=0, leader_epoch=1))
    h.reply(1, M.FetchRequest, rpc.fetch_response(0, 1, 1, 0, 0, data), first.correlation_id)
    assert h.r.log.end_offset == 2
    # a new leader in epoch 2 says epoch 1 ended at offset 1
    h.follow(leader=3, epoch=2)
    h.tick(h.now)
    h.reply(3, M.FetchRequest, rpc.fetch_response(0, 2, 3, 0, 0, diverging=(1, 1)))
    assert h.r.log.end_offset == 1
    assert len(h.disk.durable()[segment_name(0)]) == len(encode_batch(
        RecordBatch.build(0, [b"x"], timestamp_ms=0, leader_epoch=1)))


def test_stale_and_duplicated_responses_are_ignored():
    h = Harness(node_id=2)
    h.follow(leader=1, epoch=1)
    h.tick(h.now)
    req = h.last_request(1, M.FetchRequest)
    from kraft_testkit.protocol.records import RecordBatch, encode_batch
    data = encode_batch(RecordBatch.build(0, [b"x"], timestamp_ms=0, leader_epoch=1))
    resp = rpc.fetch_response(0, 1, 1, 0, 0, data)
    h.reply(1, M.FetchRequest, resp, req.correlation_id)
    assert h.r.log.end_offset == 1
    h.reply(1, M.FetchRequest, resp, req.correlation_id)  # a duplicate
    h.reply(1, M.FetchRequest, rpc.fetch_response(0, 1, 1, 0, 0, diverging=(0, 0)), 424242)
    assert h.r.log.end_offset == 1 and not h.r.anomalies


def test_truncation_below_the_high_watermark_is_refused_and_reported():
    h = Harness(node_id=2)
    h.follow(leader=1, epoch=1)
    h.tick(h.now)
    from kraft_testkit.protocol.records import RecordBatch, encode_batch
    data = encode_batch(RecordBatch.build(0, [b"x"], timestamp_ms=0, leader_epoch=1))
    h.reply(1, M.FetchRequest, rpc.fetch_response(0, 1, 1, 1, 0, data))
    assert h.r.hw == 1
    h.tick(h.now)
    h.reply(1, M.FetchRequest, rpc.fetch_response(0, 1, 1, 1, 0, diverging=(0, 0)))
    assert h.r.log.end_offset == 1 and h.r.anomalies


def test_observer_finds_the_leader_through_any_voter():
    h = Harness(node_id=5)
    assert h.r.is_observer and h.r.role == "unattached"
    ((dst, _),) = h.sends(M.FetchRequest)
    assert dst in (1, 2, 3)
    h.reply(dst, M.FetchRequest, rpc.fetch_response(E.FENCED_LEADER_EPOCH, 4, 2))
    assert (h.r.role, h.r.leader_id, h.r.epoch) == ("follower", 2, 4)
    # observers never stand; asked for a vote they answer as Kafka 4.x does
    # (KafkaRaftClientTest#testHandleVoteRequestAsObserver): granted to an up-to-date log
    h.tick(h.now + 100_000)
    assert h.r.role == "follower"
    p = part(h.request(1, vote(epoch=9, candidate=1, voter=5)))
    assert (p.error_code, p.vote_granted) == (E.NONE, True)
    assert part(h.request(1, vote(epoch=9, candidate=1, voter=1))).error_code == \
        E.INVALID_VOTER_KEY  # meant for another replica


# ------------------------------------------------------------------ FetchSnapshot, DescribeQuorum


def test_fetch_snapshot_errors():
    h = Harness()
    h.elect()
    req = rpc.fetch_snapshot_request(CLUSTER, 2, 1, (1, 1), 0, 100, DIRS[2])
    assert h.request(2, req.replace(cluster_id="x")).error_code == E.INCONSISTENT_CLUSTER_ID
    assert h.request(2, req.replace(topics=())).error_code == E.INVALID_REQUEST
    wrong = req.replace(topics=(req.topics[0].replace(name="other"),))
    assert part_error(h.request(2, wrong)) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert part(h.request(2, req)).error_code == E.SNAPSHOT_NOT_FOUND
    stale = rpc.fetch_snapshot_request(CLUSTER, 2, 0, (1, 1), 0, 100, DIRS[2])
    assert part(h.request(2, stale)).error_code == E.FENCED_LEADER_EPOCH


def part_error(resp):
    return resp.topics[0].partitions[0].error_code


def test_describe_quorum_on_leader_and_follower():
    h = Harness()
    h.elect()
    h.request(2, fetch(1, 1, 1))
    h.request(5, fetch(1, 0, 0, replica=5))  # an observer
    p = part(h.request(9, rpc.describe_quorum_request()))
    assert (p.error_code, p.leader_id, p.leader_epoch, p.high_watermark) == (E.NONE, 1, 1, 1)
    assert [(v.replica_id, v.log_end_offset) for v in p.current_voters] == [(1, 1), (2, 1), (3, -1)]
    assert [(o.replica_id, o.replica_directory_id) for o in p.observers] == [(5, DIRS[5])]
    f = Harness(node_id=2)
    f.follow(1, 1)
    assert part(f.request(9, rpc.describe_quorum_request())).error_code == \
        E.NOT_LEADER_OR_FOLLOWER


# ------------------------------------------------------------------ check-quorum, restart


def test_leader_without_fetches_from_a_majority_resigns_after_one_and_a_half_fetch_timeouts():
    h = Harness()
    h.elect()
    start = h.now
    h.tick(start + 2000)
    assert h.r.role == "leader"
    h.request(2, fetch(1, 1, 1))  # one follower is enough for a majority of three
    h.tick(start + 3000)
    assert h.r.role == "leader"
    h.tick(h.now + 3000)
    assert h.r.role == "resigned"


def test_restarted_leader_comes_back_resigned():
    h = Harness()
    h.elect()
    r = h.restart()
    assert r.role == "resigned" and r.epoch == 1 and r.log.end_offset == 1
    assert sorted(d for d, _ in h.sends(M.EndQuorumEpochRequest)) == [2, 3]


def test_append_on_a_follower_raises_not_leader():
    h = Harness(node_id=2)
    h.follow(1, 4)
    with pytest.raises(E.NotLeader) as info:
        h.r.append([b"x"], h.now)
    assert (info.value.leader_id, info.value.epoch, info.value.code) == (1, 4, 6)
    assert "NOT_LEADER_OR_FOLLOWER" in str(info.value)


def test_high_watermark_waits_for_the_first_record_of_the_leaders_epoch():
    """Raft's commitment rule: records of older epochs commit only with one of the new epoch."""
    from kraft_testkit.protocol.records import RecordBatch, encode_batch
    h = Harness()
    h.follow(leader=2, epoch=1)
    h.tick(h.now)
    old = b"".join(encode_batch(RecordBatch.build(i, [b"old"], timestamp_ms=0, leader_epoch=1))
                   for i in range(3))
    h.reply(2, M.FetchRequest, rpc.fetch_response(0, 1, 2, 0, 0, old))
    assert (h.r.log.end_offset, h.r.hw) == (3, 0)
    h.tick(h.now + 10_000)  # the leader is gone: stand and win epoch 2
    for v in (2, 3):
        if h.r.role == "candidate":
            h.reply(v, M.VoteRequest, rpc.vote_response(0, 2, -1, True))
    assert h.r.role == "leader" and h.r._lead.epoch_start == 3
    h.request(3, fetch(epoch=2, offset=3, last_epoch=1, replica=3))  # has the old records only
    assert h.r.hw == 0
    h.request(3, fetch(epoch=2, offset=4, last_epoch=2, replica=3))  # and now the new epoch's
    assert h.r.hw == 4


def test_an_unattached_voter_keeps_its_deadline_across_epochs():
    from kraft_testkit.protocol.records import RecordBatch, encode_batch
    h = Harness()
    # give node 1 a longer log, so that it refuses the candidates below
    h.follow(leader=2, epoch=1)
    h.tick(h.now)
    h.reply(2, M.FetchRequest, rpc.fetch_response(0, 1, 2, 0, 0, encode_batch(
        RecordBatch.build(0, [b"x"], timestamp_ms=0, leader_epoch=1))))
    h.request(3, vote(epoch=5, candidate=3))  # refused: stale log; now unattached in epoch 5
    assert h.r.role == "unattached"
    deadline = h.r._deadline
    for epoch in (6, 7, 8):
        assert part(h.request(3, vote(epoch=epoch, candidate=3))).vote_granted is False
        assert h.r._deadline == deadline


# ------------------------------------------------------------------ AddRaftVoter v1


def test_add_raft_voter_v1_golden_bytes():
    """AddRaftVoterRequest v1 as 4.2's AddRaftVoterRequest.json lays it out (flexible): the v0
    fields, then AckWhenCommitted (bool, v1+, default true), then the tagged-field count."""
    body = M.AddRaftVoterRequest(
        cluster_id="c", timeout_ms=30_000, voter_id=4,
        voter_directory_id=Uuid(bytes(range(1, 17))),
        listeners=(M.AddRaftVoterRequest.Listener(name="CONTROLLER", host="h", port=9093),),
        ack_when_committed=False)
    v0_fields = bytes.fromhex(
        "0263"                               # ClusterId: compact string "c"
        "00007530"                           # TimeoutMs 30000
        "00000004"                           # VoterId 4
        "0102030405060708090a0b0c0d0e0f10"   # VoterDirectoryId
        "02"                                 # Listeners: compact array of 1
        "0b434f4e54524f4c4c4552"             # Name "CONTROLLER"
        "0268"                               # Host "h"
        "2385"                               # Port 9093 (uint16)
        "00")                                # the listener's tagged fields
    assert body.encode(1) == v0_fields + b"\x00" + b"\x00"  # AckWhenCommitted false, no tags
    assert M.AddRaftVoterRequest.decode(body.encode(1), 1) == body
    acked = body.replace(ack_when_committed=True)
    assert acked.encode(1) == v0_fields + b"\x01" + b"\x00"
    assert acked.encode(0) == v0_fields + b"\x00"  # v0 has no such field: true is implied
    assert M.AddRaftVoterRequest.decode(acked.encode(0), 0).ack_when_committed is True
    with pytest.raises(KraftError, match="AckWhenCommitted"):
        body.encode(0)  # false cannot be said in v0
    assert M.AddRaftVoterRequest().ack_when_committed is True
    response = M.AddRaftVoterResponse(error_code=0)
    assert response.encode(1) == response.encode(0)  # v1 of the response is v0
