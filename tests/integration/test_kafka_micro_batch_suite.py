"""Spark's streaming-source cases (``KafkaMicroBatchSourceSuite`` and
``KafkaSourceOffsetSuite`` of connector/kafka-0-10-sql), one test per case ported and named
after it, against ``spark.readStream.format("streamslice-kafka")``, the real broker and the
suite's one Spark session: the same rows, batches and offsets as Spark's Kafka source, with
its offsets in the query's checkpoint location."""
import json

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from devtools.services import create_topic
from tests.support import kafka
from tests.support.kafka import producer
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration


def send(broker, topic, values, partition=None, timestamp=None):
    kafka.send(broker.bootstrap, topic, values, partition, timestamp)


def new_topic(broker, partitions=3):
    name = unique("stream")
    create_topic(broker.bootstrap, name, partitions)
    return name


def stream(spark, broker, topic=None, **options):
    r = spark.readStream.format("streamslice-kafka") \
        .option("kafka.bootstrap.servers", broker.bootstrap)
    if topic is not None:
        r = r.option("subscribe", topic)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


class Run:
    """One query into Spark's file sink (Parquet, beside its checkpoint: a query restarted on
    the same checkpoint appends to the same output, as ``_spark_metadata`` records)."""

    def __init__(self, spark, df, checkpoint, trigger=None):
        self.spark, self.output = spark, f"{checkpoint}-out"
        writer = df.selectExpr("CAST(value AS STRING) AS v", "topic", "partition", "offset") \
            .writeStream.format("parquet").option("path", self.output) \
            .option("checkpointLocation", str(checkpoint))
        self.query = writer.trigger(**(trigger or {"availableNow": True})).start()

    def finish(self, timeout=180):
        self.query.awaitTermination(timeout)
        assert not self.query.isActive, "the query did not stop"
        return self

    def values(self):
        """Every value the output holds, as Spark reads a file sink's output."""
        from pyspark.errors import AnalysisException
        try:
            rows = self.spark.read.parquet(self.output).select("v").collect()
        except AnalysisException:  # nothing written yet
            return []
        return sorted(int(r.v) for r in rows)

    def batch_rows(self):
        return [p["numInputRows"] for p in self.query.recentProgress if p["numInputRows"]]

    def end_offsets(self):
        return json.loads(self.query.lastProgress["sources"][0]["endOffset"])


def available_now(spark, df, checkpoint):
    return Run(spark, df, checkpoint).finish()


def three_partitions(broker):
    topic = new_topic(broker)
    send(broker, topic, range(0, 10), 0)
    send(broker, topic, range(10, 20), 1)
    send(broker, topic, [20], 2)
    return topic


def test_subscribing_topic_by_name_from_earliest_offsets(spark, broker, tmp_path):
    topic = three_partitions(broker)
    run = available_now(spark, stream(spark, broker, topic, startingOffsets="earliest"),
                        tmp_path / "cp")
    assert run.values() == list(range(21))
    assert run.end_offsets() == {topic: {"0": 10, "1": 10, "2": 1}}


def test_subscribing_topic_by_name_from_latest_offsets(spark, broker, tmp_path):
    """The default start of a stream is latest: the records there when the query starts are
    not read, those sent before its next run are."""
    topic = three_partitions(broker)
    first = available_now(spark, stream(spark, broker, topic), tmp_path / "cp")
    assert first.values() == []
    send(broker, topic, range(21, 30), 2)
    again = available_now(spark, stream(spark, broker, topic), tmp_path / "cp")
    assert again.values() == list(range(21, 30))


def test_subscribing_topic_by_name_from_specific_offsets(spark, broker, tmp_path):
    topic = three_partitions(broker)
    start = json.dumps({topic: {"0": 5, "1": -2, "2": -1}})
    run = available_now(spark, stream(spark, broker, topic, startingOffsets=start),
                        tmp_path / "cp")
    assert run.values() == list(range(5, 20))


def test_subscribing_topic_by_pattern_from_earliest_offsets(spark, broker, tmp_path):
    prefix = unique("pattern")
    topic = f"{prefix}-a"
    create_topic(broker.bootstrap, topic, 2)
    send(broker, topic, range(5), 0)
    run = available_now(spark, stream(spark, broker, subscribePattern=f"{prefix}-.*",
                                      startingOffsets="earliest"), tmp_path / "cp")
    assert run.values() == list(range(5))


def test_assign_from_specific_offsets(spark, broker, tmp_path):
    topic = three_partitions(broker)
    run = available_now(spark, stream(spark, broker, assign=json.dumps({topic: [0, 2]}),
                                      startingOffsets=json.dumps({topic: {"0": 8, "2": 0}})),
                        tmp_path / "cp")
    assert run.values() == [8, 9, 20]


def test_maxOffsetsPerTrigger(spark, broker, tmp_path):
    """Each batch reads at most the limit, shared by the partitions in proportion to what
    each has waiting (Spark's rateLimit), and Trigger.AvailableNow reads to the end."""
    topic = new_topic(broker)
    send(broker, topic, range(100), 0)
    send(broker, topic, range(100, 110), 1)
    send(broker, topic, [110], 2)
    run = available_now(spark, stream(spark, broker, topic, startingOffsets="earliest",
                                      maxOffsetsPerTrigger="10"), tmp_path / "cp")
    assert run.values() == list(range(111))
    rows = run.batch_rows()
    assert max(rows) <= 10 + 2 and len(rows) >= 10, rows  # a small partition gets one a batch
    assert sum(rows) == 111


def test_Trigger_AvailableNow_reads_what_was_there_when_the_query_started(spark, broker,
                                                                           tmp_path):
    """Records sent while the query runs are left for its next run: the end is fixed when it
    starts, and it stops there, in batches bounded by the limit."""
    topic = new_topic(broker, 1)
    send(broker, topic, range(30), 0)
    sent: list[int] = []
    rows: list[int] = []

    def each(batch, batch_id):
        rows.extend(int(r.v) for r in batch.selectExpr("CAST(value AS STRING) AS v").collect())
        if batch_id == 0:
            send(broker, topic, range(30, 40), 0)
            sent.append(batch_id)

    def run():
        df = stream(spark, broker, topic, startingOffsets="earliest", maxOffsetsPerTrigger="5")
        query = df.writeStream.foreachBatch(each) \
            .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True) \
            .start()
        query.awaitTermination(180)
        assert not query.isActive
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    assert run() == [5] * 6
    assert sent and sorted(rows) == list(range(30))
    rows.clear()
    assert run() == [5, 5]
    assert sorted(rows) == list(range(30, 40))


def test_Trigger_Once_reads_everything_in_one_batch(spark, broker, tmp_path):
    topic = three_partitions(broker)
    run = Run(spark, stream(spark, broker, topic, startingOffsets="earliest",
                            maxOffsetsPerTrigger="2"), tmp_path / "cp",
              trigger={"once": True}).finish()
    assert run.values() == list(range(21))
    assert run.batch_rows() == [21]


def test_processing_time_trigger_reads_records_as_they_come(spark, broker, tmp_path):
    from tests.support.wait import wait_for
    topic = three_partitions(broker)
    run = Run(spark, stream(spark, broker, topic, startingOffsets="earliest"), tmp_path / "cp",
              trigger={"processingTime": "200 milliseconds"})
    try:
        wait_for(lambda: run.values() == list(range(21)), 120, "the first records")
        send(broker, topic, range(21, 25), 1)
        wait_for(lambda: run.values() == list(range(25)), 120, "the records sent later")
    finally:
        run.query.stop()


def test_restarted_query_resumes_from_its_checkpoint(spark, broker, tmp_path):
    topic = three_partitions(broker)
    df = stream(spark, broker, topic, startingOffsets="earliest", maxOffsetsPerTrigger="7")
    assert available_now(spark, df, tmp_path / "cp").values() == list(range(21))
    send(broker, topic, range(21, 26), 0)
    again = available_now(spark, stream(spark, broker, topic, startingOffsets="earliest"),
                          tmp_path / "cp")
    assert again.values() == list(range(26))  # the output: each record once
    assert again.batch_rows() == [5]


def test_cannot_stop_Kafka_stream_added_partitions(spark, broker, tmp_path):
    """Spark's "subscribing topic by name from earliest offsets (... added partitions)":
    partitions added to the topic while the query runs are read from their start."""
    topic = new_topic(broker, 2)
    send(broker, topic, range(5), 0)
    df = stream(spark, broker, topic, startingOffsets="earliest")
    assert available_now(spark, df, tmp_path / "cp").values() == list(range(5))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_partitions([NewPartitions(topic, 4)]).values():
        f.result(30)
    send(broker, topic, range(5, 8), 3)
    send(broker, topic, [8], 0)
    again = available_now(spark, stream(spark, broker, topic, startingOffsets="earliest"),
                          tmp_path / "cp")
    assert again.values() == list(range(9))
    assert again.batch_rows() == [4]


def test_startingOffsetsByTimestamp(spark, broker, tmp_path):
    topic = new_topic(broker, 2)
    for part in range(2):
        send(broker, topic, range(part * 10, part * 10 + 5), part, 1_714_521_600_000)
        send(broker, topic, range(part * 10 + 5, part * 10 + 10), part, 1_714_521_601_000)
    by_ts = json.dumps({topic: {"0": 1_714_521_601_000, "1": 1_714_521_600_000}})
    run = available_now(spark, stream(spark, broker, topic, startingOffsetsByTimestamp=by_ts),
                        tmp_path / "a")
    assert run.values() == [5, 6, 7, 8, 9, *range(10, 20)]
    run = available_now(spark, stream(spark, broker, topic,
                                      startingTimestamp="1714521601000"), tmp_path / "b")
    assert run.values() == [5, 6, 7, 8, 9, 15, 16, 17, 18, 19]


def test_no_match_starting_timestamp_fails_unless_the_strategy_is_latest(spark, broker,
                                                                         tmp_path):
    topic = three_partitions(broker)
    late = str(4_102_444_800_000)  # 2100: no record is at or after it
    run = Run(spark, stream(spark, broker, topic, startingTimestamp=late), tmp_path / "a")
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        run.query.awaitTermination(180)
    run = available_now(spark, stream(spark, broker, topic, startingTimestamp=late,
                                      startingOffsetsByTimestampStrategy="latest"),
                        tmp_path / "b")
    assert run.values() == []


def test_failOnDataLoss_false_starts_at_the_log_start(spark, broker, tmp_path):
    topic = new_topic(broker, 1)
    send(broker, topic, range(10), 0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    start = json.dumps({topic: {"0": 2}})
    for f in admin.delete_records([TopicPartition(topic, 0, 5)]).values():
        f.result(30)
    run = Run(spark, stream(spark, broker, topic, startingOffsets=start), tmp_path / "a")
    with pytest.raises(Exception, match="Starting offset for .*-0 was 2 but consumer reset to 5"):
        run.query.awaitTermination(180)
    run = available_now(spark, stream(spark, broker, topic, startingOffsets=start,
                                      failOnDataLoss="false"), tmp_path / "b")
    assert run.values() == list(range(5, 10))


def test_include_headers(spark, broker, tmp_path):
    topic = new_topic(broker, 1)
    with producer(broker.bootstrap) as p:
        p.produce(topic, value=b"1", partition=0, headers=[("a", b"b")])
    df = stream(spark, broker, topic, startingOffsets="earliest", includeHeaders="true")
    name = "headers_" + unique("q").replace("-", "_")
    q = df.selectExpr("CAST(value AS STRING) AS v", "headers").writeStream.format("memory") \
        .queryName(name).option("checkpointLocation", str(tmp_path / "cp")) \
        .trigger(availableNow=True).start()
    q.awaitTermination(180)
    rows = spark.sql(f"SELECT * FROM {name}").collect()
    assert [(r.v, [(h.key, h.value) for h in r.headers]) for r in rows] == [("1", [("a", b"b")])]


def test_ending_offset_is_refused_in_a_stream(spark, broker, tmp_path):
    """Spark's "bad source options": an ending offset has no place in a stream (the batch
    read of the same options is fine, so the query fails when it starts)."""
    topic = three_partitions(broker)
    for option, message in (("endingOffsets", "ending offset not valid in streaming queries"),
                            ("endingOffsetsByTimestamp",
                             "ending timestamp not valid in streaming queries")):
        value = "latest" if option == "endingOffsets" else \
            json.dumps({topic: {str(p): 1_714_521_600_000 for p in range(3)}})
        with pytest.raises(Exception, match=message) as failed:
            Run(spark, stream(spark, broker, topic, **{option: value}),
                tmp_path / option).query.awaitTermination(180)
        assert "Traceback" not in str(failed.value)


def test_lag_in_the_query_progress(spark, broker, tmp_path):
    """``latestOffset`` in each batch's progress is the topic's end then (Spark's
    reportLatestOffset), so a limited batch shows how far behind it is."""
    topic = new_topic(broker, 1)
    send(broker, topic, range(20), 0)
    run = available_now(spark, stream(spark, broker, topic, startingOffsets="earliest",
                                      maxOffsetsPerTrigger="5"), tmp_path / "cp")
    first = next(p for p in run.query.recentProgress if p["numInputRows"])
    assert json.loads(first["sources"][0]["endOffset"]) == {topic: {"0": 5}}
    assert json.loads(first["sources"][0]["latestOffset"]) == {topic: {"0": 20}}


def test_a_topic_matching_the_pattern_later_is_read_from_its_start(spark, broker, tmp_path):
    prefix = unique("pattern")
    create_topic(broker.bootstrap, f"{prefix}-a", 1)
    send(broker, f"{prefix}-a", range(3), 0)
    df = stream(spark, broker, subscribePattern=f"{prefix}-.*", startingOffsets="earliest")
    assert available_now(spark, df, tmp_path / "cp").values() == [0, 1, 2]
    create_topic(broker.bootstrap, f"{prefix}-b", 2)
    send(broker, f"{prefix}-b", range(3, 6), 1)
    df = stream(spark, broker, subscribePattern=f"{prefix}-.*", startingOffsets="earliest")
    assert available_now(spark, df, tmp_path / "cp").values() == list(range(6))


def test_read_committed_stops_at_an_open_transaction(spark, broker, tmp_path):
    """With kafka.isolation.level read_committed a batch ends where the open transaction
    begins (the last stable offset), and aborted records are never read; the default,
    read_uncommitted as Spark's, reads them all."""
    topic = new_topic(broker, 1)
    with producer(broker.bootstrap, **{"transactional.id": unique("tx")}) as p:
        p.init_transactions(30)
        send(broker, topic, range(3), 0)
        p.begin_transaction()
        for v in range(3, 6):
            p.produce(topic, value=str(v).encode(), partition=0)
        p.flush(30)
        committed = stream(spark, broker, topic, startingOffsets="earliest",
                           **{"kafka.isolation.level": "read_committed"})
        assert available_now(spark, committed, tmp_path / "a").values() == [0, 1, 2]
        everything = stream(spark, broker, topic, startingOffsets="earliest")
        assert available_now(spark, everything, tmp_path / "b").values() == list(range(6))
        p.abort_transaction(30)
        send(broker, topic, [6], 0)
        committed = stream(spark, broker, topic, startingOffsets="earliest",
                           **{"kafka.isolation.level": "read_committed"})
        assert available_now(spark, committed, tmp_path / "a").values() == [0, 1, 2, 6]
