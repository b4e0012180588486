"""Argument types the commands share (``kraft-testkit demo --brokers 3``): a bad value is a
usage error that says what is allowed, not a traceback.

A module of its own so that each command's module (simulate, serve, the operator tools) can use
them without importing :mod:`.cli`, which imports every command.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an int >= ``low`` (a usage error otherwise, not a traceback)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    parse.__name__ = f"int>={low}"
    return parse
