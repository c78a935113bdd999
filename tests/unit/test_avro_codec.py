"""Avro → Arrow: Spark's type mapping, Avro's resolution rules (records written with older and
newer schemas read as one reader schema), logical types, and bad records as dead letters with
their reasons. The registry here is a dict behind the ``Registry`` interface (our caching and
error handling are what is tested; the real registries are in tests/integration)."""
import io
import json
import random
from datetime import date, datetime, timezone
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId

from streamslice.codecs import AvroSchemaError
from streamslice.codecs.avro import AvroCodec, arrow_type, final_type
from streamslice.codecs.framed import Framed
from streamslice.schema_registry.base import Registered, Registry, UnknownSchema
from tests.support.fuzz import mutations

V1 = {"type": "record", "name": "Trip", "namespace": "demo", "fields": [
    {"name": "id", "type": "long"},
    {"name": "fare", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6,
                              "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "seen", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "passengers", "type": "int"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "tip", "type": ["null", "double"],
                                       "default": None}]}
TRIP = {"id": 7, "fare": Decimal("12.34"), "day": date(2024, 5, 1),
        "at": datetime(2024, 5, 1, 1, 2, 3, 456000, tzinfo=timezone.utc),
        "seen": datetime(2024, 5, 1, 1, 2, 3, 456789, tzinfo=timezone.utc),
        "uid": "6f1b7b7e-3a4d-4b8e-9b0e-1a2b3c4d5e6f", "passengers": 2}


def avro(schema, record):
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


class DictRegistry(Registry):
    """Schemas by id, counting how often each is asked for."""

    where = "the test registry"

    def __init__(self, schemas):
        super().__init__()
        self.schemas, self.asked = schemas, []

    def _fetch(self, kind, schema, fmt):
        self.asked.append(schema)
        if schema not in self.schemas:
            raise UnknownSchema(f"schema id {schema} is not in {self.where}")
        typ, text = self.schemas[schema]
        return Registered(typ, text, f"schema id {schema}", schema)

    def version(self, subject, version, fmt=None):
        raise NotImplementedError


def framed(schema_id, schema, record):
    return SchemaId("AVRO", schema_id=schema_id).id_to_bytes() + avro(schema, record)


@pytest.mark.parametrize("schema, expected", [
    ("boolean", pa.bool_()), ("int", pa.int32()), ("long", pa.int64()),
    ("float", pa.float32()), ("double", pa.float64()), ("bytes", pa.binary()),
    ("string", pa.string()),
    ({"type": "enum", "name": "E", "symbols": ["A"]}, pa.string()),
    ({"type": "fixed", "name": "F", "size": 4}, pa.binary()),
    ({"type": "array", "items": "int"}, pa.list_(pa.int32())),
    ({"type": "map", "values": "long"}, pa.map_(pa.string(), pa.int64())),
    (["null", "string"], pa.string()), (["int", "long"], pa.int64()),
    (["float", "double", "null"], pa.float64()),
    (["int", "string"], pa.struct([("member0", pa.int32()), ("member1", pa.string())])),
    ({"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 18,
      "scale": 4}, pa.decimal128(18, 4)),
    ({"type": "int", "logicalType": "date"}, pa.date32()),
    ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("us", tz="UTC")),
    ({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us")),
    ({"type": "string", "logicalType": "uuid"}, pa.string()),
    ({"type": "int", "logicalType": "time-millis"}, pa.int32()),
])
def test_types_as_spark_maps_them(schema, expected):
    assert final_type(arrow_type(schema)) == expected


@pytest.mark.parametrize("schema, reason", [
    ({"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]},
     "recursive type 'N'"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2},
     "at most 38 digits"),
])
def test_schemas_that_cannot_be_columns(schema, reason):
    with pytest.raises(AvroSchemaError, match=reason):
        AvroCodec(json.dumps(schema))


def test_old_and_new_writers_read_as_one_reader_schema():
    registry = DictRegistry({1: ("AVRO", json.dumps(V1)), 2: ("AVRO", json.dumps(V2))})
    codec = AvroCodec(json.dumps(V2))
    dec = Framed(codec, registry)
    values = [framed(1, V1, TRIP), framed(2, V2, {**TRIP, "tip": 1.5}), framed(1, V1, TRIP)]
    columns, errors = dec.decode(values)
    assert errors == {}
    rows = pa.RecordBatch.from_arrays(columns, schema=pa.schema(codec.fields())).to_pylist()
    assert [r["tip"] for r in rows] == [None, 1.5, None]
    assert rows[0] == {**TRIP, "tip": None, "at": TRIP["at"], "seen": TRIP["seen"]}
    assert codec.fields()[3].type == pa.timestamp("us", tz="UTC")
    assert registry.asked == [1, 2]  # each writer schema once


def test_a_newer_writer_read_as_the_older_reader():
    codec = AvroCodec(json.dumps(V1))
    dec = Framed(codec, DictRegistry({2: ("AVRO", json.dumps(V2))}))
    columns, errors = dec.decode([framed(2, V2, {**TRIP, "tip": 2.0})])
    assert errors == {} and [c.name for c in codec.fields()][-1] == "passengers"
    assert columns[0].to_pylist() == [7]


def test_plain_avro_with_the_pipelines_schema():
    codec = AvroCodec(json.dumps(V1))
    columns, errors = Framed(codec, None).decode([avro(V1, TRIP), None, b"\x02"])
    assert columns[0].to_pylist()[0] == 7 and sorted(errors) == [1, 2]


def test_unions_of_several_types_become_members():
    schema = {"type": "record", "name": "U", "fields": [{"name": "v", "type": [
        "null", "int", "string", {"type": "record", "name": "R", "fields": [
            {"name": "q", "type": "int"}]}]}]}
    codec = AvroCodec(json.dumps(schema))
    values = [avro(schema, {"v": v}) for v in (5, "x", {"q": 1}, None)]
    columns, errors = Framed(codec, None).decode(values)
    assert errors == {}
    assert columns[0].to_pylist() == [
        {"member0": 5, "member1": None, "member2": None},
        {"member0": None, "member1": "x", "member2": None},
        {"member0": None, "member1": None, "member2": {"q": 1}}, None]


def test_bad_records_are_dead_letters_with_reasons():
    wide = json.loads(json.dumps(V1))
    wide["fields"][1]["type"]["precision"] = 12
    recursive = {"type": "record", "name": "N", "fields": [
        {"name": "id", "type": "long"}, {"name": "next", "type": ["null", "N"]}]}
    registry = DictRegistry({1: ("AVRO", json.dumps(V1)), 3: ("AVRO", json.dumps(wide)),
                             4: ("PROTOBUF", "CgA="), 5: ("AVRO", json.dumps(recursive)),
                             6: ("AVRO", "{not json")})
    codec = AvroCodec(json.dumps(V1))
    good = framed(1, V1, TRIP)
    values = [good, good[:-4], good + b"\x00\x00", framed(9, V1, TRIP), b'{"id": 1}',
              framed(3, wide, {**TRIP, "fare": Decimal("123456.78")}), framed(4, V1, TRIP),
              framed(5, recursive, {"id": 1, "next": None}), framed(6, V1, TRIP), None, good]
    columns, errors = Framed(codec, registry).decode(values)
    assert sorted(errors) == list(range(1, 10))
    assert "truncated or corrupt record" in errors[1]
    assert "2 bytes left after the record" in errors[2]
    assert errors[3] == "schema id 9 is not in the test registry"
    assert "unknown magic byte 0x7b" in errors[4] and "JSON" in errors[4]
    assert "field 'fare'" in errors[5] and "decimal(6, 2)" in errors[5]
    assert errors[6] == "schema id 4 is a PROTOBUF schema, but the format reads AVRO"
    assert "cannot be read as the reader schema" in errors[7]
    assert "schema id 6 cannot be read" in errors[8] and "not a valid Avro schema" in errors[8]
    assert columns[0].to_pylist()[0] == columns[0].to_pylist()[10] == 7
    Framed(codec, registry).decode([framed(9, V1, TRIP)] * 3)
    assert registry.asked.count(9) == 1  # the registry keeps the miss for every decoder


def test_fuzz_every_record_is_a_row_or_a_dead_letter():
    registry = DictRegistry({1: ("AVRO", json.dumps(V1)), 2: ("AVRO", json.dumps(V2))})
    codec = AvroCodec(json.dumps(V2))
    seeds = [framed(1, V1, TRIP), framed(2, V2, {**TRIP, "tip": 3.0})]
    values: list[bytes | None] = list(mutations(seeds, 3000, seed=7))
    columns, errors = Framed(codec, registry).decode(values)
    assert all(len(c) == len(values) for c in columns)
    assert all(isinstance(r, str) and r for r in errors.values())
    good = [i for i in range(len(values)) if i not in errors]
    assert good and errors
    pa.RecordBatch.from_arrays([c.take(pa.array(good)) for c in columns],
                               schema=pa.schema(codec.fields()))


DEC = {"type": "record", "name": "D", "fields": [
    {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38,
                           "scale": 4}},
    {"name": "f", "type": {"type": "fixed", "name": "F", "size": 9, "logicalType": "decimal",
                           "precision": 20, "scale": 0}},
    {"name": "n", "type": ["null", {"type": "bytes", "logicalType": "decimal",
                                    "precision": 5, "scale": 2}]},
    {"name": "a", "type": {"type": "array", "items": {
        "type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}}},
    {"name": "m", "type": {"type": "map", "values": ["null", {
        "type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}]}}]}


def test_decimals_are_read_from_their_bytes_as_fastavro_reads_them():
    """The codec reads decimals as their bytes and builds decimal128 from them in bulk
    (codecs.stored): every value, boundaries and signs included, is what fastavro's own
    logical-type reader gives."""
    rng = random.Random(5)

    def d(digits, scale):
        edge = rng.choice([0, 1, -1, 10**digits - 1, -(10**digits - 1), 127, -128, 255, -256])
        value = rng.randrange(-10**digits + 1, 10**digits) if rng.random() < 0.7 else edge
        return Decimal(f"{value}e-{scale}")  # exact (scaleb rounds to 28 digits)
    records = [{"b": d(38, 4), "f": d(20, 0), "n": rng.choice([None, d(5, 2)]),
                "a": [d(9, 3) for _ in range(rng.randrange(3))],
                "m": {f"k{j}": rng.choice([None, d(9, 3)]) for j in range(rng.randrange(3))}}
               for _ in range(400)]
    values = [avro(DEC, r) for r in records]
    codec = AvroCodec(json.dumps(DEC))
    columns, errors = Framed(codec, None).decode(values)
    assert errors == {}
    rows = pa.RecordBatch.from_arrays(columns, schema=pa.schema(codec.fields())).to_pylist()
    parsed = fastavro.parse_schema(DEC)
    expected = [fastavro.schemaless_reader(io.BytesIO(v), parsed) for v in values]
    for row, want in zip(rows, expected):
        assert isinstance(want, dict)
        assert row == {**want, "m": list(want["m"].items())}


def test_a_decimal_beyond_its_precision_or_of_another_scale_is_a_dead_letter():
    def schema(precision, scale):
        return {"type": "record", "name": "T", "fields": [{"name": "fare", "type": {
            "type": "bytes", "logicalType": "decimal", "precision": precision,
            "scale": scale}}]}
    registry = DictRegistry({1: ("AVRO", json.dumps(schema(12, 2))),
                             2: ("AVRO", json.dumps(schema(6, 3)))})
    codec = AvroCodec(json.dumps(schema(6, 2)))
    columns, errors = Framed(codec, registry).decode([
        framed(1, schema(12, 2), {"fare": Decimal("9999.99")}),
        framed(1, schema(12, 2), {"fare": Decimal("-123456.78")}),
        framed(2, schema(6, 3), {"fare": Decimal("1.5")})])
    assert columns[0].to_pylist()[0] == Decimal("9999.99")  # a wider writer: value by value
    assert errors[1].startswith("field 'fare': -123456.78 does not fit decimal(6, 2)")
    assert errors[2] == ("field 'fare' is decimal(6, 3) in the writer schema and decimal(6, 2) "
                         "in the reader schema: Avro reads a decimal as another of the same "
                         "scale only")
