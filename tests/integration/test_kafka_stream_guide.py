"""A query exactly as Spark's Structured Streaming + Kafka integration guide writes it runs on
``streamslice-kafka`` with only the format name changed, and its output holds the rows a
ledger of the produced records says (key, value, topic, partition, offset); and the guide's
streaming options no other test runs on real Spark: ``minOffsetsPerTrigger`` with
``maxTriggerDelay``, and topics and partitions that appear while a query runs. Real broker,
the suite's one Spark session."""
import json

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from devtools.services import create_topic
from tests.support import kafka
from tests.support.kafka import producer
from tests.support.pipelines import unique
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration


def guide_query(spark, fmt, servers, topic, checkpoint, path):
    """The guide's "Creating a Kafka Source for Streaming Queries" and "Writing the output"
    (Python), with Trigger.AvailableNow; ``fmt`` is the only change."""
    df = spark \
        .readStream \
        .format(fmt) \
        .option("kafka.bootstrap.servers", servers) \
        .option("subscribe", topic) \
        .option("startingOffsets", "earliest") \
        .option("maxOffsetsPerTrigger", 10) \
        .load()
    query = df.selectExpr("CAST(key AS STRING)", "CAST(value AS STRING)", "topic",
                          "partition", "offset") \
        .writeStream \
        .format("parquet") \
        .option("path", path) \
        .option("checkpointLocation", checkpoint) \
        .trigger(availableNow=True) \
        .start()
    query.awaitTermination()
    return query


def produce(bootstrap, topic, records):
    """Keyed records as the producer partitions them; the ledger is what the broker
    acknowledged: (key, value, topic, partition, offset)."""
    ledger = []

    def delivered(err, msg):
        assert err is None, err
        ledger.append((msg.key().decode(), msg.value().decode(), msg.topic(), msg.partition(),
                       msg.offset()))

    with producer(bootstrap) as p:
        for key, value in records:
            p.produce(topic, key=key.encode(), value=value.encode(), on_delivery=delivered)
    return ledger


def test_the_guides_query_with_only_the_format_name_changed(spark, broker, tmp_path):
    topic = unique("guide")
    create_topic(broker.bootstrap, topic, 3)
    ledger = produce(broker.bootstrap, topic, [(f"k{i % 7}", f"v{i}") for i in range(50)])
    query = guide_query(spark, "streamslice-kafka", broker.bootstrap, topic,
                        str(tmp_path / "cp"), str(tmp_path / "out"))
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(batches) == 50 and len(batches) >= 5, batches
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(tuple(r) for r in rows) == sorted(ledger)
    more = produce(broker.bootstrap, topic, [("k", f"w{i}") for i in range(5)])
    guide_query(spark, "streamslice-kafka", broker.bootstrap, topic, str(tmp_path / "cp"),
                str(tmp_path / "out"))
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(tuple(r) for r in rows) == sorted(ledger + more)


def test_minOffsetsPerTrigger_holds_a_batch_until_enough_records_wait(spark, broker, tmp_path):
    """With ``maxTriggerDelay`` an hour, three records wait (the source sees them: its latest
    offset in the progress) until two more make the five ``minOffsetsPerTrigger`` asks for."""
    topic = unique("min-offsets")
    create_topic(broker.bootstrap, topic, 1)
    interval = "spark.sql.streaming.noDataProgressEventInterval"
    spark.conf.set(interval, "0")  # a progress event for every trigger, data or not
    df = spark.readStream.format("streamslice-kafka") \
        .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic) \
        .option("startingOffsets", "earliest").option("minOffsetsPerTrigger", 5) \
        .option("maxTriggerDelay", "1h").load()
    query = df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp")) \
        .trigger(processingTime="100 milliseconds").start()

    def seen(records):
        return any(p["sources"][0].get("latestOffset") and
                   json.loads(p["sources"][0]["latestOffset"]) == {topic: {"0": records}}
                   for p in query.recentProgress)
    try:  # the first trigger is a batch's: maxTriggerDelay counts from it
        wait_for(lambda: seen(0), 120, "the query's first trigger")
        kafka.send(broker.bootstrap, topic, range(3), 0)
        wait_for(lambda: seen(3), 120, "a trigger that saw three records")
        assert all(p["numInputRows"] == 0 for p in query.recentProgress)
        kafka.send(broker.bootstrap, topic, range(3, 5), 0)
        wait_for(lambda: any(p["numInputRows"] for p in query.recentProgress), 120,
                 "the batch of five")
        assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [5]
    finally:
        query.stop()
        spark.conf.unset(interval)


def test_maxTriggerDelay_lets_fewer_records_than_minOffsetsPerTrigger_through(spark, broker,
                                                                              tmp_path):
    """Three records, where a hundred are asked for, make a batch once ``maxTriggerDelay``
    (two seconds) has passed since the last batch (with the default, 15 minutes, they would
    wait beyond this test's patience)."""
    topic = unique("trigger-delay")
    create_topic(broker.bootstrap, topic, 1)
    df = spark.readStream.format("streamslice-kafka") \
        .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic) \
        .option("startingOffsets", "earliest").option("minOffsetsPerTrigger", 100) \
        .option("maxTriggerDelay", "2s").load()
    query = df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp")) \
        .trigger(processingTime="100 milliseconds").start()
    try:
        wait_for(lambda: query.lastProgress is not None, 120, "the query's first trigger")
        kafka.send(broker.bootstrap, topic, range(3), 0)
        wait_for(lambda: any(p["numInputRows"] for p in query.recentProgress), 120,
                 "the batch maxTriggerDelay lets through")
        assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [3]
    finally:
        query.stop()


def test_topics_and_partitions_added_while_the_query_runs(spark, broker, tmp_path):
    """``subscribePattern``: a topic created and a partition added while a processing-time
    query runs are read from their first offset, without a restart."""
    prefix = unique("live-pattern")
    create_topic(broker.bootstrap, f"{prefix}-a", 1)
    kafka.send(broker.bootstrap, f"{prefix}-a", range(3), 0)
    name = "live_" + unique("q").replace("-", "_")
    df = spark.readStream.format("streamslice-kafka") \
        .option("kafka.bootstrap.servers", broker.bootstrap) \
        .option("subscribePattern", f"{prefix}-.*").option("startingOffsets", "earliest").load()
    query = df.selectExpr("CAST(value AS STRING) AS v").writeStream.format("memory") \
        .queryName(name).option("checkpointLocation", str(tmp_path / "cp")) \
        .trigger(processingTime="200 milliseconds").start()

    def values():
        return sorted(int(r.v) for r in spark.sql(f"SELECT v FROM {name}").collect())
    try:
        wait_for(lambda: values() == [0, 1, 2], 120, "the first topic's records")
        create_topic(broker.bootstrap, f"{prefix}-b", 1)
        kafka.send(broker.bootstrap, f"{prefix}-b", range(3, 6), 0)
        wait_for(lambda: values() == list(range(6)), 120, "the new topic's records")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_partitions([NewPartitions(f"{prefix}-a", 2)]).values():
            f.result(30)
        kafka.send(broker.bootstrap, f"{prefix}-a", range(6, 9), 1)
        wait_for(lambda: values() == list(range(9)), 120, "the new partition's records")
    finally:
        query.stop()
