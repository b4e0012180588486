"""The async face: a failover drill driven from async code, on asyncio and on trio.

Two tasks share the cluster's virtual clock: one kills the active controller and waits for a
new one; a "monitor" task wakes every virtual second and records who is active. Both backends
give the same story and the same trace digest.

    python examples/async_failover.py [seed]
"""

from __future__ import annotations

import sys
import time

import anyio

from kraft_testkit import aio


async def drill(seed: int) -> tuple[list[tuple[int, int | None]], str]:
    c = await aio.AsyncCluster.open(3, 3, seed=seed)
    start = c.now_ms
    seen: list[tuple[int, int | None]] = []

    async def monitor() -> None:
        for _ in range(10):
            await anyio.sleep(1)                    # one virtual second
            active = c.active_controller
            seen.append((c.now_ms - start, None if active is None else active.id))

    async with anyio.create_task_group() as tg:
        tg.start_soon(monitor)
        old = c.active_controller
        c.faults.kill(old)
        await c.run_until(lambda c: c.active_controller not in (None, old), timeout_ms=15_000)
        await c.sleep(2_000)
        c.faults.start(old)
    return seen, c.trace.digest()


def main(seed: int = 7) -> None:
    results = {}
    for backend in aio.BACKENDS:
        started = time.perf_counter()
        seen, digest = aio.run(drill, seed, backend=backend)
        results[backend] = digest
        print(f"{backend:>7}: active controller each virtual second {seen}")
        print(f"{backend:>7}: 10 virtual seconds in {(time.perf_counter() - started) * 1000:.0f} "
              f"ms; digest {digest[:16]}")
    print("same digest on both backends:", len(set(results.values())) == 1)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
