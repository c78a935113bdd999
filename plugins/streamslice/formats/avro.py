"""``avro``: Avro records, with the pipeline's schema (plain Avro binary, as Spark's
``from_avro`` reads) or through a schema registry (Confluent or AWS Glue frames, detected per
record), decoded by fastavro into Arrow (``codecs.avro``: types, resolution, dead letters).

    format:
      value: avro
      schema: {type: record, name: Trip, fields: [...]}   # or schema_file: trip.avsc
      # or registry: {...} + subject (+ version): see formats.schema_based

Records written with older or newer schemas are read as the run's one reader schema (Avro's
resolution rules): the pinned registry version, or the pipeline's schema.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar

from ..errors import ConfigError
from . import FormatSpec, Role
from .schema_based import (
    RegisteredFormat,
    parse_registry,
    parse_subject,
    prefixed,
    read_schema_file,
    registry_from_options,
)

if TYPE_CHECKING:
    from ..codecs.avro import AvroCodec
    from ..config.fields import Fields


class Avro(RegisteredFormat):
    name = "avro"
    extras = ("avro",)
    roles: ClassVar[tuple[Role, ...]] = ("value", "key")
    schema_type = "AVRO"

    @classmethod
    def parse(cls, f: Fields, role: Role) -> FormatSpec:
        registry = parse_registry(f)
        options = parse_subject(f, role, registry, cls.name)
        inline, file = prefixed(role, "schema"), prefixed(role, "schema_file")
        if registry is not None:
            for key in (inline, file):
                if f.has(key):
                    raise f.error("is not used with a registry: the run reads as the "
                                  "subject's version", key)
        else:
            if f.has(inline) == f.has(file):
                raise f.error(f"{role}: avro needs the Avro schema: {inline} (inline) or "
                              f"{file}, or a registry", inline if f.has(inline) else None)
            raw = f.raw(inline) if f.has(inline) else read_schema_file(f, file)
            text = raw if isinstance(raw, str) else json.dumps(raw)
            options = {"schema": text}
            try:
                spec = cls.prepare(FormatSpec(cls.name, "", options))
            except ConfigError as exc:
                raise f.error(exc.reason, inline if f.has(inline) else file) from None
            return spec
        return FormatSpec(cls.name, "", options)

    @classmethod
    def from_options(cls, options: dict[str, str], role: Role) -> FormatSpec:
        name = "avroschema" if role == "value" else "keyavroschema"
        registry = registry_from_options(options, role)
        if registry:
            if name in options:
                raise ConfigError(f"option {name} is not used with a schema registry")
            return FormatSpec(cls.name, "", registry)
        if name not in options:
            raise ConfigError(f"option {'avroSchema' if role == 'value' else 'keyAvroSchema'} "
                              "(the Avro schema as JSON, as Spark's from_avro takes it) or a "
                              "schema registry (schema.registry.url and subject) is needed "
                              f"with {role}Format avro")
        return cls.prepare(FormatSpec(cls.name, "", {"schema": options[name]}))

    @classmethod
    def make_codec(cls, spec: FormatSpec) -> AvroCodec:
        from ..codecs import AvroSchemaError
        from ..codecs.avro import AvroCodec, named_types
        try:
            if "schema" in spec.options:
                return AvroCodec(spec.options["schema"])
            reader = cls.reader(spec)
            return AvroCodec(reader.text, named_types(reader))
        except AvroSchemaError as exc:
            what = "the reader schema" if "reader" in spec.options else "the Avro schema"
            name = spec.options.get("reader", {}).get("name")
            raise ConfigError(f"{what}{f' ({name})' if name else ''}: {exc}") from None

    def record_fields(self) -> bool:
        return bool(getattr(self.codec, "record", False))

