"""What Avro, Protobuf and JSON Schema share: a schema from the pipeline (inline or a file) or
from a schema registry, pinned once per run, and records decoded through ``codecs.framed``.

In a pipeline file (the key takes the same settings prefixed ``key_``)::

    format:
      value: avro                         # avro | protobuf | json_schema
      registry:                           # shared by key and value
        kind: confluent                   # confluent (default) | glue
        url: https://registry:8081        # or conn_id (an Airflow connection: URL, auth, TLS)
        conn_id: schema_registry
        registry_name: streams            # glue; region, endpoint_url, aws_conn_id
      subject: orders-value               # Confluent subject / Glue schema name
      version: 3                          # pinned; default latest, resolved when the run is
                                          # planned and recorded in its plan

A Confluent record's schema id may come in its ``__value_schema_id`` / ``__key_schema_id``
header instead of its payload prefix (confluent-kafka's ``header_schema_id_serializer``): the
header is read first, as Confluent's deserializers do (``reads_headers``).

The plan records the reader schema the run resolved (``options.reader``), so a retry reads
exactly as the first try; it never holds a credential: those come with the client
properties (``schema.registry.*``) where the read runs.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..errors import ConfigError
from ..schema_registry import open_registry
from ..schema_registry.base import KINDS, Registered, RegistrySpec, split_properties
from . import BaseFormat, Decoded, FormatSpec, Role
from .types import spark_ddl

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from ..codecs.framed import Codec, Framed
    from ..config.fields import Fields
    from ..sources import Properties

# The registry: block's keys besides kind (``RegistrySpec``'s).
RegistryKey = Literal["url", "conn_id", "registry_name", "region", "endpoint_url", "aws_conn_id"]
REGISTRY_KEYS: tuple[RegistryKey, ...] = ("url", "conn_id", "registry_name", "region",
                                          "endpoint_url", "aws_conn_id")
# Spark options (keys lower-cased by the data source), next to Spark's from_avro /
# from_protobuf names: the registry's client properties come as ``schema.registry.*``.
SPARK_OPTIONS = ("schemaRegistryKind", "schemaRegistryName", "subject", "schemaVersion",
                 "keySubject", "keySchemaVersion")


def prefixed(role: Role, key: str) -> str:
    return key if role == "value" else f"key_{key}"


def parse_registry(f: Fields) -> RegistrySpec | None:
    """The shared ``registry:`` block (None without one)."""
    if not f.has("registry"):
        return None
    r = f.child("registry")
    out = RegistrySpec(kind=r.str("kind", "confluent", choices=KINDS))
    for key in REGISTRY_KEYS:
        value = r.str(key, None)
        if value is not None:
            out[key] = value
    if out["kind"] == "confluent" and not (out.get("url") or out.get("conn_id")):
        raise r.error("needs url or conn_id (an Airflow connection with the registry's URL)")
    glue_only = [k for k in ("registry_name", "region", "endpoint_url", "aws_conn_id")
                 if k in out and out["kind"] != "glue"]
    if glue_only:
        raise r.error("is only used with kind: glue", glue_only[0])
    if out["kind"] == "glue" and ("url" in out or "conn_id" in out):
        raise r.error("is not used with kind: glue (aws_conn_id names its AWS connection)",
                      "url" if "url" in out else "conn_id")
    r.done()
    return out


def parse_subject(f: Fields, role: Role, registry: RegistrySpec | None,
                  fmt: str) -> dict[str, Any]:
    """``subject``/``version`` (or ``key_subject``/``key_version``) of a registry format."""
    subject_key, version_key = prefixed(role, "subject"), prefixed(role, "version")
    if registry is None:
        for key in (subject_key, version_key):
            if f.has(key):
                raise f.error("is only used with a registry (format.registry)", key)
        return {}
    subject = f.str(subject_key, None)
    if subject is None:
        what = "Confluent subject" if registry["kind"] == "confluent" else "Glue schema name"
        raise f.error(f"is required with {role}: {fmt} and a registry: the {what} whose "
                      "version the run reads as", subject_key)
    version = f.raw(version_key, "latest")
    if version != "latest" and (isinstance(version, bool) or not isinstance(version, int)
                                or version < 1):
        raise f.error(f"must be latest or a version number, got {version!r}", version_key)
    return {"registry": registry, "subject": subject,
            "version": None if version == "latest" else version}


def read_schema_file(f: Fields, key: str) -> str:
    """A schema file's text, relative to the pipeline file (or absolute)."""
    path = Path(f.str(key))
    if not path.is_absolute() and f.file:
        path = Path(f.file).resolve().parent / path
    try:
        return path.read_text()
    except OSError as exc:
        raise f.error(f"cannot read {path}: {exc.strerror}", key) from None


def registry_from_options(options: dict[str, str], role: Role) -> dict[str, Any]:
    """Spark options → the registry part of a spec."""
    kind = options.get("schemaregistrykind", "confluent")
    if kind not in KINDS:
        raise ConfigError(f"option schemaRegistryKind: {kind!r} is not one of "
                          f"{', '.join(KINDS)}")
    subject = options.get("subject" if role == "value" else "keysubject")
    has_registry = kind == "glue" or "schema.registry.url" in options
    if not has_registry:
        if subject:
            raise ConfigError("option subject needs a registry: schema.registry.url, or "
                              "schemaRegistryKind glue")
        return {}
    if not subject:
        raise ConfigError(f"option {'subject' if role == 'value' else 'keySubject'} is "
                          "required with a schema registry")
    version = options.get("schemaversion" if role == "value" else "keyschemaversion", "latest")
    if version != "latest" and not version.isdigit():
        raise ConfigError(f"option schemaVersion: {version!r} is not latest or a number")
    registry = RegistrySpec(kind=kind)
    if kind == "glue" and options.get("schemaregistryname"):
        registry["registry_name"] = options["schemaregistryname"]
    return {"registry": registry, "subject": subject,
            "version": None if version == "latest" else int(version)}


_CODECS: dict[str, Any] = {}
_CODECS_LOCK = threading.Lock()


class RegisteredFormat(BaseFormat):
    """A format whose schema may come from a registry. Subclasses say how a reader schema
    becomes a codec (``make_codec``) and how the pipeline names a schema without a registry."""

    uses_properties: ClassVar[bool] = True
    reads_headers: ClassVar[bool] = True
    schema_type: ClassVar[str]  # AVRO | PROTOBUF | JSON
    registry_format: ClassVar[str | None] = None  # what Confluent's schema fetch asks for

    def __init__(self, spec: FormatSpec, role: Role = "value",
                 properties: Properties | None = None) -> None:
        super().__init__(spec, role)
        self.properties = split_properties(properties or {})[1]
        self.codec = self.cached_codec(spec)
        self._framed: Framed | None = None

    @classmethod
    def cached_codec(cls, spec: FormatSpec) -> Codec:
        """One codec per spec and process: a Spark worker reads many splits of a run."""
        import json
        key = json.dumps([cls.name, spec.options], sort_keys=True)
        with _CODECS_LOCK:
            codec = _CODECS.get(key)
        if codec is None:
            try:
                codec = cls.make_codec(spec)
            except ConfigError:
                raise
            except ValueError as exc:
                raise ConfigError(f"format {cls.name}: {exc}") from None
            with _CODECS_LOCK:
                _CODECS[key] = codec
        return codec

    @classmethod
    def make_codec(cls, spec: FormatSpec) -> Codec:
        raise NotImplementedError

    @classmethod
    def prepare(cls, spec: FormatSpec, properties: Properties | None = None) -> FormatSpec:
        """Pin the reader schema (a registry's version, the latest now by default) into the
        spec the plan records, with the fields it makes as Spark DDL."""
        options = dict(spec.options)
        if options.get("registry") and not options.get("reader"):
            registry = open_registry(options["registry"],
                                     split_properties(properties or {})[1])
            got = registry.version(options["subject"], options.get("version"),
                                   cls.registry_format)
            if got.schema_type != cls.schema_type:
                raise ConfigError(f"format.registry: {got.name} is a {got.schema_type} schema, "
                                  f"but format {cls.name} reads {cls.schema_type}")
            options["reader"] = got.to_dict()
        pinned = FormatSpec(spec.name, spec.schema, options)
        import pyarrow as pa
        fields = cls.cached_codec(pinned).fields()
        return FormatSpec(spec.name, spark_ddl(pa.schema(fields)), options)

    @staticmethod
    def reader(spec: FormatSpec) -> Registered:
        if not spec.options.get("reader"):
            raise ConfigError("the plan holds no reader schema for this registry format "
                              "(it is pinned when the run is planned)")
        return Registered.from_dict(spec.options["reader"])

    def fields(self, column: str) -> list[pa.Field]:
        fields = self.codec.fields()
        if len(fields) == 1 and fields[0].name == "value" and not self.record_fields():
            return [fields[0].with_name(column)]
        return fields

    def record_fields(self) -> bool:
        return True

    def decode(self, items: Sequence[bytes | None],
               headers: Sequence[Any] | None = None) -> Decoded:
        """``headers``: the records' headers (Kafka's), for a schema id header."""
        registry = self.spec.options.get("registry")
        if self._framed is None:
            from ..codecs.framed import Framed
            self._framed = Framed(self.codec, open_registry(registry, self.properties)
                                  if registry else None, self.registry_format)
        ids = None
        if headers is not None and registry and registry.get("kind") == "confluent" and \
                headers.count(None) != len(headers):  # Glue's deserializer reads no header
            from ..schema_registry.wire import header_value
            ids = [header_value(h, self.role) for h in headers]
        return self._framed.decode(list(items), ids, self.role)
