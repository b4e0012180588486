"""The idle warp of the controllers' quorum (kraft_testkit/fastforward/warp.py) against
stepping: ``Cluster(3, 0, fast_forward=True)`` and ``fast_forward=False`` with the same seeds
and the same steps (idle stretches of seconds and of minutes, one crossing a snapshot by
interval, a follower killed and restarted, a failover, a pause, a partition, admin requests
and stops in the middle of stretches) leave every node's files byte for byte, every image,
Raft's internals, the controllers' metrics and snapshot counters, the timers (instant and
tie), the links' counters, the network's counts and DescribeQuorum equal; and the behaviour
after each stretch (what the faults do next) is the same. Trace digests differ by design (a
computed event records nothing), and are the same for the same seed within the mode."""

from __future__ import annotations

import pytest

from kraft_testkit.cluster import Cluster
from kraft_testkit.fastforward import compact
from kraft_testkit.fastforward import materialize
from kraft_testkit.fastforward import warp as warp_module
from test_fastforward_differential import _state

SNAPSHOT_EVERY = {"metadata.log.max.snapshot.interval.ms": 40_000}


def _quorum_state(c: Cluster) -> dict:
    state = _state(c)
    for n in c.controller_ids:
        proc = c.sim.process(n)
        node = proc.machine
        t = proc._timer
        state[f"timer {n}"] = None if t is None or t[3] is None else (t[0], t[1])
        if node is None:
            continue
        raft, ctrl = node.raft, node.controller
        m = ctrl.metrics
        state[f"controller {n}"] = (
            ctrl.written_offset, ctrl.last_write_ms, ctrl.now_ms, dict(ctrl.soft).get(
                "noop.last_ms"), m.last_committed_offset, m.last_applied_offset,
            m.committed_records, list(m.commit_latency_ms), node._fan_out.now_ms)
        gen = node.snapshots
        state[f"snapshots {n}"] = (gen.bytes_since, gen.last_ms, gen.snapshots)
        state[f"wakes {n}"] = (node._raft_wake, node._logic_wake, node._wake)
        state[f"raft {n}"] = (raft.epoch, raft.role, raft._next, raft.acknowledged,
                              raft._clean_at, raft.log.snapshot and raft.log.snapshot.end_offset)
        lead = raft._lead
        if lead is not None:
            state[f"lead {n}"] = (
                lead.check_deadline, sorted(lead.fetched), lead.drain_at, list(lead.pending),
                [(p.src, p.cid, p.replica_id, p.deadline, p.partition.fetch_offset)
                 for p in lead.parked],
                sorted((v, p.end_offset, p.last_fetch_ms, p.caught_up_ms)
                       for v, p in lead.voters.items()),
                [(b, p.end_offset, p.last_fetch_ms, p.caught_up_ms, p.directory_id)
                 for b, p in lead.observers.items()])
    net = c.sim.network
    state["links detail"] = sorted((src, str(dst), link.sent, link.last_at, link.last_tie)
                                   for src, row in net._links.items()
                                   for dst, link in row.items())
    state["network"] = dict(net.stats)
    for b in c.broker_ids:
        node = c.broker(b)
        if node is not None:
            lc = node.logic.lifecycle
            state[f"broker {b}"] = (lc._next_comm_ms, lc.last_contact_ms, node._raft_wake,
                                    node._logic_wake, node._wake, node.metadata_offset,
                                    node.logic.replicas._next_isr_check_ms,
                                    node.logic.replicas._next_fetch_ms)
    active = c.active_controller
    if active is not None and c.broker_ids:
        from kraft_testkit.controller.cluster import SOFT_STATE_KEY
        manager = c.controller_node(active).controller.soft[SOFT_STATE_KEY]
        state["leases"] = (sorted((b, s.metadata_offset) for b, s in manager._sessions.items()),
                           manager.tracker.items(), manager.anchor_ns)
    state["heap"] = sorted((e[0], e[1], type(e[4]).__name__ if e[4] is not None else None)
                           for e in c.sim.scheduler._heap if e[3] is not None)
    return state


def _scenario(seed: int, fast_forward: bool, *, short: bool = False,
              brokers: int = 0) -> tuple[list, Cluster]:
    c = Cluster(3, brokers, seed=seed, fast_forward=fast_forward, configs=SNAPSHOT_EVERY)
    states = []
    c.run_for(12_000)                                # idle
    states.append(_quorum_state(c))
    if short:
        return states, c
    follower = next(h for h in c.controllers if h != c.active_controller)
    c.faults.kill(follower)                          # a follower killed after a stretch
    c.run_for(4_000)
    c.faults.start(follower)
    c.run_for(9_000)
    if brokers:
        c.faults.restart(c.brokers[0])               # a broker restarted
        c.run_for(6_000)
        c.create_topic("t", 2, 1)                    # partitions led by single brokers
        c.run_for(5_000)
    states.append(_quorum_state(c))
    old = c.active_controller
    c.faults.kill(old)                               # a failover
    c.run_for(6_000)
    c.faults.start(old)
    c.run_for(8_000)
    states.append(_quorum_state(c))
    c.faults.pause(c.controllers[1])
    c.run_for(2_500)
    c.faults.resume(c.controllers[1])
    c.run_for(7_000)
    c.alter_configs(broker="", set={"log.retention.ms": "100000"})  # an admin request
    for _ in range(7):                               # stops in the middle of stretches
        c.run_for(1_300)
    states.append(_quorum_state(c))
    c.run_for(150_000)                               # minutes: snapshots by interval inside
    states.append(_quorum_state(c))
    c.network.isolate(c.active_controller)           # what follows a long stretch
    c.run_for(5_000)
    c.network.heal()
    c.run_for(10_000)
    states.append(_quorum_state(c))
    return states, c


@pytest.mark.parametrize("seed, brokers", [(1, 0), (2, 0), (3, 0), (1, 3), (6, 5)])
def test_the_warp_leaves_every_byte_as_stepping_does(seed: int, brokers: int) -> None:
    stepped, s = _scenario(seed, False, brokers=brokers)
    warped, c = _scenario(seed, True, brokers=brokers)
    for i, (a, b) in enumerate(zip(stepped, warped, strict=True)):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == b[key], (i, key)
    stats = c.fast_forward_stats
    assert stats["stretches"] > 5 and stats["events computed"] > 1_000
    assert stats["virtual ms warped"] > 100_000
    if brokers:
        assert stats["answers applied in runs"] > 1_000  # the bulk half took part
    assert any(c.replica(n).log.snapshot is not None for n in c.controller_ids)
    assert s.sim.trace.digest() != c.sim.trace.digest()  # by design


@pytest.mark.parametrize("brokers", [0, 3])
def test_same_seed_same_digest_when_warped(brokers: int) -> None:
    a = _scenario(4, True, short=True, brokers=brokers)[1]
    b = _scenario(4, True, short=True, brokers=brokers)[1]
    assert a.fast_forward_stats["stretches"] > 0
    assert a.sim.trace.digest() == b.sim.trace.digest()


def test_a_planted_bug_is_caught(monkeypatch) -> None:
    """One request id off in the materialization shows in Raft's internals."""
    stepped, _ = _scenario(5, False, short=True)
    real = compact.materialize_compact

    def off_by_one(self, pred):
        real(self, pred)
        self.c.replica(next(iter(pred.voters)))._cid += 1

    monkeypatch.setattr(compact, "materialize_compact", off_by_one)
    warped, _ = _scenario(5, True, short=True)
    assert stepped[0]["raft internals"] != warped[0]["raft internals"]


def test_a_wrong_tie_is_caught(monkeypatch) -> None:
    """A timer re-armed with another tie key shows in the heap."""
    stepped, _ = _scenario(5, False, short=True)
    real = materialize.tie_at
    monkeypatch.setattr(materialize, "tie_at", lambda key, at: real(key, at) ^ 1)
    warped, _ = _scenario(5, True, short=True)
    assert stepped[0]["heap"] != warped[0]["heap"]


def _hooked_run(fast_forward: bool) -> tuple[list, dict]:
    c = Cluster(3, 2, seed=5, fast_forward=fast_forward)
    seen: list = []
    c.sim.network.on_deliver(lambda src, dst, msg: seen.append(
        (c.now_ms, src, dst, type(getattr(msg, "body", msg)).__name__)))
    c.run_for(60_000)
    return seen, _quorum_state(c)


def test_deliver_hooks_see_every_computed_message_at_its_instant() -> None:
    """network.on_deliver (the gateway uses it) sees the warped stretch's messages as stepping
    delivers them: same messages, instants and order (it saw 52 of 1,479 before)."""
    stepped, stepped_state = _hooked_run(False)
    warped, warped_state = _hooked_run(True)
    assert len(stepped) > 1_000 and warped == stepped
    assert warped_state == stepped_state


def _armed_crash(node_of, fast_forward: bool) -> tuple:
    c = Cluster(3, 1, seed=7, fast_forward=fast_forward)
    c.run_for(5_000)
    node = node_of(c)
    c.faults.crash_in_writes(node, 40)
    c.run_for(120_000)
    return c.sim.process(node.id).state.value, _quorum_state(c)


@pytest.mark.parametrize("which", ["leader", "follower", "broker"])
def test_a_crash_armed_in_writes_happens_as_when_stepping(which: str) -> None:
    """A node with a crash armed in its next writes is not warped over: it dies at the same
    write as when stepping (the warp ignored it on the leader and broke run_for on others)."""
    pick = {"leader": lambda c: c.active_controller,
            "follower": lambda c: next(h for h in c.controllers
                                       if h.id != c.active_controller.id),
            "broker": lambda c: c.brokers[0]}[which]
    stepped = _armed_crash(pick, False)
    warped = _armed_crash(pick, True)
    assert stepped[0] == warped[0] == "killed"
    assert warped[1] == stepped[1]


def test_without_bulk_runs_every_answer_is_handed_over_and_equal(monkeypatch) -> None:
    """``QuorumWarp(bulk=False)`` (to tell a bulk-run bug from a model bug) hands every
    answer to its node and leaves the same state as stepping too."""
    real = warp_module.QuorumWarp.__init__
    monkeypatch.setattr(warp_module.QuorumWarp, "__init__",
                        lambda self, cluster, bulk=True: real(self, cluster, bulk=False))
    stepped, _ = _scenario(1, False, brokers=3, short=True)
    warped, c = _scenario(1, True, brokers=3, short=True)
    assert warped == stepped
    assert c.fast_forward_stats["events computed"] > 100
    assert not c.fast_forward_stats["answers applied in runs"]


def test_a_snapshot_past_due_is_not_asked_about_at_every_instant():
    """A snapshot by interval falls due at a node's next commit, after its horizon: the warp
    steps a retry's worth of events before it asks the model again (it used to ask at every
    instant: 35 horizon fallbacks here, now 12), and leaves the same state as stepping."""
    def run(fast_forward: bool) -> tuple[dict, Cluster]:
        c = Cluster(3, 4, seed=2, fast_forward=fast_forward,
                    configs={"metadata.log.max.snapshot.interval.ms": 60_000})
        c.run_for(310_000)
        return _quorum_state(c), c

    stepped, _ = run(False)
    warped, c = run(True)
    assert warped == stepped
    assert c.fast_forward_stats["fallback: horizon (snapshot interval on)"] <= 15
    assert c.fast_forward_stats["stretches"] >= 10


def test_the_cleaners_are_stepped_right_after_a_stretch_without_another_model_run(
        monkeypatch):
    """A stretch that stops at the log cleaners' minute hands the warp its horizon: it steps
    through them at once (no model run that would stop there again: no such fallback)."""
    runs = []
    real = warp_module.predict_quorum

    def counted(*args, **kwargs):
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(warp_module, "predict_quorum", counted)
    c = Cluster(3, 3, seed=2, fast_forward=True)
    c.run_for(10_000)
    before = len(runs)
    c.run_for(180_000)
    stats = c.fast_forward_stats
    assert stats["stretches"] >= 3
    assert not any(k.startswith("fallback: horizon (log cleaner") for k in stats)
    assert len(runs) - before <= stats["stretches"] + 2


def test_a_stretch_that_stops_at_the_noops_instant_keeps_the_noop():
    """With a short Raft fetch timeout, slow links and a long NoOp interval a follower's own
    timer can stop the model at the very instant of the leader's NoOp, after the leader's
    event there (a smaller tie): that NoOp is the stretch's, and is written there (it was
    lost, and written late by the next stretch, before the fix)."""
    from kraft_testkit.sim import LinkProfile
    from kraft_testkit.sim.link import Uniform

    def run(fast_forward: bool) -> tuple[dict, Cluster]:
        c = Cluster(3, 4, seed=173, fast_forward=fast_forward,
                    link=LinkProfile(latency=Uniform(2, 300)),
                    configs={"metadata.max.idle.interval.ms": 2000,
                             "controller.quorum.fetch.timeout.ms": 1000})
        c.create_topic("t", 4, 3)
        c.run_for(30_000)
        return _quorum_state(c), c

    stepped, _ = run(False)
    warped, c = run(True)
    assert c.fast_forward_stats["stretches"] >= 5
    assert {k for k in stepped if stepped[k] != warped[k]} == set()
