"""Spark DDL ↔ Arrow in the core, case by case as Spark documents its types and as PySpark's
Arrow conversion maps them (``to_arrow_type``). tests/integration/test_spark_types.py checks
the same cases against Spark's own parser."""
import pyarrow as pa
import pytest

from streamslice.formats.types import (
    SchemaError,
    TypeFold,
    holds,
    parse_schema,
    parse_type,
    schema_from_mapping,
    spark_ddl,
    spark_type,
)

ELEMENT = lambda t: pa.list_(pa.field("element", t))  # noqa: E731
MAP = lambda k, v: pa.map_(pa.field("key", k, nullable=False), pa.field("value", v))  # noqa: E731

# (DDL type, Arrow type, Spark's simpleString)
CASES = [
    ("BOOLEAN", pa.bool_(), "boolean"), ("TINYINT", pa.int8(), "tinyint"),
    ("BYTE", pa.int8(), "tinyint"), ("SMALLINT", pa.int16(), "smallint"),
    ("SHORT", pa.int16(), "smallint"), ("INT", pa.int32(), "int"),
    ("INTEGER", pa.int32(), "int"), ("BIGINT", pa.int64(), "bigint"),
    ("LONG", pa.int64(), "bigint"), ("FLOAT", pa.float32(), "float"),
    ("REAL", pa.float32(), "float"), ("DOUBLE", pa.float64(), "double"),
    ("STRING", pa.string(), "string"), ("BINARY", pa.binary(), "binary"),
    ("DATE", pa.date32(), "date"),
    ("TIMESTAMP", pa.timestamp("us", tz="UTC"), "timestamp"),
    ("TIMESTAMP_LTZ", pa.timestamp("us", tz="UTC"), "timestamp"),
    ("TIMESTAMP_NTZ", pa.timestamp("us"), "timestamp_ntz"),
    ("DECIMAL", pa.decimal128(10, 0), "decimal(10,0)"),
    ("DECIMAL(5)", pa.decimal128(5, 0), "decimal(5,0)"),
    ("DECIMAL(18,2)", pa.decimal128(18, 2), "decimal(18,2)"),
    ("dec(38, 38)", pa.decimal128(38, 38), "decimal(38,38)"),
    ("NUMERIC(7,3)", pa.decimal128(7, 3), "decimal(7,3)"),
    ("ARRAY<STRING>", ELEMENT(pa.string()), "array<string>"),
    ("array<array<int>>", ELEMENT(ELEMENT(pa.int32())), "array<array<int>>"),
    ("MAP<STRING, BIGINT>", MAP(pa.string(), pa.int64()), "map<string,bigint>"),
    ("map<int,array<date>>", MAP(pa.int32(), ELEMENT(pa.date32())), "map<int,array<date>>"),
    ("STRUCT<name: STRING, tags: ARRAY<STRING>>",
     pa.struct([("name", pa.string()), ("tags", ELEMENT(pa.string()))]),
     "struct<name:string,tags:array<string>>"),
    ("struct<a int, `b_c`: double comment 'x'>",
     pa.struct([("a", pa.int32()), ("b_c", pa.float64())]),
     "struct<a:int,b_c:double>"),
]


@pytest.mark.parametrize("ddl,arrow,simple", CASES, ids=[c[0] for c in CASES])
def test_each_type_maps_as_spark_maps_it(ddl, arrow, simple):
    assert parse_type(ddl).equals(arrow, check_metadata=False)
    assert spark_type(arrow) == simple
    assert parse_type(simple).equals(arrow)  # Spark's own names read back


def test_the_issue_schema_and_its_ddl_round_trip():
    schema = parse_schema("id BIGINT NOT NULL, user STRUCT<name: STRING, tags: ARRAY<STRING>>,"
                          " amount DECIMAL(18,2) COMMENT 'in EUR', day DATE,"
                          " attrs MAP<STRING,STRING>")
    assert schema.names == ["id", "user", "amount", "day", "attrs"]
    assert not schema.field("id").nullable and schema.field("user").nullable
    assert schema.field("amount").metadata == {b"SPARK::metadata::json": b'{"comment": "in EUR"}'}
    ddl = spark_ddl(schema)
    assert ddl == ("id BIGINT NOT NULL, user STRUCT<name: STRING, tags: ARRAY<STRING>>, "
                   "amount DECIMAL(18,2) COMMENT 'in EUR', day DATE, attrs MAP<STRING, STRING>")
    assert parse_schema(ddl).equals(schema, check_metadata=True)


@pytest.mark.parametrize("text", ["a: int, b: string", "a INT, b STRING",
                                  "STRUCT<a: INT, b: STRING>", "struct<a:int,b:string>",
                                  "  a   int ,\n b string  "])
def test_spark_field_forms(text):
    assert parse_schema(text).equals(pa.schema([("a", pa.int32()), ("b", pa.string())]))


def test_names_quoting_and_comments():
    schema = parse_schema("`a``b` INT COMMENT 'it\\'s', `x.y`: STRING NOT NULL "
                          "COMMENT 'q\\'s', 1st LONG")
    assert schema.names == ["a`b", "x.y", "1st"]
    assert spark_ddl(schema).startswith("`a``b` INT COMMENT")
    assert parse_schema(spark_ddl(schema)).equals(schema, check_metadata=True)


@pytest.mark.parametrize("text,message", [
    ("", "no fields"), ("a", "expected a type at the end"), ("a INT,", "expected a field"),
    ("a ARRAY<INT", "expected '>' to close ARRAY<"), ("a MAP<STRING>", "between a MAP's"),
    ("a DECIMAL(40,2)", "precision must be 1 to 38"),
    ("a DECIMAL(5,6)", "scale cannot exceed precision"),
    ("a INTERVAL DAY", "INTERVAL is not supported"), ("a VARIANT", "VARIANT is not supported"),
    ("a CHAR(3)", "CHAR is not supported (use STRING)"), ("a foo", "unknown type 'foo'"),
    ("a TIME", "TIME is not supported"), ("a VOID", "VOID is not supported"),
    ("a INT, A STRING", "declared twice"), ("a INT b INT", "expected ',' between fields"),
    ("a INT NOT", "expected NULL after NOT"), ("a INT COMMENT x", "quoted comment"),
    ("a " + "ARRAY<" * 100 + "INT" + ">" * 100, "nested more than 64 levels"),
])
def test_bad_ddl_is_one_clear_error(text, message):
    with pytest.raises(SchemaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_schema(text)


def test_the_map_form_takes_spark_types_and_nested_mappings():
    schema = schema_from_mapping({"trip_id": "string", "fare": "double", "at": "timestamp",
                                  "tags": "array<string>", "amount": "decimal(18,2)",
                                  "rider": {"name": "string", "rating": "float"}})
    assert spark_ddl(schema) == ("trip_id STRING, fare DOUBLE, at TIMESTAMP, tags ARRAY<STRING>,"
                                 " amount DECIMAL(18,2), rider STRUCT<name: STRING, rating: "
                                 "FLOAT>")
    with pytest.raises(SchemaError, match="field 'a': type 'int64' is not one of"):
        schema_from_mapping({"a": "int64"})
    with pytest.raises(SchemaError, match="field 'r.x'"):
        schema_from_mapping({"r": {"x": 3}})


def test_one_fold_reaches_every_type_inside_a_type():
    """The JSON decoders' views of a schema are folds; ``holds`` asks one question of all."""
    class Depth(TypeFold[int]):
        def struct(self, typ, fields):
            return 1 + max(fields, default=0)

        def array(self, typ, item):
            return 1 + item

        def map(self, typ, item):
            return 1 + item

        def leaf(self, typ):
            return 0

    t = parse_type("struct<a: array<map<string, struct<ts: timestamp>>>, b: int>")
    assert Depth().of(t) == 4
    assert holds(t, pa.types.is_timestamp) and not holds(t, pa.types.is_decimal)
    assert holds(parse_type("array<decimal(5,2)>"), pa.types.is_decimal)
    assert not holds(parse_type("map<string, int>"), pa.types.is_string)  # keys: not asked
