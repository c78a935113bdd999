"""Spark's type system in the core: a schema as Spark DDL (or the map form of pipeline files)
→ Arrow, and Arrow → Spark's type names, exactly as PySpark converts them
(``pyspark.sql.pandas.types.to_arrow_type`` / ``from_arrow_type``), without importing PySpark.

DDL is what ``StructType.fromDDL`` and ``spark.read.schema(...)`` take::

    id BIGINT NOT NULL, user STRUCT<name: STRING, tags: ARRAY<STRING>>,
    amount DECIMAL(18,2) COMMENT 'in EUR', day DATE, attrs MAP<STRING, STRING>

Names may be backticked (`` `my field` ``, a doubled backtick inside), fields written
``name type`` or ``name: type``, keywords in any case, with Spark's aliases (``LONG`` =
``BIGINT``, ``INTEGER`` = ``INT``, ``BYTE`` = ``TINYINT``, ``SHORT`` = ``SMALLINT``,
``REAL`` = ``FLOAT``, ``DEC``/``NUMERIC`` = ``DECIMAL``…). ``DECIMAL`` alone is
``DECIMAL(10,0)``, as in Spark. The Arrow types are Spark's: ``TIMESTAMP`` is microseconds in
UTC, ``TIMESTAMP_NTZ`` microseconds without a zone, ``DATE`` date32, arrays' elements are
named ``element``, maps' keys are required, and a ``COMMENT`` is kept where PySpark keeps
field metadata (``SPARK::metadata::json``).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import pyarrow as pa

__all__ = ["SchemaError", "TypeFold", "holds", "parse_schema", "parse_type", "spark_type",
           "spark_ddl", "schema_from_mapping"]
R = TypeVar("R")

METADATA_KEY = b"SPARK::metadata::json"  # where PySpark keeps a StructField's metadata
MAX_PRECISION = 38
MAX_DEPTH = 64  # nesting of types in one schema

TS = pa.timestamp("us", tz="UTC")
TS_NTZ = pa.timestamp("us")
_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(), "bool": pa.bool_(),
    "tinyint": pa.int8(), "byte": pa.int8(),
    "smallint": pa.int16(), "short": pa.int16(),
    "int": pa.int32(), "integer": pa.int32(),
    "bigint": pa.int64(), "long": pa.int64(),
    "float": pa.float32(), "real": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": TS, "timestamp_ltz": TS,
    "timestamp_ntz": TS_NTZ,
}
NAMES = ("string", "int", "long", "double", "float", "boolean", "timestamp", "binary",
         "date", "timestamp_ntz", "byte", "short")
_UNSUPPORTED = {"void": "it has no values", "variant": "use STRING and parse it later",
                "interval": "write it as BIGINT or STRING", "time": "use STRING",
                "char": "use STRING", "varchar": "use STRING", "character": "use STRING",
                "geometry": "use BINARY", "geography": "use BINARY", "object": "use STRUCT"}
# Arrow → Spark's ``simpleString`` (what ``DataFrame.printSchema`` and error messages show).
_SPARK_NAMES: dict[pa.DataType, str] = {
    pa.bool_(): "boolean", pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int",
    pa.int64(): "bigint", pa.float32(): "float", pa.float64(): "double",
    pa.string(): "string", pa.large_string(): "string", pa.binary(): "binary",
    pa.large_binary(): "binary", pa.date32(): "date", pa.null(): "void",
}
_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
                    r"|([A-Za-z0-9_]+)|(\S))", re.S)


class SchemaError(ValueError):
    """A schema that does not parse or has a type Spark or Arrow cannot hold."""


def parse_schema(text: str) -> pa.Schema:
    """Spark DDL (``a INT, b STRING`` / ``a: int, b: string`` / ``STRUCT<a: INT>``) → Arrow."""
    parser = _Parser(text)
    if parser.peek_word() == "struct" and parser.peek(1) == "<":
        fields = parser.type_().type  # a whole STRUCT<…>: its fields
        parser.end()
        return pa.schema(list(fields))
    fields = parser.fields(end=None)
    parser.end()
    if not fields:
        raise SchemaError("the schema has no fields")
    return pa.schema(fields)


def parse_type(text: str) -> pa.DataType:
    """One Spark type (``ARRAY<STRING>``, ``decimal(18,2)``, ``bigint``) → Arrow."""
    parser = _Parser(text)
    typ = parser.type_().type
    parser.end()
    return typ


def schema_from_mapping(mapping: Mapping[str, Any]) -> pa.Schema:
    """The map form of pipeline files: field → a Spark type (``long``, ``array<string>``,
    ``decimal(18,2)``) or a mapping (a struct of those)."""
    if not mapping:
        raise SchemaError("the schema has no fields")
    return pa.schema([_mapped_field(str(name), typ, str(name), 0)
                      for name, typ in mapping.items()])


def _mapped_field(name: str, typ: Any, path: str, depth: int) -> pa.Field:
    if depth > MAX_DEPTH:
        raise SchemaError(f"field {path}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(typ, Mapping):
        if not typ:
            raise SchemaError(f"field {path}: a struct needs at least one field")
        return pa.field(name, pa.struct([_mapped_field(str(k), v, f"{path}.{k}", depth + 1)
                                         for k, v in typ.items()]))
    try:
        if not isinstance(typ, str):
            raise SchemaError("a type is text or a mapping of fields")
        return pa.field(name, parse_type(typ))
    except SchemaError as exc:
        raise SchemaError(f"field {path!r}: type {typ!r} is not one of {', '.join(NAMES)}, "
                          f"nor a Spark type such as array<string> or decimal(18,2): {exc}"
                          ) from None


def spark_type(typ: pa.DataType) -> str:
    """An Arrow type as Spark's ``DataType.simpleString()`` (``struct<a:int,b:array<string>>``,
    ``decimal(18,2)``, ``timestamp_ntz``…), the type PySpark's Arrow conversion gives it."""
    if typ in _SPARK_NAMES:
        return _SPARK_NAMES[typ]
    if pa.types.is_decimal(typ):
        return f"decimal({typ.precision},{typ.scale})"
    if pa.types.is_timestamp(typ):
        return "timestamp" if typ.tz is not None else "timestamp_ntz"
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return f"array<{spark_type(typ.value_type)}>"
    if pa.types.is_map(typ):
        return f"map<{spark_type(typ.key_type)},{spark_type(typ.item_type)}>"
    if pa.types.is_struct(typ):
        return "struct<" + ",".join(f"{f.name}:{spark_type(f.type)}" for f in typ) + ">"
    raise SchemaError(f"Arrow type {typ} has no Spark type")


class TypeFold(Generic[R]):
    """The one walk over a nested Arrow type, from its leaves up: each shape's method gets the
    type and what its children became (a struct's, field by field). The JSON decoders' views
    of a schema (the reference checks, msgspec's types for both fast paths) are folds."""

    def of(self, typ: pa.DataType) -> R:
        if pa.types.is_struct(typ):
            return self.struct(typ, self.fields(typ))
        if pa.types.is_list(typ) or pa.types.is_large_list(typ):
            return self.array(typ, self.of(typ.value_type))
        if pa.types.is_map(typ):
            return self.map(typ, self.of(typ.item_type))
        return self.leaf(typ)

    def fields(self, fields: Iterable[pa.Field]) -> list[R]:
        """What each field's type became (a schema's or a struct's fields)."""
        return [self.of(f.type) for f in fields]

    def struct(self, typ: pa.StructType, fields: list[R]) -> R:
        raise NotImplementedError

    def array(self, typ: pa.ListType, item: R) -> R:
        raise NotImplementedError

    def map(self, typ: pa.MapType, item: R) -> R:
        """``item``: what its values' type became (keys are strings where JSON is read)."""
        raise NotImplementedError

    def leaf(self, typ: pa.DataType) -> R:
        raise NotImplementedError


class _Holds(TypeFold[bool]):
    def __init__(self, test: Callable[[pa.DataType], bool]) -> None:
        self.test = test

    def struct(self, typ: pa.StructType, fields: list[bool]) -> bool:
        return self.test(typ) or any(fields)

    def array(self, typ: pa.ListType, item: bool) -> bool:
        return self.test(typ) or item

    def map(self, typ: pa.MapType, item: bool) -> bool:
        return self.test(typ) or item

    def leaf(self, typ: pa.DataType) -> bool:
        return self.test(typ)


def holds(typ: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    """Whether ``typ`` or a type inside it (not a map's keys) passes ``test``."""
    return _Holds(test).of(typ)


def spark_ddl(schema: pa.Schema | pa.StructType) -> str:
    """A schema as Spark DDL (``StructType.toDDL()``'s form), which ``parse_schema`` and
    ``StructType.fromDDL`` both read back to the same schema."""
    return ", ".join(_field_ddl(f, ": " if isinstance(schema, pa.StructType) else " ")
                     for f in schema)


def _field_ddl(field: pa.Field, sep: str) -> str:
    text = f"{_quote(field.name)}{sep}{_sql(field.type)}"
    if not field.nullable:
        text += " NOT NULL"
    comment = comment_of(field)
    if comment is not None:
        text += " COMMENT '" + comment.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return text


def _sql(typ: pa.DataType) -> str:
    if pa.types.is_struct(typ):
        return f"STRUCT<{spark_ddl(typ)}>"
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return f"ARRAY<{_sql(typ.value_type)}>"
    if pa.types.is_map(typ):
        return f"MAP<{_sql(typ.key_type)}, {_sql(typ.item_type)}>"
    return spark_type(typ).upper()


def comment_of(field: pa.Field) -> str | None:
    meta = field.metadata or {}
    if METADATA_KEY not in meta:
        return None
    comment = json.loads(meta[METADATA_KEY]).get("comment")
    return comment if isinstance(comment, str) else None


def _quote(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return "`" + name.replace("`", "``") + "`"


class _Parser:
    """A recursive-descent parser over Spark's DDL grammar (the subset that describes data:
    no intervals, defaults or collations)."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise SchemaError(f"a schema is text, not {type(text).__name__}")
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []  # (kind, text, offset)
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                break
            pos = m.end()
            for kind, value in zip(("quoted", "string", "word", "punct"), m.groups()):
                if value is not None:
                    self.tokens.append((kind, value, m.start(m.lastindex or 0)))
        self.i = 0
        self.depth = 0

    # -- tokens -------------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> str | None:
        j = self.i + ahead
        return self.tokens[j][1] if j < len(self.tokens) else None

    def peek_word(self) -> str | None:
        tok = self.tokens[self.i] if self.i < len(self.tokens) else None
        return tok[1].lower() if tok and tok[0] == "word" else None

    def take(self) -> tuple[str, str, int]:
        if self.i >= len(self.tokens):
            raise self.error("the schema ends too early")
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, punct: str, what: str) -> None:
        if self.peek() != punct:
            raise self.error(f"expected {punct!r} {what}")
        self.i += 1

    def end(self) -> None:
        if self.i < len(self.tokens):
            raise self.error("unexpected text")

    def error(self, message: str) -> SchemaError:
        if self.i < len(self.tokens):
            at = self.tokens[self.i][2]
            near = self.text[at:at + 20]
            return SchemaError(f"{message} at position {at + 1} ({near!r}) in {self.text!r}")
        return SchemaError(f"{message} at the end of {self.text!r}")

    # -- grammar ------------------------------------------------------------------------------
    def fields(self, end: str | None) -> list[pa.Field]:
        out: list[pa.Field] = []
        names: set[str] = set()
        while self.peek() != end:
            field = self.field()
            if field.name.lower() in names:  # Spark's resolution is case-insensitive
                raise SchemaError(f"field {field.name!r} is declared twice in {self.text!r}")
            names.add(field.name.lower())
            out.append(field)
            if self.peek() == ",":
                self.i += 1
                if self.peek() == end:
                    raise self.error("expected a field after ','")
                continue
            if self.peek() != end:
                raise self.error("expected ',' between fields" if end is None
                                 else f"expected ',' or {end!r}")
        return out

    def field(self) -> pa.Field:
        kind, value, _ = self.take()
        if kind == "quoted":
            name = value[1:-1].replace("``", "`")
        elif kind == "word":
            name = value
        else:
            self.i -= 1
            raise self.error("expected a field name")
        if not name:
            raise self.error("a field name is empty")
        if self.peek() == ":":
            self.i += 1
        typ = self.type_()
        nullable, metadata = True, None
        while self.peek_word() in ("not", "comment"):
            if self.peek_word() == "not":
                self.i += 1
                if self.peek_word() != "null":
                    raise self.error("expected NULL after NOT")
                self.i += 1
                nullable = False
            else:
                self.i += 1
                kind, text, _ = self.take()
                if kind != "string":
                    self.i -= 1
                    raise self.error("expected a quoted comment after COMMENT")
                metadata = {METADATA_KEY: json.dumps({"comment": _unquote(text)}).encode()}
        return pa.field(name, typ.type, nullable=nullable, metadata=metadata)

    def type_(self) -> pa.Field:
        """A type, as an Arrow field (so arrays and maps keep their nullability)."""
        word = self.peek_word()
        if word is None:
            raise self.error("expected a type")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"types nested more than {MAX_DEPTH} levels deep")
        self.i += 1
        try:
            if word == "array":
                self.expect("<", "after ARRAY")
                element = self.type_()
                self.expect(">", "to close ARRAY<")
                return pa.field("", pa.list_(pa.field("element", element.type)))
            if word == "map":
                self.expect("<", "after MAP")
                key = self.type_()
                self.expect(",", "between a MAP's key and value types")
                value = self.type_()
                self.expect(">", "to close MAP<")
                return pa.field("", pa.map_(pa.field("key", key.type, nullable=False),
                                            pa.field("value", value.type)))
            if word == "struct":
                self.expect("<", "after STRUCT")
                fields = self.fields(end=">")
                self.expect(">", "to close STRUCT<")
                return pa.field("", pa.struct(fields))
            if word in ("decimal", "dec", "numeric"):
                return pa.field("", self.decimal())
            if word in _PRIMITIVES:
                return pa.field("", _PRIMITIVES[word])
            if word in _UNSUPPORTED:
                self.i -= 1
                raise self.error(f"type {word.upper()} is not supported ({_UNSUPPORTED[word]})")
            self.i -= 1
            raise self.error(f"unknown type {self.tokens[self.i][1]!r}")
        finally:
            self.depth -= 1

    def decimal(self) -> pa.DataType:
        precision, scale = 10, 0  # Spark's DecimalType.USER_DEFAULT
        if self.peek() == "(":
            self.i += 1
            precision = self.number()
            if self.peek() == ",":
                self.i += 1
                scale = self.number()
            self.expect(")", "to close DECIMAL(")
        if not 1 <= precision <= MAX_PRECISION:
            raise SchemaError(f"DECIMAL({precision},{scale}): precision must be 1 to "
                              f"{MAX_PRECISION}")
        if scale > precision:
            raise SchemaError(f"DECIMAL({precision},{scale}): scale cannot exceed precision")
        return pa.decimal128(precision, scale)

    def number(self) -> int:
        kind, value, _ = self.take()
        if kind != "word" or not value.isdigit():
            self.i -= 1
            raise self.error("expected a number")
        return int(value)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)),
                  body)
