"""Record decoding for the readers: a record's key and value through their formats
(``streamslice.formats``) into Arrow columns.

A record that does not decode is never dropped: it is reported with its reason so the reader
can send it to the dead-letter output (or fail, when the pipeline says so).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..formats import Decoded, Format, FormatSpec, make_format
from ..formats.types import TS, schema_from_mapping, spark_ddl

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..sources import Properties

__all__ = ["ARROW_TYPES", "TS", "Decoder", "specs_from_dict"]

# The map form's scalar type names (kept for callers that list them).
ARROW_TYPES = {"string": pa.string(), "int": pa.int32(), "long": pa.int64(),
               "double": pa.float64(), "float": pa.float32(), "boolean": pa.bool_(),
               "timestamp": TS, "binary": pa.binary()}


class Decoder:
    """The key and value formats of a plan, and what to do with records that do not decode.

    ``value``/``key`` are ``FormatSpec``s or format names; ``schema`` (the value's fields as
    ``(name, type)`` pairs or Spark DDL) fills a named format's spec. A record format's fields
    become top-level columns (``flatten``, the default), or stay in one struct column named
    as the record part (``value``, Kinesis' ``data``, ``key``), as Spark's ``from_json(value)``
    / ``from_avro(value)`` give them (``flatten=False``).

    A record without a key (a null key) has null key columns, whatever the key's format, as
    Spark's ``from_json(key)`` and Kafka's deserializers give it: no key is not a bad key. So
    a key record's fields are nullable columns even where its schema says ``NOT NULL`` (which
    still holds for the keys there are). A key's reasons start with ``key``."""

    def __init__(self, value: FormatSpec | str = "raw", key: FormatSpec | str = "raw",
                 schema: Iterable[tuple[str, str]] | str = (),
                 on_error: str = "dead_letter",
                 properties: Properties | None = None, flatten: bool = True) -> None:
        self.value_spec = value if isinstance(value, FormatSpec) else \
            FormatSpec(value, _ddl(schema))
        self.key_spec = key if isinstance(key, FormatSpec) else FormatSpec(key)
        self.on_error, self.flatten = on_error, flatten
        self.value_format_name, self.key_format_name = self.value_spec.name, self.key_spec.name
        self._value = make_format(self.value_spec, "value", properties)
        self._key = make_format(self.key_spec, "key", properties)
        # the struct a record format's fields are kept in when not flattened, else None
        self._nested = {part: pa.struct(fmt.fields(part)) if not flatten and
                        fmt.record_fields() else None
                        for part, fmt in (("key", self._key), ("value", self._value))}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None,
                  properties: Properties | None = None) -> Decoder:
        """A plan's ``decode`` (``Decoding.to_dict()``, or the older flat form);
        ``properties``: the client properties (a schema registry's, ``schema.registry.*``)."""
        if not d:
            return cls()
        value, key = specs_from_dict(d)
        return cls(value, key, on_error=d.get("on_error", "dead_letter"), properties=properties,
                   flatten=d.get("flatten", True))

    def flattened(self, part: str) -> bool:
        """Whether ``part``'s (``key``, ``value``) columns are a record's top-level fields."""
        fmt = self._key if part == "key" else self._value
        return self.flatten and fmt.record_fields()

    def record_format(self, part: str) -> bool:
        """Whether ``part``'s format decodes a record with fields (json, avro…), not bytes."""
        return bool((self._key if part == "key" else self._value).record_fields())

    def key_fields(self, column: str = "key") -> list[pa.Field]:
        return [f.with_nullable(True) for f in self._fields("key", self._key, column)]

    def value_fields(self, column: str = "value") -> list[pa.Field]:
        return self._fields("value", self._value, column)

    def decode_keys(self, keys: Sequence[bytes | None],
                    headers: Sequence[Any] | None = None) -> Decoded:
        """→ (one pa.Array per key field, {row: reason}); null where a record has no key.
        ``headers``: the records' headers, where the source has them (Kafka)."""
        arrays, errors = self._decoded("key", _decode(self._key, keys, headers))
        if errors:  # a format that refuses a null key (a record format): null columns there
            missing = [row for row in errors if keys[row] is None]
            if missing:
                for row in missing:
                    del errors[row]
                mask = np.zeros(len(keys), dtype=bool)
                mask[missing] = True
                arrays = [pc.if_else(mask, pa.scalar(None, a.type), a) for a in arrays]
        return arrays, {row: reason if reason.startswith("key") else f"key: {reason}"
                        for row, reason in errors.items()}

    def decode_values(self, values: Sequence[bytes | None],
                      headers: Sequence[Any] | None = None) -> Decoded:
        """→ (one pa.Array per value field, {row: reason})."""
        return self._decoded("value", _decode(self._value, values, headers))

    def _fields(self, part: str, fmt: Format, column: str) -> list[pa.Field]:
        nested = self._nested[part]
        return fmt.fields(column) if nested is None else [pa.field(column, nested)]

    def _decoded(self, part: str, decoded: Decoded) -> Decoded:
        nested = self._nested[part]
        if nested is None:
            return decoded
        arrays, errors = decoded
        return [pa.StructArray.from_arrays(arrays, fields=list(nested))], errors


def _decode(fmt: Format, items: Sequence[bytes | None],
            headers: Sequence[Any] | None) -> Decoded:
    if headers is not None and getattr(fmt, "reads_headers", False):
        return fmt.decode(items, headers=headers)  # type: ignore[call-arg]
    return fmt.decode(items)


def specs_from_dict(d: dict[str, Any]) -> tuple[FormatSpec, FormatSpec]:
    """The value and key specs of a plan's ``decode``. Plans written before formats had specs
    hold ``{"value": "json", "key": "raw", "schema": [[name, type], …]}``."""
    value, key = d.get("value", "raw"), d.get("key", "raw")
    if isinstance(value, str):
        value = FormatSpec(value, _ddl([tuple(f) for f in d.get("schema") or ()]))
    else:
        value = FormatSpec.from_dict(value)
    return value, FormatSpec.from_dict(key)


def _ddl(schema: Iterable[tuple[str, str]] | str) -> str:
    if isinstance(schema, str):
        return schema
    pairs = list(schema)
    return spark_ddl(schema_from_mapping(dict(pairs))) if pairs else ""
