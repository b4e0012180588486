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
field) make the fast function raise; ``Message.to_json_text`` and
``MetadataRecord.to_json_text`` then fall back to ``json.dumps`` of ``to_json``, so the text is
always what that gives.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring as _json_str  # C escaper json.dumps uses here
from operator import itemgetter
from typing import Any

from .uuid import Uuid

#: a generated message class (a :class:`.codegen.Message` subclass); named loosely so this module
#: needs nothing of the class builder that calls it
MessageClass = type

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


_JUST_INT = frozenset([int])
_int_repr = int.__repr__


_INT_ARRAY_TEXT: dict[tuple, str] = {}  # replica lists and ISRs repeat: remember their text


def _int_array_json(items: Any) -> str:
    if type(items) is not tuple or not _JUST_INT.issuperset(map(type, items)):
        raise TypeError("not a tuple of ints")  # (a bool equals an int: check before the cache)
    text = _INT_ARRAY_TEXT.get(items)
    if text is None:
        if len(_INT_ARRAY_TEXT) >= _UUID_TEXT_MAX:
            _INT_ARRAY_TEXT.clear()
        text = _INT_ARRAY_TEXT[items] = "[" + ",".join(map(_int_repr, items)) + "]"
    return text


_UUID_ARRAY_TEXT: dict[tuple, str] = {}  # directory lists repeat too


def _uuid_array_json(items: Any) -> str:
    text = _UUID_ARRAY_TEXT.get(items)  # (fields hold Uuids: the constructor makes them so)
    if text is None:
        if type(items) is not tuple:
            raise TypeError("not a tuple")
        if len(_UUID_ARRAY_TEXT) >= _UUID_TEXT_MAX:
            _UUID_ARRAY_TEXT.clear()
        text = _UUID_ARRAY_TEXT[items] = "[" + ",".join(map(_uuid_json, items)) + "]"
    return text


_BOOL_JSON = {True: "true", False: "false"}


def _bool_json(x: bool) -> str:
    if type(x) is not bool:
        raise TypeError("not a bool")
    return _BOOL_JSON[x]


_INTS = ("int8", "int16", "uint16", "int32", "uint32", "int64")


# ---------------------------------------------------------------- generation


def _value_expr(cls: MessageClass, t: str, x: str, fn_of: Callable[[type], str]) -> str:
    """A Python expression giving the JSON text of one value ``x`` of schema type ``t``
    (an array element or a field of a type the struct's type guard does not cover)."""
    if t in _INTS:
        return f"_int_json({x})"
    if t == "string":
        return f"_json_str({x})"  # C; a TypeError for anything but a str
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


def _field_expr(cls: MessageClass, f: Any, version: int, x: str,
                fn_of: Callable[[type], str]) -> str:
    if f.is_array:
        et = f.element_type
        if et in _INTS:
            expr = f"_int_array_json({x})"
        elif et == "uuid":
            expr = f"_uuid_array_json({x})"
        else:
            elem = _value_expr(cls, et, "", fn_of).removesuffix("()")
            expr = f"_array_json({elem}, {x})"
        expr = f'("[]" if {x} is _EMPTY else {expr})'  # () is one object in CPython
    elif f.type in _INTS:  # the struct's type guard has checked it is an int
        return f"{x}:d"
    elif f.type == "bool":  # ... or a bool
        return f"_BOOL_JSON[{x}]"
    elif f.type == "uuid":  # the printed form, straight from the cache when it is there
        expr = f"(_uuid_text({x}) or _uuid_json({x}))"
    else:
        expr = _value_expr(cls, f.type, x, fn_of)
    if version not in f.nullable:  # a None here (hand-built) raises: the generic path prints it
        return expr
    return f'("null" if {x} is None else {expr})'


def _gen_struct(cls: MessageClass, version: int, fn_of: Callable[[type], str],
                ns: dict[str, Any]) -> str:
    flexible = version in cls._flexible
    name = fn_of(cls)
    # (field index or None, piece): a tagged field's piece prints only when it is not the default
    pieces: list[tuple[int | None, str]] = []
    guarded: list[tuple[int, type]] = []  # int and bool fields: one type check for them all
    for i, f in enumerate(cls._field_specs):
        if version not in f.versions:
            continue
        if not f.is_array and (f.type in _INTS or f.type == "bool"):
            guarded.append((i, int if f.type in _INTS else bool))
        piece = f'"{f.json_name}":' + "{" + _field_expr(cls, f, version, f"o[{i}]", fn_of) + "}"
        if flexible and version in f.tagged:
            ns[f"{name}_d{i}"] = cls._defaults[i]
            pieces.append((i, piece))
        else:
            pieces.append((None, piece))
    lines = [f"def {name}(o):"]
    if len(guarded) == 1:
        i, t = guarded[0]
        lines.append(f"    if type(o[{i}]) is not {t.__name__}: raise TypeError")
    elif guarded:
        ns[f"{name}_get"] = itemgetter(*(i for i, _ in guarded))
        ns[f"{name}_types"] = tuple(t for _, t in guarded)
        lines.append(f"    if tuple(map(type, {name}_get(o))) != {name}_types: raise TypeError")
    if pieces and pieces[0][0] is not None:  # a tagged field first: pieces joined by commas
        lines.append("    p = []")
        for i, piece in pieces:  # in declaration order, as to_json's dict has them
            cond = "" if i is None else f"if o[{i}] != {name}_d{i}: "
            lines.append(f"    {cond}p.append(f'''{piece}''')")
        lines.append("    return '{' + ','.join(p) + '}'")
        return "\n".join(lines)
    # one f-string; each tagged field is a piece with its comma, or "" when at its default
    parts = []
    for i, piece in pieces:
        if i is None:
            parts.append(("," if parts else "") + piece)
        else:
            lines.append(f"    t{i} = \"\" if o[{i}] == {name}_d{i} else f''',{piece}'''")
            parts.append("{t" + str(i) + "}")
    lines.append("    return f'''{{" + "".join(parts) + "}}'''")
    return "\n".join(lines)


def generate(cls: MessageClass, version: int) -> Callable[[Any], str]:
    """Generate (once) the text functions of ``cls``'s message and all its structs at
    ``version``; returns the one of ``cls``."""
    fn = cls._json_text.get(version)
    if fn is not None:
        return fn
    root = cls._root
    classes = [root, *root.STRUCTS.values()]
    names = {c: f"_j{k}" for k, c in enumerate(classes)}
    ns: dict[str, Any] = {
        "_int_json": _int_json, "_json_str": _json_str, "_bool_json": _bool_json,
        "_uuid_json": _uuid_json, "_uuid_text": _UUID_TEXT.get, "_float_json": _float_json,
        "_bytes_json": _bytes_json, "_array_json": _array_json,
        "_int_array_json": _int_array_json, "_BOOL_JSON": _BOOL_JSON,
        "_uuid_array_json": _uuid_array_json, "_EMPTY": (),
    }
    src = "\n\n".join(_gen_struct(c, version, names.__getitem__, ns) for c in classes)
    exec(compile(src, f"<kraft json {root.__name__} v{version}>", "exec"), ns)
    for c in classes:
        c._json_text[version] = ns[names[c]]
    return cls._json_text[version]
