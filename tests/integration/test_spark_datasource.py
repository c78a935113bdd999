"""spark.read.format("streamslice-kafka") as a drop-in for Spark's Kafka batch source: each
test takes cases of Spark's Structured Streaming + Kafka Integration Guide (batch queries)
and Spark 4's KafkaSourceProvider, against the real broker."""
import json
import re

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000


@pytest.fixture
def topic(broker):
    name = unique("spark")
    create_topic(broker.bootstrap, name, 2)
    sent = produce(broker.bootstrap, name, trips(T0, 1, 60, seed=9), partitions=2)
    return name, sent


def reader(spark, broker, topic_name, **options):
    r = (spark.read.format("streamslice-kafka")
         .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic_name))
    for key, value in options.items():
        r = r.option(key, value)
    return r


def rows(df):
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def fails(df_or_fn, message, regex=False):
    with pytest.raises(Exception, match=message if regex else re.escape(message)):
        df = df_or_fn() if callable(df_or_fn) else df_or_fn
        df.collect()


def test_schema_and_defaults_are_sparks(spark, broker, topic):
    """Guide: "Each row in the source has the following schema: key binary, value binary,
    topic string, partition int, offset long, timestamp timestamp, timestampType int";
    headers only with includeHeaders; startingOffsets defaults to earliest and endingOffsets
    to latest for batch queries."""
    name, sent = topic
    df = reader(spark, broker, name).load()
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
        ("offset", "bigint"), ("timestamp", "timestamp"), ("timestampType", "int")]
    assert rows(df) == sorted((p, o) for p, o, _ in sent)
    with_headers = reader(spark, broker, name, includeHeaders="true").load()
    assert with_headers.schema["headers"].dataType.simpleString() == \
        "array<struct<key:string,value:binary>>"


def test_offsets_json_with_minus_two_and_minus_one(spark, broker, topic):
    """Guide: "In the json, -2 as an offset can be used to refer to earliest, -1 to latest"."""
    name, sent = topic
    ends = {p: 1 + max(o for q, o, _ in sent if q == p) for p in (0, 1)}
    df = reader(spark, broker, name,
                startingOffsets=json.dumps({name: {"0": -2, "1": 5}}),
                endingOffsets=json.dumps({name: {"0": 20, "1": -1}})).load()
    assert rows(df) == [(0, o) for o in range(0, 20)] + [(1, o) for o in range(5, ends[1])]


def test_each_action_resolves_earliest_and_latest_again(spark, broker, topic):
    """Spark binds earliest/latest when a query runs, not when the DataFrame is defined: a
    second action sees new records, and a log start that moved is simply where earliest is."""
    name, sent = topic
    df = reader(spark, broker, name).load()
    assert df.count() == len(sent)
    produce(broker.bootstrap, name, trips(T0 + 3_600_000, 1, 10, seed=3), partitions=2)
    assert df.count() == len(sent) + 10
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([TopicPartition(name, 0, 5)]).values():
        f.result(30)
    assert df.count() == len(sent) + 10 - 5
    assert min(o for p, o in rows(df) if p == 0) == 5


def test_timestamps_and_their_precedence(spark, broker, topic):
    """Guide: startingTimestamp "takes precedence over startingOffsetsByTimestamp and
    startingOffsets"; "Spark simply passes the timestamp information to
    KafkaConsumer.offsetsForTimes"."""
    name, sent = topic
    ts = sorted(t for _, _, t in sent)[30]
    first = {p: min(o for q, o, t in sent if q == p and t >= ts) for p in (0, 1)}
    expected = sorted((p, o) for p, o, _ in sent if o >= first[p])
    df = reader(spark, broker, name, startingTimestamp=str(ts),
                startingOffsets=json.dumps({name: {"0": 0, "1": 0}})).load()
    assert rows(df) == expected
    by_partition = reader(spark, broker, name, startingOffsetsByTimestamp=json.dumps(
        {name: {"0": ts, "1": ts}}), endingOffsetsByTimestamp=json.dumps(
        {name: {"0": T0 + 10 ** 9, "1": ts}})).load()  # no match at the end: latest
    # partition 1 ends at the same timestamp it starts at: nothing
    assert rows(by_partition) == [(0, o) for p, o in expected if p == 0]


def test_a_starting_timestamp_with_no_match(spark, broker, topic):
    """startingOffsetsByTimestampStrategy: "error" fails the query, "latest" assigns the
    latest offset and the partition reads nothing."""
    name, _ = topic
    late = str(T0 + 10 ** 9)
    fails(reader(spark, broker, name, startingTimestamp=late).load(),
          f"No offset matched from request of topic-partition {name}-[01] and timestamp {late}",
          regex=True)
    df = reader(spark, broker, name, startingTimestamp=late,
                startingOffsetsByTimestampStrategy="latest").load()
    assert df.count() == 0


def test_range_errors_as_spark_reports_them(spark, broker, topic):
    name, _ = topic
    fails(lambda: reader(spark, broker, name,  # as Spark: when the DataFrame is defined
                         startingOffsets=json.dumps({name: {"0": 9, "1": 0}}),
                         endingOffsets=json.dumps({name: {"0": 3, "1": 1}})).load(),
          f"The specified start offset 9 is greater than the end offset 3 for topic {name} "
          "partition 0.")
    fails(lambda: reader(spark, broker, name,
                         startingOffsets=json.dumps({name: {"0": 1}})).load(),
          "If startingOffsets contains specific offsets, you must specify all TopicPartitions.")
    # a start only a stream takes: load() gives the stream's schema (Spark does not say
    # which it is asked for), the batch read fails when it is planned
    fails(lambda: reader(spark, broker, name, startingOffsets="latest").load(),
          "starting offset can't be latest for batch queries on Kafka")
    fails(lambda: reader(spark, broker, name, endingOffsets="earliest").load(),
          "ending offset can't be earliest for batch queries on Kafka")


def test_subscribe_pattern_finds_the_pattern_inside_topic_names(spark, broker):
    """Spark matches subscribePattern with Pattern.matcher(topic).find(); the YAML's
    topic_pattern stays a full match, as Flink's setTopicPattern."""
    tag = unique("pat").replace("-", "")
    for name in (f"eu-{tag}-orders", f"{tag}-payments"):
        create_topic(broker.bootstrap, name, 1)
        produce(broker.bootstrap, name, trips(T0, 1, 3, seed=1), partitions=1)
    df = (spark.read.format("streamslice-kafka")
          .option("kafka.bootstrap.servers", broker.bootstrap)
          .option("subscribePattern", f"{tag}-ord").load())
    assert {r.topic for r in df.select("topic").collect()} == {f"eu-{tag}-orders"}


def test_min_partitions_divides_large_ranges(spark, broker, topic):
    """minPartitions: "Spark will divvy up large Kafka partitions to smaller pieces"."""
    name, sent = topic
    df = reader(spark, broker, name, minPartitions="6").load()
    assert df.rdd.getNumPartitions() == 6
    assert rows(df) == sorted((p, o) for p, o, _ in sent)
    capped = reader(spark, broker, name, maxRecordsPerPartition="7").load()
    assert capped.rdd.getNumPartitions() == sum(
        -(-sum(1 for q, _, _ in sent if q == p) // 7) for p in (0, 1))


def test_fail_on_data_loss(spark, broker, topic):
    """failOnDataLoss: "Whether to fail the query when it's possible that data is lost (e.g.,
    topics are deleted, or offsets are out of range)"; false starts at what is left."""
    name, sent = topic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([TopicPartition(name, 0, 10)]).values():
        f.result(30)
    start = json.dumps({name: {"0": 5, "1": 0}})
    fails(reader(spark, broker, name, startingOffsets=start).load(),
          f"{name}:0: records expired between offset 5 and 10")
    df = reader(spark, broker, name, startingOffsets=start, failOnDataLoss="false").load()
    assert min(o for p, o in rows(df) if p == 0) == 10


def test_options_are_checked_strictly(spark, broker, topic):
    """Spark ignores unknown options; a misspelt one here would read another range silently,
    so it fails naming the closest known option."""
    name, sent = topic
    fails(lambda: reader(spark, broker, name, startingOffset="latest").load(),
          "unknown option 'startingoffset' for streamslice-kafka (did you mean startingOffsets?)")
    fails(lambda: reader(spark, broker, name, failOnDataLoss="yes").load(),
          "option failOnDataLoss: 'yes' is not a boolean (true or false)")
    fails(lambda: reader(spark, broker, name, **{"kafka.auto.offset.reset": "earliest"}).load(),
          "Kafka option 'auto.offset.reset' is not supported.")
    fails(lambda: spark.read.format("streamslice-kafka").option("subscribe", "x").load(),
          "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    df = reader(spark, broker, name, **{"kafka.metadata.max.age.ms": "500"}).load()
    assert df.count() == len(sent)


def test_decoding_extensions_only_when_asked(spark, broker, topic):
    name, _ = topic
    df = reader(spark, broker, name, valueFormat="json", endingOffsets=json.dumps(
        {name: {"0": 3, "1": 0}}), schema=json.dumps({"trip_id": "string",
                                                      "fare_amount": "double"})).load()
    assert "fare_amount" in df.columns and "value" not in df.columns and df.count() == 3
