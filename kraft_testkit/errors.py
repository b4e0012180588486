"""The kit's error tree: everything raised on purpose derives from :class:`KraftError`."""


class KraftError(Exception):
    """Root of every error the kit raises on purpose."""


class ConfigError(KraftError, ValueError):
    """A bad configuration value; the message names the key and the allowed values."""
