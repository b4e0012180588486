"""What the code generators of :mod:`.codegen` share: a source builder and the small lookups
both the decoder (:mod:`.codegen_decoder`) and the encoder (:mod:`.codegen_encoder`) emitters ask.

Kept apart so the two emitters and the class builder import it, and not each other.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from .errors import DecodeError
from .schema import FieldSpec

if TYPE_CHECKING:
    from .codegen import Message


class _Src:
    """A tiny source builder with indentation and unique local names."""

    def __init__(self, prefix: str, fast: bool = False) -> None:
        self.prefix = prefix
        self.fast = fast  # the fast decoder: no per-field bounds checks (see _gen_decoder)
        self.lines: list[str] = []
        self.depth = 1
        self.n = 0
        self.consts: dict[str, Any] = {}

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def tmp(self, stem: str = "t") -> str:
        self.n += 1
        return f"_{self.prefix}{stem}{self.n}"

    def const(self, value: Any, stem: str = "k") -> str:
        name = self.tmp(stem)
        self.consts[name] = value
        return name


def _is_flexible(cls: type[Message], version: int, f: FieldSpec | None = None) -> bool:
    if f is not None and f.flexible is not None:
        return version in f.flexible
    return version in cls._flexible


def _lowlevel_error(e: Exception, pos: int, path: str) -> DecodeError:
    if isinstance(e, IndexError):
        reason = "unexpected end of data"
    elif isinstance(e, struct.error):
        reason = "unexpected end of data" if "buffer" in str(e) else f"bad value: {e}"
    elif isinstance(e, UnicodeDecodeError):
        reason = "string is not valid UTF-8"
    else:
        reason = f"{type(e).__name__}: {e}"
    return DecodeError(reason, offset=pos, path=path)


def _struct_class(f: FieldSpec, cls: type[Message]) -> type[Message]:
    root = cls._root
    return root if f.element_type == root._struct_name else root.STRUCTS[f.element_type]


def _struct_ref(f: FieldSpec, ns: dict) -> str:
    """Name of a local that will hold the struct class's codec tables at call time."""
    return f"_structs[{f.element_type!r}]" if f.element_type != ns["_root"]._struct_name else "_root"
