"""A field the reader schema adds takes its default for records written without it. The Avro
spec: "Default values for bytes and fixed fields are JSON strings, where Unicode code points
0-255 are mapped to unsigned 8-bit byte values 0-255" (decimals on bytes and fixed too). Each
case is read from an older writer's record by our codec and compared with the spec's bytes
(written out here) and with fastavro's own reading of the same value in Avro's JSON encoding,
which writes bytes the same way (``fastavro.json_reader``). fastavro's binary reader returns
such a default as the JSON string itself, so it is no oracle for them."""
import io
import json
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from streamslice.codecs.avro import AvroCodec
from streamslice.codecs.framed import Framed
from streamslice.config.pipeline import parse_pipeline
from streamslice.errors import ConfigError
from tests.unit.test_avro_codec import DictRegistry, framed

WRITER = {"type": "record", "name": "R", "namespace": "t", "fields": [
    {"name": "id", "type": "long"}]}
ALL_BYTES = "".join(map(chr, range(256)))


def dec(precision, scale, base="bytes", **kw):
    return {"type": base, "logicalType": "decimal", "precision": precision, "scale": scale,
            **kw}


# (field type, default, the value as the spec defines it)
CASES = [
    ("bytes", "\u00ff\u0001", b"\xff\x01"),
    ("bytes", "", b""),
    ("bytes", "abc", b"abc"),
    ("bytes", ALL_BYTES, bytes(range(256))),
    ({"type": "fixed", "name": "Code", "size": 3}, "\u0009\u0020\u00ff", b"\t \xff"),
    (dec(5, 2), "\u00ff", Decimal("-0.01")),
    (dec(10, 2), "\u0000\u00ff", Decimal("2.55")),
    (dec(9, 3, "fixed", name="D4", size=4), "\u00ff\u00ff\u00fe\u000c", Decimal("-0.500")),
    (dec(38, 0), "\u0080" + "\u0000" * 15, Decimal(-2**127)),
    ({"type": "array", "items": "bytes"}, ["\u0080", ""], [b"\x80", b""]),
    ({"type": "map", "values": {"type": "fixed", "name": "Two", "size": 2}},
     {"k": "\u00e9\u00e8"}, [("k", b"\xe9\xe8")]),
    ({"type": "record", "name": "Inner", "fields": [
        {"name": "x", "type": "bytes"}, {"name": "y", "type": "bytes", "default": "\u0081"},
        {"name": "z", "type": dec(4, 1)}]},
     {"x": "\u00ff", "z": "\u00ff\u0000"}, {"x": b"\xff", "y": b"\x81", "z": Decimal("-25.6")}),
    (["bytes", "null"], "\u00e9", b"\xe9"),
    (["null", "bytes"], None, None),
    # unions of two kinds are struct<member0, member1> (as Spark's from_avro has them); the
    # default is for the first branch that holds it (Avro 1.12): a string for string
    (["string", "bytes"], "\u00e9", {"member0": "é", "member1": None}),
    (["int", "bytes"], "\u00ff", {"member0": None, "member1": b"\xff"}),
]
# fastavro's JSON reader makes decimals in Python's default context (28 digits): the 38-digit
# case is compared with the spec only; and it has no member structs
FASTAVRO = [c for c in CASES if not isinstance(c[2], dict) or "member0" not in c[2]
            if not (isinstance(c[2], Decimal) and len(c[2].as_tuple().digits) > 28)]


def reader_schema(typ, default):
    return {**WRITER, "fields": [*WRITER["fields"],
                                 {"name": "x", "type": typ, "default": default}]}


def read_old_record(reader):
    """The record ``{"id": 1}`` written with the writer schema, read as ``reader``."""
    codec = AvroCodec(json.dumps(reader))
    columns, errors = Framed(codec, DictRegistry({1: ("AVRO", json.dumps(WRITER))})).decode(
        [framed(1, WRITER, {"id": 1})])
    assert errors == {}
    row = pa.RecordBatch.from_arrays(columns, schema=pa.schema(codec.fields())).to_pylist()[0]
    return row["x"]


def json_encoded(typ, value):
    """``value`` (a default: a union's is its first branch's) in Avro's JSON encoding."""
    if isinstance(typ, list) and value is not None:
        return {typ[0]: value}
    return value


@pytest.mark.parametrize("typ, default, expected", CASES,
                         ids=[f"{i}-{json.dumps(c[0])[:30]}" for i, c in enumerate(CASES)])
def test_a_bytes_default_is_its_code_points_as_the_spec_says(typ, default, expected):
    assert read_old_record(reader_schema(typ, default)) == expected


@pytest.mark.parametrize("typ, default, expected", FASTAVRO)
def test_the_same_as_fastavro_reads_the_value_in_avros_json_encoding(typ, default, expected):
    schema = reader_schema(typ, default)
    text = json.dumps({"id": 1, "x": json_encoded(typ, default)})
    (fastavros,) = fastavro.json_reader(io.StringIO(text), schema)
    ours = read_old_record(schema)
    if isinstance(typ, dict) and typ["type"] == "map":  # Arrow's map: (key, value) pairs
        ours = dict(ours)
    assert isinstance(fastavros, dict) and ours == fastavros["x"]


def test_a_default_that_is_not_bytes_fails_the_plan_naming_the_field():
    def pipeline(typ, default):
        schema = json.dumps(reader_schema(typ, default))
        return parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', "
                              f"topics: [t]}}\nformat:\n  value: avro\n  schema: '{schema}'\n",
                              file="p.yaml")
    with pytest.raises(ConfigError, match=r"p.yaml:\d+: format.schema: .*field 'x': default "
                       r"'é€' is not Avro bytes: code point U\+20AC is above 255"):
        pipeline("bytes", "é€")
    with pytest.raises(ConfigError, match=r"field 'x.y': default 'a' is 1 bytes, but its fixed "
                                          "type holds 2"):
        pipeline({"type": "record", "name": "I", "fields": [
            {"name": "y", "type": {"type": "fixed", "name": "F", "size": 2}}]}, {"y": "a"})
