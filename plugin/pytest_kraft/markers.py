"""The ``@pytest.mark.kraft(...)`` marker's arguments, checked before any cluster is built
(imported when a kraft fixture is first used, so importing the plugin stays cheap).

A bad argument is one :class:`MarkerError` (a :class:`~kraft_testkit.errors.ConfigError`)
naming the argument, the value and what is allowed; the plugin prints it as one line instead of
a traceback through the kit.
"""

from __future__ import annotations

from typing import Any

import pytest

from kraft_testkit.errors import ConfigError

#: the marker's arguments: Cluster's keywords that a test may set
CLUSTER_KEYS = frozenset({
    "controllers", "brokers", "seed", "storage", "configs", "racks", "metadata_version", "wire",
    "invariants", "seed_defaults", "boot", "combined", "broker_self_fencing", "names",
    "features", "kraft_version", "fast_forward"})
WHERE = "@pytest.mark.kraft"


class MarkerError(ConfigError):
    """A ``@pytest.mark.kraft`` argument that is unknown, positional, or of the wrong type or
    range."""


def marker_kwargs(marker: pytest.Mark | None) -> dict[str, Any]:
    """The marker's keyword arguments, every one checked (:class:`MarkerError` otherwise)."""
    if marker is None:
        return {}
    if marker.args:
        raise MarkerError(f"{WHERE} takes keyword arguments only (e.g. controllers=3, "
                          f"brokers=5), got positional {marker.args!r}")
    unknown = set(marker.kwargs) - CLUSTER_KEYS
    if unknown:
        raise MarkerError(f"{WHERE} got unknown argument(s) {sorted(unknown)}; allowed: "
                          f"{sorted(CLUSTER_KEYS)} (Kafka settings go in configs={{...}})")
    kwargs = dict(marker.kwargs)
    if kwargs.get("seed") is None:
        kwargs.pop("seed", None)  # seed=None: derived from --kraft-seed and the test id
    from kraft_testkit.cluster import Cluster
    from kraft_testkit.cluster_args import check_cluster_arguments

    try:
        check_cluster_arguments(Cluster.__init__, (), kwargs, where=WHERE)
    except MarkerError:
        raise
    except ConfigError as e:
        raise MarkerError(str(e)) from None
    return kwargs


def marker_seed(marker: pytest.Mark | None) -> int | None:
    """The marker's ``seed`` (checked: an int >= 0, not a bool or a float), or None."""
    return marker_kwargs(marker).get("seed")
