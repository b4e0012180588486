"""JSON text of messages, generated per (struct, version): the text ``json.dumps`` gives for
``msg.to_json(version)`` (compact separators, non-ASCII kept), without building the dicts.

Why: the Spark source and ``dump-log`` print one JSON document per metadata record, millions of
them; building a dict per record and handing it to ``json.dumps`` cost about 7 us a record, most
of it in the encoder walking the dicts. The generated functions write each field straight into
one f-string, formatted by its schema type: ints with ``:d``, strings by the C string escaper
that ``json`` itself uses, uuids from a cache of their printed form, nested structs by their own
generated function. Field names, the order and the rule for tagged fields (left out when they
hold their default) are the ones :meth:`.codegen.Message.to_json` follows.

Values of another type than the schema's (a message built by hand with, say, a float in an int
field) make the fast function raise; :func:`to_json_text` then falls back to ``json.dumps`` of
``to_json``, so the text is always what that gives.
"""

from __future__ import annotations

import base64
import json
import math
from json.encoder import encode_basestring as _json_str  # C escaper json.dumps uses here
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .uuid import Uuid

if TYPE_CHECKING:
    from .codegen import Message

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(obj: Any) -> str:
    """``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)`` with one shared encoder."""
    return _encode(obj)


# ---------------------------------------------------------------- helpers the generated code calls

_UUID_TEXT: dict[bytes, str] = {}
_UUID_TEXT_MAX = 1 << 14


def _uuid_json(u: Uuid) -> str:
    """``"<base64url>"``: Kafka's printed form, quoted (no character in it needs escaping)."""
    text = _UUID_TEXT.get(u)
    if text is None:
        if type(u) is not Uuid:
            raise TypeError(f"expected a Uuid, got {type(u).__name__}")
        if len(_UUID_TEXT) >= _UUID_TEXT_MAX:
            _UUID_TEXT.clear()
        text = _UUID_TEXT[u] = f'"{u}"'
    return text


def _float_json(x: float) -> str:
    if type(x) is not float:
        raise TypeError("not a float")
    if math.isfinite(x):
        return float.__repr__(x)
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def _bytes_json(b: bytes) -> str:
    return '"' + base64.b64encode(b).decode("ascii") + '"'


def _int_json(x: int) -> str:
    if type(x) is not int:
        raise TypeError("not an int")
    return int.__repr__(x)


def _array_json(fn: Callable[[Any], str], items: Any) -> str:
    if type(items) is not tuple:
        raise TypeError("not a tuple")
    return "[" + ",".join(map(fn, items)) + "]"


def _int_array_json(items: Any) -> str:
    if type(items) is not tuple:
        raise TypeError("not a tuple")
    return "[" + ",".join(map(_int_json, items)) + "]"


_BOOL_JSON = {True: "true", False: "false"}


def _bool_json(x: bool) -> str:
    if type(x) is not bool:
        raise TypeError("not a bool")
    return _BOOL_JSON[x]


def _str_json(x: str) -> str:
    if type(x) is not str:
        raise TypeError("not a str")
    return _json_str(x)


_INTS = ("int8", "int16", "uint16", "int32", "uint32", "int64")


# ---------------------------------------------------------------- generation


def _value_expr(cls: type["Message"], t: str, x: str, fn_of: Callable[[type], str]) -> str:
    """A Python expression giving the JSON text of one value ``x`` of schema type ``t``."""
    if t in _INTS:
        return f"_int_json({x})"
    if t == "string":
        return f"_str_json({x})"
    if t == "bool":
        return f"_bool_json({x})"
    if t == "uuid":
        return f"_uuid_json({x})"
    if t == "float64":
        return f"_float_json({x})"
    if t in ("bytes", "records"):
        return f"_bytes_json({x})"
    root = cls._root
    sub = root if t == root._struct_name else root.STRUCTS[t]
    return f"{fn_of(sub)}({x})"


def _field_expr(cls: type["Message"], f: Any, x: str, fn_of: Callable[[type], str]) -> str:
    if f.is_array:
        et = f.element_type
        if et in _INTS:
            expr = f"_int_array_json({x})"
        else:
            elem = _value_expr(cls, et, "", fn_of).removesuffix("()")
            expr = f"_array_json({elem}, {x})"
    else:
        expr = _value_expr(cls, f.type, x, fn_of)
    # null prints as null whatever the declaration says, as json.dumps of to_json does
    return f'("null" if {x} is None else {expr})'


def _gen_struct(cls: type["Message"], version: int, fn_of: Callable[[type], str],
                ns: dict[str, Any]) -> str:
    flexible = version in cls._flexible
    # (field index or None, piece): a tagged field's piece prints only when it is not the default
    pieces: list[tuple[int | None, str]] = []
    for i, f in enumerate(cls._field_specs):
        if version not in f.versions:
            continue
        piece = f'"{f.json_name}":' + "{" + _field_expr(cls, f, f"o[{i}]", fn_of) + "}"
        if flexible and version in f.tagged:
            ns[f"_d{cls.__name__}_{i}"] = cls._defaults[i]
            pieces.append((i, piece))
        else:
            pieces.append((None, piece))
    lines = [f"def {fn_of(cls)}(o):"]
    if all(i is None for i, _ in pieces):  # one f-string
        lines.append("    return f'''{{" + ",".join(p for _, p in pieces) + "}}'''")
        return "\n".join(lines)
    lines.append("    p = []")
    for i, piece in pieces:  # in declaration order, as to_json's dict has them
        if i is None:
            lines.append(f"    p.append(f'''{piece}''')")
        else:
            lines.append(f"    if o[{i}] != _d{cls.__name__}_{i}: p.append(f'''{piece}''')")
    lines.append("    return '{' + ','.join(p) + '}'")
    return "\n".join(lines)


def generate(cls: type["Message"], version: int) -> Callable[["Message"], str]:
    """Generate (once) the text functions of ``cls``'s message and all its structs at
    ``version``; returns the one of ``cls``."""
    fn = cls._json_text.get(version)
    if fn is not None:
        return fn
    root = cls._root
    classes = [root, *root.STRUCTS.values()]
    names = {c: f"_j{k}" for k, c in enumerate(classes)}
    ns: dict[str, Any] = {
        "_int_json": _int_json, "_str_json": _str_json, "_bool_json": _bool_json,
        "_uuid_json": _uuid_json, "_float_json": _float_json, "_bytes_json": _bytes_json,
        "_array_json": _array_json, "_int_array_json": _int_array_json,
    }
    src = "\n\n".join(_gen_struct(c, version, names.__getitem__, ns) for c in classes)
    exec(compile(src, f"<kraft json {root.__name__} v{version}>", "exec"), ns)
    for c in classes:
        c._json_text[version] = ns[names[c]]
    return cls._json_text[version]
