"""Typed codec errors: every one says what was wrong and where (byte offset, field path)."""

from __future__ import annotations

from ..errors import KraftError


class ProtocolError(KraftError):
    """Root of codec errors."""


class DecodeError(ProtocolError, ValueError):
    """Bytes that do not decode. ``offset`` is absolute in the input; ``path`` names the field."""

    def __init__(self, reason: str, *, offset: int | None = None, path: str = "") -> None:
        self.reason = reason
        self.offset = offset
        self.path = path
        where = []
        if path:
            where.append(f"field {path}")
        if offset is not None:
            where.append(f"byte offset {offset}")
        super().__init__(f"{reason} ({', '.join(where)})" if where else reason)

    def within(self, prefix: str, base: int = 0) -> "DecodeError":
        """The same error seen from an enclosing structure (path prefixed, offset shifted)."""
        path = f"{prefix}.{self.path}" if self.path and prefix else (prefix or self.path)
        offset = None if self.offset is None else self.offset + base
        err = type(self).__new__(type(self))
        DecodeError.__init__(err, self.reason, offset=offset, path=path)
        for k, v in self.__dict__.items():
            if k not in ("reason", "offset", "path", "args"):
                setattr(err, k, v)
        return err


class EncodeError(ProtocolError, ValueError):
    """A message that cannot be written at the asked version (bad value, or field unsupported)."""

    def __init__(self, reason: str, *, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{reason} (field {path})" if path else reason)


class UnsupportedVersionError(ProtocolError, ValueError):
    """A version outside what the message declares."""


class UnknownRecordTypeError(DecodeError):
    """A metadata record type id (or control record type) that no declaration knows."""


class UnknownFrameVersionError(DecodeError):
    """A metadata record frame version other than 0 (draft) or 1 (released)."""


class CorruptRecordError(DecodeError):
    """A record batch whose CRC, length or layout is wrong."""
