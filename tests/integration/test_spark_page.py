"""docs/spark.md's examples, run as a reader runs them against a real broker and Spark: only
the broker's address and the topics are replaced. The first reads a topic from earliest to
latest; the second registers the data sources in an existing session and ships the package
zip (``streamslice package`` writes it) to its executors; the third reads JSON into the
columns of its DDL and shows two of them."""
import json
import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from devtools.services import create_topic
from devtools.taxi import Trip, produce
from tests.support.checks import present
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "spark.md").read_text()
EXAMPLES = re.findall(r"^```python\n(.*?)^```$", PAGE, re.S | re.M)


def run(example, broker, topics, scope):
    for shown, ours in topics.items():
        example = example.replace(f'"{shown}"', f'"{ours}"')
    exec(example.replace("127.0.0.1:9092", broker.bootstrap), scope)
    return scope


def test_the_spark_pages_examples_read_what_they_say(broker, spark, capsys, tmp_path):
    assert len(EXAMPLES) == 3
    trips, orders = unique("taxi-trips"), unique("orders")
    create_topic(broker.bootstrap, trips, 2)
    create_topic(broker.bootstrap, orders, 1)
    sent = produce(broker.bootstrap, trips,
                   [Trip(b"k%d" % i, b"{}", 1_714_521_600_000 + i) for i in range(25)])
    scope = run(EXAMPLES[0], broker, {"taxi-trips": trips}, {})
    df = scope["df"]
    assert sorted((r.partition, r.offset) for r in df.collect()) == sorted(
        (p, o) for p, o, _ in sent)
    assert df.columns[:3] == ["key", "value", "topic"]

    # an existing session: register, then the zip `streamslice package dist` writes
    from streamslice.spark.package import write_zip
    (tmp_path / "dist").mkdir()
    write_zip(tmp_path / "dist" / "streamslice.zip")
    run(EXAMPLES[1], broker, {"dist/streamslice.zip": str(tmp_path / "dist/streamslice.zip")},
        {"spark": spark})
    assert spark.read.format("streamslice-kafka").option(
        "kafka.bootstrap.servers", broker.bootstrap).option("subscribe", trips).load().count() \
        == len(sent)

    records = [{"id": 7, "user": {"name": "ann", "tags": ["a", "b"]}, "amount": "12.50",
                "day": "2024-05-01", "attrs": {"channel": "web"}}, {"id": 8, "user": None}]
    produce(broker.bootstrap, orders,
            [Trip(b"k", json.dumps(r).encode(), i) for i, r in enumerate(records)])
    capsys.readouterr()
    scope = run(EXAMPLES[2], broker, {"orders": orders}, scope)
    shown = capsys.readouterr().out
    assert "ann" in shown and "12.50" in shown
    df = scope["df"]
    row, other = df.orderBy("id").select("id", "user", "amount", "day", "attrs").collect()
    assert (row.id, row.user.name, row.user.tags, row.amount, row.day, row.attrs) == \
        (7, "ann", ["a", "b"], Decimal("12.50"), date(2024, 5, 1), {"channel": "web"})
    assert (other.id, other.user, other.amount) == (8, None, None)
    # "the same rows from_json(value, schema) gives": Spark's own parse of the same values
    from pyspark.sql.functions import col, from_json
    ddl = present(re.search(r'\.option\("schema", (".*?")\)\n', EXAMPLES[2], re.S)).group(1)
    ddl = "".join(json.loads(part) for part in re.findall(r'"[^"]*"', ddl))
    theirs = spark.createDataFrame([(json.dumps(r),) for r in records], "value STRING") \
        .select(from_json(col("value"), ddl).alias("v")).select("v.user.name", "v.amount")
    assert sorted(map(tuple, df.select("user.name", "amount").collect()), key=str) == \
        sorted(map(tuple, theirs.collect()), key=str)
