"""A voter's fetch at the leader that moves nothing but the leader's record of that voter is
applied by the fetch handler alone in a warp (``Computed.narrow`` on a voter's fetch: the
leader's events off the node's full path). Against stepping, the leader's record of every
voter (end offset, last fetch and caught-up times), the check-quorum deadline, the parked
fetches and the wake-ups end the same; a planted bug in either half (the record, the
wake-ups) is caught."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward import warp as warp_module
from test_fastforward_warp import _quorum_state


def _run(seed: int, brokers: int, fast_forward: bool) -> tuple[list, Cluster]:
    """Idle, then stops at many instants: a stretch then often ends just after a voter's
    fetch, where the wake-ups it left are the ones the timers keep."""
    c = Cluster(3, brokers, seed=seed, fast_forward=fast_forward)
    # a delivery hook keeps the warp on its replay path, where a voter's fetch at the leader
    # runs the fetch handler alone (a compact stretch runs no leader code: that is
    # test_fastforward_broker_fetches.py's); stepping is the same with or without it
    c.sim.network.on_deliver(lambda src, dst, msg: None)
    c.run_for(12_000)
    states = [_quorum_state(c)]
    for i in range(25):
        c.run_for(300 + 37 * i)
        states.append(_quorum_state(c))
    return states, c


def _from_voter(machine, ev) -> bool:
    return ev.kind == "fetch" and ev.peer in machine.raft.voters


def _compare(seed: int, brokers: int, monkeypatch=None, plant=None) -> set:
    stepped, _ = _run(seed, brokers, False)
    if plant is not None:
        real = warp_module.QuorumWarp._leader_alone

        def planted(machine, ev, msg):
            return plant(real, machine, ev, msg)

        monkeypatch.setattr(warp_module.QuorumWarp, "_leader_alone", staticmethod(planted))
    warped, c = _run(seed, brokers, True)
    assert c.fast_forward_stats["voter fetches at the leader alone"] > 20
    return {key for a, b in zip(stepped, warped, strict=True) for key in a if a[key] != b[key]}


@pytest.mark.parametrize("seed, brokers", [(1, 0), (2, 3), (7, 10)])
def test_voter_fetches_alone_leave_the_leader_as_stepping_does(seed: int,
                                                                brokers: int) -> None:
    assert _compare(seed, brokers) == set()


def test_a_voter_record_left_behind_is_caught(monkeypatch) -> None:
    """The handler runs, but the leader's record of the voter keeps its old fetch time."""
    def plant(real, machine, ev, msg):
        lead = machine.raft._lead
        if not _from_voter(machine, ev):
            return real(machine, ev, msg)
        before = lead.voters[ev.peer].last_fetch_ms
        effects = real(machine, ev, msg)
        lead.voters[ev.peer].last_fetch_ms = before
        return effects

    differs = _compare(3, 3, monkeypatch, plant)
    assert any(key.startswith("lead ") for key in differs), differs


@pytest.mark.parametrize("which", [0, 1])
def test_a_wrong_wake_up_is_caught(monkeypatch, which: int) -> None:
    """Raft's wake-up (0) or the node's (1) after a voter's fetch one millisecond late."""
    def plant(real, machine, ev, msg):
        if _from_voter(machine, ev):
            ev.narrow = tuple(w + (i == which) for i, w in enumerate(ev.narrow))
        return real(machine, ev, msg)

    differs = _compare(1, 0, monkeypatch, plant)
    assert any(key.startswith(("wakes ", "timer ", "heap")) for key in differs), differs
