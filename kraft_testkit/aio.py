"""The async face: the same cluster driven from ``async`` code on asyncio or trio (via anyio).

The event loop's clock *is* the cluster's virtual clock. When every task is waiting, the loop
asks its clock how long to sleep; our clocks answer by running the cluster up to the next
deadline and saying "zero". So ``await anyio.sleep(30)`` in any task runs the cluster 30
virtual seconds, takes milliseconds, and wakes exactly when a real loop would have::

    async def test_lease(kraft_async_cluster):              # see docs/faces.md
        c = kraft_async_cluster
        c.network.isolate(c.brokers[1])
        await anyio.sleep(12)                                # virtual seconds
        assert c.broker_state(c.brokers[1]).fenced
        await c.run_until(lambda c: c.active_controller is not None, timeout_ms=5_000)

Two clocks, one core (:class:`VirtualTime`): :class:`VirtualTimeLoop` (an asyncio
``SelectorEventLoop`` whose ``time()`` is virtual and whose selector advances the cluster instead
of blocking) and :func:`trio_clock` (a ``trio.abc.Clock``). :func:`backend_options` gives the
anyio ``backend_options`` for either, :func:`anyio_backends` the pair for the anyio pytest
plugin's ``anyio_backend`` fixture, :func:`run` runs a coroutine function on one of them.

Synchronous cluster calls (``create_topic``, ``faults.kill`` ...) stay synchronous: they run the
cluster inside the current task and the loop's clock jumps with it (timers that came due run
right after, as after any blocking call). anyio and trio are imported lazily.
"""

from __future__ import annotations

import asyncio
import math
import selectors
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import ConfigError, KraftError

BACKENDS = ("asyncio", "trio")


class VirtualTime:
    """Virtual seconds for an event loop: the attached cluster's clock, or free-running
    virtual time (advanced only by idle waits) while no cluster is attached."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.cluster: Any = None
        self._free_ms = 0.0   # virtual ms while detached
        self._offset_ms = 0.0  # loop ms = cluster.now_ms + offset (continuous across attach)
        self.error: BaseException | None = None  # what the cluster raised while we advanced it
        self._floor_s = 0.0  # the last deadline reached: seconds() never reads below it

    def now_ms(self) -> float:
        if self.cluster is not None:
            return self.cluster.now_ms + self._offset_ms
        return self._free_ms

    def seconds(self) -> float:
        # a deadline of 2.3950000000000005 s is reached at 2395 ms: float noise must not
        # leave a waiter one ulp short of its deadline forever
        return max(self.now_ms() / 1000.0, self._floor_s)

    def attach(self, cluster: Any) -> None:
        """From now on loop time is the cluster's time (continuing from the current value)."""
        if self.cluster is cluster:
            return
        now = self.now_ms()
        self.cluster = cluster
        self._offset_ms = max(0.0, now - cluster.now_ms)

    def detach(self) -> None:
        self._free_ms = self.now_ms()
        self.cluster = None

    def advance_to(self, target_s: float) -> None:
        """Every task waits until ``target_s``: run the cluster up to then (to the ms, rounded
        up so the waiter is due). A cluster error is kept for :meth:`AsyncCluster` to raise,
        and time goes on without the cluster, so sleeping tasks still wake."""
        target_ms = math.ceil(target_s * 1000.0 - 1e-3)
        if self.cluster is None:
            self._free_ms = max(self._free_ms, float(target_ms))
        elif (due := target_ms - self.now_ms()) > 0:
            try:
                self.cluster.run_for(math.ceil(due))
            except KraftError as error:
                self.error = error
                self.detach()
                self._free_ms = max(self._free_ms, float(target_ms))
        self._floor_s = max(self._floor_s, target_s)


class _VirtualSelector:
    """Wraps a real selector: a wait with a timeout advances virtual time instead of
    blocking, then polls real I/O without waiting."""

    def __init__(self, inner: selectors.BaseSelector, virtual: VirtualTime,
                 now: Callable[[], float]) -> None:
        self._inner = inner
        self._virtual = virtual
        self._now = now

    def select(self, timeout: float | None = None) -> list:
        if timeout is None:  # no timer at all: only real I/O can wake the loop
            return self._inner.select(None)
        if timeout > 0:
            self._virtual.advance_to(self._now() + timeout)
        return self._inner.select(0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio event loop on virtual time (pass it as anyio's ``loop_factory``)."""

    def __init__(self) -> None:
        self.virtual = VirtualTime()
        super().__init__(_VirtualSelector(selectors.DefaultSelector(), self.virtual,
                                          self.time))  # type: ignore[arg-type]
        self._clock_resolution = 0.0005  # virtual time moves in whole ms

    def time(self) -> float:
        return self.virtual.seconds()


def trio_clock() -> Any:
    """A fresh ``trio.abc.Clock`` on virtual time (pass it as trio's ``clock``)."""
    import trio

    class VirtualTrioClock(trio.abc.Clock):
        def __init__(self) -> None:
            self.virtual = VirtualTime()

        def start_clock(self) -> None:
            self.virtual.reset()

        def current_time(self) -> float:
            return self.virtual.seconds()

        def deadline_to_sleep_time(self, deadline: float) -> float:
            if deadline == math.inf:  # no timer: only real I/O can wake trio
                return math.inf
            if deadline > self.current_time():
                self.virtual.advance_to(deadline)
            return 0.0

        def __repr__(self) -> str:
            return f"<VirtualTrioClock {self.virtual.now_ms():.0f} ms>"

    return VirtualTrioClock()


def backend_options(backend: str) -> dict[str, Any]:
    """anyio ``backend_options`` that put ``backend`` on virtual time."""
    if backend == "asyncio":
        return {"loop_factory": VirtualTimeLoop}
    if backend == "trio":
        return {"clock": trio_clock()}
    raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")


def anyio_backends(*backends: str) -> list[tuple[str, dict[str, Any]]]:
    """Params for the anyio plugin's ``anyio_backend`` fixture (default: asyncio and trio)::

        @pytest.fixture(params=kraft_testkit.aio.anyio_backends())
        def anyio_backend(request):
            return request.param
    """
    return [(name, backend_options(name)) for name in (backends or BACKENDS)]


def run(func: Callable[..., Awaitable[Any]], *args: Any, backend: str = "asyncio") -> Any:
    """``anyio.run`` on a virtual-time loop of ``backend``."""
    import anyio

    return anyio.run(func, *args, backend=backend, backend_options=backend_options(backend))


def current_virtual_time() -> VirtualTime:
    """The running loop's :class:`VirtualTime`; a ConfigError if the loop runs on real time."""
    import sniffio

    library = sniffio.current_async_library()
    virtual = None
    if library == "asyncio":
        virtual = getattr(asyncio.get_running_loop(), "virtual", None)
    elif library == "trio":
        import trio

        virtual = getattr(trio.lowlevel.current_clock(), "virtual", None)
    if not isinstance(virtual, VirtualTime):
        raise ConfigError(
            f"this {library} loop runs on real time; run it on the cluster's clock with "
            f"kraft_testkit.aio.run(...), or anyio_backend params from "
            f"kraft_testkit.aio.anyio_backends()")
    return virtual


class AsyncCluster:
    """A :class:`~kraft_testkit.cluster.Cluster` for ``async`` code; every other attribute is
    the cluster's own (``c.brokers``, ``c.network``, ``c.create_topic`` ...)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self._virtual: VirtualTime | None = None

    @classmethod
    async def open(cls, *args: Any, **kwargs: Any) -> "AsyncCluster":
        """Build a cluster (``Cluster``'s arguments) and put the running loop on its clock."""
        from .cluster import Cluster

        cluster = cls(Cluster(*args, **kwargs))
        cluster.attach()
        return cluster

    def attach(self) -> "AsyncCluster":
        """Make the running loop's clock this cluster's clock (done by every await here)."""
        virtual = current_virtual_time()
        virtual.attach(self.cluster)
        self._virtual = virtual
        return self

    def raise_pending(self) -> None:
        """Raise what the cluster raised while the loop's clock ran it (an invariant violation
        during a plain ``anyio.sleep``, say); the awaits here call it, the fixture at teardown."""
        self._check()

    def _check(self) -> None:
        virtual = self._virtual
        if virtual is not None and virtual.error is not None:
            error, virtual.error = virtual.error, None
            raise error

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)

    async def sleep(self, ms: int) -> None:
        """Let ``ms`` virtual milliseconds pass for everyone (other tasks run meanwhile)."""
        import anyio

        if type(ms) is not int or ms < 0:
            raise ConfigError(f"sleep takes an int >= 0 of virtual ms, got {ms!r}")
        self.attach()
        await anyio.sleep(ms / 1000)
        self._check()

    run_for = sleep

    async def run_until(self, predicate: Callable[[Any], object],
                        timeout_ms: int | None = None) -> int:
        """Wait until ``predicate(cluster)`` holds, checking after every cluster event; other
        tasks run (and their sleeps end) in virtual-time order meanwhile. Returns the virtual
        ms it took; :class:`~kraft_testkit.sim.NoProgress` after ``timeout_ms``."""
        import anyio

        from .sim import NoProgress

        c = self.cluster
        timeout = c.DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms
        if type(timeout) is not int or timeout < 0:
            raise ConfigError(f"run_until needs timeout_ms as an int >= 0, got {timeout_ms!r}")
        self.attach()
        start = c.now_ms
        deadline = start + timeout
        name = getattr(predicate, "__name__", "predicate")
        while not predicate(c):
            self._check()
            now = c.now_ms
            upcoming = c.sim.scheduler.next_at()
            if now >= deadline or upcoming is None:
                why = (f"still false after {timeout} ms" if upcoming is not None else
                       "never held, and nothing is left to happen")
                raise NoProgress(f"{name} {why}", seed=c.seed, now_ms=now,
                                 trace_tail=c.trace.tail(c.sim.tail_events),
                                 replay=c.sim.replay_hint)
            if upcoming <= now:   # due at this instant: run it here, then let others run
                c.run_for(0)
                await anyio.sleep(0)
            else:                 # the loop's clock runs the cluster to the next event
                await anyio.sleep((min(upcoming, deadline) - now) / 1000)
        self._check()
        return c.now_ms - start

    def __repr__(self) -> str:
        return f"<AsyncCluster {self.cluster!r}>"
