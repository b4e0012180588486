"""Checks of a public method's arguments: a wrong type or value is one typed error that names the
method, the argument, the value and what is allowed, never a bare ``KeyError`` or
``AttributeError`` from deep inside (or, worse, a silently wrong request: ``"orders"`` taken as
six one-letter topic names).

Every check raises :class:`~kraft_testkit.errors.ArgumentError` (a ``ConfigError``, so a
``KraftError``) in the one message shape of ``Cluster(...)``'s own checks (cluster_args.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ArgumentError


def bad(where: str, name: str, value: object, allowed: str) -> ArgumentError:
    """``where: name=value is not allowed; name must be allowed``."""
    return ArgumentError(f"{where}: {name}={value!r:.80} is not allowed; {name} must be {allowed}")


def is_int(value: object) -> bool:
    return type(value) is int


def a_str(where: str, name: str, value: object, *, empty: bool = False) -> str:
    if type(value) is not str or (not empty and not value):
        raise bad(where, name, value, "a str" if empty else "a non-empty str")
    return value


def an_int(where: str, name: str, value: object, low: int | None = None,
           high: int | None = None) -> int:
    if not is_int(value) or (low is not None and value < low) or \
            (high is not None and value > high):  # type: ignore[operator]
        span = ("an int" + (f" >= {low}" if low is not None else "")
                + (f" <= {high}" if high is not None else ""))
        raise bad(where, name, value, span)
    return value  # type: ignore[return-value]


def a_bool(where: str, name: str, value: object) -> bool:
    if type(value) is not bool:
        raise bad(where, name, value, "True or False")
    return value


def one_of(where: str, name: str, value: object, choices: Iterable[object]) -> Any:
    options = list(choices)
    if type(value) not in (str, int) or value not in options:
        raise bad(where, name, value, "one of " + ", ".join(map(repr, options)))
    return value


def callable_arg(where: str, name: str, value: object, shape: str) -> Any:
    if not callable(value):
        raise bad(where, name, value, f"a callable {shape}")
    return value


def ints(where: str, name: str, value: object, low: int = 0) -> list[int]:
    """A list, tuple or range of ints >= ``low`` (not a str, not a set: order matters)."""
    if not isinstance(value, (list, tuple, range)) or \
            not all(is_int(v) and v >= low for v in value):
        raise bad(where, name, value, f"a list of ints >= {low}")
    return list(value)


def strs(where: str, name: str, value: object) -> list[str]:
    """A list or tuple of non-empty strs; a bare str is refused (it is not a list of names)."""
    if not isinstance(value, (list, tuple, set, frozenset)) or \
            not all(type(v) is str and v for v in value):
        raise bad(where, name, value, "a list of names (non-empty strs), not a str")
    return list(value)


def str_map(where: str, name: str, value: object, *, values: str = "str",
            none: bool = False) -> dict[str, Any]:
    """A mapping of str keys to ``values`` (``"str"`` or ``"number"``), None values if ``none``."""
    kinds = {"str": (str,), "number": (int, float)}[values]
    if not isinstance(value, Mapping) or not all(
            type(k) is str and k and (v is None and none or
                                      type(v) in kinds and not isinstance(v, bool))
            for k, v in value.items()):
        shown = values + (" or None" if none else "")
        raise bad(where, name, value, f"a mapping of names (str) to values ({shown})")
    return dict(value)
