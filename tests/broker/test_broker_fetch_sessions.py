"""KIP-227 sessions between brokers (``broker/replica_fetch.py``): the follower's requests from
its dirty partitions are the ones Kafka's handler builds from every partition, and the
brokers' replica states (the leaders' records of their followers, the followers' last
fetches, the ISRs) are those of fetching every partition at every fetch, through kills,
restarts, new partitions, deleted topics and leader moves."""

from __future__ import annotations

import copy

import pytest

from kraft_testkit.broker import fetch_session as fs
from kraft_testkit.broker import replica_fetch
from kraft_testkit.broker.replicas import ReplicaManager, caught_up_min
from kraft_testkit.cluster import Cluster


def _scenario(seed: int, snaps: list) -> Cluster:
    c = Cluster(1, 4, seed=seed)

    def snap() -> None:
        snaps.append((c.now_ms, _replica_states(c)))
        _check_isr_summaries(c)

    c.create_topic("a", 6, 3)
    c.create_topic("b", 3, 2)
    c.run_for(4_000)
    snap()
    victim = c.brokers[1]
    c.faults.kill(victim)
    for _ in range(12):  # fenced: leaders move, new leader epochs, ISRs shrink
        c.run_for(1_000)
        _check_isr_summaries(c)
    snap()
    c.faults.start(victim)
    c.create_partitions("a", 9)
    c.run_for(8_000)
    snap()
    c.delete_topic("b")
    c.create_topic("b", 2, 3)  # the same name, a new topic id: replaced in the sessions
    c.run_for(30_000)
    snap()
    return c


def _check_isr_summaries(c: Cluster) -> None:
    """``isr_summary`` (kept between changes) says what a walk over the led partitions says."""
    for b in c.broker_ids:
        logic = getattr(c.broker(b), "logic", None)
        if logic is None:
            continue
        rm = logic.replicas
        walked: dict = {}
        missing = False
        for r in rm.replicas.values():
            if r.leader == b:
                for f in r.isr:
                    if f != b:
                        state = r.followers.get(f)
                        missing |= state is None
                        if state is not None:
                            walked[f] = min(walked.get(f, 1 << 62), state.last_caught_up_ms)
        summary = rm.isr_summary()
        assert summary is None if missing else \
            {f: caught_up_min(e) for f, e in summary.items()} == walked


def _replica_states(c: Cluster) -> list:
    out = []
    for b in c.broker_ids:
        machine = c.broker(b)
        logic = getattr(machine, "logic", None)
        if logic is None:
            continue
        rm = logic.replicas
        out.append((b, sorted(
            (r.name, r.leader, r.leader_epoch, r.isr, r.last_fetched_ms, tuple(sorted(
                (f, s.last_fetch_ms, s.last_caught_up_ms, s.broker_epoch)
                for f, s in r.followers.items())))
            for r in rm.replicas.values()), list(logic.events)[-50:]))
    return out


@pytest.mark.parametrize("seed", [1, 5])
def test_sessions_leave_the_replicas_as_fetching_everything_does(seed, monkeypatch):
    with_sessions: list = []
    c = _scenario(seed, with_sessions)
    sessions = sum(len(c.broker(b).logic.replicas._cache.sessions())  # noqa: SLF001
                   for b in c.broker_ids)
    assert sessions >= 4  # the incremental path was taken
    # the same run with every fetch a full, sessionless one (Kafka's pre-KIP-227 fetch)
    monkeypatch.setattr(fs, "INITIAL", fs.LEGACY)
    monkeypatch.setattr(fs.FetchSessionHandler, "handle_error", lambda self: None)
    without: list = []
    c2 = _scenario(seed, without)
    assert not any(c2.broker(b).logic.replicas._cache.sessions()  # noqa: SLF001
                   for b in c2.broker_ids)
    assert with_sessions == without


def test_incremental_requests_are_the_ones_kafkas_builder_makes(monkeypatch):
    """Every request built from the dirty partitions equals Kafka's ``Builder#build`` over
    every partition the follower wants from that leader (a copy of the handler)."""
    built = ReplicaManager._fetch_request  # noqa: SLF001
    checked = {"full": 0, "incremental": 0, "with changes": 0}

    def check(self, leader):
        h = self._handlers.get(leader)  # noqa: SLF001
        shadow = copy.deepcopy(h) if h is not None else fs.FetchSessionHandler(leader)
        if leader in self._fetch_cids:  # noqa: SLF001
            shadow.handle_error()
        follows = self._by_leader[leader]  # noqa: SLF001
        want = {tp: replica_fetch._partition_data(follows[tp]) for tp in sorted(follows)}
        expected = shadow.build(want)
        request = built(self, leader)
        real = self._handlers[leader]  # noqa: SLF001
        assert (request.session_id, request.session_epoch) == tuple(expected.metadata)
        assert list(real.session_partitions.items()) == list(expected.session_partitions.items())
        sent = [((t.topic, p.partition), p.current_leader_epoch) for t in request.topics
                for p in t.partitions]
        assert sent == [(tp, d.current_leader_epoch) for tp, d in expected.to_send.items()]
        forgotten = sorted((t.topic, p) for t in request.forgotten_topics_data
                           for p in t.partitions)
        assert forgotten == sorted((x.topic, x.partition)
                                   for x in [*expected.to_forget, *expected.to_replace])
        kind = "full" if expected.metadata.is_full else "incremental"
        checked[kind] += 1
        if kind == "incremental" and (sent or forgotten):
            checked["with changes"] += 1
        return request

    monkeypatch.setattr(ReplicaManager, "_fetch_request", check)
    _scenario(3, [])
    assert checked["full"] >= 4 and checked["incremental"] > 100 and checked["with changes"] >= 3


def test_an_idle_followers_fetch_carries_no_partition():
    c = Cluster(1, 3, seed=2)
    c.create_topic("t", 12, 3)
    c.run_for(5_000)
    seen = []
    orig = replica_fetch.ReplicaFetching.handle_fetch

    def spy(self, req, now_ms):
        answer = orig(self, req, now_ms)
        seen.append((req.session_id, req.session_epoch, len(req.topics), answer.session_id,
                     len(answer.responses)))
        return answer

    replica_fetch.ReplicaFetching.handle_fetch = spy
    try:
        c.run_for(5_000)
    finally:
        replica_fetch.ReplicaFetching.handle_fetch = orig
    assert len(seen) >= 20
    assert all(sid != 0 and epoch > 0 and topics == 0 and asid == sid and answers == 0
               for sid, epoch, topics, asid, answers in seen)
