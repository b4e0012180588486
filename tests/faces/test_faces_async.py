"""The async face: anyio tests on asyncio and trio, user sleeps in virtual time."""

import time

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("trio")

from kraft_testkit import aio  # noqa: E402
from kraft_testkit.errors import ConfigError  # noqa: E402
from kraft_testkit.sim import NoProgress  # noqa: E402


@pytest.mark.anyio
@pytest.mark.kraft(controllers=3, brokers=3, seed=5)
async def test_a_30_second_lease_story_takes_milliseconds(kraft_async_cluster, anyio_backend):
    c = kraft_async_cluster
    started_wall, started = time.perf_counter(), c.now_ms
    loop_started = anyio.current_time()
    victim = c.brokers[1]
    woke = []

    async def user_code(seconds):          # the user's own coroutine sleeps in virtual time
        await anyio.sleep(seconds)
        woke.append((seconds, c.now_ms - started))

    c.network.isolate(victim)
    async with anyio.create_task_group() as tg:
        tg.start_soon(user_code, 30)
        tg.start_soon(user_code, 4)
        took = await c.run_until(lambda c: c.broker_state(victim).fenced, timeout_ms=20_000)
        # released Kafka: session timeout 9 s after the last heartbeat the controller saw
        assert 7_000 <= took <= 11_500
        woke.append(("fenced", took))
    assert woke[0] == (4, 4_000) and woke[-1] == (30, 30_000)
    assert c.now_ms - started == 30_000 and anyio.current_time() - loop_started == pytest.approx(30.0)
    c.network.heal()
    await c.run_until(lambda c: not c.broker_state(victim).fenced, timeout_ms=20_000)
    await c.sleep(1_000)
    # 31 virtual seconds in less wall time than that, however loaded the machine: a loop on
    # real time could not (the work itself takes about a second on an idle machine)
    assert time.perf_counter() - started_wall < 31


def _scenario(backend):
    async def main():
        c = await aio.AsyncCluster.open(3, 3, seed=9)
        c.create_topic("orders", partitions=3, replication_factor=3)
        old = c.active_controller
        c.faults.kill(old)
        await c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=15_000)
        await c.sleep(2_500)
        c.faults.start(old)
        await anyio.sleep(3)
        return c.trace.digest(), c.now_ms

    return aio.run(main, backend=backend)


def test_same_seed_same_digest_on_asyncio_and_trio():
    assert _scenario("asyncio") == _scenario("trio")


@pytest.mark.anyio
@pytest.mark.kraft(controllers=1, brokers=1, seed=2)
async def test_async_run_until_says_what_did_not_happen(kraft_async_cluster):
    c = kraft_async_cluster
    before = c.now_ms
    with pytest.raises(NoProgress, match="never_true still false after 3000 ms"):
        def never_true(c):
            return False
        await c.run_until(never_true, timeout_ms=3_000)
    assert c.now_ms - before == 3_000
    with pytest.raises(ConfigError, match="int >= 0"):
        await c.sleep(-1)


def test_a_real_time_loop_is_refused_with_the_fix():
    async def main():
        await aio.AsyncCluster.open(1, 1, seed=1)

    with pytest.raises(ConfigError, match="runs on real time"):
        anyio.run(main, backend="asyncio")


def test_loops_on_virtual_time_without_a_cluster():
    async def main():
        t0 = anyio.current_time()
        await anyio.sleep(3_600)            # an hour, instantly
        return anyio.current_time() - t0

    for backend in aio.BACKENDS:
        started = time.perf_counter()
        assert aio.run(main, backend=backend) == 3_600
        assert time.perf_counter() - started < 60  # an hour in at most a minute, loaded


def test_an_invariant_broken_during_a_plain_sleep_is_raised_not_lost():
    from kraft_testkit.sim import InvariantViolation

    async def main():
        c = await aio.AsyncCluster.open(1, 1, seed=1)

        opened = c.now_ms

        def broken_after_3_s(sim):
            assert sim.now_ms < opened + 3_000, "planted: time ran out"

        c.sim.add_invariant(broken_after_3_s)
        before = anyio.current_time()
        await anyio.sleep(10)          # the clock runs the cluster; the violation is kept...
        assert anyio.current_time() - before == pytest.approx(10)  # ...and sleepers still wake
        with pytest.raises(InvariantViolation, match="planted: time ran out"):
            await c.sleep(1)           # ...and raised at the next await on the cluster
        c.raise_pending()              # once

    for backend in aio.BACKENDS:
        aio.run(main, backend=backend)


def test_a_wall_clock_inside_async_code_follows_the_loop_and_never_hangs():
    pytest.importorskip("freezegun")

    async def main():
        c = await aio.AsyncCluster.open(1, 1, seed=4)
        with c.wall_clock(start="2026-01-01T00:00:00Z"):
            t0 = time.time()
            await anyio.sleep(45)                  # user code sleeping under a frozen clock
            await c.sleep(15_000)
            return time.time() - t0

    for backend in aio.BACKENDS:
        started = time.perf_counter()
        assert aio.run(main, backend=backend) == pytest.approx(60.0)
        assert time.perf_counter() - started < 30  # a real-time loop would take 60 s


def test_kraft_async_cluster_on_a_real_time_backend_says_how_to_fix_it(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.anyio
        async def test_x(kraft_async_cluster):
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)  # anyio's own fixture: asyncio and trio, both real time
    assert "runs on real time" in result.stdout.str()
    assert "anyio_backends()" in result.stdout.str()
