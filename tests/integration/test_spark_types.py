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
          .option("onDecodeError", "dead_letter").load())
    names = [f.name for f in parse_schema(DDL)]
    assert df.select(*names).schema == spark.createDataFrame([], DDL).schema
    ours = [r.asDict(recursive=True) for r in df.orderBy("offset").select(*names).collect()]
    strings = spark.createDataFrame([(json.dumps(v),) for v in GOOD], "value STRING")
    theirs = [r.asDict(recursive=True)["v"] for r in
              strings.select(from_json(col("value"), DDL).alias("v")).collect()]
    assert ours == theirs
    assert len(ours) == len(GOOD)  # the bad ones are dead letters (their reasons: unit tests)

