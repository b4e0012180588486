"""The kit's error tree: everything raised on purpose derives from :class:`KraftError`."""


class KraftError(Exception):
    """Root of every error the kit raises on purpose."""


class ConfigError(KraftError, ValueError):
    """A bad configuration value; the message names the key and the allowed values."""


class StorageError(KraftError):
    """A node's file that cannot be used as it is: damaged, foreign or from the future.

    The message names the file, the problem and, for binary files, the byte offset. A node that
    meets one when it starts does not start (as a Kafka node stops on a metadata log directory it
    cannot read); the rest of the cluster goes on without it.
    """

    def __init__(self, file: str, problem: str, *, offset: int | None = None) -> None:
        self.file = file
        self.problem = problem
        self.offset = offset
        where = f" (byte offset {offset})" if offset is not None else ""
        super().__init__(f"{file}: {problem}{where}")

    def located(self, root: str) -> "StorageError":
        """The same error with the file's path under ``root`` (a node's directory)."""
        import os

        return type(self)(os.path.join(root, self.file), self.problem, offset=self.offset)


class ArgumentError(ConfigError, TypeError):
    """A public method's argument of the wrong type or value: names the method, the argument,
    the value given and the values allowed (a ``TypeError`` too, as Python's own would be)."""
