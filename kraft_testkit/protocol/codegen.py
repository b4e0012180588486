"""Turns a :class:`~.schema.MessageSpec` into an immutable class with generated per-version codecs.

Why generated code: a schema interpreter walks the declaration for every field of every record;
generating one straight-line Python function per (struct, version) -- runs of fixed-width fields
folded into a single ``struct.unpack_from`` -- is several times faster, and the kit decodes
millions of records. Codecs are generated lazily, on the first use of a version, so importing
the kit stays cheap.

Each class has two decoders per version. The checked one (``_checked``, one function per struct)
keeps track of the field it is reading, so that its errors name the field path. The fast one
(``_decoders``, what ``decode`` uses) reads the whole message in one function, nested structs
inline, without that bookkeeping; it makes the same checks, and on any error hands the same
bytes to the checked decoder, which raises the error with its path and offset.

Message objects are tuples (fast to build, immutable, hashable) with named properties;
``_unknown_tags`` (the last slot) keeps tagged fields no declaration knows, so they are written
back unchanged.
"""

from __future__ import annotations

import base64
import struct
from operator import itemgetter
from typing import Any, Callable, ClassVar

from . import primitives as P
from .errors import DecodeError, EncodeError, UnsupportedVersionError
from .schema import INF, MISSING, FieldSpec, MessageSpec, Versions
from .uuid import Uuid, uuid_cache_add, uuid_cache_get

_tuple_new = tuple.__new__

# ---------------------------------------------------------------- the base class


class Message(tuple):
    """Base of every generated message and struct class.

    Build with keyword arguments (snake_case names); omitted fields take their schema default.
    ``msg.encode(version)`` / ``Cls.decode(data, version)`` speak Kafka's bytes;
    ``msg.to_json(version)`` gives the JSON that Kafka's tools print.
    """

    __slots__ = ()
    _spec: ClassVar[MessageSpec | None] = None
    _struct_name: ClassVar[str]
    _field_specs: ClassVar[tuple[FieldSpec, ...]]
    _names: ClassVar[tuple[str, ...]]
    _defaults: ClassVar[tuple[Any, ...]]
    _root: ClassVar[type["Message"]]
    _flexible: ClassVar[Versions]
    _decoders: ClassVar[dict[int, Callable]]  # fast, falling back to _checked on errors
    _checked: ClassVar[dict[int, Callable]]  # checked: errors name the field path
    _encoders: ClassVar[dict[int, Callable]]
    STRUCTS: ClassVar[dict[str, type["Message"]]]

    # --- construction and access
    def replace(self, **changes: Any) -> "Message":
        """A copy with some fields changed (the original is immutable)."""
        values = dict(zip(self._names, self))
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        values.update(changes)
        return type(self)(**values)

    def asdict(self) -> dict[str, Any]:
        """Field values by snake_case name (nested structs stay objects)."""
        return dict(zip(self._names[:-1], self))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        parts = []
        for name, value, default in zip(self._names, self, self._defaults):
            if name == "_unknown_tags" and not value:
                continue
            if value != default or name == self._names[0]:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __getnewargs__(self):  # pickling (Spark ships records to workers)
        return tuple(self)

    def __reduce__(self):
        return (_rebuild, (type(self)._root, type(self)._struct_name, tuple(self)))

    # --- bytes
    @classmethod
    def valid_versions(cls) -> range:
        spec = cls._root._spec
        return range(spec.versions.lo, spec.versions.hi + 1)

    @classmethod
    def _check_version(cls, version: int) -> None:
        spec = cls._root._spec
        if version not in spec.versions:
            raise UnsupportedVersionError(
                f"{spec.name} has versions {spec.versions}, not {version}"
            )

    def encode(self, version: int) -> bytes:
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)

    def encode_into(self, out: bytearray, version: int) -> None:
        enc = type(self)._encoders.get(version)
        if enc is None:
            self._check_version(version)
            enc = _compile(type(self), version, "enc")
        enc(self, out)

    @classmethod
    def decode(cls, data: bytes, version: int) -> "Message":
        """Decode exactly ``data`` (trailing bytes are an error)."""
        if type(data) is not bytes:
            data = bytes(data)
        dec = cls._decoders.get(version)
        if dec is None:
            cls._check_version(version)
            dec = _compile(cls, version, "dec")
        obj, pos = dec(data, 0)
        if pos != len(data):
            raise DecodeError(f"{len(data) - pos} trailing bytes after {cls.__name__} v{version}",
                              offset=pos)
        return obj

    @classmethod
    def decode_from(cls, data: bytes, pos: int, version: int) -> tuple["Message", int]:
        """Decode one message starting at ``pos``; returns it and the position after it."""
        dec = cls._decoders.get(version)
        if dec is None:
            cls._check_version(version)
            dec = _compile(cls, version, "dec")
        return dec(data, pos)

    # --- JSON, as Kafka's generated JSON converters print it
    def to_json(self, version: int) -> dict[str, Any]:
        self._check_version(version)
        return _to_json(self, version)

    @classmethod
    def from_json(cls, obj: dict[str, Any], version: int) -> "Message":
        cls._check_version(version)
        return _from_json(cls, obj, version, cls.__name__)


def _rebuild(root: type[Message], struct_name: str, values: tuple) -> Message:
    cls = root if root._struct_name == struct_name else root.STRUCTS[struct_name]
    return _tuple_new(cls, values)


# ---------------------------------------------------------------- class building


def _zero(f: FieldSpec, structs: dict[str, type[Message]]) -> Any:
    """The value a field takes when absent: its declared default, else its type's zero."""
    if f.default is not MISSING:
        if f.default is None:
            return None
        if f.is_array:
            raise ValueError(f"field {f.name}: arrays only take a null default")
        if f.type == "float64":
            return float(f.default)
        return f.default
    if f.is_array:
        return ()
    t = f.type
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return 0
    if t == "float64":
        return 0.0
    if t == "bool":
        return False
    if t == "string":
        return ""
    if t == "bytes":
        return b""
    if t == "records":
        return None
    if t == "uuid":
        return Uuid.ZERO
    return structs[t]()


def build_message_class(spec: MessageSpec, module: str = __name__) -> type[Message]:
    """Build the class of ``spec`` and of every struct it contains (``Cls.STRUCTS``)."""
    structs: dict[str, type[Message]] = {}
    root_box: list[type[Message]] = []

    def make(name: str, fields: tuple[FieldSpec, ...]) -> type[Message]:
        for f in fields:  # children first: defaults of struct fields need their classes
            if f.is_struct:
                sub = f.element_type
                if sub in structs:
                    continue
                structs[sub] = make(sub, f.fields)
        names = tuple(f.py_name for f in fields) + ("_unknown_tags",)
        defaults = tuple(_zero(f, structs) for f in fields) + ((),)
        ns: dict[str, Any] = {
            "__slots__": (),
            "__module__": module,
            "_struct_name": name,
            "_field_specs": fields,
            "_names": names,
            "_defaults": defaults,
            "_decoders": {},
            "_checked": {},
            "_encoders": {},
            "_flexible": spec.flexible,
        }
        for i, n in enumerate(names):
            ns[n] = property(itemgetter(i), doc=f"{fields[i].name}" if i < len(fields) else
                             "Tagged fields not declared: ((tag, raw bytes), ...)")
        cls = type(name, (Message,), ns)
        cls.__new__ = _make_new(cls, fields, defaults)
        return cls

    root = make(spec.name, spec.fields)
    root_box.append(root)
    root._spec = spec
    root.STRUCTS = structs
    for cls in (root, *structs.values()):
        cls._root = root
        if cls is not root:
            cls.__qualname__ = f"{spec.name}.{cls.__name__}"
    for sname, scls in structs.items():
        if not hasattr(root, sname):
            setattr(root, sname, scls)
    return root


def _make_new(cls: type, fields: tuple[FieldSpec, ...], defaults: tuple) -> Callable:
    """A ``__new__`` taking keyword arguments, normalising lists to tuples and uuids to Uuid."""
    ns: dict[str, Any] = {"_tn": _tuple_new, "_cls": cls, "_norm_uuid": _norm_uuid,
                          "_norm_arr": _norm_arr}
    params, body, values = [], [], []
    for i, f in enumerate(fields):
        n = f.py_name
        ns[f"_d{i}"] = defaults[i]
        params.append(f"{n}=_d{i}")
        if f.is_array:
            conv = _norm_uuid if f.element_type == "uuid" else None
            ns[f"_c{i}"] = conv
            body.append(f"    if {n} is not None and type({n}) is not tuple: {n} = _norm_arr({n}, _c{i})")
        elif f.type == "uuid":
            body.append(f"    if type({n}) is not _Uuid: {n} = _norm_uuid({n})")
        values.append(n)
    ns["_Uuid"] = Uuid
    params.append("_unknown_tags=()")
    values.append("tuple(_unknown_tags)")
    src = (f"def __new__(cls, *, {', '.join(params)}):\n" + "\n".join(body) +
           f"\n    return _tn(cls, ({', '.join(values)},))\n")
    exec(src, ns)
    return ns["__new__"]


def _norm_uuid(v: Any) -> Uuid:
    if v is None:
        return v
    return v if type(v) is Uuid else Uuid(v)


def _norm_arr(v: Any, conv: Callable | None) -> tuple:
    if isinstance(v, (str, bytes)):
        raise TypeError(f"expected a sequence, got {type(v).__name__}")
    return tuple(conv(x) for x in v) if conv else tuple(v)


# ---------------------------------------------------------------- code generation


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


def _compile(cls: type[Message], version: int, which: str) -> Callable:
    """Generate (once) the codecs of ``cls`` at ``version``: the checked decoder and the encoder
    of the root and of every struct, then, for ``"dec"``, the fast decoder of ``cls``."""
    for c in (cls._root, *cls._root.STRUCTS.values()):
        if version in c._checked:
            continue
        _gen_struct(c, version)
    if which == "enc":
        return cls._encoders[version]
    dec = cls._decoders.get(version)
    if dec is None:
        dec = cls._decoders[version] = _gen_fast_decoder(cls, version)
    return dec


def _namespace(cls: type[Message], version: int) -> dict[str, Any]:
    """Globals of the generated functions of ``cls`` at ``version``."""
    root = cls._root
    return {
        "_tn": _tuple_new, "_cls": cls, "_Uuid": Uuid, "_bnew": bytes.__new__,
        "_uvarint": P.read_uvarint, "_uvb": P.uvarint_bytes, "_unpack": struct.unpack_from,
        "_pack": struct.pack, "_DecodeError": DecodeError, "_EncodeError": EncodeError,
        "_UVE": UnsupportedVersionError, "_NAMES": [f.name for f in cls._field_specs],
        "_lowlevel": _lowlevel_error, "_structs": root.STRUCTS, "_root": root,
        "_tagsort": itemgetter(0), "_version": version, "_StructError": struct.error,
        "_uuid_get": uuid_cache_get, "_uuid_new": uuid_cache_add,
    }


def _exec(code: str, ns: dict[str, Any], cls: type[Message], version: int, what: str) -> None:
    try:
        exec(compile(code, f"<kraft codec {cls._root.__name__}.{cls.__name__} v{version}"
                           f"{what}>", "exec"), ns)
    except SyntaxError as e:  # a bug in this module, never in user input
        raise RuntimeError(f"codegen failed for {cls.__name__} v{version}: {e}\n{code}") from e


def _gen_struct(cls: type[Message], version: int) -> None:
    """The checked decoder and the encoder of one struct (structs resolve by name at call time:
    they are generated in the same pass)."""
    ns = _namespace(cls, version)
    code = _gen_decoder(cls, version, ns) + "\n" + _gen_encoder(cls, version, ns)
    _exec(code, ns, cls, version, "")
    cls._checked[version] = ns["_dec"]
    cls._encoders[version] = ns["_enc"]


def _gen_fast_decoder(cls: type[Message], version: int) -> Callable:
    """One function reading a whole ``cls`` (nested structs inline), without the bookkeeping
    that names the failing field: on any error it hands over to the checked decoder, which
    reads the same bytes again and raises the error with its path and offset. Both run the
    same checks, so what the fast one returns is what the checked one would."""
    ns = _namespace(cls, version)
    ns["_checked"] = cls._checked[version]
    _exec(_gen_decoder(cls, version, ns, fast=True), ns, cls, version, " fast")
    return ns["_dec"]


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
            s(f"{var} = _unpack('>' + str({n}) + '{letter}', buf, pos)")
            s(f"pos += {width} * {n}")
        elif et == "uuid":
            s(f"_end = pos + 16 * {n}")
            s("if _end > _bl: raise _DecodeError('uuid array past the end', offset=pos)")
            lst = s.tmp("l")
            s(f"{lst} = []")
            if s.fast:
                s(f"for _k in range(pos, _end, 16): "
                  f"{lst}.append(_uuid_get(buf[_k:_k + 16]) or _uuid_new(buf, _k))")
            else:
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
            s(f"if o[{i}] != {d}: raise _UVE('{cls.__name__}.{f.name} is not supported in "
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
                s(f"if o[{i}] != {d}:")
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


def _write_tags(out: bytearray, tags: list) -> None:
    tags.sort(key=itemgetter(0))
    out += P.uvarint_bytes(len(tags))
    for tag, data in tags:
        out += P.uvarint_bytes(tag)
        out += P.uvarint_bytes(len(data))
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
            s(f"out += _uvb(len({x}) + 1)")
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
        s(f"out += _uvb(len({b}) + 1)")
    elif t == "string":
        s(f"if len({b}) > 32767: raise _EncodeError('string longer than 32767 bytes')")
        s(f"out += {s.const(P.INT16.pack, 'st')}(len({b}))")
    else:
        s(f"out += {s.const(P.INT32.pack, 'st')}(len({b}))")
    s(f"out += {b}")
    s.depth -= 1


# ---------------------------------------------------------------- JSON


def _json_value(f: FieldSpec, value: Any, version: int) -> Any:
    if value is None:
        return None
    if f.is_array:
        return [_json_scalar(f.element_type, x, version) for x in value]
    return _json_scalar(f.type, value, version)


def _json_scalar(t: str, value: Any, version: int) -> Any:
    if isinstance(value, Message):
        return _to_json(value, version)
    if t == "uuid":
        return str(value)
    if t in ("bytes", "records"):
        return base64.b64encode(value).decode("ascii")
    return value


def _to_json(msg: Message, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    flex = version in type(msg)._flexible
    for f, value, default in zip(type(msg)._field_specs, msg, type(msg)._defaults):
        if version not in f.versions:
            continue
        if flex and version in f.tagged and value == default:
            continue
        out[f.json_name] = _json_value(f, value, version)
    return out


def _from_json_value(cls: type[Message], f: FieldSpec, raw: Any, version: int, path: str) -> Any:
    if raw is None:
        return None
    if f.is_array:
        if not isinstance(raw, list):
            raise DecodeError(f"expected a JSON array, got {type(raw).__name__}", path=path)
        return tuple(_from_json_scalar(cls, f, x, version, f"{path}[{k}]") for k, x in enumerate(raw))
    return _from_json_scalar(cls, f, raw, version, path)


def _from_json_scalar(cls: type[Message], f: FieldSpec, raw: Any, version: int, path: str) -> Any:
    t = f.element_type
    try:
        if f.is_struct:
            sub = cls._root.STRUCTS[t] if t != cls._root._struct_name else cls._root
            return _from_json(sub, raw, version, path)
        if t == "uuid":
            return Uuid.parse(raw)
        if t in ("bytes", "records"):
            return base64.b64decode(raw)
        if t == "bool":
            if not isinstance(raw, bool):
                raise TypeError("expected true or false")
            return raw
        if t == "string":
            if not isinstance(raw, str):
                raise TypeError("expected a string")
            return raw
        if t == "float64":
            return float(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise TypeError(f"expected an integer, got {raw!r}")
        return raw
    except (TypeError, ValueError) as e:
        if isinstance(e, DecodeError):
            raise
        raise DecodeError(str(e), path=path) from None


def _from_json(cls: type[Message], obj: Any, version: int, path: str) -> Message:
    if not isinstance(obj, dict):
        raise DecodeError(f"expected a JSON object, got {type(obj).__name__}", path=path)
    kwargs = {}
    flex = version in cls._flexible
    for f in cls._field_specs:
        if version not in f.versions:
            continue
        if f.json_name not in obj:
            if flex and version in f.tagged:
                continue
            raise DecodeError(f"missing field {f.json_name!r}", path=path)
        kwargs[f.py_name] = _from_json_value(cls, f, obj[f.json_name], version,
                                             f"{path}.{f.json_name}")
    return cls(**kwargs)


__all__ = ["Message", "build_message_class", "INF"]
