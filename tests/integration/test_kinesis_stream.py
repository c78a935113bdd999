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


CONSUMERS = ["GetRecords", "SubscribeToShard"]


def consumer(kind):
    """The options of a consumer type (SubscribeToShard with a consumer of its own)."""
    if kind == "GetRecords":
        return {"consumerType": kind}
    return {"consumerType": kind, "consumerName": unique("consumer")}


def assert_read_over(kinesis, stream, kind, records):
    """The records came the way ``kind`` says, judged by what the Kinesis proxy relayed for
    the stream, outside streamslice: all of them in SubscribeToShardEvents, or none and no
    subscription. (The driver's read-ahead for maxFetchRecordsPerShard polls either way.)"""
    calls = kinesis.calls(stream)
    if kind == "SubscribeToShard":
        assert calls.get("SubscribeToShard records", 0) >= records, calls
    else:
        assert "SubscribeToShard" not in calls and "SubscribeToShard records" not in calls, calls


@pytest.mark.parametrize("kind", CONSUMERS)
def test_trim_horizon_can_be_used_as_starting_position(spark, kinesis, client, tmp_path, kind):
    """Everything from TRIM_HORIZON; the query stopped, two shards merged, records put, and
    the query started again on its checkpoint reads the new ones once, parents first."""
    stream = unique("ktrim")
    create_stream(client, stream, 2)
    first = values("a", 30)
    put(client, stream, first)
    options = {"startingPosition": "TRIM_HORIZON", **consumer(kind)}
    run = available_now(spark, load(spark, kinesis, stream, **options), tmp_path / "cp")
    assert run.values() == texts(first)
    assert_read_over(kinesis, stream, kind, len(first))
    one, two = sorted(s["ShardId"] for s in client.list_shards(StreamName=stream)["Shards"])
    client.merge_shards(StreamName=stream, ShardToMerge=one, AdjacentShardToMerge=two)
    wait_active(client, stream)
    second = values("b", 10)
    put(client, stream, second)
    again = available_now(spark, load(spark, kinesis, stream, **options), tmp_path / "cp")
    assert again.values() == texts(first + second)  # the file sink holds both runs, once each
    offsets = json.loads(again.query.lastProgress["sources"][0]["endOffset"])
    assert offsets["initial"] == {"type": "TRIM_HORIZON"}
    assert offsets["shards"][f"{stream}:{one}"] == {"finished": True}
    assert len(offsets["shards"]) == 3


def test_earliest_can_be_used_as_starting_position(spark, kinesis, client, tmp_path):
    stream = unique("kearliest")
    create_stream(client, stream, 2)
    sent = values("e", 12)
    put(client, stream, sent)
    run = available_now(spark, load(spark, kinesis, stream, startingPosition="EARLIEST"),
                        tmp_path / "cp")
    assert run.values() == texts(sent)


def test_kinesis_connector_reads_from_latest_default(spark, kinesis, client, tmp_path):
    """LATEST is the connector's default: a query under a processing-time trigger reads
    what is put after it started, not what was there before."""
    stream = unique("klatest")
    create_stream(client, stream, 1)
    put(client, stream, values("old", 5))
    run = Run(spark, load(spark, kinesis, stream), tmp_path / "cp",
              {"processingTime": "1 second"})
    try:
        wait_for(lambda: run.query.lastProgress is not None, 120, "the query's first batch")
        first = values("x", 3)
        put(client, stream, first)
        wait_for(lambda: run.values() == texts(first), 120, "the first records in the sink")
        second = values("y", 3)
        put(client, stream, second)
        wait_for(lambda: run.values() == texts(first + second), 120, "the second records")
    finally:
        run.query.stop()


def test_at_timestamp_can_be_used_as_starting_position(spark, kinesis, client, tmp_path):
    """``AT_TIMESTAMP 2023-08-30T19:00:05Z`` as the connector writes it: records that
    arrived before that second are not read."""
    stream = unique("kts")
    create_stream(client, stream, 1)
    put(client, stream, values("before", 3))
    second = int(time.time()) + 2
    wait_until_clock(second + 0.2)
    after = values("after", 3)
    put(client, stream, after)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    df = load(spark, kinesis, stream, startingPosition=f"AT_TIMESTAMP {stamp}")
    assert available_now(spark, df, tmp_path / "cp").values() == texts(after)


@pytest.mark.parametrize("kind", CONSUMERS)
def test_kinesis_connector_restore_from_previous_checkpoint_uncommitted(
        spark, kinesis, client, tmp_path, kind):
    """A batch whose commit is lost (its commit log entry and the file sink's) runs again on
    restart with the offsets Spark logged: the same records, not the ones put since, which
    the next batch reads."""
    stream = unique("krestore")
    create_stream(client, stream, 2)
    first = values("a", 5)
    put(client, stream, first)
    options = {"startingPosition": "TRIM_HORIZON", **consumer(kind)}
    cp = tmp_path / "cp"
    assert batches(spark, load(spark, kinesis, stream, **options), cp) == {0: texts(first)}
    for name in ("0", ".0.crc"):  # batch 0's commit is lost
        (cp / "commits" / name).unlink(missing_ok=True)
    second = values("b", 6)
    put(client, stream, second)
    again = batches(spark, load(spark, kinesis, stream, **options), cp)
    assert again == {0: texts(first), 1: texts(second)}


def batches(spark, df, checkpoint):
    """{batch id: its values} of an availableNow query through ``foreachBatch``."""
    seen = {}

    def keep(batch, batch_id):
        seen[batch_id] = sorted(r.v for r in batch.selectExpr("CAST(data AS STRING) AS v")
                                .collect())
    query = (df.writeStream.foreachBatch(keep).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination(240)
    assert not query.isActive
    return {k: v for k, v in seen.items() if v}


@pytest.mark.parametrize("kind", CONSUMERS)
def test_read_from_trim_horizon_after_reshards(spark, kinesis, client, tmp_path, kind):
    """A shard split and two of its children merged before the query starts: each closed
    shard is read to its end in one batch, and its children only in a later one."""
    stream = unique("kreshard")
    create_stream(client, stream, 1)
    expected = values("p", 20)
    put(client, stream, expected, key=lambda i: f"k{i}")
    parent = client.list_shards(StreamName=stream)["Shards"][0]
    hi = int(parent["HashKeyRange"]["EndingHashKey"])
    client.split_shard(StreamName=stream, ShardToSplit=parent["ShardId"],
                       NewStartingHashKey=str(hi // 2))
    wait_active(client, stream)
    children = values("c", 20)
    put(client, stream, children, key=lambda i: f"k{i}")
    expected += children
    shards = client.list_shards(StreamName=stream)["Shards"]
    one, two = sorted(s["ShardId"] for s in shards if s.get("ParentShardId"))
    client.merge_shards(StreamName=stream, ShardToMerge=one, AdjacentShardToMerge=two)
    wait_active(client, stream)
    merged = values("m", 20)
    put(client, stream, merged, key=lambda i: f"k{i}")
    expected += merged
    df = load(spark, kinesis, stream, startingPosition="TRIM_HORIZON", **consumer(kind))
    run = available_now(spark, df, tmp_path / "cp")
    assert run.values() == texts(expected)
    batches = [p["numInputRows"] for p in run.query.recentProgress if p["numInputRows"]]
    assert batches == [20, 20, 20]  # the parent, its children, their child
    rows = run.rows()
    assert {s for v, s, _ in rows if v.startswith("p")} == {parent["ShardId"]}
    assert {s for v, s, _ in rows if v.startswith("c")} == {one, two}


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


def test_a_subscribe_to_shard_query_under_trigger_once_never_polls(spark, kinesis, client,
                                                                   tmp_path):
    """The read-ahead is for maxFetchRecordsPerShard: a Trigger.Once query, which has no
    bound on its batch, asks for no shard iterator and no GetRecords at all, as the streaming
    page says; every record comes over SubscribeToShard."""
    stream = unique("konce")
    create_stream(client, stream, 2)
    sent = values("o", 20)
    put(client, stream, sent)
    df = load(spark, kinesis, stream, startingPosition="TRIM_HORIZON",
              consumerType="SubscribeToShard", consumerName=unique("consumer"))
    run = Run(spark, df, tmp_path / "cp", {"once": True}).finish()
    assert run.values() == texts(sent)
    assert_read_over(kinesis, stream, "SubscribeToShard", len(sent))
    calls = kinesis.calls(stream)
    assert "GetRecords" not in calls and "GetShardIterator" not in calls, calls


@pytest.mark.parametrize("registration", ["per_run", "keep"])
def test_subscribe_to_shard_registers_reads_and_deregisters(spark, kinesis, client, tmp_path,
                                                            registration):
    """consumerType SubscribeToShard: the consumer is registered (or reused) when the query
    starts and the records are read over SubscribeToShard; per_run deregisters it when the
    availableNow query reaches its end, keep leaves it for the next run."""
    stream = unique("kefo")
    arn = create_stream(client, stream, 2)
    sent = values("e", 40)
    put(client, stream, sent)
    name = unique("consumer")
    df = load(spark, kinesis, stream, startingPosition="TRIM_HORIZON",
              consumerType="SubscribeToShard", consumerName=name, efoRegistration=registration)
    run = available_now(spark, df, tmp_path / "cp")
    assert run.values() == texts(sent)
    assert_read_over(kinesis, stream, "SubscribeToShard", len(sent))

    def status():
        found = [c["ConsumerStatus"] for c in
                 client.list_stream_consumers(StreamARN=arn)["Consumers"]
                 if c["ConsumerName"] == name]
        return found[0] if found else None
    if registration == "keep":
        assert status() == "ACTIVE"
    else:
        wait_for(lambda: status() is None, 60, "the consumer to be deregistered")


def test_bad_options_fail_with_one_line(spark, kinesis):
    with pytest.raises(Exception, match="option kinesis.consumerName is required") as failed:
        load(spark, kinesis, "any", consumerType="SubscribeToShard")
    assert "Traceback" not in str(failed.value)
    with pytest.raises(Exception, match="unknown option 'kinesis.startposition'.*did you "
                                        "mean kinesis.startingPosition"):
        load(spark, kinesis, "any", startPosition="LATEST")


def test_efo_registration_none_reads_with_the_consumer_it_is_given(spark, kinesis, client,
                                                                   tmp_path):
    """efoRegistration none: the executors subscribe with the ARN in consumerArns (a
    consumer the test registered); an ARN of no consumer fails the read on SubscribeToShard,
    so the records did come that way."""
    from streamslice.kinesis.consumers import register
    stream = unique("knone")
    arn = create_stream(client, stream, 1)
    sent = values("n", 10)
    put(client, stream, sent)
    consumer_arn = register(client, arn, unique("given"))
    options = {"startingPosition": "TRIM_HORIZON", "consumerType": "SubscribeToShard",
               "efoRegistration": "none"}
    df = load(spark, kinesis, stream, consumerArns=json.dumps({stream: consumer_arn}),
              **options)
    assert available_now(spark, df, tmp_path / "cp").values() == texts(sent)
    assert_read_over(kinesis, stream, "SubscribeToShard", len(sent))
    wrong = consumer_arn.replace(consumer_arn.split("/")[-1].split(":")[0], "nobody")
    df = load(spark, kinesis, stream, consumerArns=json.dumps({stream: wrong}), **options)
    with pytest.raises(Exception, match="SubscribeToShard|nobody"):
        available_now(spark, df, tmp_path / "wrong")
