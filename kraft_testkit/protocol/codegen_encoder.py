"""The encoders :mod:`.codegen` generates, as Python source: runs of fixed-width fields packed
with one ``struct.pack``, tagged fields sorted and written after the rest.
"""

from __future__ import annotations

import struct
from operator import itemgetter
from typing import TYPE_CHECKING

from . import primitives as P
from .codegen_source import _is_flexible, _Src, _struct_ref
from .schema import FieldSpec

if TYPE_CHECKING:
    from .codegen import Message


# ---- encoder


def _gen_encoder(cls: type[Message], v: int, ns: dict) -> str:
    s = _Src("e")
    flex = _is_flexible(cls, v)
    fields = cls._field_specs
    tagged: list[tuple[int, FieldSpec, int]] = []
    run: list[int] = []
    runs: dict[int, tuple] = {}  # first field of a packed run -> (field, packer) of each member

    def flush_run() -> None:
        if not run:
            return
        fmt = ">" + "".join(P.FIXED[fields[k].type][0] for k in run)
        st = s.const(struct.Struct(fmt).pack, "st")
        runs[run[0]] = tuple((k, struct.Struct(">" + P.FIXED[fields[k].type][0]).pack)
                             for k in run)
        for k in run:  # struct's '?' would take any object by truthiness; Kafka's bools are strict
            if fields[k].type == "bool":
                s(f"if type(o[{k}]) is not bool: _i = {k}; raise _EncodeError("
                  f"'expected True or False, got ' + repr(o[{k}]))")
        s(f"_i = {run[0]}")
        s(f"out += {st}({', '.join(f'o[{k}]' for k in run)})")
        run.clear()

    for i, f in enumerate(fields):
        if v not in f.versions:
            if f.ignorable:
                continue
            flush_run()
            d = s.const(cls._defaults[i], "d")
            s(f"if {_differs(cls._defaults[i], f'o[{i}]', d)}: raise _UVE('{cls.__name__}.{f.name} is not supported in "
              f"version {v} (it is in {f.versions})')")
            continue
        if flex and v in f.tagged:
            tagged.append((f.tag, f, i))
            continue
        if f.type in P.FIXED and not f.is_array:
            run.append(i)
            continue
        flush_run()
        s(f"_i = {i}")
        _emit_write(s, cls, f, v, f"o[{i}]", ns)
    flush_run()
    if flex:
        s(f"_i = {len(fields)}")
        if not tagged:
            s("if not o[-1]: out.append(0)")
            s("else: _write_tags(out, list(o[-1]))")
        else:
            s("_tf = list(o[-1])")
            for tag, f, i in sorted(tagged, key=lambda t: t[0]):
                d = s.const(cls._defaults[i], "d")
                s(f"if {_differs(cls._defaults[i], f'o[{i}]', d)}:")
                s.depth += 1
                s(f"_i = {i}")
                s("_outer = out")
                s("out = bytearray()")
                _emit_write(s, cls, f, v, f"o[{i}]", ns)
                s(f"_tf.append(({tag}, out))")
                s("out = _outer")
                s.depth -= 1
            s("if not _tf: out.append(0)")
            s("else: _write_tags(out, _tf)")
        ns["_write_tags"] = _write_tags
    else:
        s("if o[-1]: raise _UVE('" + cls.__name__ + " has unknown tagged fields, but version "
          f"{v} has no tagged fields')")
    ns["_RUNS"] = runs
    body = "\n".join("    " + ln for ln in s.lines) if s.lines else "        pass"
    ns.update(s.consts)
    return (
        "def _enc(o, out):\n"
        "    _i = 0\n"
        "    try:\n"
        f"{body}\n"
        "    except _EncodeError as e:\n"  # seen from this struct: prefix the field path
        "        _p = _NAMES[_i] if _i < len(_NAMES) else '_unknown_tags'\n"
        "        raise _EncodeError(e.reason, path=_p + '.' + e.path if e.path else _p) from None\n"
        "    except _UVE:\n"
        "        raise\n"
        "    except (TypeError, ValueError, OverflowError, AttributeError, IndexError,\n"
        "            _StructError) as e:\n"
        "        for _k, _pk in _RUNS.get(_i, ()):\n"  # which member of a packed run failed
        "            try:\n"
        "                _pk(o[_k])\n"
        "            except Exception:\n"
        "                _i = _k\n"
        "                break\n"
        "        raise _EncodeError(str(e) or type(e).__name__, path=_NAMES[_i] if _i < len(_NAMES) "
        "else '_unknown_tags') from None\n"
    )


def _differs(default: object, x: str, d: str) -> str:
    """The test that a value is not its field's default: a struct left at its default is that
    very object, so identity answers first (a struct's ``!=`` is a Python call)."""
    if isinstance(default, tuple):
        return f"{x} is not {d} and {x} != {d}"
    return f"{x} != {d}"


def _emit_compact_len(s: _Src, x: str) -> None:
    """A compact array's or string's length + 1 as a uvarint: below 128 that is one byte, the
    value itself (appended, no call); larger ones through uvarint_bytes."""
    n = s.tmp("n")
    s(f"{n} = len({x}) + 1")
    s(f"if {n} < 128: out.append({n})")
    s(f"else: out += _uvb({n})")


def _write_tags(out: bytearray, tags: list) -> None:
    """The tagged fields: their count, then tag, size and bytes each, as uvarints (a value
    below 128 is its own byte, appended without a call: nearly every tag and size)."""
    n = len(tags)
    if n > 1:
        tags.sort(key=itemgetter(0))
    if n < 128:
        out.append(n)
    else:
        out += P.uvarint_bytes(n)
    for tag, data in tags:
        if 0 <= tag < 128:
            out.append(tag)
        else:
            out += P.uvarint_bytes(tag)
        size = len(data)
        if size < 128:
            out.append(size)
        else:
            out += P.uvarint_bytes(size)
        out += data


def _emit_write(s: _Src, cls: type[Message], f: FieldSpec, v: int, expr: str, ns: dict) -> None:
    compact = _is_flexible(cls, v, f)
    nullable = v in f.nullable
    x = s.tmp("x")
    s(f"{x} = {expr}")
    if f.is_array:
        s(f"if {x} is None:")
        if nullable:
            s("    out += " + ("b'\\x00'" if compact else "b'\\xff\\xff\\xff\\xff'"))
        else:
            s(f"    raise _EncodeError('null is not allowed for {f.name} in version {v}')")
        s("else:")
        s.depth += 1
        if compact:
            _emit_compact_len(s, x)
        else:
            s(f"out += {s.const(P.INT32.pack, 'st')}(len({x}))")
        et = f.element_type
        if et in P.FIXED:
            letter = P.FIXED[et][0]
            s(f"out += _pack('>' + str(len({x})) + '{letter}', *{x})")
        elif et == "uuid":
            s(f"for _e in {x}:")
            s("    if len(_e) != 16: raise _EncodeError('a uuid is 16 bytes')")
            s("    out += _e")
        elif et in ("string", "bytes", "records"):
            s(f"for _e in {x}:")
            s.depth += 1
            _emit_write_scalar(s, et, compact, False, "_e", f.name, v)
            s.depth -= 1
        else:
            enc = s.tmp("enc")
            s(f"{enc} = {_struct_ref(f, ns)}._encoders[_version]")
            s(f"for _e in {x}: {enc}(_e, out)")
        s.depth -= 1
        return
    if f.is_struct:
        enc = f"{_struct_ref(f, ns)}._encoders[_version]"
        if nullable:
            s(f"if {x} is None: out.append(0xFF)")
            s("else:")
            s("    out.append(1)")
            s(f"    {enc}({x}, out)")
        else:
            s(f"if {x} is None: raise _EncodeError('null is not allowed for {f.name} in version {v}')")
            s(f"{enc}({x}, out)")
        return
    _emit_write_scalar(s, f.type, compact, nullable, x, f.name, v)


def _emit_write_scalar(s: _Src, t: str, compact: bool, nullable: bool, x: str, name: str,
                       v: int) -> None:
    if t in P.FIXED:
        if t == "bool":
            s(f"if type({x}) is not bool: raise _EncodeError('expected True or False, got ' + "
              f"repr({x}))")
        s(f"out += {s.const(struct.Struct('>' + P.FIXED[t][0]).pack, 'st')}({x})")
        return
    if t == "uuid":
        s(f"if len({x}) != 16: raise _EncodeError('a uuid is 16 bytes')")
        s(f"out += {x}")
        return
    s(f"if {x} is None:")
    if nullable:
        null = "b'\\x00'" if compact else ("b'\\xff\\xff'" if t == "string" else "b'\\xff\\xff\\xff\\xff'")
        s(f"    out += {null}")
    else:
        s(f"    raise _EncodeError('null is not allowed for {name} in version {v}')")
    s("else:")
    s.depth += 1
    b = s.tmp("b")
    s(f"{b} = {x}.encode() if type({x}) is str else {x}" if t == "string" else f"{b} = {x}")
    if t == "string":
        s(f"if type({x}) is not str: raise _EncodeError('expected a str, got ' + type({x}).__name__)")
    else:
        s(f"if not isinstance({b}, (bytes, bytearray, memoryview)): "
          f"raise _EncodeError('expected bytes, got ' + type({b}).__name__)")
    if compact:
        _emit_compact_len(s, b)
    elif t == "string":
        s(f"if len({b}) > 32767: raise _EncodeError('string longer than 32767 bytes')")
        s(f"out += {s.const(P.INT16.pack, 'st')}(len({b}))")
    else:
        s(f"out += {s.const(P.INT32.pack, 'st')}(len({b}))")
    s(f"out += {b}")
    s.depth -= 1
