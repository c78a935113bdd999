"""``protobuf``: Protobuf records, with a compiled descriptor set (plain Protobuf bytes, as
Spark's ``from_protobuf`` reads them) or through a schema registry (Confluent frames with
their message-index array, Glue frames with its message index), parsed by protobuf's C parser
into Arrow (``codecs.protobuf``: types, message indexes, dead letters).

    format:
      value: protobuf
      descriptor_set: trip.desc        # protoc --include_imports -o trip.desc trip.proto
      message: demo.Trip               # default: the (last) file's only message; with
                                       # several, the plan fails listing them
      # or registry: {...} + subject (+ version, + message): see formats.schema_based

The Confluent registry serves the schema as a descriptor (``format=serialized``); Glue keeps
.proto text, which needs a compiler: with Glue, give ``descriptor_set`` too (the registry
then says which message each record holds).
"""
from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..errors import ConfigError
from . import FormatSpec, Role
from .schema_based import (
    RegisteredFormat,
    parse_registry,
    parse_subject,
    prefixed,
    registry_from_options,
)

if TYPE_CHECKING:
    from ..codecs.protobuf import ProtobufCodec
    from ..config.fields import Fields


class Protobuf(RegisteredFormat):
    name = "protobuf"
    extras = ("protobuf",)
    roles: ClassVar[tuple[Role, ...]] = ("value", "key")
    schema_type = "PROTOBUF"
    registry_format = "serialized"

    @classmethod
    def parse(cls, f: Fields, role: Role) -> FormatSpec:
        registry = parse_registry(f)
        options = parse_subject(f, role, registry, cls.name)
        desc, message = prefixed(role, "descriptor_set"), prefixed(role, "message")
        if f.has(desc):
            path = Path(f.str(desc))
            if not path.is_absolute() and f.file:
                path = Path(f.file).resolve().parent / path
            try:
                options["descriptor_set"] = base64.b64encode(path.read_bytes()).decode()
            except OSError as exc:
                raise f.error(f"cannot read {path}: {exc.strerror}", desc) from None
        elif registry is None or registry["kind"] == "glue":
            raise f.error(f"is required with {role}: protobuf"
                          + (" and a Glue registry (it keeps .proto text)" if registry else
                             " (or a registry)"), desc)
        if f.has(message):
            options["message"] = f.str(message)
        spec = FormatSpec(cls.name, "", options)
        if registry is None:
            try:
                return cls.prepare(spec)
            except ConfigError as exc:
                raise f.error(exc.reason, desc) from None
        return spec

    @classmethod
    def from_options(cls, options: dict[str, str], role: Role) -> FormatSpec:
        desc = "descfilepath" if role == "value" else "keydescfilepath"
        message = "messagename" if role == "value" else "keymessagename"
        spec_options = registry_from_options(options, role)
        if desc in options:
            try:
                data = Path(options[desc]).read_bytes()
            except OSError as exc:
                raise ConfigError(f"option {desc}: cannot read {options[desc]}: "
                                  f"{exc.strerror}") from None
            spec_options["descriptor_set"] = base64.b64encode(data).decode()
        elif not spec_options:
            raise ConfigError("option descFilePath (a compiled descriptor set, as Spark's "
                              "from_protobuf takes it) or a schema registry is needed with "
                              f"{role}Format protobuf")
        if message in options:
            spec_options["message"] = options[message]
        spec = FormatSpec(cls.name, "", spec_options)
        return spec if "registry" in spec_options else cls.prepare(spec)

    @classmethod
    def make_codec(cls, spec: FormatSpec) -> ProtobufCodec:
        from ..codecs.protobuf import ProtobufCodec, ProtobufSchemaError
        message = spec.options.get("message")
        try:
            if "descriptor_set" in spec.options:
                return ProtobufCodec.from_descriptor_set(
                    base64.b64decode(spec.options["descriptor_set"]), message)
            return ProtobufCodec.from_registered(cls.reader(spec), message)
        except ProtobufSchemaError as exc:
            raise ConfigError(f"format protobuf: {exc}") from None
