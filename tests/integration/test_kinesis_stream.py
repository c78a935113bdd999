"""``spark.readStream.format("streamslice-kinesis")`` with the AWS Kinesis connector for
Spark's options, against the real local Kinesis server (kinesis-local, SubscribeToShard
through its proxy) and the suite's one Spark session: polling and EFO, the starting
positions, ``maxFetchRecordsPerShard``, a split read parents before children, and the
offsets in the query's checkpoint. Named after the connector's test cases where it has
them (``KinesisSourceItSuite``)."""
import json
import time

import pytest

from tests.support.kinesis import create_stream, put, wait_active
from tests.support.pipelines import unique
from tests.support.wait import wait_for, wait_until_clock

pytestmark = pytest.mark.integration


def load(spark, kinesis, stream, **options):
    r = (spark.readStream.format("streamslice-kinesis")
         .option("kinesis.streamName", stream).option("kinesis.region", "us-east-1")
         .option("kinesis.endpointUrl", kinesis.endpoint)
         .option("kinesis.awsAccessKeyId", "test").option("kinesis.awsSecretKey", "test"))
    for key, value in options.items():
        r = r.option(f"kinesis.{key}", value)
    return r.load()


class Run:
    """One query into Spark's file sink beside its checkpoint."""

    def __init__(self, spark, df, checkpoint, trigger=None):
        self.spark, self.output = spark, f"{checkpoint}-out"
        self.query = (df.selectExpr("CAST(data AS STRING) AS v", "shardId", "sequenceNumber")
                      .writeStream.format("parquet").option("path", self.output)
                      .option("checkpointLocation", str(checkpoint))
                      .trigger(**(trigger or {"availableNow": True})).start())

    def finish(self, timeout=240):
        self.query.awaitTermination(timeout)
        assert not self.query.isActive, "the query did not stop"
        return self

    def rows(self):
        from pyspark.errors import AnalysisException
        try:
            return [(r.v, r.shardId, r.sequenceNumber)
                    for r in self.spark.read.parquet(self.output).collect()]
        except AnalysisException:
            return []

    def values(self):
        return sorted(v for v, _, _ in self.rows())

    def batch_rows(self):
        return [p["numInputRows"] for p in self.query.recentProgress if p["numInputRows"]]


def available_now(spark, df, checkpoint):
    return Run(spark, df, checkpoint).finish()


def values(prefix, n, start=0):
    return [f"{prefix}{i:04d}".encode() for i in range(start, start + n)]


def texts(payloads):
    return sorted(p.decode() for p in payloads)


@pytest.fixture
def client(kinesis):
    return kinesis.client()


def test_output_data_with_trim_horizon_and_the_same_query_again(spark, kinesis, client,
                                                                tmp_path):
    """Everything from TRIM_HORIZON in one availableNow run; a second run on the same
    checkpoint reads only what was put since."""
    stream = unique("kstream")
    create_stream(client, stream, 2)
    sent = values("a", 30)
    put(client, stream, sent)
    first = available_now(spark, load(spark, kinesis, stream, startingPosition="TRIM_HORIZON"),
                          tmp_path / "cp")
    assert first.values() == texts(sent)
    more = values("b", 10)
    put(client, stream, more)
    again = available_now(spark, load(spark, kinesis, stream, startingPosition="TRIM_HORIZON"),
                          tmp_path / "cp")
    assert again.values() == texts(sent + more)  # the file sink holds both runs, once each
    offsets = json.loads(again.query.lastProgress["sources"][0]["endOffset"])
    assert offsets["initial"] == {"type": "TRIM_HORIZON"} and len(offsets["shards"]) == 2


def test_starting_position_latest_reads_only_what_comes_after_the_start(spark, kinesis, client,
                                                                       tmp_path):
    """LATEST is the connector's default: the first run reads nothing there was before it,
    the next run what came after."""
    stream = unique("klatest")
    create_stream(client, stream, 1)
    put(client, stream, values("old", 5))
    assert available_now(spark, load(spark, kinesis, stream), tmp_path / "cp").values() == []
    new = values("new", 4)
    put(client, stream, new)
    assert available_now(spark, load(spark, kinesis, stream),
                         tmp_path / "cp").values() == texts(new)


def test_starting_position_at_timestamp(spark, kinesis, client, tmp_path):
    stream = unique("kts")
    create_stream(client, stream, 1)
    put(client, stream, values("before", 3))
    at = time.time() + 1.5
    wait_until_clock(at)
    after = values("after", 3)
    put(client, stream, after)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(at) + 1))
    wait_until_clock(int(at) + 1.2)
    late = values("late", 2)
    put(client, stream, late)
    df = load(spark, kinesis, stream, startingPosition=f"AT_TIMESTAMP {stamp}Z")
    assert available_now(spark, df, tmp_path / "cp").values() == texts(late)


def test_max_fetch_records_per_shard_bounds_each_batch(spark, kinesis, client, tmp_path):
    """Batches of at most maxFetchRecordsPerShard records per shard under availableNow, every
    record once; Trigger.Once reads all in one batch whatever the limit."""
    stream = unique("klimit")
    create_stream(client, stream, 1)
    sent = []
    for i in range(5):  # records in several arrival milliseconds, so cuts can fall between
        sent += values(f"r{i}-", 6)
        put(client, stream, values(f"r{i}-", 6))
        wait_until_clock(time.time() + 0.01)
    run = available_now(spark, load(spark, kinesis, stream, startingPosition="TRIM_HORIZON",
                                    maxFetchRecordsPerShard="10"), tmp_path / "cp")
    assert run.values() == texts(sent)
    assert len(run.batch_rows()) >= 3 and max(run.batch_rows()) <= 10, run.batch_rows()
    lag = json.loads(run.query.recentProgress[0]["sources"][0]["latestOffset"])
    assert list(lag["millisBehindLatest"]) and all(v >= 0 for v in
                                                   lag["millisBehindLatest"].values())
    once = Run(spark, load(spark, kinesis, stream, startingPosition="TRIM_HORIZON",
                           maxFetchRecordsPerShard="10"), tmp_path / "once",
               {"once": True}).finish()
    assert once.values() == texts(sent) and once.batch_rows() == [len(sent)]


def test_split_shard_reads_parents_before_children(spark, kinesis, client, tmp_path):
    stream = unique("ksplit")
    create_stream(client, stream, 1)
    parent_rows = values("p", 20)
    put(client, stream, parent_rows, key=lambda i: f"k{i}")
    shard = client.list_shards(StreamName=stream)["Shards"][0]
    hi = int(shard["HashKeyRange"]["EndingHashKey"])
    client.split_shard(StreamName=stream, ShardToSplit=shard["ShardId"],
                       NewStartingHashKey=str(hi // 2))
    wait_active(client, stream)
    children = values("c", 20)
    put(client, stream, children, key=lambda i: f"k{i}")
    df = load(spark, kinesis, stream, startingPosition="TRIM_HORIZON")
    run = available_now(spark, df, tmp_path / "cp")
    assert run.values() == texts(parent_rows + children)
    batch_of_parent = [p for p in run.query.recentProgress if p["numInputRows"]]
    assert [p["numInputRows"] for p in batch_of_parent] == [20, 20]  # parent, then children
    end = json.loads(run.query.lastProgress["sources"][0]["endOffset"])["shards"]
    assert end[f"{stream}:{shard['ShardId']}"] == {"finished": True}


def test_processing_time_trigger_reads_records_as_they_come(spark, kinesis, client, tmp_path):
    stream = unique("kproc")
    create_stream(client, stream, 1)
    run = Run(spark, load(spark, kinesis, stream, startingPosition="TRIM_HORIZON"),
              tmp_path / "cp", {"processingTime": "1 second"})
    try:
        first = values("x", 3)
        put(client, stream, first)
        wait_for(lambda: run.values() == texts(first), 120, "the first records in the sink")
        second = values("y", 3)
        put(client, stream, second)
        wait_for(lambda: run.values() == texts(first + second), 120, "the second records")
    finally:
        run.query.stop()


def test_subscribe_to_shard_registers_reads_and_deregisters(spark, kinesis, client, tmp_path):
    """consumerType SubscribeToShard: the consumer is registered when the query starts,
    the records are read over SubscribeToShard, and it is deregistered when it stops."""
    stream = unique("kefo")
    arn = create_stream(client, stream, 2)
    sent = values("e", 40)
    put(client, stream, sent)
    name = unique("consumer")
    df = load(spark, kinesis, stream, startingPosition="TRIM_HORIZON",
              consumerType="SubscribeToShard", consumerName=name)
    run = available_now(spark, df, tmp_path / "cp")
    assert run.values() == texts(sent)

    def names():
        return [c["ConsumerName"] for c in
                client.list_stream_consumers(StreamARN=arn)["Consumers"]]
    wait_for(lambda: name not in names(), 60, "the consumer to be deregistered")


def test_bad_options_fail_with_one_line(spark, kinesis, tmp_path):
    df = load(spark, kinesis, "any", consumerType="SubscribeToShard")
    with pytest.raises(Exception, match="option kinesis.consumerName is required") as failed:
        Run(spark, df, tmp_path / "cp").query.awaitTermination(120)
    assert "Traceback" not in str(failed.value)
