"""Checks of ``Cluster(...)``'s arguments before anything is built.

Why a module of its own: every bad argument must give one typed :class:`ConfigError` that names
the argument, the value and what is allowed, whether it came from ``Cluster(...)``, from the
pytest ``kraft_cluster_factory`` or from a ``@pytest.mark.kraft`` marker, and Python's own
``TypeError`` for an unknown keyword does not say what is allowed.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConfigError


def bad_argument(name: str, value: object, allowed: str, where: str = "Cluster") -> ConfigError:
    """The one shape of a bad-argument error: ``Cluster: seed='x' is not allowed; ...``."""
    return ConfigError(f"{where}: {name}={value!r} is not allowed; {name} must be {allowed}")


def _is_int(value: object, low: int) -> bool:
    return type(value) is int and value >= low


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "controllers": (lambda v: _is_int(v, 1), "an int >= 1"),
    "brokers": (lambda v: _is_int(v, 0), "an int >= 0"),
    "seed": (lambda v: _is_int(v, 0), "an int >= 0"),
    "storage": (lambda v: v in ("memory", "tmpdir"), "one of memory, tmpdir"),
    "data_dir": (lambda v: v is None or isinstance(v, (str, os.PathLike)),
                 "a path (str or os.PathLike) or None"),
    "configs": (lambda v: v is None or isinstance(v, Mapping),
                "a mapping of Kafka settings by name, e.g. {'broker.session.timeout.ms': 12000}"),
    "seed_defaults": (lambda v: type(v) is bool, "True or False"),
    "wire": (lambda v: type(v) is bool, "True or False"),
    "invariants": (lambda v: type(v) is bool, "True or False"),
    "boot": (lambda v: type(v) is bool, "True or False"),
    "combined": (lambda v: type(v) is bool, "True or False"),
    "fast_forward": (lambda v: type(v) is bool, "True or False"),
    "boot_timeout_ms": (lambda v: _is_int(v, 1), "an int >= 1 (virtual ms)"),
    "trace_keep": (lambda v: v is None or _is_int(v, 1), "an int >= 1 or None (keep all)"),
    "kraft_version": (lambda v: type(v) is int and v in (0, 1),
                      "0 (static voters) or 1 (KIP-853 dynamic voters)"),
    "broker_self_fencing": (lambda v: type(v) is bool, "True or False"),
    "metadata_version": (lambda v: type(v) in (int, str),
                         "a metadata.version level (int) or release name such as '4.2-IV1'"),
    "features": (lambda v: v is None or isinstance(v, Mapping) and all(
        type(k) is str and type(level) is int for k, level in v.items()),
                 "None or a mapping of feature name to level, e.g. "
                 "{'eligible.leader.replicas.version': 1}"),
    "racks": (lambda v: v is None or (type(v) is int and v >= 1) or
              (isinstance(v, (list, tuple)) and all(isinstance(r, str) for r in v)),
              "None, a number of racks >= 1, or a list of rack names (one per broker)"),
}


@functools.lru_cache(maxsize=16)
def _signature(init: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature(init)``, worked out once per function (every Cluster() asks twice)."""
    return inspect.signature(init)


def allowed_names(init: Callable[..., Any]) -> list[str]:
    """The keyword names ``init`` (``Cluster.__init__``) takes."""
    return [p.name for p in _signature(init).parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def check_cluster_arguments(init: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any],
                            where: str = "Cluster") -> None:
    """Raise a ConfigError for an unknown keyword, too many positional arguments, or a value of
    the wrong type or range; ``init`` is ``Cluster.__init__``."""
    names = allowed_names(init)
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise ConfigError(f"{where}: unknown argument(s) {', '.join(unknown)}; allowed: "
                          f"{', '.join(names)} (Kafka settings by name go in configs={{...}})")
    try:
        bound = _signature(init).bind(None, *args, **kwargs)
    except TypeError as e:
        raise ConfigError(f"{where}: {e}; only controllers and brokers may be given by "
                          f"position, the rest by keyword ({', '.join(names[2:])})") from None
    for name, value in list(bound.arguments.items())[1:]:
        check = _CHECKS.get(name)
        if check is not None and not check[0](value):
            raise bad_argument(name, value, check[1], where)
    given = bound.arguments
    if given.get("data_dir") is not None and given.get("storage", "memory") != "tmpdir":
        raise bad_argument("data_dir", given["data_dir"], "None unless storage='tmpdir' (a "
                           "memory cluster keeps no files)", where)
