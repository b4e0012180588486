"""The brokers' metadata fetches at the leader in a warp are set from the model, not replayed
(``kraft_testkit/fastforward/follower_fetches.py``): the leader's record of every broker, its
parked fetches, its wake-ups and the brokers' messages still in flight end as stepping
leaves them. The stops are chosen where that is hardest: one millisecond before a broker's
answer or fetch arrives (the message is in flight at the end of the stretch, rebuilt by the
warp), and the planted bugs show each part is looked at."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward import follower_fetches, broker_runs
from kraft_testkit.fastforward import quorum_model
from kraft_testkit.fastforward.bulk import InexactFastForward
from test_fastforward_warp import _quorum_state

BOOT_MS = 12_000


def _stops(seed: int, brokers: int) -> list[int]:
    """Instants one ms before a broker's fetch answer or fetch arrives, from a stepped run."""
    c = Cluster(3, brokers, seed=seed)
    c.run_for(BOOT_MS)
    arrivals: dict[str, list[int]] = {"FetchResponse": [], "FetchRequest": []}
    brokers_ = set(c.broker_ids)

    def hook(src, dst, msg):
        name = type(getattr(msg, "body", msg)).__name__
        if name in arrivals and brokers_ & {src, dst} and c.sim.scheduler.now_ms > BOOT_MS:
            arrivals[name].append(c.sim.scheduler.now_ms)

    c.sim.network.on_deliver(hook)
    c.run_for(8_000)
    picks = arrivals["FetchResponse"][::37][:8] + arrivals["FetchRequest"][::41][:8]
    return sorted({t - 1 for t in picks})


def _run(seed: int, brokers: int, fast_forward: bool, stops: list[int]) -> tuple[list, Cluster]:
    c = Cluster(3, brokers, seed=seed, fast_forward=fast_forward)
    c.run_for(BOOT_MS)
    states = [_quorum_state(c)]
    for t in stops:
        c.run_for(t - c.sim.scheduler.now_ms)
        states.append(_quorum_state(c))
    c.run_for(30_000)  # what the state left at each stop does next
    states.append(_quorum_state(c))
    return states, c


def _differs(seed: int, brokers: int) -> set:
    stops = _stops(seed, brokers)
    stepped, _ = _run(seed, brokers, False, stops)
    warped, c = _run(seed, brokers, True, stops)
    assert c.fast_forward_stats["stretches"] >= len(stops) // 2
    return {key for a, b in zip(stepped, warped, strict=True) for key in a if a[key] != b[key]}


@pytest.fixture
def counted(monkeypatch) -> dict:
    """How often the warp rebuilt a message in flight, by kind, and applied a broker's run
    with its logic acting at the last answer (a heartbeat leaving there: "acted")."""
    seen = {"fetch": 0, "answer": 0, "acted": 0}
    in_flight, apply = follower_fetches.FollowerFetches.in_flight, broker_runs.AnswerRun.apply

    def count_in_flight(self, kind, arg, at, tie):
        seen[kind] += 1
        return in_flight(self, kind, arg, at, tie)

    def count_apply(self, runs, acts=False):
        last, sends = apply(self, runs, acts)
        seen["acted"] += bool(sends)
        return last, sends

    monkeypatch.setattr(follower_fetches.FollowerFetches, "in_flight", count_in_flight)
    monkeypatch.setattr(broker_runs.AnswerRun, "apply", count_apply)
    return seen


@pytest.mark.parametrize("seed, brokers", [(1, 3), (5, 10)])  # (5, 10): a heartbeat acts
def test_the_leader_and_the_brokers_end_as_stepping_leaves_them(seed, brokers, counted) -> None:
    assert _differs(seed, brokers) == set()
    # the stops put both kinds of message in flight at the end of stretches
    assert counted["fetch"] > 0 and counted["answer"] > 0, counted
    assert counted["acted"] > 0 or brokers < 10, counted  # a heartbeat left at a commit


def test_a_broker_record_left_behind_is_caught(monkeypatch) -> None:
    """The leader's record of a broker keeps its fetch time from before the stretch."""
    real = follower_fetches.FollowerFetches.finish

    def finish(self, pred):
        before = {b: p.last_fetch_ms for b, p in self.lead.observers.items()}
        real(self, pred)
        for b, p in self.lead.observers.items():
            p.last_fetch_ms = before[b]

    monkeypatch.setattr(follower_fetches.FollowerFetches, "finish", finish)
    differs = _differs(1, 3)
    assert any(key.startswith("lead ") for key in differs), differs


def test_an_answer_in_flight_rebuilt_wrong_is_caught(monkeypatch) -> None:
    """The answer still in flight carries a high watermark one below the leader's."""
    real = follower_fetches.FollowerFetches.in_flight

    def in_flight(self, kind, arg, at, tie):
        if kind == "answer":
            arg = (arg[0], arg[1], arg[2] - 1)
            self.start.pop((self.leader, arg[0]), None)
        return real(self, kind, arg, at, tie)

    monkeypatch.setattr(follower_fetches.FollowerFetches, "in_flight", in_flight)
    assert _differs(1, 3)


def test_a_wrong_leader_wake_up_is_caught(monkeypatch) -> None:
    """The leader's node wake-up after the stretch one millisecond late."""
    real = quorum_model._Model.run

    def run(self):
        pred = real(self)
        if pred.leader_wakes is not None:
            at, raft_wake, node_wake = pred.leader_wakes
            pred.leader_wakes = (at, raft_wake, node_wake + 1)
        return pred

    monkeypatch.setattr(quorum_model._Model, "run", run)
    try:
        differs = _differs(1, 3)
    except InexactFastForward as e:  # or a later stretch finds the NoOp task off its instant
        assert "NoOp" in str(e)
        return
    assert any(key.startswith(("wakes ", "timer ", "heap")) for key in differs), differs


def _replicated_after_warp(fast_forward: bool) -> list:
    c = Cluster(3, 3, seed=3, fast_forward=fast_forward)
    c.run_for(60_000)
    states = [_quorum_state(c)]
    c.create_topic("r3", 3, 3)  # the brokers start fetching from each other
    c.run_for(20_000)
    return states + [_quorum_state(c)]


def test_a_replicated_topic_after_a_warp_fetches_as_stepping_does() -> None:
    """A broker's replica-fetch timer moves at every run of its logic, each commit included,
    even while it follows no partition: a run of held answers moves it as their commits would,
    so a topic created after the stretch starts its fetches at stepping's instants."""
    stepped, warped = _replicated_after_warp(False), _replicated_after_warp(True)
    assert [{k for k in a if a[k] != b[k]} for a, b in zip(stepped, warped)] == [set(), set()]
