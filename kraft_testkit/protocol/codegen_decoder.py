"""The decoders :mod:`.codegen` generates, as Python source: one emitter for both the checked
decoder (errors name the field path) and the fast one (no bookkeeping, nested structs inline).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from . import primitives as P
from .codegen_source import _is_flexible, _Src, _struct_class, _struct_ref
from .schema import FieldSpec

if TYPE_CHECKING:
    from .codegen import Message

_tuple_new = tuple.__new__

# ---- decoder
#
# One emitter serves both decoders. The checked one (one function per struct, calling the
# functions of nested structs) records which field it is in (``_i``, and ``_j`` in arrays of
# structs) so that its error handler can name the field path. The fast one (``fast=True``) has
# no bookkeeping and reads nested structs inline, under a name prefix of their own.

_CAUGHT = "(IndexError, ValueError, TypeError, OverflowError, _StructError)"


class _Dec:
    """What the emitters of one decoder share: the source, the mode and the structs being
    read inline (a struct containing itself is called, not inlined)."""

    def __init__(self, s: _Src, ns: dict, fast: bool) -> None:
        self.s = s
        self.ns = ns
        self.fast = fast
        self.inlined: list[type[Message]] = []

    def mark(self, line: str) -> None:
        """A bookkeeping line, for the checked decoder only."""
        if not self.fast:
            self.s(line)


def _gen_decoder(cls: type[Message], v: int, ns: dict, fast: bool = False) -> str:
    s = _Src("d", fast)
    d = _Dec(s, ns, fast)
    d.inlined.append(cls)
    d.mark("_i = 0")
    d.mark("_j = -1")
    s("_bl = len(buf)")
    obj = _emit_struct(d, cls, v, "_")
    if fast:  # reads past the end only ever move pos past it: one check covers them all
        s("if pos > _bl: return _checked(buf, _start)")
    s(f"return {obj}, pos")
    body = "\n".join("    " + ln for ln in s.lines)
    ns.update(s.consts)
    if fast:
        return (
            "def _dec(buf, pos):\n"
            "    _start = pos\n"
            "    try:\n"
            f"{body}\n"
            f"    except {_CAUGHT}:\n"
            "        return _checked(buf, _start)\n"
        )
    return (
        "def _dec(buf, pos):\n"
        "    try:\n"
        f"{body}\n"
        "    except _DecodeError as e:\n"
        "        _p = _NAMES[_i] if _i < len(_NAMES) else '_tagged_fields'\n"
        "        if _j >= 0: _p = _p + '[' + str(_j) + ']'\n"
        "        raise e.within(_p) from None\n"
        f"    except {_CAUGHT} as e:\n"
        "        _p = _NAMES[_i] if _i < len(_NAMES) else '_tagged_fields'\n"
        "        if _j >= 0: _p = _p + '[' + str(_j) + ']'\n"
        "        raise _lowlevel(e, pos, _p) from None\n"
    )


def _emit_struct(d: _Dec, cls: type[Message], v: int, p: str) -> str:
    """Lines reading one ``cls`` at ``pos``; returns the expression that builds it. Locals of
    this struct start with ``p`` (``_`` at the top, a fresh prefix for each struct inlined)."""
    s = d.s
    flex = _is_flexible(cls, v)
    fields = cls._field_specs
    values: list[str] = []
    tagged: list[tuple[int, FieldSpec, str]] = []
    run: list[tuple[int, FieldSpec]] = []

    def flush_run(tail: str | None = None) -> None:
        """Read the run of fixed-width fields; ``tail`` names a local that takes the byte after
        them too (the fast decoder reads the tagged-field count so)."""
        if not run:
            return
        if tail is None and d.fast and len(run) == 1 and run[0][1].type in ("bool", "int8"):
            one = f"{p}v{run[0][0]}"  # a lone byte: no struct call
            s(f"{one} = buf[pos] != 0" if run[0][1].type == "bool" else
              f"{one} = (buf[pos] ^ 0x80) - 0x80")
            s("pos += 1")
            run.clear()
            return
        fmt = ">" + "".join(P.FIXED[f.type][0] for _, f in run) + ("B" if tail else "")
        size = struct.calcsize(fmt)
        st = s.const(struct.Struct(fmt).unpack_from, "st")
        d.mark(f"_i = {run[0][0]}")
        names = ", ".join([f"{p}v{k}" for k, _ in run] + ([tail] if tail else []))
        s(f"{names}, = {st}(buf, pos)")
        s(f"pos += {size}")
        run.clear()

    for i, f in enumerate(fields):
        var = f"{p}v{i}"
        values.append(var)
        if v not in f.versions:
            flush_run()
            s(f"{var} = {s.const(cls._defaults[i], 'd')}")
            continue
        if flex and v in f.tagged:
            flush_run()
            s(f"{var} = {s.const(cls._defaults[i], 'd')}")
            tagged.append((f.tag, f, var))
            continue
        if f.type in P.FIXED and not f.is_array:
            run.append((i, f))
            continue
        flush_run()
        d.mark(f"_i = {i}")
        _emit_read(d, cls, f, v, var)
    nt, tag, size, end, unk = (f"{p}{n}" for n in ("nt", "tag", "sz", "tend", "unk"))
    if flex and d.fast and run:  # the tagged-field count rides along with the fixed run
        flush_run(tail=nt)
    else:
        flush_run()
        if flex:
            d.mark(f"_i = {len(fields)}")
            s(f"{nt} = buf[pos]")
            s("pos += 1")
    if flex:
        s(f"{unk} = ()")
        s(f"if {nt}:")
        s.depth += 1
        s(f"if {nt} & 0x80: {nt}, pos = _uvarint(buf, pos - 1)")
        s(f"for _ in range({nt}):")
        s.depth += 1
        for var in (tag, size):
            if d.fast:  # one-byte varints inline (the checked decoder names truncated ones)
                s(f"{var} = buf[pos]")
                s("pos += 1")
                s(f"if {var} & 0x80: {var}, pos = _uvarint(buf, pos - 1)")
            else:
                s(f"{var}, pos = _uvarint(buf, pos)")
        s(f"{end} = pos + {size}")
        if not d.fast:
            s(f"if {end} > _bl: raise _DecodeError('tagged field runs past the end', offset=pos)")
        first = True
        for tag_id, f, var in sorted(tagged, key=lambda t: t[0]):
            s(f"{'if' if first else 'elif'} {tag} == {tag_id}:")
            first = False
            s.depth += 1
            d.mark(f"_i = {fields.index(f)}")
            _emit_read(d, cls, f, v, var)
            s(f"if pos != {end}: raise _DecodeError("
              f"'tagged field {f.name} is ' + str({size}) + ' bytes but its value took ' "
              f"+ str(pos - {end} + {size}), offset={end} - {size})")
            s.depth -= 1
        if first:
            s("if True:")
        else:
            s("else:")
        s.depth += 1
        s(f"{unk} += (({tag}, buf[pos:{end}]),)")
        s(f"pos = {end}")
        s.depth -= 3
        values.append(unk)
    else:
        values.append("()")
    build = f"_tn({s.const(cls, 'cls')}, ({', '.join(values)},))"
    if not any(v in f.versions for f in fields):  # NoOpRecord: one shared object, as for ()
        empty = s.const(_tuple_new(cls, cls._defaults), "empty")
        build = f"({empty} if not {values[-1]} else {build})"
    return build


_SHORT_ARRAY = 64
#: struct letter -> [n] -> unpack_from of n big-endian values, for arrays shorter than _SHORT_ARRAY
_ARRAY_READERS = {letter: tuple(struct.Struct(f">{n}{letter}").unpack_from
                                for n in range(_SHORT_ARRAY))
                  for letter, _ in P.FIXED.values()}


def _emit_len(s: _Src, compact: bool, four: bool, var: str, null: str | None = None) -> None:
    """Read a length prefix into ``var``; -1 means null. ``null``, when given, is the statement
    that rejects a null (the caller then needs no null check of its own)."""
    if compact and s.fast:  # one-byte lengths (0..126) on the straight path
        s(f"{var} = buf[pos] - 1")
        s("pos += 1")
        s(f"if {'not 0 <= ' if null else ''}{var}{' < 127' if null else ' > 126'}:")
        s(f"    if {var} > 126 and buf[pos] < 0x80:")  # two bytes (127..16383), still inline
        s(f"        {var} = ({var} - 127 | buf[pos] << 7) - 1")
        s("        pos += 1")
        s("    else:")
        s(f"        {var}, pos = _uvarint(buf, pos - 1)")
        s(f"        {var} -= 1")
        if null:
            s(f"    if {var} < 0: {null}")
        return
    if compact:
        s(f"{var} = buf[pos]")
        s("pos += 1")
        s(f"if {var} & 0x80: {var}, pos = _uvarint(buf, pos - 1)")
        s(f"{var} -= 1")
    else:
        st = s.const((P.INT32 if four else P.INT16).unpack_from, "st")
        s(f"{var}, = {st}(buf, pos)")
        s(f"pos += {4 if four else 2}")
    if null is not None:
        s(f"if {var} < 0: {null}")


_NULL_FIELD = "raise _DecodeError('null value for non-nullable field', offset=pos)"


def _emit_len_and_null(s: _Src, compact: bool, four: bool, f: FieldSpec, v: int, n: str,
                       var: str) -> None:
    """Read the length ``n`` of field ``f`` and handle null; leaves an open block at depth+1
    (``else:`` of the null case for nullable fields)."""
    if v in f.nullable:
        _emit_len(s, compact, four, n)
        s(f"if {n} < 0:")
        s(f"    {var} = None")
        s("else:")
    else:
        _emit_len(s, compact, four, n, _NULL_FIELD)
        s("if True:")
    s.depth += 1


def _emit_nested(d: _Dec, cls: type[Message], f: FieldSpec, v: int, var: str) -> None:
    """Read one struct of field ``f`` into ``var``: inline (fast) or by calling its checked
    decoder (checked, and a struct that contains itself)."""
    sub = _struct_class(f, cls)
    if d.fast and sub not in d.inlined:
        d.inlined.append(sub)
        obj = _emit_struct(d, sub, v, d.s.tmp("s") + "_")
        d.inlined.pop()
        d.s(f"{var} = {obj}")
    else:
        d.s(f"{var}, pos = {_struct_ref(f, d.ns)}._checked[_version](buf, pos)")


def _emit_read(d: _Dec, cls: type[Message], f: FieldSpec, v: int, var: str) -> None:
    s = d.s
    compact = _is_flexible(cls, v, f)
    t = f.type
    if f.is_array:
        n = s.tmp("n")
        _emit_len_and_null(s, compact, True, f, v, n, var)
        s(f"if {n} > _bl - pos: raise _DecodeError('array of ' + str({n}) + "
          "' elements cannot fit in the bytes left', offset=pos)")
        et = f.element_type
        if et in P.FIXED:
            letter, width = P.FIXED[et]
            if s.fast:  # short arrays (replica lists, ISRs) through a precompiled Struct
                table = s.const(_ARRAY_READERS[letter], "ar")
                s(f"{var} = {table}[{n}](buf, pos) if {n} < {_SHORT_ARRAY} else "
                  f"_unpack('>' + str({n}) + '{letter}', buf, pos)")
            else:
                s(f"{var} = _unpack('>' + str({n}) + '{letter}', buf, pos)")
            s(f"pos += {width} * {n}")
        elif et == "uuid":
            s(f"_end = pos + 16 * {n}")
            s("if _end > _bl: raise _DecodeError('uuid array past the end', offset=pos)")
            if s.fast:  # one uuid (a broker's log dir) inline, more in one helper call
                s(f"if {n} == 1: {var} = (_uuid_get(buf[pos:_end]) or _uuid_new(buf, pos),)")
                s(f"else: {var} = _uuid_array(buf, pos, _end)")
            else:
                lst = s.tmp("l")
                s(f"{lst} = []")
                s(f"for _k in range(pos, _end, 16): {lst}.append(_bnew(_Uuid, buf[_k:_k + 16]))")
                s(f"{var} = tuple({lst})")
            s("pos = _end")
        elif et in ("string", "bytes", "records"):
            lst = s.tmp("l")
            s(f"{lst} = []")
            s(f"for _ in range({n}):")
            s.depth += 1
            _emit_scalar(s, et, compact, v, f, "_e", element=True)
            s(f"{lst}.append(_e)")
            s.depth -= 1
            s(f"{var} = tuple({lst})")
        else:
            lst = s.tmp("l")
            s(f"{lst} = []")
            s(f"for {'_' if d.fast else '_j'} in range({n}):")
            s.depth += 1
            _emit_nested(d, cls, f, v, "_e")
            s(f"{lst}.append(_e)")
            s.depth -= 1
            d.mark("_j = -1")
            s(f"{var} = tuple({lst})")
        s.depth -= 1
        return
    if f.is_struct:
        if v in f.nullable:
            s("_m = buf[pos]")
            s("pos += 1")
            s("if _m == 0xFF:")
            s(f"    {var} = None")
            s("else:")
            s.depth += 1
            _emit_nested(d, cls, f, v, var)
            s.depth -= 1
        else:
            _emit_nested(d, cls, f, v, var)
        return
    _emit_scalar(s, t, compact, v, f, var)


def _emit_scalar(s: _Src, t: str, compact: bool, v: int, f: FieldSpec, var: str,
                 element: bool = False) -> None:
    if t in P.FIXED:
        letter, width = P.FIXED[t]
        st = s.const(struct.Struct(">" + letter).unpack_from, "st")
        s(f"{var}, = {st}(buf, pos)")
        s(f"pos += {width}")
        return
    if t == "uuid":
        if s.fast:  # no bounds check: see _gen_decoder
            s(f"{var} = _uuid_get(buf[pos:pos + 16]) or _uuid_new(buf, pos)")
            s("pos += 16")
            return
        s("_end = pos + 16")
        s("if _end > _bl: raise _DecodeError('uuid past the end', offset=pos)")
        s(f"{var} = _bnew(_Uuid, buf[pos:_end])")
        s("pos = _end")
        return
    n = s.tmp("n")
    if element:
        _emit_len(s, compact, t != "string", n, "raise _DecodeError('null element', offset=pos)")
        s("if True:")
        s.depth += 1
    else:
        _emit_len_and_null(s, compact, t != "string", f, v, n, var)
    s(f"_end = pos + {n}")
    if not s.fast:  # the fast decoder checks once, at its end (see _gen_decoder)
        s(f"if _end > _bl: raise _DecodeError('{t} of ' + str({n}) + ' bytes runs past the end', "
          "offset=pos)")
    if t == "string":
        s(f"{var} = buf[pos:_end].decode()")
    else:
        s(f"{var} = buf[pos:_end]")
    s("pos = _end")
    s.depth -= 1
