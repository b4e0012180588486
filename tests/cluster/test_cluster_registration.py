"""Registration, broker epochs, leases and fencing (KIP-631), self-fencing (KIP-343), through the
public Cluster facade with wire mode and invariants on, over many seeds."""

from __future__ import annotations

import random

import pytest
from cluster_scn_helpers import (
    COMMIT_SLACK_MS,
    FENCE_CHECK_MS,
    HEARTBEAT_MS,
    RTT_SLACK_MS,
    SELF_FENCE_MS,
    SESSION_MS,
    Spy,
    boot,
    cluster_with_epoch_invariant,
    controller_contact_ms,
    fence_records,
    fence_watch,
    fenced_at,
    heartbeat,
    heartbeat_manager,
    led_by,
    log_records,
    name,
    of_type,
    partitions,
    registration,
    unfence_records,
)

from kraft_testkit.cluster import Cluster
from kraft_testkit.errors import ConfigError
from kraft_testkit.protocol.uuid import Uuid
from kraft_testkit.sim.errors import InvariantViolation

SEEDS = range(8)


# ------------------------------------------------------------------ registration and epochs


@pytest.mark.parametrize("seed", range(12))
def test_brokers_register_run_and_epoch_is_registration_offset(seed, tmp_path):
    c = Cluster(3, 3, seed=seed)
    assert c.all_brokers_running()
    records = log_records(c, tmp_path / "log")
    registrations = of_type(records, "RegisterBrokerRecord")
    epochs = set()
    for b in c.broker_ids:
        st = c.broker_state(b)
        assert (st.registered, st.fenced, st.state, st.self_fenced) == (True, False, "RUNNING",
                                                                        False)
        machine = c.broker(b)
        assert machine.logic.broker_epoch == st.epoch  # what the broker was told
        mine = [r for r in registrations if r.msg.broker_id == b]
        assert mine, f"no RegisterBrokerRecord for broker {b}"
        current = [r for r in mine if r.msg.broker_epoch == st.epoch]
        assert len(current) == 1
        # the broker epoch is the offset of the RegisterBrokerRecord of this incarnation
        assert current[0].offset == st.epoch
        assert current[0].msg.incarnation_id == machine.logic.incarnation_id
        assert current[0].msg.fenced is True  # a new incarnation starts fenced
        # ...and is unfenced later, by a record naming the same epoch
        unfences = unfence_records(records, b)
        assert unfences and all(u.offset > st.epoch and u.msg.broker_epoch == st.epoch
                                for u in unfences)
        epochs.add(st.epoch)
    assert len(epochs) == len(c.broker_ids)
    # every RegisterBrokerRecord of a new incarnation sits at the offset it names
    first_of_incarnation = {}
    for r in registrations:
        first_of_incarnation.setdefault(r.msg.incarnation_id, r)
    assert all(r.offset == r.msg.broker_epoch for r in first_of_incarnation.values())


@pytest.mark.parametrize("seed", [9, 11, 21])
def test_broker_restart_with_builtin_invariants(seed):
    c = Cluster(3, 3, seed=seed)
    b = seed % 3
    old = c.broker_state(b).epoch
    c.faults.restart(b)
    c.run_until(lambda c: c.broker_state(b).epoch != old and c.broker_state(b).state == "RUNNING"
                and not c.broker_state(b).fenced, 40_000)
    c.create_topic("x", 3, 3)
    c.run_for(3_000)


@pytest.mark.parametrize("seed", range(6))
def test_restarted_broker_gets_a_higher_epoch_at_its_new_registration_offset(seed, tmp_path):
    c = cluster_with_epoch_invariant(3, 3, seed=seed)
    b = seed % 3
    old = c.broker_state(b)
    killed_at = c.now_ms
    c.faults.restart(b)
    # the old incarnation holds its id until its lease runs out: the new one is refused
    # (DUPLICATE_BROKER_REGISTRATION) and retries every heartbeat interval, so this takes about
    # a session
    c.run_until(lambda c: c.broker_state(b).epoch != old.epoch, 40_000)
    assert c.now_ms >= killed_at + SESSION_MS - HEARTBEAT_MS - RTT_SLACK_MS
    c.run_until(lambda c: c.broker_state(b).state == "RUNNING" and not c.broker_state(b).fenced,
                30_000)
    new = c.broker_state(b)
    assert new.epoch > old.epoch
    records = log_records(c, tmp_path / "log")
    regs = [r for r in of_type(records, "RegisterBrokerRecord") if r.msg.broker_id == b]
    assert [r.msg.broker_epoch for r in regs][:1] == [old.epoch]
    last = next(r for r in regs if r.msg.broker_epoch == new.epoch)
    assert last.offset == new.epoch
    assert last.msg.incarnation_id == c.broker(b).logic.incarnation_id
    # the old incarnation was fenced by its lease before the new one registered
    assert any(f.msg.broker_epoch == old.epoch and f.offset < new.epoch
               for f in fence_records(records, b))


@pytest.mark.parametrize("seed", range(3))
def test_restarted_broker_whose_old_incarnation_is_fenced_registers_after_a_failover(seed):
    c = cluster_with_epoch_invariant(3, 3, seed=seed)
    b = seed % 3
    old = c.broker_state(b).epoch
    c.faults.kill(b)
    fenced_at(c, b)
    active = c.active_controller
    c.faults.kill(active)
    c.run_until(lambda c: c.active_controller not in (None, active), 20_000)
    c.faults.start(active)
    started = c.now_ms
    c.faults.start(b)
    c.run_until(lambda c: c.broker_state(b).epoch != old, 40_000)
    assert c.now_ms - started < 2_000, "refused while its fenced predecessor held a fresh lease"


# ------------------------------------------------------------------ leases


@pytest.mark.parametrize("seed", SEEDS)
def test_isolated_broker_is_fenced_after_the_session_timeout(seed):
    c = Cluster(3, 3, seed=seed)
    c.create_topic("t", 6, 3)
    b = seed % 3
    isolated_at = c.now_ms
    contact_before = controller_contact_ms(c, b)
    c.network.isolate(b)
    t_fenced, contact = fence_watch(c, b)
    # no contact after the isolation; the lease is what the controller last heard, + timeout,
    # and the check that notices runs every session/8 (Kafka 4.2.1 maybeFenceStaleBroker):
    # fenced 9-10.125 s after the last contact
    assert contact_before <= contact <= isolated_at
    assert t_fenced >= contact + SESSION_MS + 1, "fenced before the lease ran out"
    assert t_fenced <= contact + SESSION_MS + FENCE_CHECK_MS + COMMIT_SLACK_MS
    # relative to the isolation: at least a session minus one heartbeat interval
    assert isolated_at + SESSION_MS - HEARTBEAT_MS - RTT_SLACK_MS <= t_fenced
    assert t_fenced <= isolated_at + SESSION_MS + FENCE_CHECK_MS + COMMIT_SLACK_MS
    img = c.metadata
    assert led_by(img, b) == [], "a fenced broker leads nothing"
    for _, _, p in partitions(img):
        assert b not in p.isr or p.isr == (b,)
        assert p.leader != -1  # the others were there to take over
    others = [o for o in c.broker_ids if o != b]
    assert not any(c.broker_state(o).fenced for o in others)
    assert c.controller_metrics().fenced_broker_count == 1


@pytest.mark.parametrize("seed,session,heartbeat,kwargs", [
    (0, 5_000, HEARTBEAT_MS, {"configs": {"broker.session.timeout.ms": 5_000}}),
    (1, 5_000, HEARTBEAT_MS, {"configs": {"broker.session.timeout.ms": 5_000}}),
    (2, 18_000, 3_000, {"seed_defaults": True}),   # the seeds' 18000 / 3000
    (3, 18_000, 3_000, {"seed_defaults": True}),
    (4, 12_000, 1_000, {"configs": {"broker.session.timeout.ms": 12_000,
                                    "broker.heartbeat.interval.ms": 1_000}}),
])
def test_session_timeout_follows_the_configuration(seed, session, heartbeat, kwargs):
    c = Cluster(3, 3, seed=seed, broker_self_fencing=True, **kwargs)
    b = seed % 3
    isolated_at = c.now_ms
    c.network.isolate(b)
    t_fenced, contact = fence_watch(c, b, timeout_ms=2 * session)
    # the lease check's period follows: session/8 (maybeFenceStaleBrokerPeriodNs)
    assert contact + session + 1 <= t_fenced <= contact + session + session // 8 + COMMIT_SLACK_MS
    assert isolated_at + session - heartbeat - RTT_SLACK_MS <= t_fenced
    # KIP-343's broker-side timeout follows: twice the session unless set
    c.run_until(lambda c: c.broker_state(b).self_fenced, 3 * session)
    assert c.now_ms == c.broker(b).logic.lifecycle.last_contact_ms + 2 * session + 1


@pytest.mark.parametrize("seed", range(5))
def test_broker_cut_off_from_the_controllers_only(seed):
    """Cut from the controllers but not from the other brokers: fenced all the same (and its
    followers, which still reach it, do not keep it a leader)."""
    c = Cluster(3, 3, seed=seed, broker_self_fencing=True)
    c.create_topic("t", 6, 3)
    b = seed % 3
    c.network.partition([b], c.controller_ids)
    t_fenced, contact = fence_watch(c, b)
    assert contact + SESSION_MS + 1 <= t_fenced <= \
        contact + SESSION_MS + FENCE_CHECK_MS + COMMIT_SLACK_MS
    assert led_by(c.metadata, b) == []
    c.run_until(lambda c: c.broker_state(b).self_fenced, 2 * SESSION_MS)
    c.network.heal()
    c.run_until(lambda c: not c.broker_state(b).fenced and not c.broker_state(b).self_fenced
                and all(b in p.isr for _, _, p in partitions(c.metadata)), 60_000)


@pytest.mark.parametrize("seed", SEEDS)
def test_two_isolated_brokers_are_fenced_one_per_event(seed, tmp_path):
    """Isolated at the same instant, two brokers are fenced by two separate lease checks: each
    fencing is its own group of records (partition changes, then the fence), the second one
    computed on top of the first, at different offsets."""
    c = Cluster(3, 4, seed=seed)
    c.create_topic("t", 8, 3)
    pair = sorted(((seed % 4), (seed + 1) % 4))
    contacts = {b: controller_contact_ms(c, b) for b in pair}
    for b in pair:
        c.network.isolate(b)
    c.run_until(lambda c: all(c.broker_state(b).fenced for b in pair), 30_000)
    records = log_records(c, tmp_path / "log")
    fences = {b: fence_records(records, b)[-1] for b in pair}
    first, second = sorted(pair, key=lambda b: fences[b].offset)
    assert fences[first].offset != fences[second].offset
    # a lease that ran out a whole check period before the other is fenced first (when both
    # ran out before the same check, the tracker's order decides: maybeRemoveExpired)
    if abs(contacts[second] - contacts[first]) > FENCE_CHECK_MS:
        assert contacts[first] < contacts[second]
    # nothing of the second fencing is interleaved with the first: after the first fence
    # record come the second's partition changes, which already reflect the first fencing
    between = [r for r in records if fences[first].offset < r.offset < fences[second].offset]
    assert all(r.type in ("PartitionChangeRecord", "NoOpRecord") for r in between)
    for r in between:
        if r.type == "PartitionChangeRecord" and r.msg.isr is not None:
            assert first not in r.msg.isr or list(r.msg.isr) == [first]
    # when the two leases ran out more than two check periods apart, they are fenced by checks
    # more than a period apart: separate batches too (10 ms apart they may share a linger)
    if contacts[second] - contacts[first] > 2 * FENCE_CHECK_MS:
        assert fences[first].batch != fences[second].batch


@pytest.mark.parametrize("seed", range(5))
def test_leases_expiring_at_the_same_instant_are_fenced_one_at_a_time(seed, tmp_path):
    """Two brokers isolated, then the active controller killed: the new active controller gives
    both the same fresh lease (ClusterControlManager#activate), which runs out for both at one
    instant. The 9th check after activation (10125 ms: at 9000 the lease is still valid) fences
    one, the next run 10 ms later (PeriodicTask's immediate period) the other, as separate
    appends (the second computed on the first's result)."""
    c = Cluster(3, 4, seed=seed)
    c.create_topic("t", 8, 3)
    pair = [seed % 4, (seed + 2) % 4]
    for b in pair:
        c.network.isolate(b)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 20_000)
    activated = heartbeat_manager(c).activated_at_ms
    c.run_until(lambda c: all(c.broker_state(b).fenced for b in pair), 30_000)
    assert activated + 9 * FENCE_CHECK_MS + 10 <= c.now_ms <= \
        activated + 9 * FENCE_CHECK_MS + 10 + COMMIT_SLACK_MS
    records = log_records(c, tmp_path / "log")
    fences = sorted((fence_records(records, b)[-1] for b in pair), key=lambda r: r.offset)
    assert fences[0].offset < fences[1].offset
    assert {f.msg.broker_id for f in fences} == set(pair)
    first = fences[0].msg.broker_id
    second_group = [r for r in records if fences[0].offset < r.offset < fences[1].offset]
    assert all(r.type == "PartitionChangeRecord" for r in second_group)
    for r in second_group:
        if r.msg.isr is not None:
            assert first not in r.msg.isr or list(r.msg.isr) == [first]
    assert led_by(c.metadata, pair[0]) == led_by(c.metadata, pair[1]) == []


NO_LINGER = {"controller.quorum.append.linger.ms": 0}


@pytest.mark.parametrize("seed", SEEDS)
def test_without_linger_two_isolated_brokers_are_fenced_in_separate_batches(seed, tmp_path):
    """With controller.quorum.append.linger.ms=0 each controller event is its own Raft batch:
    two brokers isolated at once are fenced by two lease checks, in two batches."""
    c = Cluster(3, 4, seed=seed, configs=NO_LINGER)
    c.create_topic("t", 8, 3)
    pair = sorted(((seed % 4), (seed + 1) % 4))
    for b in pair:
        c.network.isolate(b)
    c.run_until(lambda c: all(c.broker_state(b).fenced for b in pair), 30_000)
    records = log_records(c, tmp_path / "log")
    f0, f1 = sorted((fence_records(records, b)[-1] for b in pair), key=lambda r: r.offset)
    assert f0.offset < f1.offset
    assert f0.batch != f1.batch
    assert {f0.msg.broker_id, f1.msg.broker_id} == set(pair)
    # each batch fences exactly one broker
    for f in (f0, f1):
        assert len(fence_records([r for r in records if r.batch == f.batch])) == 1


@pytest.mark.parametrize("seed", range(3))
def test_without_linger_same_instant_expiries_are_fenced_in_separate_batches(seed, tmp_path):
    c = Cluster(3, 4, seed=seed, configs=NO_LINGER)
    c.create_topic("t", 8, 3)
    pair = [seed % 4, (seed + 2) % 4]
    for b in pair:
        c.network.isolate(b)
    old = c.active_controller
    c.faults.kill(old)
    c.run_until(lambda c: c.active_controller not in (None, old), 20_000)
    c.run_until(lambda c: all(c.broker_state(b).fenced for b in pair), 30_000)
    records = log_records(c, tmp_path / "log")
    f0, f1 = sorted((fence_records(records, b)[-1] for b in pair), key=lambda r: r.offset)
    assert f0.batch != f1.batch


@pytest.mark.parametrize("seed", SEEDS)
def test_new_active_controller_gives_every_broker_a_fresh_lease(seed):
    c = Cluster(3, 3, seed=seed)
    c.create_topic("t", 3, 3)
    b = (seed + 1) % 3
    old = c.active_controller
    c.faults.kill(old)
    killed_at = c.now_ms
    c.network.isolate(b)  # right after: it never talks to the new active controller
    c.run_until(lambda c: c.active_controller not in (None, old), 20_000)
    activated = heartbeat_manager(c).activated_at_ms
    assert activated >= killed_at
    # no broker is fenced before a full session timeout after the new activation (a broker
    # that has not found the new controller yet, as an observer may take a while to, included);
    # the checks run every 1125 ms from activation, and the one at +9000 still finds the lease
    # valid (isExpired is strict): the 9th, at +10125, fences it
    c.run_for(activated + 9 * FENCE_CHECK_MS - 1 - c.now_ms)
    assert not any(c.broker_state(o).fenced for o in c.broker_ids)
    t_fenced = fenced_at(c, b)
    assert activated + 9 * FENCE_CHECK_MS <= t_fenced <= \
        activated + 9 * FENCE_CHECK_MS + COMMIT_SLACK_MS
    assert led_by(c.metadata, b) == []


# ------------------------------------------------------------------ unfencing


@pytest.mark.parametrize("seed", range(10))
def test_brokers_are_unfenced_only_once_caught_up(seed):
    """Every heartbeat answer that unfences a broker answers a heartbeat that asked for it
    (WantFence false) and reported a metadata offset at or past the broker's registration."""
    c = Cluster(3, 3, seed=seed, boot=False)
    spy = Spy(c)
    boot(c)
    for b in c.broker_ids:
        sent = {cid: req for _, _, cid, req in spy.heartbeats(b)}
        unfenced = [(t, cid, resp) for t, _, cid, resp in spy.heartbeat_answers(b)
                    if resp.error_code == 0 and not resp.is_fenced]
        assert unfenced, f"broker {b} was never told it is unfenced"
        t, cid, resp = unfenced[0]
        req = sent[cid]
        assert req.want_fence is False
        assert req.current_metadata_offset >= req.broker_epoch
        assert resp.is_caught_up
        # and every earlier answer to that epoch said fenced
        earlier = [r for tt, _, _, r in spy.heartbeat_answers(b) if tt < t and r.error_code == 0]
        assert all(r.is_fenced for r in earlier)


@pytest.mark.parametrize("seed", range(6))
def test_crafted_broker_is_unfenced_only_at_its_registration_offset(seed):
    c = Cluster(3, 3, seed=seed)
    fake = 50 + seed
    r = c.request(registration(c, fake, Uuid.random(random.Random(seed))))
    assert name(r.error_code) == "NONE"
    epoch = r.broker_epoch
    reg = c.metadata.cluster.broker(fake)
    assert reg.epoch == epoch and reg.fenced
    # behind its own registration: stays fenced, not caught up
    r = c.request(heartbeat(fake, epoch, epoch - 1))
    assert (name(r.error_code), r.is_caught_up, r.is_fenced) == ("NONE", False, True)
    assert c.metadata.cluster.broker(fake).fenced
    # caught up but still asking to be fenced: stays fenced
    r = c.request(heartbeat(fake, epoch, epoch, want_fence=True))
    assert (r.is_caught_up, r.is_fenced) == (True, True)
    # caught up and asking: unfenced, and the committed image says so when the answer comes
    r = c.request(heartbeat(fake, epoch, epoch))
    assert (r.is_caught_up, r.is_fenced) == (True, False)
    assert not c.metadata.cluster.broker(fake).fenced
    assert c.controller_metrics().active_broker_count == 4
    # it sends nothing more: its lease runs out and it is fenced again
    c.run_until(lambda c: c.metadata.cluster.broker(fake).fenced, SESSION_MS + 2 * HEARTBEAT_MS)


# ------------------------------------------------------------------ KIP-343 self-fencing (opt-in)


@pytest.mark.parametrize("seed", range(3))
def test_released_kafka_an_isolated_broker_serves_on_and_comes_back(seed):
    """The default, as released Kafka: the controller fences the cut-off broker and moves its
    leaders away; the broker does not fence itself (no KIP-343 timeout) and keeps serving what it
    believes; after the heal it learns it was fenced, and is unfenced and in the ISR again."""
    c = Cluster(3, 3, seed=seed)
    c.create_topic("t", 3, 3)
    b = (seed + 2) % 3
    c.network.isolate(b)
    fenced_at(c, b)
    c.run_for(4 * SESSION_MS)  # long past where KIP-343 would have fenced it
    s = c.broker_state(b)
    assert s.fenced and not s.self_fenced and s.state == "RUNNING"
    assert c.broker(b).logic.serving
    assert led_by(c.metadata, b) == []
    c.network.heal()
    c.run_until(lambda c: not c.broker_state(b).fenced
                and all(b in p.isr for _, _, p in partitions(c.metadata)), 60_000)


def test_the_kip343_timeout_needs_self_fencing_on():
    with pytest.raises(ConfigError, match="broker_self_fencing=True"):
        Cluster(configs={"broker.heartbeat.timeout.ms": 30_000})
    c = Cluster(1, 1, broker_self_fencing=True, configs={"broker.heartbeat.timeout.ms": 30_000})
    assert c.config.broker_self_fencing and c.config.broker_heartbeat_timeout_ms == 30_000
    assert "broker_self_fencing=True" in c.sim.replay_hint


@pytest.mark.parametrize("seed,timeout", [(s, None) for s in SEEDS] + [(s, 12_000) for s in range(3)])
def test_isolated_broker_fences_itself_and_recovers_after_heal(seed, timeout):
    configs = {} if timeout is None else {"broker.heartbeat.timeout.ms": timeout}
    self_fence_ms = SELF_FENCE_MS if timeout is None else timeout
    c = Cluster(3, 3, seed=seed, configs=configs, broker_self_fencing=True)
    c.create_topic("t", 3, 3)
    b = (seed + 2) % 3
    epoch = c.broker_state(b).epoch
    isolated_at = c.now_ms
    c.network.isolate(b)
    t_fenced = fenced_at(c, b)
    assert not c.broker_state(b).self_fenced, "the controller fences first (KIP-343)"
    c.run_until(lambda c: c.broker_state(b).self_fenced, 30_000)
    t_self = c.now_ms
    assert t_fenced < t_self
    contact = c.broker(b).logic.lifecycle.last_contact_ms
    assert contact <= isolated_at + RTT_SLACK_MS
    assert t_self == contact + self_fence_ms + 1
    assert isolated_at + self_fence_ms - HEARTBEAT_MS - RTT_SLACK_MS <= t_self
    assert not c.broker(b).logic.serving
    # still self-fenced while cut off
    c.run_for(5_000)
    assert c.broker_state(b).self_fenced and c.broker_state(b).fenced
    c.network.heal()
    c.run_until(lambda c: (s := c.broker_state(b)).state == "RUNNING" and not s.fenced
                and not s.self_fenced, 3 * HEARTBEAT_MS + 10_000)
    assert c.broker(b).logic.serving
    assert c.broker_state(b).epoch == epoch  # same incarnation, same registration
