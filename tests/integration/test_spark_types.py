"""Our Spark type system against Spark's own: every DDL case of tests/unit/test_spark_types.py
parsed by Spark (``_parse_datatype_string``, ``StructType.fromDDL``) and converted by PySpark's
Arrow conversion must give our Arrow types, names and DDL; and nested JSON read through
``format("streamslice-kafka")`` with a DDL schema gives the rows Spark's ``from_json`` gives."""
import json

import pytest

from devtools.services import create_topic
from streamslice.formats.types import parse_schema, parse_type, spark_ddl, spark_type
from tests.support.kafka import producer
from tests.support.pipelines import unique
from tests.unit.test_json_format import BAD, DDL, GOOD
from tests.unit.test_spark_types import CASES

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("ddl", [c[0] for c in CASES])
def test_each_type_is_sparks(spark, ddl):
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_type
    from pyspark.sql.types import StructType, _parse_datatype_string
    theirs = _parse_datatype_string(ddl)
    ours = parse_type(ddl)
    assert to_arrow_type(theirs, timezone="UTC").equals(ours)
    assert spark_type(ours) == theirs.simpleString()
    schema = parse_schema(f"x {ddl} NOT NULL COMMENT 'c', y INT")
    expected = StructType.fromDDL(f"x {ddl} NOT NULL COMMENT 'c', y INT")
    assert from_arrow_schema(schema) == expected
    assert StructType.fromDDL(spark_ddl(schema)) == expected  # Spark reads our DDL
    assert isinstance(expected, StructType)
    assert parse_schema(expected.toDDL()).equals(schema, check_metadata=True)  # we read theirs


def test_nested_json_reads_as_sparks_from_json(spark, broker):
    from pyspark.sql.functions import col, from_json
    topic = unique("nested")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        values = [json.dumps(v).encode() for v in GOOD] + list(BAD)
        for value in values:
            p.produce(topic, value=value, partition=0)
    df = (spark.read.format("streamslice-kafka")
          .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
          .option("valueFormat", "json").option("schema", DDL)
          .option("mode", "DROPMALFORMED").load())
    names = [f.name for f in parse_schema(DDL)]
    assert df.select(*names).schema == spark.createDataFrame([], DDL).schema
    ours = [r.asDict(recursive=True) for r in df.orderBy("offset").select(*names).collect()]
    strings = spark.createDataFrame([(json.dumps(v),) for v in GOOD], "value STRING")
    theirs = [r.asDict(recursive=True)["v"] for r in
              strings.select(from_json(col("value"), DDL).alias("v")).collect()]
    assert ours == theirs
    assert len(ours) == len(GOOD)  # the bad ones are dropped (their reasons: unit tests)


def test_flatten_false_keeps_the_value_in_one_column_as_from_json_does(spark, broker):
    """A JSON value with fields named like the source's columns (``offset``, ``partition``):
    flattened they would clash, so the read is refused; ``flatten false`` keeps the value in
    one struct column ``value``, as Spark's ``from_json(value)`` gives it."""
    from pyspark.sql.functions import col, from_json
    topic = unique("unflat")
    create_topic(broker.bootstrap, topic, 1)
    values = [{"offset": 100 + i, "partition": f"p{i}", "user": {"name": f"u{i}"}}
              for i in range(3)]
    with producer(broker.bootstrap) as p:
        for value in values:
            p.produce(topic, value=json.dumps(value).encode(), partition=0)
    ddl = "offset BIGINT, partition STRING, user STRUCT<name: STRING>"
    reader = (spark.read.format("streamslice-kafka")
              .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
              .option("valueFormat", "json").option("schema", ddl))
    with pytest.raises(Exception, match="the record's field 'partition' has the name of a "
                                        r"column the kafka source adds \(topic, partition, "
                                        r"offset, .*format.flatten: false"):
        reader.load()
    df = reader.option("flatten", "false").load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType",  # as Spark's Kafka source names them
                          "_corrupt_record"]  # mode PERMISSIVE's, null: every value fits
    strings = spark.createDataFrame([(json.dumps(v),) for v in values], "value STRING")
    theirs = strings.select(from_json(col("value"), ddl).alias("value"))
    assert df.schema["value"] == theirs.schema["value"]
    rows = df.orderBy("offset").select("offset", "partition", "value").collect()
    assert [(r.offset, r.partition) for r in rows] == [(0, 0), (1, 0), (2, 0)]
    assert [r.value.asDict(recursive=True) for r in rows] == \
        [r.value.asDict(recursive=True) for r in theirs.collect()]


# (value, what from_json gives: "same" = a row we give too; "partial" = a row with that field
# null, which is a dead letter here, a deliberate difference the docs list)
FROM_JSON_CASES: list[tuple[dict[str, object], str]] = [  # (a record, "same" or "partial")
    ({"t": 1714521600}, "same"), ({"t": -1}, "same"), ({"t": "2024-05-01T10:00:00Z"}, "same"),
    ({"d": "NaN"}, "same"), ({"d": "Infinity"}, "same"), ({"d": "+Infinity"}, "same"),
    ({"d": "-Infinity"}, "same"), ({"d": "+INF"}, "same"), ({"d": "-INF"}, "same"),
    ({"day": "2024-5-1"}, "same"), ({"day": "2024-05-1"}, "same"),
    ({"day": "2024-5-01T10:00"}, "same"), ({"day": "2024"}, "same"), ({"day": "2024-05"}, "same"),
    ({"day": " 2024-05-01"}, "same"), ({"day": "2024-05-01 junk"}, "same"),
    ({"day": "123"}, "same"),
    ({"t": 1714521600.5}, "partial"), ({"d": "INF"}, "partial"), ({"d": "1.5"}, "partial"),
    ({"day": 19000}, "partial"), ({"t": "1714521600"}, "partial"),
]


def test_epoch_seconds_quoted_non_numbers_and_dates_read_as_from_json(spark, broker):
    """Spark's from_json in the test session is the reference: a JSON number into TIMESTAMP
    is epoch seconds, quoted "NaN"/"Infinity"/"+INF"… into a double are those values, a date
    such as "2024-5-1" is read leniently (stringToDate); a record from_json reads as a
    partial row (one field null) is a corrupt row here."""
    from pyspark.sql.functions import col, from_json
    ddl = "t TIMESTAMP, d DOUBLE, day DATE"
    topic = unique("fromjson")
    create_topic(broker.bootstrap, topic, 1)
    texts = [json.dumps(v) for v, _ in FROM_JSON_CASES]
    with producer(broker.bootstrap) as p:
        for text in texts:
            p.produce(topic, value=text.encode(), partition=0)
    ours = (spark.read.format("streamslice-kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
            .option("valueFormat", "json").option("schema", ddl).load()
            .orderBy("offset").select("t", "d", "day", "_corrupt_record").collect())
    theirs = spark.createDataFrame([(t,) for t in texts], "value STRING") \
        .select(from_json(col("value"), ddl).alias("v")).select("v.*").collect()
    for (value, kind), mine, spark_row in zip(FROM_JSON_CASES, ours, theirs):
        if kind == "same":
            assert mine._corrupt_record is None, (value, mine._corrupt_record)
            assert [str(x) for x in mine[:3]] == [str(x) for x in spark_row], value
        else:
            assert mine._corrupt_record is not None, value
            assert any(spark_row[k] is None for k in value), (value, spark_row)
    # dates past year 9999, which from_json gives and no DATE here holds: corrupt rows here
    beyond = spark.createDataFrame([('{"day": "20240501"}',), ('{"day": "19000"}',)],
                                   "value STRING").select(
        from_json(col("value"), ddl).alias("v")).selectExpr("CAST(v.day AS STRING) AS day")
    assert [r.day for r in beyond.collect()] == ["+57386-08-11", "+19000-01-01"]
