"""value: json with nested types: what lands as a row, what becomes a dead letter and with which
reason (the bad field's path), and the fast decoder (msgspec + pyarrow) agreeing with the
reference one (json.loads + a typed walk) on hostile and random records."""
import json
import random
import re
from datetime import date, datetime, timezone
from decimal import Decimal

import pyarrow as pa
import pytest

from streamslice.errors import ConfigError
from streamslice.formats import FormatSpec
from streamslice.formats.json import Json
from tests.support.checks import present

DDL = ("id BIGINT NOT NULL, user STRUCT<name: STRING, tags: ARRAY<STRING>>, "
       "amount DECIMAL(18,2), day DATE, attrs MAP<STRING, STRING>, at TIMESTAMP, "
       "local TIMESTAMP_NTZ, small SMALLINT, tiny TINYINT, ratio FLOAT, ok BOOLEAN")
GOOD = [
    {"id": 1, "user": {"name": "ann", "tags": ["a", "b", None]}, "amount": 12.34,
     "day": "2024-05-01", "attrs": {"k": "v", "n": None}, "at": "2024-05-01T10:00:00.123456Z",
     "local": "2024-05-01T10:00:00", "small": -32768, "tiny": 127, "ratio": 0.5, "ok": True},
    {"id": 2, "user": {"tags": []}, "amount": -0.5, "attrs": {},
     "at": "2024-05-01T12:00:00+02:00"},
    {"id": 3, "user": None, "extra": {"ignored": [1, 2]}},
]
BAD = {  # value → its reason
    b'{"id": 4, "user": {"tags": ["a", "b", "c", 7]}}':
        "field 'user.tags[3]': expected string, got 7",
    b'{"id": 5, "amount": 123.456}':
        "field 'amount': 123.456 does not fit decimal(18,2) (more than 2 decimal places)",
    b'{"id": 6, "tiny": 128}': "field 'tiny': expected byte, got 128",
    b'{"user": {}}': "field 'id': is NOT NULL, got nothing",
    b'{"id": 7, "attrs": {"k": 1}}': "field 'attrs[\"k\"]': expected string, got 1",
}


def decode(values, ddl=DDL):
    arrays, errors = Json(FormatSpec("json", ddl)).decode(values)
    names = [f.name for f in Json(FormatSpec("json", ddl)).fields("value")]
    rows = pa.Table.from_arrays(arrays, names=names).to_pylist()
    return [None if i in errors else r for i, r in enumerate(rows)], errors


def test_nested_values_become_nested_columns():
    rows, errors = decode([json.dumps(v).encode() for v in GOOD])
    assert errors == {}
    first = rows[0]
    assert first["user"] == {"name": "ann", "tags": ["a", "b", None]}
    assert first["amount"] == Decimal("12.34") and first["day"] == date(2024, 5, 1)
    assert first["attrs"] == [("k", "v"), ("n", None)]
    assert first["at"] == datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert first["local"] == datetime(2024, 5, 1, 10) and first["local"].tzinfo is None
    assert (first["small"], first["tiny"], first["ratio"], first["ok"]) == (-32768, 127, .5, True)
    assert rows[1]["at"] == datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    assert rows[1]["user"] == {"name": None, "tags": []} and rows[2]["user"] is None


def test_a_value_that_does_not_fit_names_its_path():
    rows, errors = decode([*BAD, json.dumps(GOOD[0]).encode()])
    assert errors == dict(enumerate(BAD.values()))
    assert rows[-1]["id"] == 1  # the good record beside them is kept


@pytest.mark.parametrize("value,reason", [
    (b'{"id": 1, "user": {"name": "a", "tags": ["x"', "invalid JSON: Expecting"),  # truncated
    (b'{"id": 1, "user": {"name": ["deep"]}}',
     "field 'user.name': expected string, got [\"deep\"]"),
    (b'{"id": 1, "user": "flat"}', "field 'user': expected struct (a JSON object), got \"flat\""),
    (b'{"id": 1, "user": {"tags": {"0": "a"}}}', "field 'user.tags': expected array<string>"),
    (b'{"id": 1, "amount": 1e17}', "more than 16 digits before the decimal point"),
    (b'{"id": 1, "amount": "12.3.4"}', "field 'amount': expected decimal(18,2), got \"12.3.4\""),
    (b'{"id": 1, "amount": "NaN"}', "field 'amount': expected decimal(18,2)"),
    (b'{"id": 1, "amount": 1e999999999}', "1E+999999999 does not fit decimal(18,2)"),
    (b'{"id": 99999999999999999999999}', "field 'id': expected long, got 9999999"),
    (b'{"id": 1, "small": 1e400}', "field 'small': expected short"),
    (b'{"id": 1, "ratio": 1e39}', "field 'ratio': expected float, got 1E+39"),
    (b'{"id": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "invalid JSON: nested too deeply"),
    (b'{"id": 1, "user": {"name": "\\ud800"}}', "field 'user.name': expected string"),
    (b'{"id": 1, "user": {"name": "caf\xe9"}}', "invalid JSON: not UTF-8 at byte 31"),
    (b'{"id": 1, "day": "2024-02-30"}', "field 'day': expected date (YYYY-MM-DD)"),
    (b'{"id": 1, "at": "yesterday"}',
     "field 'at': expected timestamp (ISO 8601 or epoch seconds)"),
    (b'{"id": 1, "at": 1e20}', "field 'at': expected timestamp"),
    (b'{"id": 1, "local": "2024-05-01T00:00:00+01:00"}', "expected timestamp_ntz"),
    (b'{"id": 1, "local": 0}', "expected timestamp_ntz"),
    (b'{"id": 1, "ok": 1}', "field 'ok': expected boolean, got 1"),
    (b'{"id": 1, "tiny": 1.0}', "field 'tiny': expected byte, got 1.0"),
    (b'{"id": null}', "field 'id': is NOT NULL, got null"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (None, "value is null, expected a JSON object"),
    (b"", "invalid JSON: Expecting value"),
])
def test_bad_input_is_a_dead_letter_with_its_reason(value, reason):
    rows, errors = decode([value, b'{"id": 42}'])
    assert reason in errors[0] and errors[0].startswith(("field", "invalid", "expected", "value"))
    assert list(errors) == [0] and rows[1]["id"] == 42


def test_nan_infinity_epoch_seconds_and_offsets_are_read_as_documented():
    """A number into TIMESTAMP is epoch seconds, as Spark's from_json reads it (a fraction
    is refused: from_json gives null)."""
    rows, errors = decode([b'{"id": 1, "ratio": NaN, "at": 1714521600}',
                           b'{"id": 2, "ratio": -Infinity, "at": "2024-05-01T00:00:00"}',
                           b'{"id": 3, "amount": "-12.5", "at": 0}',
                           b'{"id": 4, "amount": 1234567890123456, "id": 5}',
                           b'{"id": 6, "at": "2024-05-01T00:00:00.1234567Z"}',
                           b'{"id": 7, "at": "0001-01-01T00:30:00+01:00"}',
                           b'{"id": 8, "at": 1714521600.5}', b'{"id": 9, "at": -1}'])
    assert errors == {5: "field 'at': expected timestamp (ISO 8601 or epoch seconds), got "
                         '"0001-01-01T00:30:00+01:00"',
                      6: "field 'at': expected timestamp (ISO 8601 or epoch seconds), got "
                         "1714521600.5"}
    assert rows[4]["at"] == datetime(2024, 5, 1, 0, 0, 0, 123457, tzinfo=timezone.utc)
    assert rows[0]["ratio"] != rows[0]["ratio"] and rows[1]["ratio"] == float("-inf")
    assert rows[0]["at"] == datetime(2024, 5, 1, tzinfo=timezone.utc)
    assert rows[1]["at"] == datetime(2024, 5, 1, tzinfo=timezone.utc)  # no offset: UTC
    assert rows[2]["amount"] == Decimal("-12.50") and rows[2]["at"].year == 1970
    assert rows[3]["id"] == 5 and rows[3]["amount"] == Decimal("1234567890123456.00")
    assert rows[7]["at"] == datetime(1969, 12, 31, 23, 59, 59, tzinfo=timezone.utc)


def test_epoch_millis_by_setting():
    spec = Json.from_options({"schema": "at TIMESTAMP", "epochunit": "millis"}, "value")
    assert spec.options == {"epoch_unit": "millis"}
    (at,), errors = Json(spec).decode([b'{"at": 1714521600000.5}', b'{"at": "2024-05-01"}'])
    assert errors == {} and at.to_pylist() == [
        datetime(2024, 5, 1, 0, 0, 0, 500, tzinfo=timezone.utc),
        datetime(2024, 5, 1, tzinfo=timezone.utc)]
    assert Json.from_options({"schema": "at TIMESTAMP"}, "value").options == {}
    from streamslice.spark.plan_options import check_names
    check_names({"epochunit": "millis", "keyepochunit": "millis"}, "kafka", (), "kafka.")
    with pytest.raises(ConfigError, match="option epochUnit: 'ms' is not one of: seconds, "
                                          "millis"):
        Json.from_options({"schema": "at TIMESTAMP", "epochunit": "ms"}, "value")


@pytest.mark.parametrize("text, day", [
    ("2024-05-01", date(2024, 5, 1)), ("2024-5-1", date(2024, 5, 1)),
    ("2024-05-1", date(2024, 5, 1)), ("2024-5-01T10:00", date(2024, 5, 1)),
    ("2024", date(2024, 1, 1)), ("2024-05", date(2024, 5, 1)),
    (" 2024-05-01", date(2024, 5, 1)), ("2024-05-01 junk", date(2024, 5, 1)),
    ("123", date(1970, 5, 4)),  # Spark 1.5's days since 1970, which from_json still reads
    ("19000", None),  # year 19000 for Spark: past year 9999, which no DATE here holds
    ("2024-13-01", None), ("2024-05-01x", None), ("24-05-01", None), ("", None),
    ("2024 05", None), ("20240501", None),  # day 20240501 after 1970: past year 9999
])
def test_dates_as_sparks_from_json_reads_them(text, day):
    (col,), errors = Json(FormatSpec("json", "day DATE")).decode(
        [json.dumps({"day": text}).encode()])
    assert (col.to_pylist()[0] if not errors else None) == day
    assert bool(errors) == (day is None)


def test_quoted_nan_and_infinity_as_sparks_from_json_reads_them():
    """from_json reads "NaN", "Infinity", "+Infinity", "-Infinity", "+INF", "-INF" into a
    double or float (not "INF", "nan" nor "1.5")."""
    values = ["NaN", "Infinity", "+Infinity", "-Infinity", "+INF", "-INF", "INF", "nan", "1.5"]
    for ddl in ("x DOUBLE", "x FLOAT"):
        (col,), errors = Json(FormatSpec("json", ddl)).decode(
            [json.dumps({"x": v}).encode() for v in values])
        got = col.to_pylist()
        assert got[0] != got[0] and got[1:6] == [float("inf")] * 2 + [float("-inf")] + \
            [float("inf"), float("-inf")]
        assert sorted(errors) == [6, 7, 8]


def test_a_schema_json_cannot_hold_is_refused():
    from streamslice.formats.json import declared_schema
    from streamslice.formats.types import SchemaError
    with pytest.raises(SchemaError, match="a map's keys must be STRING"):
        declared_schema("m MAP<INT, STRING>")
    assert declared_schema({"m": "map<string, array<int>>"}).names == ["m"]


# -- the fast decoder against the reference ------------------------------------------------------
def _random_value(rng, depth=0):
    pick = rng.random()
    if depth > 3 or pick < 0.5:
        return rng.choice([
            None, True, 0, -1, 127, 128, -129, 32767, 32768, 2**31, 2**63 - 1, 2**63, 10**30,
            0.5, -0.0, 1.0, 1e38, 3.5e38, 1e308, "NaN-token", "x", "", "\\ud800", "é", "12.345",
            "12.34", "99999999999999999.99", "2024-05-01", "2024-5-1", "2024-05-01T10:00:00Z",
            "2024-05-01T10:00:00.1234567+05:30", "2024-05-01 10:00:00", "0001-01-01T00:00:00+01:00",
            1714521600000, 1714521600000.25, -62135596800001, "20240501", "2024-W01-1",
        ])
    if pick < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["name", "tags", "k", "id", "amount", "x"]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _dump(value):
    text = json.dumps(value, ensure_ascii=False)
    return text.replace('"NaN-token"', "NaN").replace("\\\\ud800", "\\ud800")


VALID = {  # field → values of its type, edge cases included
    "id": [1, 2**40, -5, 2**63 - 1, -2**63],
    "user": [{"name": "a", "tags": ["x", None]}, {"tags": []}, {"name": "\u00e9"}, None],
    "amount": [12.34, "0.01", -0.5, 0, "9999999999999999.99", 1e3, "1E+2", "12.345", "1e-2",
               ".5", "5.", "+1", " 1", "1_0", "-0.00", "NaN", "10000000000000000.00", "0e-9"],
    "day": ["2024-05-01", "0001-01-01", "9999-12-31", "20240501"],
    "attrs": [{"a": "b"}, {}, {"n": None}],
    "at": ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00.123456+05:30", 0, 1714521600000,
           1714521600000.25, "2024-05-01", "2024-05-01 10:00", "2024-05-01t10:00:00z",
           "2024-05-01T10:00:00.9999995Z", "2024-05-01T23:59:60Z", "9999-12-31T23:59:59-01:00",
           "0001-01-01T00:30:00+00:30", " 2024-05-01T10:00:00Z", -1.5, 1e15,
           "2024-05-01T10Z", "2024-05-01T10:00:00+0200", "2024-05-01 10:00:00Z",
           "2024-05-01T10:00:00-00:00", "2024-05-01T10:00:00+02", "2024-05-01T10:00:00,5Z",
           "20240501T100000Z", "2024-05-01T10:00:00.Z", "0000-01-01T00:00:00Z",
           "1970-01-01T00:00:00+23:59", "2024-02-30T00:00:00Z", "2024-05-01T24:00:00Z"],
    "local": ["2024-05-01T10:00:00", "2024-05-01T10:00:00.5", "2024-05-01T10:00:00.1234567",
              "2024-05-01T10:00:00+00:00", "2024-05-01", "2024-05-01T10", "2024-05-01 10:00",
              "2024-05-01T10:00:00Z", "0000-01-01T00:00:00", "9999-12-31T23:59:59.999999"],
    "small": [-32768, 32767, 0], "tiny": [-128, 127], "ratio": [0.5, 1, 3.4e38, -1e-45],
    "ok": [True, False],
}


def _random_record(rng):
    obj = {}
    for name in rng.sample(list(VALID), rng.randrange(len(VALID) + 1)):
        obj[name] = rng.choice(VALID[name]) if rng.random() < 0.85 else _random_value(rng)
    if rng.random() < 0.9:
        obj["id"] = rng.choice(VALID["id"])
    text = _dump(obj).encode()
    if rng.random() < 0.03:
        text = text[:rng.randrange(len(text) + 1)]  # truncated
    if rng.random() < 0.05:  # a byte flipped: broken syntax, UTF-8, digits, escapes
        at = rng.randrange(len(text))
        text = text[:at] + bytes([rng.randrange(256)]) + text[at + 1:]
    return text


def test_the_fast_decoder_agrees_with_the_reference_on_random_records():
    rng = random.Random(19)
    fmt = Json(FormatSpec("json", DDL))
    records = [_random_record(rng) for _ in range(3000)]
    for start in range(0, len(records), 50):
        batch = records[start:start + 50]
        arrays, errors = fmt.decode(batch)
        ref_errors: dict[int, str] = {}
        ref_rows = [fmt._reference(i, raw, ref_errors) for i, raw in enumerate(batch)]
        assert errors == ref_errors
        ours = pa.StructArray.from_arrays(arrays, fields=list(fmt.schema)).to_pylist()
        theirs = pa.array(ref_rows, fmt.struct).to_pylist()
        for row in range(len(batch)):
            if row not in errors:
                assert repr(ours[row]) == repr(theirs[row]), batch[row]
    _, errors = fmt.decode(records)
    assert 0.3 < len(errors) / len(records) < 0.8  # the cases hold both rows and dead letters


def test_the_columnar_path_agrees_with_the_reference_on_random_records():
    """One record a batch, so the columnar path (formats.json_columns) is tried on each: what
    it lands must be what the reference lands, value for value."""
    rng = random.Random(7)
    fmt = Json(FormatSpec("json", DDL))
    records = [_random_record(rng) for _ in range(3000)]
    records += [json.dumps(GOOD[0]).encode(), b'{"id": 1, "amount": 7, "at": "2024-05-01T10:00'
                b':00.5-01:30", "user": {"tags": null}, "attrs": null}']
    for raw in records:
        fmt._columnar._skip = fmt._columnar._numbers_first = 0
        arrays, errors = fmt.decode([raw])
        ref_errors: dict[int, str] = {}
        ref = fmt._reference(0, raw, ref_errors)
        assert errors == ref_errors, raw
        if not errors:
            ours = pa.StructArray.from_arrays(arrays, fields=list(fmt.schema)).to_pylist()
            assert repr(ours) == repr(pa.array([ref], fmt.struct).to_pylist()), raw
    # the path was taken, not just the row decoder, with decimals as text and as numbers
    assert [v.batches > 50 for v in fmt._columnar.variants] == [True, True]


def test_the_columnar_path_takes_whole_batches_and_leaves_mixed_ones():
    fmt = Json(FormatSpec("json", DDL))
    good = [json.dumps(v).encode() for v in GOOD]
    arrays, errors = fmt.decode(good * 100)
    assert errors == {} and fmt._columnar.batches == 1
    assert pa.StructArray.from_arrays(arrays, fields=list(fmt.schema)).to_pylist()[:3] == \
        decode(good)[0]
    _, errors = fmt.decode([*good, b'{"id": "x"}'])  # one bad record: the row decoder
    assert list(errors) == [3] and fmt._columnar.batches == 1
    fmt.decode(good)  # and the columnar path waits a few batches before trying again
    assert fmt._columnar.batches == 1


def test_the_docs_format_examples_validate():
    """The format: blocks the formats page shows parse, and their DDL is what it says it is."""
    import re
    from pathlib import Path

    from streamslice.config import parse_pipeline
    text = Path(__file__).resolve().parents[2].joinpath("docs", "formats.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S)
              if re.search(r"format:\n +value: json", b)]
    assert len(blocks) >= 2
    for block in blocks:
        # to the next key
        fmt = present(re.search(r"^format:\n(?:[ #].*\n)+", block, re.M)).group(0)
        cfg = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
                             + fmt, default_name="p")
        assert cfg.decode.value.name == "json" and "STRUCT<" in cfg.decode.value.schema


def test_a_field_named_like_a_source_column_is_refused_when_planned():
    from streamslice.errors import ConfigError
    from streamslice.kafka.split import KafkaSplit
    from streamslice.planning.plan import ReadPlan
    from streamslice.planning.planner import check_columns

    def plan(ddl, source="kafka", **decode):
        split = KafkaSplit(0, "t", 0, 0, 3) if source == "kafka" else \
            KinesisSplit(0, "s", "shardId-1", {"type": "TRIM_HORIZON"}, 5)
        return ReadPlan(pipeline="p", source=source, mode="incremental", planned_at=0,
                        splits=[split], partition="batch=00000001",
                        decode={"value": {"name": "json", "schema": ddl}, "key": "raw",
                                **decode})
    from streamslice.kinesis.split import KinesisSplit
    check_columns(plan("id BIGINT, ts TIMESTAMP"))
    with pytest.raises(ConfigError, match="the record's field 'Offset' has the name of a column "
                                          "the kafka source adds .topic, partition, offset.*"
                                          r"set format.flatten: false to keep them in one "
                                          r"struct column \(value.Offset, as Spark's from_json"):
        check_columns(plan("id BIGINT, Offset BIGINT"))
    with pytest.raises(ConfigError, match=r"the kinesis source adds .*\(data.shardId"):
        check_columns(plan("shardId STRING", "kinesis"))
    check_columns(plan("id BIGINT, Offset BIGINT", flatten=False))  # one column: value
    check_columns(plan("shardId STRING", "kinesis", flatten=False))


def test_flatten_false_keeps_a_record_in_one_struct_column():
    """As Spark's from_json(value) gives it: the columns are the source's, ``value`` a struct;
    dead letters, nulls and a raw key are as when flattened."""
    from streamslice.config import parse_pipeline
    from streamslice.kafka.fetch import RawBatch
    from streamslice.kafka.reader import KafkaSplitReader
    from streamslice.kafka.split import KafkaSplit
    from streamslice.reading.decode import Decoder
    cfg = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
                         "format: {value: json, schema: 'offset BIGINT, user STRUCT<name: "
                         "STRING>', flatten: false}\n", default_name="p")
    assert cfg.decode.flatten is False and cfg.decode.to_dict()["flatten"] is False
    decoder = Decoder.from_dict(cfg.decode.prepared().to_dict())
    reader = KafkaSplitReader(KafkaSplit(0, "t", 0, 0, 9), properties={}, decoder=decoder)
    struct = pa.struct([("offset", pa.int64()), ("user", pa.struct([("name", pa.string())]))])
    assert reader.schema.names[:3] == ["key", "value", "topic"]
    assert reader.schema.field("value").type == struct
    values: list[bytes | None] = [b'{"offset": 7, "user": {"name": "a"}}', b'{"offset": "x"}',
                                  b'{"user": null}']
    batch = reader.to_arrow(RawBatch([4, 5, 6], [0] * 3, [0] * 3, [b"k", None, None], values,
                                     [None] * 3))
    assert batch.column("offset").to_pylist() == [4, 6]  # Kafka's offsets
    assert batch.column("value").to_pylist() == [{"offset": 7, "user": {"name": "a"}},
                                                  {"offset": None, "user": None}]
    assert batch.column("key").to_pylist() == [b"k", None]
    assert reader.stats.summary.dead_letters == 1
    with pytest.raises(Exception, match="format.flatten: must be true or false"):
        parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
                       "format: {value: json, schema: 'a INT', flatten: 'no'}\n",
                       default_name="p")


def test_flatten_spark_option_and_older_plans():
    from streamslice.errors import ConfigError
    from streamslice.planning.plan import PLAN_VERSION
    from streamslice.sources import read_plan
    from streamslice.spark.plan_options import decoding_from_options
    from tests.unit.test_plan_version import saved
    assert decoding_from_options({"schema": "a INT", "flatten": "False"}).flatten is False
    assert decoding_from_options({"schema": "a INT"}).flatten is True
    with pytest.raises(ConfigError, match="option flatten: 'maybe' is not one of: true, false"):
        decoding_from_options({"schema": "a INT", "flatten": "maybe"})
    old = saved(version=2, decode={"value": {"name": "json", "schema": "a INT"}, "key": "raw"})
    plan = read_plan(old)  # a plan of version 2 (before flatten) still flattens
    assert plan.version == PLAN_VERSION and "flatten" not in plan.decode
    from streamslice.reading.decode import Decoder
    assert [f.name for f in Decoder.from_dict(plan.decode).value_fields()] == ["a"]


@pytest.mark.parametrize("schema", [
    "id BIGINT, user STRUCT<name: STRING, tags: ARRAY<STRING>>",
    "struct<id:bigint,user:struct<name:string,tags:array<string>>>",
    '{"id": "long", "user": {"name": "string", "tags": "array<string>"}}'])
def test_spark_users_give_the_schema_as_ddl_or_json(schema):
    """format("streamslice-kafka") and streamslice-kinesis share these options."""
    from streamslice.spark.plan_options import decoding_from_options
    decode = decoding_from_options({"schema": schema})
    assert decode.value.name == "json" and decode.on_error == "fail"  # Spark's default: fail
    assert decode.value.schema == "id BIGINT, user STRUCT<name: STRING, tags: ARRAY<STRING>>"


@pytest.mark.parametrize("opts,message", [
    ({"valueformat": "json"}, "option valueFormat json needs option schema"),
    ({"valueformat": "raw", "schema": "a INT"}, "option schema is not used with valueFormat raw"),
    ({"schema": "a INTEGR"}, "option schema: unknown type 'INTEGR'"),
    ({"schema": '{"a": 1}'}, "option schema: field 'a': type 1 is not one of"),
    ({"schema": '{"a": '}, "option schema is not a JSON object"),
    ({"schema": "m MAP<INT, STRING>"}, "a map's keys must be STRING"),
])
def test_bad_spark_schema_options_are_one_line(opts, message):
    from streamslice.errors import ConfigError
    from streamslice.spark.plan_options import decoding_from_options
    with pytest.raises(ConfigError, match=re.escape(message)):
        decoding_from_options(opts)
