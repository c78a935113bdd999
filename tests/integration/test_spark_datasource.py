"""spark.read.format("streamslice-kafka") without Airflow, with the options Spark's own Kafka
source users know."""
import json

import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000


def test_standalone_read_with_spark_kafka_options(broker, spark):
    topic = unique("standalone")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 60, seed=9), partitions=2)
    def base():  # DataFrameReader.option() mutates the reader: start afresh each time
        return (spark.read.format("streamslice-kafka")
                .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic))
    df = base().load()
    assert df.columns[:3] == ["key", "value", "topic"]
    assert sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect()) \
        == sorted((p, o) for p, o, _ in sent)

    bounded = (base().option("startingOffsets", json.dumps({topic: {"0": 10, "1": 5}}))
               .option("endingOffsets", json.dumps({topic: {"0": 20, "1": 7}}))
               .option("valueFormat", "json")
               .option("schema", json.dumps({"trip_id": "string", "fare_amount": "double"}))
               .load())
    got = sorted((r.partition, r.offset) for r in bounded.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(10, 20)] + [(1, 5), (1, 6)]
    assert "fare_amount" in bounded.columns and "value" not in bounded.columns

    ts = sorted(t for _, _, t in sent)[30]
    by_time = base().option("startingTimestamp", str(ts)).load()
    first = {p: min(o for q, o, t in sent if q == p and t >= ts) for p in (0, 1)}
    assert by_time.count() == sum(1 for p, o, _ in sent if o >= first[p])


def test_missing_options_are_named(spark):
    with pytest.raises(Exception, match="kafka.bootstrap.servers is required"):
        spark.read.format("streamslice-kafka").option("subscribe", "x").load().collect()
