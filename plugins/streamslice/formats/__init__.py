"""Record formats: how the bytes of a record's value (or key) become Arrow columns.

One module per format (``raw``, ``string``, ``json``…) behind one small contract, ``Format``,
and one line per format in ``FORMATS``. Nothing outside this package asks which format a
pipeline uses: the config parses ``format:`` through ``Format.parse``, the plan records each
format's ``FormatSpec`` (plain JSON), and the readers on the executors build the format from
that spec and call ``fields`` and ``decode``.

How a new format plugs in (e.g. ``avro``):

1. ``formats/avro.py`` with a class ``Avro(BaseFormat)`` (``BaseFormat`` gives the defaults):

   - ``name = "avro"``; ``roles = ("value", "key")`` where it may be used.
   - ``parse(f, role) -> FormatSpec`` (classmethod): its settings from the pipeline file's
     ``format:`` block. ``f`` is that block (``config.fields.Fields``): read only the keys
     it owns with ``f.str``/``f.raw``/``f.child`` (e.g. ``schema``, ``registry``; for the key
     role, ``key_``-prefixed ones), raise ``f.error(message, key)`` for a bad one (it names
     file, line and field). Never call ``f.done()``: the block is shared. Return a
     ``FormatSpec(name, schema, options)``: JSON-serialisable values only (it goes into the
     ReadPlan that executors get; no secrets: credentials come from connections at read
     time).
   - ``from_options(options, role) -> FormatSpec`` (classmethod): the same from Spark data
     source options (keys lower-cased; the shared ones are ``valueformat``, ``keyformat``,
     ``schema``); raise ``errors.ConfigError`` naming the option.
   - ``prepare(spec) -> FormatSpec`` (classmethod, optional): called once per run on the
     driver when the plan is made; what it returns is recorded in the plan, so a retry
     decodes exactly as the first attempt (pin a registry's latest schema version here).
   - ``__init__(spec, role)``: on an executor, once per split reader: compile the decoder
     (``role`` is ``"value"`` or ``"key"``, for reasons such as ``key is not valid UTF-8``).
   - ``fields(column) -> list[pa.Field]``: the Arrow fields it makes of the record part
     ``column`` (``"value"``, ``"key"``, Kinesis' ``"data"``): one field named ``column`` for
     raw and string; a record format's top-level fields for a value (they become the
     dataset's columns, as ``value: json`` does). Stable for a given spec: tables and
     Spark see this schema before any record is read.
   - ``record_fields() -> bool``: True when ``fields`` are a record's fields (``json``, an
     Avro record), which ``format.flatten: false`` keeps in one struct column instead.
   - ``decode(items) -> Decoded``: a batch of record parts (``bytes`` or ``None``) → one
     ``pa.Array`` per field of ``fields``, each ``len(items)`` long and of exactly that
     field's type, plus ``{row: reason}`` for the rows that did not decode. A failed row's
     slots may hold anything (nulls): readers drop those rows and send them to the dead
     letters with the reason (or fail the run with ``on_error: fail``). A reason is one
     line that names what was wrong and where (``field 'user.tags[3]': expected int, got
     "x"``). ``decode`` must never raise for a bad record: catch per record, never lose one.

2. One line in ``FORMATS`` below: ``"avro": "streamslice.formats.avro:Avro"``. Pipeline files
   accept ``format.value: avro`` (and ``format.key: avro`` if ``roles`` says so), Spark
   accepts ``valueFormat=avro``; the readers, Parquet sink, tables and Spark schema follow
   from ``fields``.

3. Types: map the format's types to Arrow as Spark would (``formats.types``: Spark DDL ↔
   Arrow, ``spark_type`` for names in messages); decimals ``decimal128(p, s)``, dates
   ``date32``, timestamps ``timestamp("us", tz="UTC")`` (``types.TS``) or ``types.TS_NTZ``.

4. Tests: ``tests/unit/test_formats_contract.py`` runs every registered format through the
   contract (lengths, types, never raising on hostile bytes); add the format's own cases
   beside it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from ..registry import registered_class

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from ..config.fields import Fields
    from ..records import JsonObject
    from ..sources import Properties

Role = Literal["value", "key"]

# format name → "module:Class", imported on first use (a raw pipeline never loads msgspec).
FORMATS: dict[str, str] = {
    "raw": "streamslice.formats.raw:Raw",
    "string": "streamslice.formats.string:String",
    "json": "streamslice.formats.json:Json",
    "avro": "streamslice.formats.avro:Avro",
    "protobuf": "streamslice.formats.protobuf:Protobuf",
    "json_schema": "streamslice.formats.json_schema:JsonSchema",
}

# One pa.Array per field of ``Format.fields``, each as long as the batch; {row: reason}.
Decoded = tuple[list["pa.Array"], dict[int, str]]


@dataclass(frozen=True)
class FormatSpec:
    """A configured format as the plan records it: plain JSON values only."""

    name: str = "raw"
    schema: str = ""  # the declared fields as Spark DDL (json); "" where the format has none
    options: dict[str, Any] = field(default_factory=dict)  # format-specific, JSON values

    def to_dict(self) -> JsonObject:
        return {"name": self.name, "schema": self.schema, "options": dict(self.options)}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | str) -> FormatSpec:
        if isinstance(d, str):
            return cls(name=d)
        return cls(name=d.get("name", "raw"), schema=d.get("schema", ""),
                   options=dict(d.get("options") or {}))


class Format(Protocol):
    """One record format (see the module docstring for how a new one plugs in)."""

    name: ClassVar[str]
    roles: ClassVar[tuple[Role, ...]]
    extras: ClassVar[tuple[str, ...]]

    def __init__(self, spec: FormatSpec, role: Role) -> None: ...

    @classmethod
    def parse(cls, f: Fields, role: Role) -> FormatSpec: ...

    @classmethod
    def from_options(cls, options: dict[str, str], role: Role) -> FormatSpec: ...

    @classmethod
    def prepare(cls, spec: FormatSpec) -> FormatSpec: ...

    def fields(self, column: str) -> list[pa.Field]: ...

    def record_fields(self) -> bool: ...

    def decode(self, items: Sequence[bytes | None]) -> Decoded: ...


class BaseFormat:
    """Defaults for a format without settings of its own."""

    name: ClassVar[str]
    roles: ClassVar[tuple[Role, ...]] = ("value", "key")
    # A format that needs connection properties where it runs (a schema registry's URL and
    # credentials, ``schema.registry.*``) sets this; its ``__init__`` and ``prepare`` then get
    # the client properties as ``properties``.
    uses_properties: ClassVar[bool] = False
    # A format that finds part of a record's framing in its headers (a Confluent schema id
    # in ``__value_schema_id``) sets this; its ``decode`` then gets the records' headers as
    # ``headers`` (a list of (name, bytes) pairs or None per record) where the source has
    # headers (Kafka).
    reads_headers: ClassVar[bool] = False
    # The package extras its decoder needs (``streamslice.config.extras``): checked at validation.
    extras: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: FormatSpec, role: Role = "value") -> None:
        self.spec, self.role = spec, role

    @classmethod
    def parse(cls, f: Fields, role: Role) -> FormatSpec:
        key = "schema" if role == "value" else "key_schema"
        if f.has(key):
            raise f.error(f"is not used with {role}: {cls.name} (it is the fields of {role}: "
                          "json)", key)
        return FormatSpec(cls.name)

    @classmethod
    def from_options(cls, options: dict[str, str], role: Role) -> FormatSpec:
        option = "schema" if role == "value" else "keySchema"
        if option.lower() in options:
            from ..errors import ConfigError
            raise ConfigError(f"option {option} is not used with {role}Format {cls.name} (it "
                              f"is the fields of {role}Format json)")
        return FormatSpec(cls.name)

    @classmethod
    def prepare(cls, spec: FormatSpec) -> FormatSpec:
        return spec

    def record_fields(self) -> bool:
        """Whether ``fields`` are a record's fields (top-level columns, or one struct column
        with ``format.flatten: false``) rather than the record part's own one column."""
        return False


def format_class(name: str) -> type[Format]:
    cls: type[Format] = registered_class(FORMATS, name, "format")
    return cls


def make_format(spec: FormatSpec, role: Role = "value",
                properties: Properties | None = None) -> Format:
    """The format a spec describes, ready to decode (on an executor). ``properties``: the
    client properties, for formats that use them (``BaseFormat.uses_properties``)."""
    cls: Any = format_class(spec.name)
    made: Format = cls(spec, role, properties=properties or {}) \
        if getattr(cls, "uses_properties", False) else cls(spec, role)
    return made


def prepare_format(spec: FormatSpec, properties: Properties | None = None) -> FormatSpec:
    """``Format.prepare``, with the client properties for formats that use them."""
    cls: Any = format_class(spec.name)
    prepared: FormatSpec = cls.prepare(spec, properties=properties or {}) \
        if getattr(cls, "uses_properties", False) else cls.prepare(spec)
    return prepared


def formats_for(role: Role) -> tuple[str, ...]:
    """The registered formats that may decode ``role`` (imports each, once)."""
    return tuple(name for name in FORMATS if role in format_class(name).roles)
