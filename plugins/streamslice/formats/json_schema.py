"""``json_schema``: JSON records written with a JSON Schema, through a schema registry
(Confluent frames: magic byte + schema id + JSON; Glue frames: header + JSON) or plain JSON
with the pipeline's own JSON Schema. The reader schema (the pinned subject version) becomes
the columns; each record is decoded as ``json`` decodes, with the same reasons for what does
not fit.

    format:
      value: json_schema
      registry: {...}
      subject: orders-value              # or schema / schema_file: a JSON Schema
      key: json_schema                   # a key: the same settings prefixed key_
      key_subject: orders-key            # (key_schema / key_schema_file without a registry)

JSON Schema → Spark types: object with ``properties`` → struct (in their order), object with
only ``additionalProperties`` → map<string, _>, array → array, string → string (``format``
date-time → timestamp, date → date), integer → bigint, number → double, boolean, a
``["null", T]`` type → T. Other constructs (oneOf/anyOf, tuples) fail naming the path.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from ..codecs.framed import Codec
from ..errors import ConfigError
from ..schema_registry.base import Registered
from . import FormatSpec, Role
from .schema_based import (
    RegisteredFormat,
    parse_registry,
    parse_subject,
    prefixed,
    read_schema_file,
    registry_from_options,
)
from .types import TS, spark_ddl

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config.fields import Fields
    from ..schema_registry.wire import Frame


class JsonSchema(RegisteredFormat):
    name = "json_schema"
    roles: ClassVar[tuple[Role, ...]] = ("value", "key")
    schema_type = "JSON"

    @classmethod
    def parse(cls, f: Fields, role: Role) -> FormatSpec:
        registry = parse_registry(f)
        inline, file = prefixed(role, "schema"), prefixed(role, "schema_file")
        if registry is not None:
            for key in (inline, file):
                if f.has(key):
                    raise f.error("is not used with a registry: the run reads as the "
                                  "subject's version", key)
            return FormatSpec(cls.name, "", parse_subject(f, role, registry, cls.name))
        parse_subject(f, role, None, cls.name)  # a subject without a registry is refused
        if f.has(inline) == f.has(file):
            raise f.error(f"{role}: json_schema needs its JSON Schema: {inline} (inline) or "
                          f"{file}, or a registry", inline if f.has(inline) else None)
        raw = f.raw(inline) if f.has(inline) else read_schema_file(f, file)
        text = raw if isinstance(raw, str) else json.dumps(raw)
        spec = FormatSpec(cls.name, "", {"reader": Registered(
            "JSON", text, "the pipeline's JSON Schema").to_dict()})
        try:
            return cls.prepare(spec)
        except ConfigError as exc:
            raise f.error(exc.reason, inline if f.has(inline) else file) from None

    @classmethod
    def from_options(cls, options: dict[str, str], role: Role) -> FormatSpec:
        spec = registry_from_options(options, role)
        if not spec:
            subject = "subject" if role == "value" else "keySubject"
            raise ConfigError(f"{role}Format json_schema needs a schema registry "
                              f"(schema.registry.url and {subject})")
        return FormatSpec(cls.name, "", spec)

    @classmethod
    def make_codec(cls, spec: FormatSpec) -> JsonSchemaCodec:
        reader = cls.reader(spec)
        try:
            schema = json.loads(reader.text)
        except ValueError as exc:
            raise ConfigError(f"{reader.name} is not JSON: {exc}") from None
        try:
            t = arrow_type(schema, "", schema)
        except ValueError as exc:
            raise ConfigError(f"{reader.name}: {exc}") from None
        if not pa.types.is_struct(t):
            raise ConfigError(f"{reader.name}: the top level must be an object with properties")
        return JsonSchemaCodec(pa.schema(list(t)))


class JsonSchemaCodec(Codec):
    schema_type = "JSON"

    def __init__(self, schema: pa.Schema) -> None:
        from .json import Json
        self.schema = schema
        self.json = Json(FormatSpec("json", spark_ddl(schema)))

    def fields(self) -> list[pa.Field]:
        return list(self.schema)

    def reader_for_frame(self, writer: Registered | None,
                         frame: Frame | None) -> Callable[[bytes], Any]:
        return bytes

    def to_columns(self, values: list[Any], errors: dict[int, str]) -> list[pa.Array]:
        arrays, json_errors = self.json.decode(values)
        for row, reason in json_errors.items():
            errors.setdefault(row, reason)
        return arrays


def arrow_type(s: Any, path: str, root: dict[str, Any], depth: int = 0) -> pa.DataType:  # noqa: C901 - a dispatch over JSON Schema's keywords
    where = path or "the top level"
    if depth > 32:
        raise ValueError(f"{where}: nested too deeply (a recursive $ref?)")
    if not isinstance(s, dict):
        raise ValueError(f"{where}: not a JSON Schema")
    if "$ref" in s:
        ref = s["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise ValueError(f"{where}: only local $ref (#/…) are supported, got {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            raise ValueError(f"{where}: $ref {ref!r} points nowhere")
        return arrow_type(target, path, root, depth + 1)
    kind = s.get("type")
    if isinstance(kind, list):
        real = [k for k in kind if k != "null"]
        if len(real) != 1:
            raise ValueError(f"{where}: a type of {kind} is not one column type")
        kind = real[0]
    if kind == "object" or (kind is None and "properties" in s):
        props = s.get("properties")
        if props:
            return pa.struct([pa.field(k, arrow_type(v, f"{path}.{k}".lstrip("."), root,
                                                     depth + 1))
                              for k, v in props.items()])
        extra = s.get("additionalProperties")
        value = arrow_type(extra, f"{path}[]", root, depth + 1) if isinstance(extra, dict) \
            else pa.string()
        return pa.map_(pa.string(), value)
    if kind == "array":
        if not isinstance(s.get("items"), dict):
            raise ValueError(f"{where}: an array needs one items schema")
        return pa.list_(arrow_type(s["items"], f"{path}[]", root, depth + 1))
    if kind == "string":
        return {"date-time": TS, "date": pa.date32()}.get(str(s.get("format")), pa.string())
    scalars = {"integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}
    if kind in scalars:
        return scalars[kind]
    raise ValueError(f"{where}: {json.dumps(s)[:60]} is not a type streamslice maps to a column "
                     "(object, array, string, integer, number, boolean)")
