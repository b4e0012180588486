"""kraft_testkit: an in-process, deterministic Kafka KRaft cluster for tests.

>>> from kraft_testkit import Cluster
>>> c = Cluster(controllers=3, brokers=3, seed=7)

The main names load lazily, so ``import kraft_testkit`` (and the pytest plugin) stays cheap.
"""

from .errors import ConfigError, KraftError

__version__ = "0.1.0"

_LAZY = {
    "Cluster": ("kraft_testkit.cluster", "Cluster"),
    "Quorum": ("kraft_testkit.quorum", "Quorum"),
    "KafkaApiError": ("kraft_testkit.protocol.error_codes", "KafkaApiError"),
    "ErrorCode": ("kraft_testkit.protocol.error_codes", "ErrorCode"),
    "NoProgress": ("kraft_testkit.sim.errors", "NoProgress"),
    "InvariantViolation": ("kraft_testkit.sim.errors", "InvariantViolation"),
    "serve": ("kraft_testkit.gateway", "serve"),
    "Gateway": ("kraft_testkit.gateway", "Gateway"),
}

__all__ = ["KraftError", "ConfigError", "__version__", *_LAZY]


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'kraft_testkit' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
