"""Shared pytest setup: the pytester fixture for plugin tests, and Hypothesis without its
wall-clock deadline (200 ms per example by default: on a loaded machine an example can take
longer with nothing wrong, and the suite must not flake; tests that care about speed measure
cpu time themselves)."""

pytest_plugins = ["pytester"]

try:
    from hypothesis import settings
except ImportError:  # the suite's Hypothesis tests skip themselves without it
    pass
else:
    settings.register_profile("kraft-suite", deadline=None)
    settings.load_profile("kraft-suite")
