"""Avro: schemas to Arrow types as Spark's ``from_avro`` maps them, and records decoded by
fastavro's compiled reader straight into Arrow arrays.

Types (Spark's ``SchemaConverters``): boolean, int, long, float, double, bytes → binary,
string, enum → string, fixed → binary, record → struct, array → list, map → map<string, _>;
``[null, T]`` → nullable T, unions of int/long → long, of float/double → double, other unions
→ struct<member0, member1, …>. Logical types: decimal(p, s) → decimal128(p, s), date → date32,
timestamp-millis/micros → timestamp[us, UTC], local-timestamp-millis/micros → timestamp[us]
(Spark's TIMESTAMP_NTZ), uuid → string (as Spark reads it); time-millis/micros stay their
int/long, as Spark ignores them. A recursive schema cannot become
columns (Spark refuses it too) and fails naming the type.

Decoding resolves each record from its writer schema to the one reader schema of the run with
Avro's resolution rules (fastavro's). A record that does not decode, leaves bytes unread (the
wrong schema), or holds a value its column cannot (a decimal beyond its precision) is a dead
letter with its reason; the others are rows.
"""
from __future__ import annotations

import io
import json
import threading
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import AvroSchemaError
from .avro_defaults import bytes_defaults  # a bytes default is ISO-8859-1 text
from .avro_walk import Named, Node, SchemaWalk, Scope, fullname
from .framed import Codec, Refused
from .stored import decimal_text, finish

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..schema_registry.base import Registered
    from ..schema_registry.wire import Frame

TS_UTC = pa.timestamp("us", tz="UTC")
TS_NTZ = pa.timestamp("us")
_PRIMITIVES = {"null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
               "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(),
               "string": pa.string()}
# Logical types read as their underlying value, then made Arrow types in C: fastavro would
# build a Python datetime/date/UUID per value first.
_AS_STORED = {"timestamp-millis": pa.timestamp("ms", tz="UTC"), "timestamp-micros": TS_UTC,
              "local-timestamp-millis": pa.timestamp("ms"), "local-timestamp-micros": TS_NTZ,
              "date": pa.date32(), "uuid": pa.string()}
# Logical types Spark's SchemaConverters ignore: their stored int/long is the column's value
# (fastavro would make a datetime.time of it, which no int column takes).
_IGNORED = frozenset({"time-millis", "time-micros"})
MAX_DECIMAL = 38  # Spark's DecimalType


def parse(text: str | dict[str, Any] | list[Any], named: Named | None = None) -> Any:
    """Avro schema JSON → the schema as plain data, checked by fastavro."""
    import fastavro
    from fastavro.schema import SchemaParseException
    try:
        schema = json.loads(text) if isinstance(text, str) else text
        fastavro.parse_schema(schema, named_schemas=dict(named or {}), _write_hint=False)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # UnknownType: ValueError
        raise AvroSchemaError(f"not a valid Avro schema: {exc}") from None
    except SchemaParseException as exc:
        raise AvroSchemaError(f"not a valid Avro schema: {type(exc).__name__}: {exc}") from None
    return schema


def arrow_type(schema: Any, named: Named | None = None) -> pa.DataType:
    """An Avro schema (plain data) → its Arrow type; as stored: timestamps in their own
    unit (``to_columns`` casts them to microseconds)."""
    return _Types(dict(named or {})).of(schema)


def final_type(stored: pa.DataType) -> pa.DataType:
    """The column type: millisecond timestamps as Spark's microseconds."""
    if pa.types.is_timestamp(stored):
        return pa.timestamp("us", tz=stored.tz)
    if pa.types.is_struct(stored):
        return pa.struct([f.with_type(final_type(f.type)) for f in stored])
    if pa.types.is_list(stored):
        return pa.list_(stored.value_field.with_type(final_type(stored.value_type)))
    if pa.types.is_map(stored):
        return pa.map_(stored.key_type, stored.item_field.with_type(
            final_type(stored.item_type)))
    return stored


class _Types(SchemaWalk[None, pa.DataType]):
    """The Arrow type of each Avro type."""

    def __init__(self, named: Named, decimal_bytes: bool = False) -> None:
        super().__init__(named)
        self.decimal_bytes = decimal_bytes  # decimals as stored (binary), not decimal128
        self.complex = False  # a union became struct<member0, …>: values need rewriting

    def of(self, s: Any) -> pa.DataType:
        return self.walk(s, None)

    def primitive(self, kind: str, arg: None) -> pa.DataType:
        return _PRIMITIVES[kind]

    def logical(self, s: Node, arg: None, scope: Scope) -> pa.DataType:
        if s["logicalType"] in _AS_STORED and s["type"] in ("int", "long", "string"):
            return _AS_STORED[s["logicalType"]]
        return _PRIMITIVES[s["type"]]

    def decimal(self, s: Node, arg: None, scope: Scope) -> pa.DataType:
        precision, scale = s.get("precision"), s.get("scale", 0)
        if not isinstance(precision, int) or not 0 < precision <= MAX_DECIMAL or \
                not isinstance(scale, int) or not 0 <= scale <= precision:
            raise AvroSchemaError(f"decimal({precision}, {scale}) is not a decimal of at "
                                  f"most {MAX_DECIMAL} digits (Spark's widest)")
        return pa.binary() if self.decimal_bytes else pa.decimal128(precision, scale)

    def record(self, s: Node, arg: None, inner: Scope) -> pa.DataType:
        return pa.struct([pa.field(f["name"], self.walk(f["type"], None, inner))
                          for f in s.get("fields", [])])

    def recursive(self, name: str, arg: None, scope: Scope) -> pa.DataType:
        raise AvroSchemaError(f"recursive type {name!r} ({' > '.join((*scope.above, name))}) "
                              "cannot become columns")

    def enum(self, s: Node, arg: None) -> pa.DataType:
        return pa.string()

    def fixed(self, s: Node, arg: None) -> pa.DataType:
        return pa.binary()

    def array(self, s: Node, arg: None, scope: Scope) -> pa.DataType:
        return pa.list_(self.walk(s["items"], None, scope))

    def map(self, s: Node, arg: None, scope: Scope) -> pa.DataType:
        return pa.map_(pa.string(), self.walk(s["values"], None, scope))

    def union(self, branches: list[Any], arg: None, scope: Scope) -> pa.DataType:
        kinds = [self.walk(b, None, scope) for b in branches]
        real = [k for k in kinds if k != pa.null()]
        if not real:
            return pa.null()
        if len(real) == 1:
            return real[0]
        if all(k in (pa.int32(), pa.int64()) for k in real):
            return pa.int64()
        if all(k in (pa.float32(), pa.float64()) for k in real):
            return pa.float64()
        self.complex = True
        return pa.struct([pa.field(f"member{i}", k) for i, k in enumerate(real)])


def as_stored(schema: Any) -> Any:
    """The schema with the logical types of ``_AS_STORED``, ``_IGNORED`` and decimals removed:
    fastavro then yields the stored ints, strings and bytes, which become Arrow types in C
    (``codecs.stored``) instead of a Python datetime or Decimal per value."""
    if isinstance(schema, list):
        return [as_stored(b) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: as_stored(v) if k in ("type", "items", "values") else v
           for k, v in schema.items()
           if not (k == "logicalType" and (v in _AS_STORED or v in _IGNORED or v == "decimal"))}
    if "fields" in schema:
        out["fields"] = [{**f, "type": as_stored(f["type"])} for f in schema["fields"]]
    return out


try:
    from fastavro._read import schemaless_reader as _schemaless_reader
except ImportError:  # a fastavro without its compiled reader
    from fastavro import schemaless_reader as _schemaless_reader


class Reader:
    """Decodes the records of one writer schema as the run's reader schema."""

    __slots__ = ("writer", "reader", "fix")

    def __init__(self, writer: Any, reader: Any | None, fix: Callable[[Any], Any] | None):
        self.writer, self.reader, self.fix = writer, reader, fix

    def __call__(self, payload: bytes, start: int = 0) -> Any:
        """The record in ``payload`` from ``start`` (past a frame's header: no copy)."""
        bio = io.BytesIO(payload)
        if start:
            bio.seek(start)
        if self.fix is None:
            value = _schemaless_reader(bio, self.writer, self.reader)
        else:  # unions of several types: their records come named, to pick the member
            value = self.fix(_schemaless_reader(bio, self.writer, self.reader,
                                                return_record_name=True,
                                                return_record_name_override=True))
        left = len(payload) - bio.tell()
        if left:
            raise ValueError(f"{left} bytes left after the record: written with another "
                             "schema?")
        return value


class AvroCodec(Codec):
    """One run's reader schema: readers per writer schema, and rows → Arrow."""

    schema_type = "AVRO"
    reads_at_offset = True  # its readers take (data, start): Framed skips the header in place

    def __init__(self, reader_text: str, references: Named | None = None) -> None:
        import fastavro
        self.named = dict(references or {})
        self.schema = parse(reader_text, self.named)
        types = _Types(dict(self.named), decimal_bytes=True)
        self.stored_type = types.of(self.schema)  # what fastavro's values make
        self.type = final_type(_Types(dict(self.named)).of(self.schema))
        self.scales = decimal_scales(self.schema, self.named)
        self.record = pa.types.is_struct(self.type) and isinstance(self.schema, dict) and \
            self.schema.get("type") in ("record", "error")
        self._reader_named: Named = {}
        for ref in self.named.values():
            fastavro.parse_schema(as_stored(ref), named_schemas=self._reader_named)
        self.parsed_reader = fastavro.parse_schema(as_stored(self.schema),
                                                   named_schemas=self._reader_named)
        bytes_defaults(self.parsed_reader, self._reader_named)
        self.fix = _union_fixer(self.schema, self.stored_type, self.named) \
            if types.complex else None
        self.canonical = _canonical(self.schema)
        self._lock = threading.Lock()
        self._readers: dict[Any, Reader] = {}

    def fields(self) -> list[pa.Field]:
        """The value's columns: a record's fields, or one ``value`` column."""
        if self.record:
            return list(self.type)
        return [pa.field("value", self.type)]

    def reader_for(self, key: Any, writer_text: str | None,
                   references: Named | None = None) -> Reader:
        """The reader of records written with ``writer_text`` (None: the reader schema)."""
        with self._lock:
            got = self._readers.get(key)
        if got is not None:
            return got
        import fastavro
        if writer_text is None:
            got = Reader(self.parsed_reader, None, self.fix)
        else:
            named: Named = {}
            writer = parse(writer_text, references)
            for ref in (references or {}).values():
                fastavro.parse_schema(as_stored(ref), named_schemas=named)
            parsed = fastavro.parse_schema(as_stored(writer), named_schemas=named)
            same = _canonical(writer) == self.canonical
            if not same:
                _check_scales(decimal_scales(writer, references), self.scales)
            got = Reader(self.parsed_reader if same else parsed,
                         None if same else self.parsed_reader, self.fix)
        with self._lock:
            self._readers[key] = got
        return got

    def reader_for_frame(self, writer: Registered | None, frame: Frame | None) -> Reader:
        if writer is None:
            return self.reader_for(None, None)
        return self.reader_for((writer.name, writer.id), writer.text, named_types(writer))

    def describe_error(self, exc: Exception) -> str:
        kind = type(exc).__name__
        if kind == "SchemaResolutionError":
            return f"cannot be read as the reader schema: {str(exc)[:200]}"
        if isinstance(exc, ValueError) and "bytes left after" in str(exc):
            return str(exc)
        return f"not a valid Avro record: {kind}: {str(exc)[:200]}"

    def to_columns(self, values: list[Any], errors: dict[int, str]) -> list[pa.Array]:
        """Decoded values (None where ``errors`` has the row) → the value's columns. A row
        whose values do not fit their columns joins ``errors``."""
        try:
            arr = finish(pa.array(values, self.stored_type), self.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            arr = self._row_by_row(values, errors)
        # Rows in ``errors`` are null here; the reader drops them, whatever their fields hold.
        return arr.flatten() if self.record else [arr]

    def _row_by_row(self, values: list[Any], errors: dict[int, str]) -> pa.Array:
        out = []
        for row, v in enumerate(values):
            if v is not None:
                try:
                    finish(pa.array([v], self.stored_type), self.type)
                except Exception as exc:  # noqa: BLE001 - pyarrow's errors vary by type: the row's own reason
                    errors[row] = _misfit(v, self.stored_type, self.type, exc)
                    v = None
            out.append(v)
        return finish(pa.array(out, self.stored_type), self.type)


def _misfit(value: Any, stored: pa.DataType, final: pa.DataType, exc: Exception) -> str:
    if pa.types.is_struct(stored) and isinstance(value, dict):
        for f, to in zip(stored, final):
            try:
                finish(pa.array([value.get(f.name)], f.type), to.type)
            except Exception as inner:  # noqa: BLE001 - the same conversion as the caller's, per field
                return (f"field {f.name!r}: "
                        f"{_misfit(value.get(f.name), f.type, to.type, inner)}")
    text = str(exc).split("\n")[0][:200]
    if pa.types.is_decimal(final):
        shown = decimal_text(value, final.scale) if isinstance(value, bytes) else str(value)
        return f"{shown[:60]} does not fit decimal({final.precision}, {final.scale}): {text}"
    return f"value does not fit {final}: {text}"


def decimal_scales(schema: Any, named: Named | None = None
                   ) -> dict[tuple[str, ...], tuple[int, int]]:
    """Where a schema holds decimals: field path (aliases too; ``[]`` an array's items,
    ``{}`` a map's values) → (precision, scale)."""
    walk = _Decimals(dict(named or {}))
    walk.walk(schema, ())
    return walk.found


class _Decimals(SchemaWalk[tuple[str, ...], None]):
    def __init__(self, named: Named) -> None:
        super().__init__(named)
        self.found: dict[tuple[str, ...], tuple[int, int]] = {}

    def leaf(self, s: Any, path: tuple[str, ...]) -> None:
        return None

    def decimal(self, s: Node, path: tuple[str, ...], scope: Scope) -> None:
        self.found[path] = (s.get("precision", 0), s.get("scale", 0))

    def record(self, s: Node, path: tuple[str, ...], inner: Scope) -> None:
        for f in s.get("fields", []):
            for field_name in (f["name"], *f.get("aliases", ())):
                self.walk(f["type"], (*path, field_name), inner)

    def array(self, s: Node, path: tuple[str, ...], scope: Scope) -> None:
        self.walk(s.get("items"), (*path, "[]"), scope)

    def map(self, s: Node, path: tuple[str, ...], scope: Scope) -> None:
        self.walk(s.get("values"), (*path, "{}"), scope)

    def union(self, branches: list[Any], path: tuple[str, ...], scope: Scope) -> None:
        for branch in branches:
            self.walk(branch, path, scope)


def _check_scales(writer: dict[tuple[str, ...], tuple[int, int]],
                  reader: dict[tuple[str, ...], tuple[int, int]]) -> None:
    """A decimal's bytes are its unscaled value: read as another scale they would be another
    number, so a writer whose decimal has another scale than the reader's is refused (Avro
    resolves decimals of matching scale; a wider precision is checked per value)."""
    for path, (precision, scale) in writer.items():
        if path in reader and reader[path][1] != scale:
            p, s = reader[path]
            raise Refused(f"field {'.'.join(path)!r} is decimal({precision}, {scale}) in the "
                          f"writer schema and decimal({p}, {s}) in the reader schema: Avro "
                          "reads a decimal as another of the same scale only")


def named_types(registered: Registered) -> Named:
    """The named types a schema's references define (Confluent schema references)."""
    named: Named = {}
    for _, ref in registered.references:
        named.update(named_types(ref))
        schema = parse(ref.text, named)
        if isinstance(schema, dict) and "name" in schema:
            named[fullname(schema, None)] = schema
    return named


def _canonical(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def _union_fixer(schema: Any, t: pa.DataType, named: Named) -> Callable[[Any], Any]:
    """A function that rewrites the values of complex unions as {memberN: value}, choosing
    the branch by the value's kind (records come as (name, value) from fastavro)."""
    fixer = _UnionFixer(dict(named)).walk(schema, t)
    return fixer or (lambda v: v)


class _UnionFixer(SchemaWalk["pa.DataType", "Callable[[Any], Any] | None"]):
    """Beside the schema, its Arrow type: a function for the values that hold a complex
    union somewhere, None for the others (their values stay as they are)."""

    def leaf(self, s: Any, t: pa.DataType) -> Callable[[Any], Any] | None:
        return None

    def union(self, branches: list[Any], t: pa.DataType,
              scope: Scope) -> Callable[[Any], Any] | None:
        real = [b for b in branches if b != "null"]
        if pa.types.is_struct(t) and len(real) > 1 and t.num_fields == len(real):
            subs = [(b, self.walk(b, f.type, scope), f.name, f.type) for b, f in zip(real, t)]
            return lambda v: None if v is None else _pick(v, subs)
        if len(real) == 1:
            return self.walk(real[0], t, scope)
        return None

    def record(self, s: Node, t: pa.DataType,
               inner: Scope) -> Callable[[Any], Any] | None:
        subs: list[tuple[str, Callable[[Any], Any]]] = []
        for f, ft in zip(s["fields"], t):
            fn = self.walk(f["type"], ft.type, inner)
            if fn is not None:
                subs.append((f["name"], fn))
        if not subs:
            return None

        def record(v: Any) -> Any:
            if isinstance(v, tuple):
                v = v[1]
            if v is None:
                return None
            out = dict(v)
            for n, fn in subs:
                out[n] = fn(out.get(n))
            return out
        return record

    def array(self, s: Node, t: pa.DataType,
              scope: Scope) -> Callable[[Any], Any] | None:
        item = self.walk(s["items"], t.value_type, scope)
        if item is None:
            return None
        return lambda v: None if v is None else [item(x) for x in v]

    def map(self, s: Node, t: pa.DataType,
            scope: Scope) -> Callable[[Any], Any] | None:
        value = self.walk(s["values"], t.item_type, scope)
        if value is None:
            return None
        return lambda v: None if v is None else {k: value(x) for k, x in v.items()}


def _pick(v: Any, subs: list[tuple[Any, Any, str, pa.DataType]]) -> dict[str, Any]:
    name = v[0] if isinstance(v, tuple) else None
    for branch, fn, member, t in subs:
        if name is not None:
            if isinstance(branch, dict) and fullname(branch, None).endswith(name) or \
                    isinstance(branch, str) and name.endswith(branch):
                return {member: fn(v) if fn else v[1]}
            continue
        if _fits(v, t):
            return {member: fn(v) if fn else v}
    raise ValueError(f"no union branch holds {str(v)[:40]}")


# A union's value → the Arrow types of the members that may hold it (bool before int).
_HOLDS: tuple[tuple[type | tuple[type, ...], Callable[[pa.DataType], Any]], ...] = (
    (bool, pa.types.is_boolean),
    (int, lambda t: pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date(t)),
    (float, pa.types.is_floating), (str, pa.types.is_string),
    ((bytes, bytearray), pa.types.is_binary), (list, pa.types.is_list),
    (dict, lambda t: pa.types.is_map(t) or pa.types.is_struct(t)))


def _fits(v: Any, t: pa.DataType) -> bool:
    for kind, holds in _HOLDS:
        if isinstance(v, kind):
            return bool(holds(t))
    return bool(pa.types.is_decimal(t))
