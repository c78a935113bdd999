"""``json``: one JSON object per record → the declared schema's columns, nested ones included.

The schema is Spark DDL or the map form (``formats.types``). What a JSON value must be for each
type (anything else is a dead letter naming the field's path, ``field 'user.tags[3]':
expected int, got "x"``):

- ``string``: a string (lone surrogates such as ``"\\ud800"`` cannot be UTF-8: refused);
  ``binary``: a string, stored as its UTF-8 bytes; ``boolean``: ``true``/``false``;
- ``tinyint``/``smallint``/``int``/``bigint``: an integer within the type's range (``1.0``
  is refused); ``float``/``double``: any number, ``NaN`` and ``±Infinity`` included (as
  Spark's ``allowNonNumericNumbers``), and the strings Spark's ``from_json`` reads as such
  (``"NaN"``, ``"Infinity"``, ``"+Infinity"``, ``"-Infinity"``, ``"+INF"``, ``"-INF"``); a
  finite number beyond ``float``'s range is refused;
- ``decimal(p,s)``: a number or a numeric string with at most ``s`` decimal places and
  ``p - s`` integer digits (nothing is rounded);
- ``date``: text as Spark's ``from_json`` reads it (``stringToDate``: trimmed,
  ``yyyy``, ``yyyy-[m]m``, ``yyyy-[m]m-[d]d``, then anything after a space or ``T``; else
  a whole number of days since 1970-01-01); ``timestamp``: ISO 8601 text (an offset or ``Z``;
  none means UTC) or a whole number of epoch seconds, as ``from_json`` reads it (epoch
  milliseconds with ``epoch_unit: millis``), kept to the microsecond (RFC 3339 text with more
  fractional digits is rounded, as msgspec rounds it; other ISO 8601 text is read by
  ``datetime.fromisoformat``), within years 1 to 9999 in UTC; ``timestamp_ntz``: ISO 8601 text
  without an offset;
- ``struct``: an object (other keys are ignored, missing ones are null); ``array``: an
  array; ``map<string, …>``: an object;
- ``NOT NULL``: the field must be present and not null.

Two decoders, which agree (``tests/unit/test_json_format.py`` fuzzes one against the other):
the fast one decodes each record with msgspec straight into the declared types (checked in C;
timestamps as RFC 3339 text by msgspec's parser, or, if the batch has others, epoch
numbers and other ISO 8601 forms through ``_timestamp``) and builds the whole batch's
columns with pyarrow (C++); the reference one is ``json.loads`` plus a walk over the declared
type that says what does not fit and where. A record the fast decoder refuses goes to the
reference, which decides: a row, or a dead letter with its reason. Only such records pay for
the reference.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, timezone
from decimal import Context, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, NotRequired, Required, TypedDict

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError
from . import BaseFormat, Decoded, FormatSpec, Role
from .json_columns import Columnar
from .types import (
    SchemaError,
    TypeFold,
    holds,
    parse_schema,
    schema_from_mapping,
    spark_ddl,
    spark_type,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..config.fields import Fields

UTC = timezone.utc
TS_RANGE_MS = (-62_135_596_800_000, 253_402_300_799_999)  # years 1 to 9999
TS_RANGE_US = (TS_RANGE_MS[0] * 1000, TS_RANGE_MS[1] * 1000 + 999)
FLOAT32_MAX = 3.4028234663852886e38
_INT_RANGES = {8: (-2**7, 2**7 - 1), 16: (-2**15, 2**15 - 1), 32: (-2**31, 2**31 - 1),
               64: (-2**63, 2**63 - 1)}
_LABELS = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "int", pa.int64(): "long",
           pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean",
           pa.string(): "string", pa.binary(): "binary", pa.date32(): "date (YYYY-MM-DD)"}
_DECIMALS = Context(prec=80, Emax=10**6, Emin=-10**6)  # room for any DECIMAL(38, s)


def declared_schema(raw: Any) -> pa.Schema:
    """A ``schema`` as a pipeline file or Spark option gives it: DDL text, or the map form."""
    schema = schema_from_mapping(raw) if isinstance(raw, Mapping) else parse_schema(raw)
    _check_json_types(schema)
    return schema


def _check_json_types(schema: pa.Schema | pa.StructType) -> None:
    for field in schema:
        typ = field.type
        while pa.types.is_list(typ) or pa.types.is_map(typ):
            if pa.types.is_map(typ) and not pa.types.is_string(typ.key_type):
                raise SchemaError(f"field {field.name!r}: {spark_type(typ)}: JSON object "
                                  "keys are strings, so a map's keys must be STRING")
            typ = typ.item_type if pa.types.is_map(typ) else typ.value_type
        if pa.types.is_struct(typ):
            _check_json_types(typ)


class Json(BaseFormat):
    """A JSON value (``schema``) or key (``key_schema``; Spark options ``schema`` and
    ``keySchema``): Debezium's and ksqlDB's keys are JSON objects too."""

    name = "json"
    roles: ClassVar[tuple[Role, ...]] = ("value", "key")

    @classmethod
    def parse(cls, f: Fields, role: Role) -> FormatSpec:
        key = "schema" if role == "value" else "key_schema"
        if not f.has(key):
            raise f.error(f"is required with {role}: json (Spark DDL such as 'id BIGINT, user "
                          "STRUCT<name: STRING>', or a map of field → type)", key)
        unit = f.str("epoch_unit" if role == "value" else "key_epoch_unit", "seconds",
                     choices=EPOCH_UNITS)
        try:
            return FormatSpec(cls.name, spark_ddl(declared_schema(f.raw(key))), _unit(unit))
        except SchemaError as exc:
            raise f.error(str(exc), key) from None

    @classmethod
    def from_options(cls, options: dict[str, str], role: Role) -> FormatSpec:
        option = "schema" if role == "value" else "keySchema"
        unit_option = "epochUnit" if role == "value" else "keyEpochUnit"
        unit = options.get(unit_option.lower(), "seconds")
        if unit not in EPOCH_UNITS:
            raise ConfigError(f"option {unit_option}: {unit!r} is not one of: "
                              f"{', '.join(EPOCH_UNITS)}")
        text = options.get(option.lower())
        if not text:
            raise ConfigError(f"option {role}Format json needs option {option} (Spark DDL such "
                              "as 'id BIGINT, user STRUCT<name: STRING>', or a JSON object of "
                              "field → type)")
        try:
            raw: Any = text
            if text.lstrip().startswith("{"):
                raw = json.loads(text)
            return FormatSpec(cls.name, spark_ddl(declared_schema(raw)), _unit(unit))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"option {option} is not a JSON object: {exc}") from None
        except SchemaError as exc:
            raise ConfigError(f"option {option}: {exc}") from None

    def __init__(self, spec: FormatSpec, role: Role = "value") -> None:
        super().__init__(spec, role)
        self.schema = parse_schema(spec.schema)
        self.struct = pa.struct(list(self.schema))
        epoch = spec.options.get("epoch_unit", "seconds")
        records = [_msgspec_record(self.schema, native=True)]
        self._checked = holds(self.struct, pa.types.is_timestamp)
        if self._checked:  # epoch timestamps and other ISO 8601 forms need the hook
            records.append(_msgspec_record(self.schema, native=False, epoch=epoch))
        self._fast = [msgspec.json.Decoder(r, dec_hook=_dec_hook) for r in records]
        self._slow = [(f.name, _converter(f.type, epoch), f.nullable) for f in self.schema]
        self._columnar = Columnar(self.schema, lambda typ: _msgspec_leaf(typ, native=True))

    def fields(self, column: str) -> list[pa.Field]:
        return list(self.schema)

    def record_fields(self) -> bool:
        return True

    def decode(self, items: Sequence[bytes | None]) -> Decoded:
        errors: dict[int, str] = {}
        not_utf8 = _not_utf8(items)  # msgspec skips an unknown key without checking it
        if not not_utf8:  # the whole batch straight into columns, if every record fits
            columns = self._columnar.decode(items)
            if columns is not None and (not self._checked or _in_range(columns)):
                return [columns.field(i) for i in range(self.struct.num_fields)], errors
        rows = None if not_utf8 else self._whole_batch(items)
        if rows is None:  # some record does not fit: find which
            rows = [self._reference(row, raw, errors) if row in not_utf8
                    else self._one(row, raw, errors) for row, raw in enumerate(items)]
        try:
            struct = self._arrow(rows)
        except _ARROW_ERRORS:
            # A value msgspec let through that Arrow refuses (a decimal beyond its
            # precision, an instant before year 1): the reference decides those records.
            for row in self._unconvertible(rows, 0, len(rows)):
                rows[row] = self._reference(row, items[row], errors)
            struct = _to_arrow(rows, self.struct, errors)
        return [struct.field(i) for i in range(self.struct.num_fields)], errors

    def _whole_batch(self, items: Sequence[bytes | None]) -> list[Any] | None:
        for decoder in self._fast:
            try:
                return list(map(decoder.decode, items))  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - the next decoder, or record by record
                continue
        return None

    def _one(self, row: int, raw: bytes | None, errors: dict[int, str]) -> Any:
        for decoder in self._fast:
            try:
                return decoder.decode(raw)  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - the reference says why
                continue
        return self._reference(row, raw, errors)

    def _arrow(self, rows: list[Any]) -> pa.Array:
        struct = pa.array(rows, self.struct)
        if self._checked and not _in_range(struct):
            raise ValueError("a timestamp before year 1 or after 9999")
        return struct

    def _unconvertible(self, rows: list[Any], lo: int, hi: int) -> list[int]:
        """The rows in ``[lo, hi)`` Arrow refuses, found by halving (a few conversions each)."""
        try:
            self._arrow(rows[lo:hi])
            return []
        except _ARROW_ERRORS:
            if hi - lo == 1:
                return [lo]
        mid = (lo + hi) // 2
        return self._unconvertible(rows, lo, mid) + self._unconvertible(rows, mid, hi)

    def _reference(self, row: int, raw: bytes | None, errors: dict[int, str]) -> Any:
        """One record through the reference decoder: the row's values, or None with its
        reason in ``errors``."""
        try:
            if raw is None:
                raise _Bad(f"{self.role} is null, expected a JSON object")
            try:
                obj = json.loads(raw.decode("utf-8"), parse_float=Decimal)
            except UnicodeDecodeError as exc:
                raise _Bad(f"invalid JSON: not UTF-8 at byte {exc.start}") from None
            except json.JSONDecodeError as exc:
                raise _Bad(f"invalid JSON: {exc}") from None
            except RecursionError:
                raise _Bad("invalid JSON: nested too deeply") from None
            if not isinstance(obj, dict):
                raise _Bad(f"expected a JSON object, got {_json_kind(obj)}")
            out = {}
            for name, conv, nullable in self._slow:
                value = obj.get(name)
                if value is None and not nullable:
                    raise _Bad(f"field {name!r}: is NOT NULL, got "
                               f"{'null' if name in obj else 'nothing'}")
                out[name] = conv(value, name)
            return out
        except _Bad as exc:
            errors[row] = str(exc)
        except RecursionError:
            errors[row] = "invalid JSON: nested too deeply"
        except Exception as exc:  # noqa: BLE001 - a value must never take the reader down
            errors[row] = f"cannot decode: {type(exc).__name__}: {str(exc)[:200]}"
        return None


_ARROW_ERRORS = (pa.ArrowException, ValueError, TypeError, OverflowError)


def _not_utf8(items: Sequence[bytes | None]) -> set[int]:
    """The records that are not UTF-8 (JSON must be), checked for the whole batch in C."""
    try:
        pa.array(items, pa.binary()).view(pa.string()).validate(full=True)
        return set()
    except pa.ArrowInvalid:
        pass
    bad = set()
    for row, raw in enumerate(items):
        try:
            if raw is not None:
                raw.decode("utf-8")
        except UnicodeDecodeError:
            bad.add(row)
    return bad


def _to_arrow(rows: list[Any], struct: pa.StructType, errors: dict[int, str]) -> pa.Array:
    """The reference's rows as Arrow; should one still not convert (a bug), it becomes a dead
    letter instead of taking the batch down."""
    try:
        return pa.array(rows, struct)
    except _ARROW_ERRORS:
        pass
    for row, value in enumerate(rows):
        try:
            pa.array([value], struct)
        except _ARROW_ERRORS as exc:
            errors[row] = f"cannot convert to Arrow: {str(exc)[:200]}"
            rows[row] = None
    return pa.array(rows, struct)


EPOCH_UNITS = ("seconds", "millis")  # what a JSON number in a TIMESTAMP field counts


def _unit(unit: str) -> dict[str, Any]:
    """The spec's options: the unit only when not the default, so plans stay as they were."""
    return {} if unit == "seconds" else {"epoch_unit": unit}


class _Bad(ValueError):
    """A record that does not fit its schema (the message is the dead letter's reason)."""


# -- the reference decoder: json.loads output → values for pa.array, with paths ---------------
Conv = Callable[[Any, str], Any]


def _converter(typ: pa.DataType, epoch: str = "seconds") -> Conv:
    """What a JSON value of ``typ`` must be, as a function (value, path) → Arrow-ready value;
    ``epoch``: what a number in a timestamp counts."""
    return _Converters(epoch).of(typ)


def _nullable(inner: Conv) -> Conv:
    def conv(value: Any, path: str) -> Any:
        return None if value is None else inner(value, path)
    return conv


class _Converters(TypeFold[Conv]):
    def __init__(self, epoch: str) -> None:
        self.epoch = epoch

    def struct(self, typ: pa.StructType, fields: list[Conv]) -> Conv:
        children = [(f.name, conv, f.nullable) for f, conv in zip(typ, fields)]

        def struct(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise _mismatch(path, "struct (a JSON object)", value)
            out = {}
            for name, conv, nullable in children:
                child = value.get(name)
                if child is None and not nullable:
                    raise _Bad(f"field {path + '.' + name!r}: is NOT NULL, got "
                               f"{'null' if name in value else 'nothing'}")
                out[name] = conv(child, f"{path}.{name}")
            return out
        return _nullable(struct)

    def array(self, typ: pa.ListType, element: Conv) -> Conv:
        def array(value: Any, path: str) -> Any:
            if not isinstance(value, list):
                raise _mismatch(path, f"{spark_type(typ)} (a JSON array)", value)
            return [element(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return _nullable(array)

    def map(self, typ: pa.MapType, item: Conv) -> Conv:
        def mapping(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise _mismatch(path, f"{spark_type(typ)} (a JSON object)", value)
            out = []
            for k, v in value.items():
                at = f"{path}[{json.dumps(k)}]"
                if not _unicode(k):
                    raise _Bad(f"field {at!r}: a map key that cannot be UTF-8")
                out.append((k, item(v, at)))
            return out
        return _nullable(mapping)

    def leaf(self, typ: pa.DataType) -> Conv:
        return _nullable(_scalar(typ, self.epoch))


def _scalar(typ: pa.DataType, epoch: str = "seconds") -> Conv:  # noqa: C901 - a flat dispatch over Arrow's scalar types
    label = _LABELS.get(typ, spark_type(typ))

    def check(ok: Callable[[Any], bool], make: Callable[[Any], Any] = lambda v: v) -> Conv:
        def run(value: Any, path: str) -> Any:
            if not ok(value):
                raise _mismatch(path, label, value)
            return make(value)
        return run

    if pa.types.is_integer(typ):
        lo, hi = _INT_RANGES[typ.bit_width]
        return check(lambda v: type(v) is int and lo <= v <= hi)
    if pa.types.is_floating(typ):
        limit = FLOAT32_MAX if typ == pa.float32() else None
        return check(lambda v: isinstance(v, str) and v in NON_NUMERIC
                     or (_is_number(v) or isinstance(v, Decimal))
                     and _float_ok(v, limit), lambda v: NON_NUMERIC.get(v, v) if
                     isinstance(v, str) else float(v))
    if pa.types.is_boolean(typ):
        return check(lambda v: isinstance(v, bool))
    if pa.types.is_string(typ):
        return check(lambda v: isinstance(v, str) and _unicode(v))
    if pa.types.is_binary(typ):
        return check(lambda v: isinstance(v, str) and _unicode(v), lambda v: v.encode())
    if pa.types.is_decimal(typ):
        return _decimal(typ)
    if pa.types.is_date32(typ):
        return _hooked(_date, label)
    if pa.types.is_timestamp(typ):
        if typ.tz is None:
            return _hooked(_timestamp_ntz, "timestamp_ntz (ISO 8601 without an offset)")
        if epoch == "millis":
            return _hooked(_timestamp_ms, "timestamp (ISO 8601 or epoch ms)")
        return _hooked(_timestamp, "timestamp (ISO 8601 or epoch seconds)")
    raise SchemaError(f"type {spark_type(typ)} cannot be read from JSON")


def _hooked(parse: Callable[[Any], Any], label: str) -> Conv:
    def run(value: Any, path: str) -> Any:
        try:
            return parse(float(value) if isinstance(value, Decimal) else value)
        except (ValueError, TypeError, OverflowError):
            raise _mismatch(path, label, value) from None
    return run


def _decimal(typ: pa.Decimal128Type) -> Conv:
    precision, scale = typ.precision, typ.scale
    label = spark_type(typ)
    quantum = Decimal(1).scaleb(-scale)

    def run(value: Any, path: str) -> Any:
        try:
            if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
                raise InvalidOperation
            # as msgspec reads a decimal string (Python's syntax: exact, surrounding blanks
            # and digit underscores allowed), so both decoders land the same records
            number = Decimal(value)
            if not number.is_finite():
                raise InvalidOperation
        except (InvalidOperation, ValueError):
            raise _mismatch(path, label, value) from None
        if number and number.adjusted() >= precision - scale:
            raise _Bad(f"field {path!r}: {_show(value)} does not fit {label} (more than "
                       f"{precision - scale} digits before the decimal point)")
        exact = number.quantize(quantum, context=_DECIMALS)
        if exact != number:
            raise _Bad(f"field {path!r}: {_show(value)} does not fit {label} (more than "
                       f"{scale} decimal places)")
        return exact
    return run


# -- values both decoders parse the same way (msgspec calls these through ``dec_hook``) -------
# Spark's stringToDate: [+-]yyyy[y…], then -[m]m, then -[d]d, then anything after ' ' or 'T'
_SPARK_DATE = re.compile(r"([+-]?)(\d{4,7})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?", re.S)
_EPOCH_DAY = date(1970, 1, 1).toordinal()


def _date(value: Any) -> date:
    """Text as Spark's ``from_json`` reads a DATE: ``stringToDate`` on the trimmed text, else
    (Spark 1.5's form, which Spark still reads) a whole number of days since 1970-01-01."""
    if not isinstance(value, str):
        raise TypeError(value)
    found = _SPARK_DATE.fullmatch(value.strip())
    if found:
        sign, year, month, day = found.groups()
        return date(int(sign + year), int(month or 1), int(day or 1))
    if re.fullmatch(r"[+-]?\d+", value):  # Java's Integer.parseInt: no blanks
        return date.fromordinal(_EPOCH_DAY + int(value))
    raise ValueError(value)


_RFC3339 = msgspec.json.Decoder(datetime)
_RFC3339_NTZ = msgspec.json.Decoder(Annotated[datetime, msgspec.Meta(tz=False)])


# The ISO 8601 shapes Spark's stringToTimestamp reads too: a calendar date with dashes, an
# hour with optional minutes and seconds behind ``T`` or a blank, then an optional offset.
# ``fromisoformat`` also reads basic (``20240501T100000``) and week (``2024-W18-3``) forms,
# which from_json refuses; so do we.
_EXTENDED = re.compile(r"\s*\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}(?::\d{2}(?::\d{2}(?:[.,]\d+)?)?)?)?"
                       r"\s*(?:Z|[+-]\d{2}(?::?\d{2})?)?\s*")


def _text_time(value: str, decoder: msgspec.json.Decoder[Any]) -> datetime:
    """RFC 3339 as msgspec reads it (the fast decoder reads those natively, rounding a
    seventh fractional digit), else what ``datetime.fromisoformat`` reads (which truncates
    it) of the shapes Spark reads: one rule for both decoders."""
    try:
        parsed: datetime = decoder.decode(msgspec.json.encode(value))
        return parsed
    except msgspec.MsgspecError:
        if not _EXTENDED.fullmatch(value):
            raise ValueError(value) from None
        return datetime.fromisoformat(value.strip())


def _timestamp(value: Any) -> datetime | int:
    """ISO 8601 text (no offset means UTC) or a whole number of epoch seconds, as Spark's
    ``from_json`` reads a number into a TIMESTAMP → what ``pa.array`` takes for
    ``timestamp[us, UTC]``: a datetime (a naive one meaning UTC) or microseconds."""
    if isinstance(value, str):
        return _timestamp_text(value)
    if type(value) is int and TS_RANGE_MS[0] <= value * 1000 <= TS_RANGE_MS[1]:
        return value * 1_000_000
    raise ValueError(value)


def _timestamp_ms(value: Any) -> datetime | int:
    """``epoch_unit: millis``: a number is epoch milliseconds (a fraction is kept to the
    microsecond)."""
    if isinstance(value, str):
        return _timestamp_text(value)
    if _is_number(value) and TS_RANGE_MS[0] <= value <= TS_RANGE_MS[1]:
        return value * 1000 if isinstance(value, int) else round(value * 1000)
    raise ValueError(value)


def _timestamp_text(value: str) -> datetime:
    parsed = _text_time(value, _RFC3339)
    if parsed.tzinfo is not None and parsed.year in (1, 9999):
        parsed.astimezone(UTC)  # OverflowError: before year 1 or after 9999 in UTC
    return parsed


def _timestamp_ntz(value: Any) -> datetime:
    if not isinstance(value, str):
        raise TypeError(value)
    parsed = _text_time(value, _RFC3339_NTZ)
    if parsed.tzinfo is not None:
        raise ValueError(value)
    return parsed


def _in_range(array: pa.Array) -> bool:
    """Every timestamp, at any depth, within years 1 to 9999 in UTC (an offset can push
    ``0001-01-01T00:00:00+01:00`` before year 1: Spark and Python hold no such instant)."""
    typ = array.type
    if pa.types.is_timestamp(typ):
        low, high = pc.min_max(array.cast(pa.int64())).values()
        return low.as_py() is None or (TS_RANGE_US[0] <= low.as_py() and
                                       high.as_py() <= TS_RANGE_US[1])
    if pa.types.is_struct(typ):
        return all(_in_range(array.field(i)) for i in range(typ.num_fields))
    if pa.types.is_map(typ):
        return _in_range(array.items)
    if pa.types.is_list(typ):
        return _in_range(array.flatten())
    return True


class _Parsed(type):
    """msgspec checks that ``dec_hook`` returned an instance of the type it asked for; these
    marker types stand for what their ``parse`` returns (a datetime, or microseconds)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, (date, int))


class _Timestamp(metaclass=_Parsed):
    parse = staticmethod(_timestamp)


class _TimestampMillis(metaclass=_Parsed):
    parse = staticmethod(_timestamp_ms)


class _TimestampNTZ(metaclass=_Parsed):
    parse = staticmethod(_timestamp_ntz)


def _dec_hook(typ: type, value: Any) -> Any:
    return typ.parse(value)  # type: ignore[attr-defined]


# -- the fast decoder: the schema as msgspec types ---------------------------------------------
_counter = iter(range(1 << 62))


def _msgspec_record(schema: pa.Schema | pa.StructType, native: bool,
                    epoch: str = "seconds") -> Any:
    """The schema as a msgspec type; ``native``: timestamps as msgspec's own RFC 3339 text
    only (C speed), else through ``_timestamp`` (epoch numbers too, counting ``epoch``)."""
    types = _MsgspecTypes(native, epoch)
    return types.record(schema, types.fields(schema))


class _MsgspecTypes(TypeFold[Any]):
    def __init__(self, native: bool, epoch: str) -> None:
        self.native, self.epoch = native, epoch

    def record(self, fields: Iterable[pa.Field], types: list[Any]) -> Any:
        out: dict[str, Any] = {}
        for f, typ in zip(fields, types):
            out[f.name] = NotRequired[typ | None] if f.nullable else Required[typ]
        return TypedDict(f"Record{next(_counter)}", out, total=False)  # type: ignore[operator]

    def struct(self, typ: pa.StructType, fields: list[Any]) -> Any:
        return self.record(typ, fields)

    def array(self, typ: pa.ListType, item: Any) -> Any:
        return list[item | None]

    def map(self, typ: pa.MapType, item: Any) -> Any:
        return dict[str, item | None]

    def leaf(self, typ: pa.DataType) -> Any:
        return _msgspec_leaf(typ, self.native, self.epoch)


def _msgspec_leaf(typ: pa.DataType, native: bool, epoch: str = "seconds") -> Any:  # noqa: C901 - a flat dispatch over Arrow's scalar types
    if pa.types.is_integer(typ):
        lo, hi = _INT_RANGES[typ.bit_width]
        return Annotated[int, msgspec.Meta(ge=lo, le=hi)]
    if typ == pa.float32():
        return Annotated[float, msgspec.Meta(ge=-FLOAT32_MAX, le=FLOAT32_MAX)]
    if pa.types.is_floating(typ):
        return float
    if pa.types.is_boolean(typ):
        return bool
    if pa.types.is_string(typ) or pa.types.is_binary(typ):
        return str
    if pa.types.is_decimal(typ):
        return Decimal
    if pa.types.is_date32(typ):
        return date  # msgspec's reads "YYYY-MM-DD" only, as date.fromisoformat reads it
    if pa.types.is_timestamp(typ):
        if native:
            return datetime if typ.tz is not None else \
                Annotated[datetime, msgspec.Meta(tz=False)]
        if typ.tz is None:
            return _TimestampNTZ
        return _TimestampMillis if epoch == "millis" else _Timestamp
    raise SchemaError(f"type {spark_type(typ)} cannot be read from JSON")


# -- small helpers --------------------------------------------------------------------------
def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# The strings Spark's from_json reads into a float or double (allowNonNumericNumbers)
NON_NUMERIC = {"NaN": float("nan"), "Infinity": float("inf"), "+Infinity": float("inf"),
               "+INF": float("inf"), "-Infinity": float("-inf"), "-INF": float("-inf")}


def _float_ok(value: Any, limit: float | None) -> bool:
    """Finite numbers within the column's range (NaN and ±Infinity are kept as they are)."""
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return False
    return limit is None or number != number or abs(number) == float("inf") or \
        abs(number) <= limit


def _unicode(text: str) -> bool:
    """JSON can carry lone surrogates (\\ud800) that no UTF-8 column can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _mismatch(path: str, label: str, value: Any) -> _Bad:
    return _Bad(f"field {path!r}: expected {label}, got {_show(value)}")


def _show(value: Any) -> str:
    if isinstance(value, Decimal):
        return str(value)[:40]
    try:
        return json.dumps(value, default=str)[:40]
    except (ValueError, RecursionError):
        return type(value).__name__


def _json_kind(value: Any) -> str:
    return {list: "list", str: "str", bool: "bool", int: "int", Decimal: "float",
            float: "float"}.get(type(value), type(value).__name__)
