"""Event time from a field of the decoded record (``event_time: {field: …}``), as Flink's
connectors let a timestamp assigner take it from the message instead of the broker's or
Kinesis' arrival time, and Kafka Connect's ``RecordField`` extractor does.

The field is a path into the decoded value (``event_time``, ``meta.ts``; Debezium's
``ts_ms``): a timestamp or date column; a number with its ``unit`` (``ms`` by default, ``s``,
``us``, ``ns``); or a string, ISO-8601 by default or in a Java date ``format``. A record
whose field is missing, null or does not parse has no usable time: ``extract`` gives null and
the reason, and the run that owns it by arrival makes it a dead letter with that reason.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError
from ..timestamps import parse_date_string_ms, parse_iso

if TYPE_CHECKING:
    from ..records import JsonObject
    from .decode import Decoder

UNITS = {"s": 1000, "ms": 1, "us": 1 / 1000, "ns": 1 / 1_000_000}
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


@dataclass(frozen=True)
class EventTime:
    field: str
    unit: str = "ms"  # numbers
    format: str | None = None  # strings: a Java date pattern; None: ISO-8601

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EventTime:
        return cls(**data)

    def field_type(self, decoder: Decoder) -> pa.DataType:
        """The field's type in the decoded record, or ConfigError saying why it has none."""
        if not decoder.record_format("value"):
            raise ConfigError(f"event_time.field: {self.field!r} needs a record format with "
                              f"fields (json, avro, protobuf, json_schema); format.value is "
                              f"{decoder.value_format_name}")
        typ: pa.DataType = pa.struct(_record_fields(decoder))
        for i, name in enumerate(self.field.split(".")):
            if not pa.types.is_struct(typ) or typ.get_field_index(name) < 0:
                where = ".".join(self.field.split(".")[:i]) or "the record"
                raise ConfigError(f"event_time.field: {self.field!r}: {where} has no field "
                                  f"{name!r}")
            typ = typ.field(name).type
        ok = (pa.types.is_timestamp(typ) or pa.types.is_date(typ) or pa.types.is_integer(typ)
              or pa.types.is_floating(typ) or pa.types.is_string(typ)
              or pa.types.is_large_string(typ))
        if not ok:
            raise ConfigError(f"event_time.field: {self.field!r} is {typ}; an event time is a "
                              "timestamp, a date, a number (with its unit) or a string")
        if self.format and not pa.types.is_string(typ):
            raise ConfigError(f"event_time.format: {self.field!r} is {typ}, not a string")
        return typ

    def extract(self, decoder: Decoder, value_cols: list[pa.Array]
                ) -> tuple[pa.Array, dict[int, str]]:
        """Each row's event time in epoch ms (int64, null where unusable) and the reasons."""
        n = len(value_cols[0]) if value_cols else 0
        names = [f.name for f in _record_fields(decoder)]
        if decoder.flattened("value"):
            arr: pa.Array = pa.StructArray.from_arrays(value_cols, names=names) if n else \
                pa.array([], pa.struct(_record_fields(decoder)))
        else:
            arr = value_cols[0]
        for name in self.field.split("."):
            arr = pc.struct_field(arr, [name]) if isinstance(arr, pa.StructArray) else \
                pc.struct_field(arr, name)
        ms, bad = self._to_ms(arr)
        reasons = {i: f"event_time: field {self.field!r} is null or missing"
                   for i in range(n) if not arr[i].is_valid}
        reasons.update(bad)
        return ms, reasons

    def _to_ms(self, arr: pa.Array) -> tuple[pa.Array, dict[int, str]]:
        typ = arr.type
        if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
            if pa.types.is_date(typ):
                arr = arr.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
                return pc.multiply(arr, 86_400_000), {}
            return _scaled(arr.cast(pa.int64()), UNITS[typ.unit])[0], {}
        if pa.types.is_integer(typ) or pa.types.is_floating(typ):
            ms, beyond = _scaled(arr, UNITS[self.unit])
            values = arr.to_pylist() if pc.any(beyond).as_py() else []
            return ms, {i: f"event_time: field {self.field!r} is {values[i]!r} {self.unit}, "
                           "beyond the years 1 to 9999"
                        for i, b in enumerate(beyond.to_pylist()) if b}
        out: list[int | None] = []
        bad: dict[int, str] = {}
        for i, text in enumerate(arr.to_pylist()):
            if text is None:
                out.append(None)
                continue
            try:
                out.append(parse_date_string_ms(text, self.format) if self.format
                           else parse_iso(text))
            except ValueError:
                out.append(None)
                bad[i] = (f"event_time: field {self.field!r} is {text[:60]!r}, not "
                          f"{'in format ' + repr(self.format) if self.format else 'ISO-8601'}")
        return pa.array(out, pa.int64()), bad


def _record_fields(decoder: Decoder) -> list[pa.Field]:
    """The value record's own fields (also when kept in one struct column)."""
    fields = decoder.value_fields()
    if not decoder.flattened("value") and len(fields) == 1 and \
            pa.types.is_struct(fields[0].type):
        return list(fields[0].type)
    return fields


def _scaled(arr: pa.Array, factor: float) -> tuple[pa.Array, pa.Array]:
    """Epoch values in some unit → epoch ms, floored (an instant lies in its millisecond),
    and a mask of the values beyond years 1 to 9999, which no timestamp column holds."""
    beyond = pc.fill_null(pc.greater(pc.abs(pc.multiply(arr.cast(pa.float64(), safe=False),
                                                        factor)),
                                     MAX_MS), False)
    arr = pc.if_else(beyond, pa.scalar(None, arr.type), arr)
    if pa.types.is_floating(arr.type):
        return pc.floor(pc.multiply(arr, factor)).cast(pa.int64()), beyond
    ints = arr.cast(pa.int64())
    if factor >= 1:
        return pc.multiply(ints, int(factor)), beyond
    d = int(round(1 / factor))
    q = pc.divide(ints, d)  # truncates toward zero: one less below zero with a remainder
    return pc.if_else(pc.greater(pc.multiply(q, d), ints), pc.subtract(q, 1), q), beyond
