"""The decoders against independent references, value by value: generated and byte-mutated
Avro records against fastavro's own reader with its logical types, Protobuf records against
the messages google.protobuf parses. For every input the reference and our decoder agree:
the reference reads it (every byte) and our row holds the reference's values as Spark maps
them, or the reference refuses it and ours is a dead letter. Where the two differ on purpose,
the test names the difference: Spark's decimal precision, an int varint beyond 32 bits
refused as Java's Avro refuses it, dates beyond Python's years kept as their stored value;
and the reference reads a uuid and a time-millis as Spark does, as their string and int."""
from __future__ import annotations

import io
import json
import random
import uuid
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from streamslice.codecs.avro import AvroCodec
from streamslice.codecs.framed import Framed
from tests.support.fuzz import mutations

RICH: dict[str, Any] = {"type": "record", "name": "Rich", "namespace": "ref", "fields": [
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "s", "type": "string"},
    {"name": "raw", "type": "bytes"},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "arr", "type": {"type": "array", "items": "long"}},
    {"name": "m", "type": {"type": "map", "values": ["null", "string"]}},
    {"name": "opt", "type": ["null", "double"], "default": None},
    {"name": "num", "type": ["int", "long"]},
    {"name": "u", "type": ["null", "int", "string", {"type": "record", "name": "Inner",
                                                      "fields": [{"name": "q", "type": "int"}]}]},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                             "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "nested", "type": {"type": "record", "name": "Nested", "fields": [
        {"name": "xs", "type": {"type": "array", "items": "Inner"}}]}},
]}
PARSED = fastavro.parse_schema(RICH)
# Spark's from_avro reads a uuid as its string and a time-millis as its int, unchecked: the
# reference reads those two fields without their logical types, as Spark does.
REFERENCE = fastavro.parse_schema({**RICH, "fields": [
    {**f, "type": f["type"]["type"]} if f["name"] in ("uid", "tod") else f
    for f in RICH["fields"]]})
BEYOND_PYTHON = {"beyond": "Python's datetime range"}
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _record(rng: random.Random) -> dict:
    big = rng.choice([0, 1, -1, 2**31 - 1, -2**31, 2**63 - 1, -2**63, rng.getrandbits(40)])
    return {
        "b": rng.random() < 0.5, "i": rng.randint(-2**31, 2**31 - 1), "l": big,
        "f": rng.choice([0.0, 1.5, -2.25, float("inf"), 3.4e38]),
        "d": rng.choice([0.0, -0.0, 1e300, float("-inf"), rng.random()]),
        "s": rng.choice(["", "x", "ünï©ødé", "a" * rng.randrange(50), "\x00"]),
        "raw": bytes(rng.randrange(256) for _ in range(rng.randrange(6))),
        "e": rng.choice(["RED", "GREEN"]), "fx": bytes(rng.randrange(256) for _ in range(4)),
        "arr": [rng.randint(-2**63, 2**63 - 1) for _ in range(rng.randrange(4))],
        "m": {f"k{j}": rng.choice([None, "v"]) for j in range(rng.randrange(3))},
        "opt": rng.choice([None, 2.5]), "num": rng.choice([1, 2**40]),
        "u": rng.choice([None, 5, "str", {"q": 7}]),
        "dec": Decimal(rng.randrange(-10**9 + 1, 10**9)).scaleb(-2),
        "day": date(1970, 1, 1) + timedelta(days=rng.randint(-700_000, 2_900_000)),
        "ms": EPOCH + timedelta(milliseconds=rng.randint(-10**13, 10**13)),
        "us": EPOCH + timedelta(microseconds=rng.randint(-10**16, 10**16)),
        "local": datetime(2024, 5, 1) + timedelta(microseconds=rng.randint(-10**15, 10**15)),
        "uid": str(uuid.UUID(int=rng.getrandbits(128))),
        "tod": time(rng.randrange(24), rng.randrange(60), rng.randrange(60),
                    rng.randrange(1000) * 1000),
        "nested": {"xs": [{"q": rng.randint(-5, 5)} for _ in range(rng.randrange(3))]},
    }


def _encode(record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED, record)
    return out.getvalue()


def _reference(data: bytes) -> dict | Exception:
    """fastavro's own reading, or its refusal (also where it leaves bytes unread)."""
    buf = io.BytesIO(data)
    try:
        value = fastavro.schemaless_reader(buf, REFERENCE, return_record_name=False)
    except Exception as exc:  # noqa: BLE001 - any refusal of the reference is a refusal
        return exc
    assert isinstance(value, dict)  # a record
    return value if buf.tell() == len(data) else EOFError("bytes left")


def _beyond_python(exc: Exception) -> bool:
    """fastavro refuses a date or timestamp outside Python's years 1-9999; Spark (and we)
    keep the stored days or microseconds, which Arrow holds but Python cannot show."""
    return isinstance(exc, (ValueError, OverflowError)) and (
        "out of range" in str(exc) or "year" in str(exc) or "ordinal" in str(exc))


def _spark_view(field: str, value: object) -> object:
    """A fastavro value as the row of Spark's ``from_avro`` mapping holds it."""
    if field == "m":
        assert isinstance(value, dict)
        return list(value.items())
    if field == "u":  # a union of several types: one member set, by branch
        branch = {type(None): None, int: "member0", str: "member1", dict: "member2"}
        member = branch[type(value)]
        return None if member is None else {
            m: (value if m == member else None) for m in ("member0", "member1", "member2")}
    return value


def _rows(values: list[bytes]) -> tuple[list[dict | None], dict[int, str]]:
    codec = AvroCodec(json.dumps(RICH))
    columns, errors = Framed(codec, None).decode(list(values))  # as list[bytes | None]
    batch = pa.RecordBatch.from_arrays(columns, schema=pa.schema(codec.fields()))
    rows: list[dict | None] = []
    for i in range(batch.num_rows):
        try:
            rows.append(None if i in errors else batch.slice(i, 1).to_pylist()[0])
        except (ValueError, OverflowError):
            rows.append(BEYOND_PYTHON)
    return rows, errors


def _assert_agree(values: list[bytes]) -> tuple[int, int]:
    rows, errors = _rows(values)
    agreed_rows = 0
    for i, data in enumerate(values):
        want = _reference(data)
        if isinstance(want, Exception):
            if rows[i] is BEYOND_PYTHON and _beyond_python(want):
                continue
            assert i in errors, f"input {i} ({data.hex()}): fastavro refuses it ({want!r}), " \
                                f"we kept a row"
            continue
        assert rows[i] is not BEYOND_PYTHON, f"input {i}: fastavro reads it, Python cannot"
        if i in errors and "does not fit decimal" in errors[i]:
            continue  # on purpose: Spark's decimal(9, 2) holds 9 digits, fastavro any
        if i in errors and "does not fit int32" in errors[i]:
            continue  # on purpose: an int beyond 32 bits is no Avro int (Java's Avro, which
            # Spark reads with, refuses it); fastavro returns it
        assert i not in errors, f"input {i} ({data.hex()}): fastavro reads it, we said " \
                                f"{errors.get(i)!r}"
        expected = {k: _spark_view(k, v) for k, v in want.items()}
        got = rows[i]
        assert got is not None
        for name, value in expected.items():
            assert _same(value, got[name]), \
                f"input {i}, field {name!r}: fastavro {value!r}, we {got[name]!r}"
        agreed_rows += 1
    return agreed_rows, len(errors)


def test_avro_generated_records_read_as_fastavro_reads_them():
    rng = random.Random(11)
    values = [_encode(_record(rng)) for _ in range(600)]
    rows, dead = _assert_agree(values)
    assert rows == 600 and dead == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_avro_mutated_records_agree_with_fastavro(seed):
    rng = random.Random(seed)
    seeds = [_encode(_record(rng)) for _ in range(20)]
    rows, dead = _assert_agree(list(mutations(seeds, 1500, seed=seed)))
    assert rows > 50 and dead > 50  # both outcomes were exercised


# Protobuf: the test Trip message (every kind of field) parsed by google.protobuf's own classes.
def _trip_classes():  # the codec tests' schema and classes, one definition
    from google.protobuf import descriptor_pb2

    from tests.unit.test_protobuf_codec import TRIP_PROTO, classes, file_proto
    _, cls = classes()
    fds = descriptor_pb2.FileDescriptorSet(file=[file_proto(TRIP_PROTO)])
    return cls, fds.SerializeToString()


def _proto_view(message) -> dict:
    """A parsed message as Spark's from_protobuf row holds it: a field not set (a proto3
    scalar at its default) is null, repeated fields lists, maps (key, value) pairs, enums
    their names, uint64 a decimal, Timestamp a UTC datetime."""
    present = {f.name for f, _ in message.ListFields()}

    def scalar(name):
        return getattr(message, name) if name in present else None
    at = None
    if message.HasField("at"):
        at = EPOCH + timedelta(seconds=message.at.seconds,
                               microseconds=message.at.nanos // 1000)
    return {"id": scalar("id"), "count": scalar("count"),
            "big": None if "big" not in present else Decimal(message.big),
            "tags": list(message.tags), "m": list(message.m.items()),
            "kind": None if "kind" not in present else _enum_name(message, "kind"),
            "inner": {"x": message.inner.x if message.inner.ListFields() else None}
            if message.HasField("inner") else None,
            "at": at}


def _enum_name(message, field: str) -> str:
    """The value's name; a number the schema does not name (proto3 enums are open) stays as
    its number's text, kept rather than lost."""
    values = message.DESCRIPTOR.fields_by_name[field].enum_type.values_by_number
    number = getattr(message, field)
    return values[number].name if number in values else str(number)


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b or (a != a and b != b)


def _trips(rng: random.Random, cls) -> list[bytes]:
    out = []
    for _ in range(200):
        t = cls["Trip"](id=rng.choice(["", "t", "ünï"]), count=rng.randint(-2**63, 2**63 - 1),
                        big=rng.choice([0, 1, 2**64 - 1, rng.getrandbits(64)]),
                        tags=["x"] * rng.randrange(3), kind=rng.randrange(2))
        for j in range(rng.randrange(3)):
            t.m[f"k{j}"] = rng.randint(-2**31, 2**31 - 1)
        if rng.random() < 0.5:
            t.inner.x = rng.choice([0.0, 1.5, float("inf")])
        if rng.random() < 0.5:
            t.at.FromMicroseconds(rng.randint(0, 2**50))
        out.append(t.SerializeToString())
    return out


@pytest.mark.parametrize("seed", [4, 5])
def test_protobuf_generated_and_mutated_records_agree_with_google_protobuf(seed):
    from google.protobuf.message import DecodeError

    from streamslice.codecs.protobuf import ProtobufCodec
    cls, fds = _trip_classes()
    seeds = _trips(random.Random(seed), cls)
    values = seeds + list(mutations(seeds, 2000, seed=seed))
    codec = ProtobufCodec.from_descriptor_set(fds, "demo.Trip")
    columns, errors = Framed(codec, None).decode(list(values))  # as list[bytes | None]
    batch = pa.RecordBatch.from_arrays(columns, schema=pa.schema(codec.fields()))
    agreed = 0
    for i, data in enumerate(values):
        try:
            want = _proto_view(cls["Trip"].FromString(data))
        except DecodeError:
            assert i in errors, f"input {i} ({data.hex()}): protobuf refuses it, we kept a row"
            continue
        assert i not in errors, f"input {i} ({data.hex()}): protobuf reads it, we said " \
                                f"{errors.get(i)!r}"
        got = batch.slice(i, 1).to_pylist()[0]
        assert _same(got, want), f"input {i} ({data.hex()}): protobuf {want}, we {got}"
        agreed += 1
    assert agreed >= len(seeds) and len(errors) > 50


# JSON Schema: mutated JSON records against Python's json module and the jsonschema package.
ORDER_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "amount": {"type": "number"}, "note": {"type": "string"},
    "paid": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
    "who": {"type": "object", "properties": {"name": {"type": "string"}}},
    "extra": {"type": "object", "additionalProperties": {"type": "integer"}}}}


def _orders(rng: random.Random) -> list[bytes]:
    return [json.dumps({
        "id": rng.randint(-2**63, 2**63 - 1), "amount": rng.choice([0.5, -1e300, 3.0]),
        "note": rng.choice(["", "x", "ünï", "a\\nb"]), "paid": rng.random() < 0.5,
        "tags": ["t"] * rng.randrange(3), "who": {"name": "n"},
        "extra": {f"k{j}": j for j in range(rng.randrange(3))}},
        ensure_ascii=rng.random() < 0.5).encode() for _ in range(30)]


def _json_reference(data: bytes) -> dict | None:
    """The record as json and jsonschema read it, or None where either refuses it. The
    column types are stricter than JSON Schema's: an integer column holds 64 bits and no
    1.0 (Spark's BIGINT), so those are refused here too."""
    import jsonschema

    def refuse(token: str) -> None:
        raise ValueError(token)
    try:
        record = json.loads(data, parse_constant=refuse)
        jsonschema.validate(record, ORDER_SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return None
    ints = [record.get("id"), *(record.get("extra") or {}).values()]
    if not isinstance(record, dict) or any(
            isinstance(v, float) or (isinstance(v, int) and not -2**63 <= v < 2**63)
            for v in ints if v is not None and not isinstance(v, bool)):
        return None
    return record


def test_json_schema_mutated_records_agree_with_json_and_jsonschema():
    from streamslice.formats import FormatSpec
    from streamslice.formats.json_schema import JsonSchema
    seeds = _orders(random.Random(6))
    values = seeds + list(mutations(seeds, 3000, seed=6))
    spec = FormatSpec("json_schema", "", {"reader": {
        "schema_type": "JSON", "name": "orders", "text": json.dumps(ORDER_SCHEMA)}})
    codec = JsonSchema.make_codec(spec)
    columns, errors = Framed(codec, None).decode(list(values))  # as list[bytes | None]
    rows = pa.RecordBatch.from_arrays(columns, schema=pa.schema(codec.fields())).to_pylist()
    agreed = 0
    for i, data in enumerate(values):
        want = _json_reference(data)
        if want is None:
            assert i in errors, f"input {data!r}: the reference refuses it, we kept a row"
            continue
        assert i not in errors, f"input {data!r}: json reads it, we said {errors[i]!r}"
        expected = {name: want.get(name) for name in ORDER_SCHEMA["properties"]}
        expected["tags"] = want.get("tags")
        if want.get("extra") is not None:
            expected["extra"] = list(want["extra"].items())
        if want.get("who") is not None:
            expected["who"] = {"name": want["who"].get("name")}
        if isinstance(expected["amount"], int) and not isinstance(expected["amount"], bool):
            expected["amount"] = float(expected["amount"])
        assert _same(rows[i], expected), f"input {data!r}: json {expected}, we {rows[i]}"
        agreed += 1
    assert agreed >= len(seeds) and len(errors) > 1000
