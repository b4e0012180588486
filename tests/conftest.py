"""Shared pytest setup: the pytester fixture for plugin tests, Hypothesis without its
wall-clock deadline (200 ms per example by default: on a loaded machine an example can take
longer with nothing wrong, and the suite must not flake; tests that care about speed measure
cpu time themselves), and xdist workers that ignore SIGINT once their tests are done."""

import signal
import threading

pytest_plugins = ["pytester"]

try:
    from hypothesis import settings
except ImportError:  # the suite's Hypothesis tests skip themselves without it
    pass
else:
    settings.register_profile("kraft-suite", deadline=None)
    settings.load_profile("kraft-suite")


def pytest_sessionfinish(session) -> None:
    """An xdist worker whose tests are all done ignores SIGINT until it exits.

    When the controller shuts a worker down, execnet gives the worker's main thread 5 s and then
    sends the worker SIGINT to interrupt whatever it still runs (``WorkerGateway.
    _terminate_execution``). A worker still in its exit on a loaded machine (pytest's closing
    garbage collections, summaries) then got a KeyboardInterrupt in the middle of that, most often
    inside Hypothesis's gc callback, where it cannot propagate: "PytestUnraisableExceptionWarning:
    Exception ignored in: gc_callback ... KeyboardInterrupt" at the end of the run. This hook runs
    before the worker tells the controller it is finished; nothing is left to interrupt then."""
    if hasattr(session.config, "workerinput") and \
            threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
