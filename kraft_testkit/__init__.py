"""kraft_testkit: an in-process, deterministic Kafka KRaft cluster for tests."""

from .errors import ConfigError, KraftError

__version__ = "0.1.0"
__all__ = ["KraftError", "ConfigError", "__version__"]
