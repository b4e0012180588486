"""Wall-clock time warps: ``time.time()``, ``datetime.now()`` and friends follow virtual time.

Code under test often reads the wall clock (a lease that expires at ``issued + ttl``, a token
with an ``exp`` claim, "take a snapshot every 10 minutes"). :meth:`Cluster.wall_clock` freezes
the wall clock with freezegun and then ties it to the cluster: every read answers the time the
cluster's record batches carry, ``log time base + cluster.now_ms`` (the base is
``testkit.log.time.base.ms``, 2026-01-01T00:00:00Z by default), so user code and record
timestamps read one clock; an explicit ``start`` sets the wall time at the moment it opens. Moving virtual time (``run_for``, ``run_until``, an admin call,
:meth:`WallClock.warp`) moves the wall clock with it, to the millisecond, and nothing else does.

The bridge goes one way only: the simulator never reads the wall clock, so a frozen wall clock
changes no trace digest (tests prove it). freezegun is imported lazily (``pip install
'kraft-testkit[timewarp]'``); it scans every loaded module when it starts (tens of ms), so start
one wall clock per test, not one per step.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .errors import ConfigError

DEFAULT_START = "2026-01-01T00:00:00Z"  # an example start (the default follows the log)
_EPOCH = _dt.datetime(1970, 1, 1)


def log_time(cluster: Any) -> _dt.datetime:
    """The wall time the cluster's record batches are stamped with now (naive UTC): the log
    time base (``testkit.log.time.base.ms``) plus virtual time."""
    ms = cluster.raft_config.log_time_base_ms + cluster.now_ms
    try:
        return _EPOCH + _dt.timedelta(milliseconds=ms)
    except OverflowError:
        raise ConfigError(f"wall_clock: testkit.log.time.base.ms + now is {ms} ms, past the "
                          "dates Python's datetime holds (year 9999); pass start=... or lower "
                          "testkit.log.time.base.ms") from None


def parse_start(start: str | _dt.datetime) -> _dt.datetime:
    """``start`` as a naive UTC datetime (what freezegun freezes); a ConfigError otherwise."""
    if isinstance(start, _dt.datetime):
        moment = start
    elif isinstance(start, str):
        text = start.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise ConfigError(f"wall_clock start must be an ISO 8601 time such as "
                              f"{DEFAULT_START!r}, got {start!r}") from None
    else:
        raise ConfigError(f"wall_clock start must be an ISO 8601 string or a datetime, "
                          f"got {start!r}")
    if moment.tzinfo is not None:
        moment = moment.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return moment


class WallClock:
    """The frozen wall clock of one cluster (what :meth:`Cluster.wall_clock` yields).

    ``start`` is the wall time at the moment the clock was opened; afterwards
    ``now() == start + (cluster.now_ms - opened_at_ms)``.
    """

    def __init__(self, cluster: Any, start: _dt.datetime) -> None:
        self.cluster = cluster
        self.start = start
        self.opened_at_ms = cluster.now_ms

    def now(self) -> _dt.datetime:
        """The wall time the frozen clock shows (naive UTC), computed from virtual time."""
        return self.start + _dt.timedelta(milliseconds=self.cluster.now_ms - self.opened_at_ms)

    def timestamp(self) -> float:
        """``time.time()`` as user code sees it now."""
        return self.now().replace(tzinfo=_dt.timezone.utc).timestamp()

    def warp(self, ms: int) -> _dt.datetime:
        """Run the cluster ``ms`` virtual milliseconds; the wall clock moves with it."""
        if type(ms) is not int or ms < 0:
            raise ConfigError(f"warp takes an int >= 0 of milliseconds, got {ms!r}")
        self.cluster.run_for(ms)
        return self.now()

    def warp_to(self, moment: str | _dt.datetime | float) -> _dt.datetime:
        """Run the cluster until the wall clock shows ``moment`` (ISO text, datetime, or a
        ``time.time()`` value), to the millisecond; a moment in the past is a ConfigError."""
        if isinstance(moment, (int, float)) and not isinstance(moment, bool):
            delta_ms = round((moment - self.timestamp()) * 1000)
        else:
            delta_ms = round((parse_start(moment) - self.now()).total_seconds() * 1000)
        if delta_ms < 0:
            raise ConfigError(f"warp_to {moment!r} is {-delta_ms} ms in the past of the wall "
                              f"clock ({self.now().isoformat()}Z)")
        return self.warp(delta_ms)

    def warp_until(self, predicate: Callable[[Any], object], timeout_ms: int = 60_000) -> int:
        """Run the cluster until ``predicate(cluster)`` holds (it may read the wall clock; it
        is checked after each simulator event, so the clock stops at the first event at or
        after the moment it starts to hold);
        returns the virtual ms it took, :class:`~kraft_testkit.sim.NoProgress` after
        ``timeout_ms``."""
        return self.cluster.run_until(predicate, timeout_ms)

    def __repr__(self) -> str:
        return f"<WallClock {self.now().isoformat()}Z at virtual {self.cluster.now_ms} ms>"


@functools.cache
def _following_factory_class(base: type) -> type:
    """A subclass of freezegun's frozen-time factory whose frozen moment is computed from the
    cluster on every read, so nothing has to push time into freezegun as the simulation runs."""

    class FollowingFactory(base):  # type: ignore[misc, valid-type]
        wall: WallClock

        @property
        def time_to_freeze(self) -> _dt.datetime:
            return self.wall.now()

        @time_to_freeze.setter
        def time_to_freeze(self, value: _dt.datetime) -> None:
            # freezegun's own tick()/move_to(): only forward, and only by running the cluster
            delta_ms = round((value - self.wall.now()).total_seconds() * 1000)
            if delta_ms < 0:
                raise ConfigError(f"the wall clock follows virtual time and cannot go back "
                                  f"({delta_ms} ms asked)")
            if delta_ms:
                self.wall.cluster.run_for(delta_ms)

    return FollowingFactory


_OPEN: list[Any] = []  # the cluster whose wall clock is open (freezegun patches globally)


@contextmanager
def wall_clock(cluster: Any, start: str | _dt.datetime | None = None,
               *, tz_offset: int = 0) -> Iterator[WallClock]:
    """Freeze the wall clock and tie it to ``cluster``'s virtual time: by default at the time
    the record batches carry (:func:`log_time`), else at ``start`` when it opens.

    >>> with cluster.wall_clock() as clock:
    ...     issued = time.time()
    ...     clock.warp(9_000)
    ...     assert time.time() - issued == 9.0

    ``tz_offset``: hours, as freezegun's (what ``datetime.now()`` adds to UTC).
    """
    try:
        from freezegun import freeze_time
        from freezegun.api import FrozenDateTimeFactory
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ConfigError("wall_clock needs freezegun: pip install 'kraft-testkit[timewarp]'") \
            from e
    if _OPEN:  # freezegun's patches nest badly: the inner stop would unfreeze the outer one
        raise ConfigError(f"wall_clock is already open (on {_OPEN[0]!r}): one wall clock at a "
                          f"time; leave the first 'with' block before opening another")
    wall = WallClock(cluster, log_time(cluster) if start is None else parse_start(start))
    # real_asyncio: asyncio loops keep real monotonic time (freezegun would hang their sleeps);
    # no ``ignore`` list: freezegun applies it to the callers' frames as well, and a test's
    # caller is pytest or an event loop. Under trio, use the kit's virtual clock (kraft_testkit.aio)
    freezer = freeze_time(wall.start, tz_offset=tz_offset, real_asyncio=True)
    factory = freezer.start()
    _OPEN.append(cluster)
    try:
        if type(factory) is not FrozenDateTimeFactory:  # pragma: no cover - freezegun changed
            raise ConfigError(f"freezegun returned a {type(factory).__name__}; wall_clock "
                              f"needs its FrozenDateTimeFactory (freezegun >= 1.5, < 2)")
        factory.__dict__.pop("time_to_freeze", None)
        factory.__class__ = _following_factory_class(FrozenDateTimeFactory)
        factory.wall = wall
        yield wall
    finally:
        _OPEN.clear()
        freezer.stop()
