"""Record decoding (raw | string | json with a declared schema) into Arrow columns.

A record that does not decode is never dropped: it is reported with its reason so the reader
can send it to the dead-letter output (or fail, when the pipeline says so).
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pyarrow as pa

from ..timeutil import parse_iso

TS = pa.timestamp("us", tz="UTC")
ARROW_TYPES = {"string": pa.string(), "int": pa.int32(), "long": pa.int64(),
               "double": pa.float64(), "float": pa.float32(), "boolean": pa.bool_(),
               "timestamp": TS, "binary": pa.binary()}
_INT32 = (-2**31, 2**31 - 1)
_INT64 = (-2**63, 2**63 - 1)
_FLOAT32_MAX = 3.4028234663852886e38
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TS_RANGE_MS = (-62_135_596_800_000, 253_402_300_799_999)  # years 1 to 9999


class Decoder:
    def __init__(self, value="raw", key="raw", schema=(), on_error="dead_letter"):
        self.value_format, self.key_format, self.on_error = value, key, on_error
        self.schema = [tuple(f) for f in schema]
        self._convert = [(name, _converter(typ)) for name, typ in self.schema]

    @classmethod
    def from_dict(cls, d):
        return cls(**d) if d else cls()

    def key_field(self, name="key"):
        return pa.field(name, pa.string() if self.key_format == "string" else pa.binary())

    def value_fields(self, name="value"):
        if self.value_format == "json":
            return [pa.field(n, ARROW_TYPES[t]) for n, t in self.schema]
        return [pa.field(name, pa.string() if self.value_format == "string" else pa.binary())]

    def decode_keys(self, keys):
        """→ (list of decoded keys, {row: reason})."""
        if self.key_format == "raw":
            return keys, {}
        return _utf8(keys, "key")

    def decode_values(self, values):
        """→ (list of column value lists, {row: reason})."""
        if self.value_format == "raw":
            return [values], {}
        if self.value_format == "string":
            out, errors = _utf8(values, "value")
            return [out], errors
        columns: list[list] = [[] for _ in self._convert]
        errors = {}
        for row, raw in enumerate(values):
            try:
                if raw is None:
                    raise ValueError("value is null, expected a JSON object")
                obj = json.loads(raw)
                if not isinstance(obj, dict):
                    raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
                decoded = [conv(obj.get(name), name) for name, conv in self._convert]
            except (ValueError, UnicodeDecodeError) as exc:
                errors[row] = f"invalid JSON: {exc}" if isinstance(exc, json.JSONDecodeError) \
                    else str(exc)
                decoded = [None] * len(columns)
            except RecursionError:
                errors[row] = "invalid JSON: nested too deeply"
                decoded = [None] * len(columns)
            except Exception as exc:  # a value must never take the reader down
                errors[row] = f"cannot decode: {type(exc).__name__}: {str(exc)[:200]}"
                decoded = [None] * len(columns)
            for col, v in zip(columns, decoded):
                col.append(v)
        return columns, errors


def _utf8(items, what):
    out: list = []
    errors: dict[int, str] = {}
    for row, raw in enumerate(items):
        if raw is None:
            out.append(None)
            continue
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            errors[row] = f"{what} is not valid UTF-8 at byte {exc.start}"
            out.append(None)
    return out, errors


def _converter(typ):
    def check(pred, conv):
        def run(v, name):
            if v is None:
                return None
            if not pred(v):
                raise ValueError(f"field {name!r}: expected {typ}, got {json.dumps(v)[:40]}")
            return conv(v)
        return run

    is_num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    if typ == "string":
        return check(lambda v: isinstance(v, str) and _unicode(v), str)
    if typ == "int":
        return check(lambda v: is_int(v) and _INT32[0] <= v <= _INT32[1], int)
    if typ == "long":
        return check(lambda v: is_int(v) and _INT64[0] <= v <= _INT64[1], int)
    if typ == "double":
        return check(lambda v: is_num(v) and _float_ok(v, None), float)
    if typ == "float":
        return check(lambda v: is_num(v) and _float_ok(v, _FLOAT32_MAX), float)
    if typ == "boolean":
        return check(lambda v: isinstance(v, bool), bool)
    if typ == "binary":
        return check(lambda v: isinstance(v, str) and _unicode(v), lambda v: v.encode("utf-8"))
    if typ == "timestamp":
        def ts(v, name):
            if v is None:
                return None
            try:
                ms = parse_iso(v) if isinstance(v, str) else (int(v) if is_num(v) else None)
            except (ValueError, OverflowError):
                ms = None
            if ms is None or not _TS_RANGE_MS[0] <= ms <= _TS_RANGE_MS[1]:
                raise ValueError(f"field {name!r}: expected timestamp (ISO-8601 or epoch ms), "
                                 f"got {json.dumps(v)[:40]}")
            return _EPOCH + timedelta(milliseconds=ms)
        return ts
    raise ValueError(f"unknown type {typ!r}")



def _unicode(text: str) -> bool:
    """JSON can carry lone surrogates (\\ud800) that no UTF-8 column can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _float_ok(value: float, limit: float | None) -> bool:
    """Finite floats within the column's range (NaN and ±Infinity are kept as they are)."""
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return False
    return limit is None or number != number or abs(number) == float("inf") or \
        abs(number) <= limit
