"""Wall-clock time warps: user code reading time.time()/datetime.now() follows virtual time."""

import datetime
import time

import pytest

pytest.importorskip("freezegun")

from kraft_testkit.cluster import Cluster  # noqa: E402
from kraft_testkit.errors import ConfigError  # noqa: E402


def _lease_scenario(c: Cluster) -> None:
    b = c.brokers[1]
    c.network.isolate(b)
    c.run_until(lambda c: c.broker_state(b).fenced, timeout_ms=30_000)
    c.network.heal()
    c.run_for(5_000)


def test_wall_clock_follows_every_way_virtual_time_moves():
    c = Cluster(1, 2, seed=3)
    with c.wall_clock(start="2026-01-01T00:00:00Z") as clock:
        t0 = time.time()
        assert t0 == datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
        assert datetime.datetime.now() == datetime.datetime(2026, 1, 1)
        m0 = time.monotonic()
        c.run_for(1_500)                                  # the cluster's own API
        assert time.time() - t0 == pytest.approx(1.5)
        clock.warp(8_500)                                 # the helper
        assert time.time() - t0 == pytest.approx(10.0)
        assert time.monotonic() - m0 == pytest.approx(10.0)
        c.create_topic("t", partitions=1, replication_factor=2)  # an admin call takes time too
        assert time.time() - t0 == pytest.approx((c.now_ms - clock.opened_at_ms) / 1000)
        assert datetime.datetime.now(datetime.timezone.utc) == \
            clock.now().replace(tzinfo=datetime.timezone.utc)
    assert time.time() > 1.7e9 and abs(time.time() - t0) > 3600  # real time again


def test_warp_until_a_wall_clock_deadline_lands_on_the_millisecond():
    c = Cluster(1, 1, seed=5)
    with c.wall_clock(start=datetime.datetime(2030, 6, 1, 12, 0)) as clock:
        deadline = time.time() + 30
        took = clock.warp_until(lambda c: time.time() >= deadline, timeout_ms=60_000)
        # checked after each event: the first event at or after the deadline (heartbeats: 2 s)
        assert 30_000 <= took < 32_000 and time.time() >= deadline
        clock.warp_to(deadline + 5)                       # exactly to a wall-clock moment
        assert time.time() == deadline + 5
        clock.warp_to("2030-06-01T12:01:00Z")
        assert datetime.datetime.now() == datetime.datetime(2030, 6, 1, 12, 1)
        with pytest.raises(ConfigError, match="in the past"):
            clock.warp_to(deadline)


def test_a_frozen_wall_clock_changes_no_trace_digest():
    plain = Cluster(3, 3, seed=11)
    _lease_scenario(plain)
    warped = Cluster(3, 3, seed=11)
    with warped.wall_clock(start="1999-12-31T23:59:59Z"):
        _lease_scenario(warped)
    assert warped.trace.digest() == plain.trace.digest()
    assert warped.now_ms == plain.now_ms


def test_bad_start_and_backwards_moves_are_config_errors():
    c = Cluster(1, 1, seed=1)
    with pytest.raises(ConfigError, match="ISO 8601"):
        with c.wall_clock(start="yesterday"):
            pass
    with c.wall_clock() as clock:
        with pytest.raises(ConfigError, match="int >= 0"):
            clock.warp(-5)
        from freezegun.api import freeze_factories
        with pytest.raises(ConfigError, match="cannot go back"):
            freeze_factories[-1].move_to("2025-01-01")
        opened = clock.now()
        freeze_factories[-1].tick(2)                     # freezegun's own tick runs the cluster
        assert clock.now() == opened + datetime.timedelta(seconds=2)


def _last_batch_ms(c: Cluster) -> int:
    log = c.sim.process(c.active_controller.id).machine.raft.log
    return log.batches_between(log.start_offset, log.end_offset)[-1].max_timestamp


@pytest.mark.parametrize("base", [None, datetime.datetime(2024, 6, 1, 12, 0)])
def test_the_default_wall_clock_is_the_record_timestamps_clock(base):
    configs = {} if base is None else {"testkit.log.time.base.ms": int(
        base.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)}
    c = Cluster(1, 1, seed=4, configs=configs)
    c.run_for(10_000)                                # the clock opens well after virtual 0
    with c.wall_clock() as clock:
        c.create_topic("stamped", partitions=1, replication_factor=1)
        stamped = _last_batch_ms(c)                  # the batch holding the topic, or a NoOp
        assert stamped <= round(time.time() * 1000)  # a record is never stamped in the future
        assert round(time.time() * 1000) - stamped <= 500   # NoOps every 500 virtual ms
        expected = (base or datetime.datetime(2026, 1, 1)) + \
            datetime.timedelta(milliseconds=c.now_ms)
        assert datetime.datetime.now() == expected == clock.now()
    with c.wall_clock(start="2030-01-01T00:00:00Z") as clock:   # an explicit start still wins
        assert datetime.datetime.now() == datetime.datetime(2030, 1, 1)


def test_a_log_time_base_past_year_9999_is_a_config_error():
    c = Cluster(1, 0, seed=1, configs={"testkit.log.time.base.ms": 3 * 10**14})
    with pytest.raises(ConfigError, match="testkit.log.time.base.ms"):
        with c.wall_clock():
            pass
