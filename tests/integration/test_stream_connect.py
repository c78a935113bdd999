"""A team's Trigger.AvailableNow query on Spark Connect: the example DAGs' task
(dags/kafka_stream_example.py and dags/kinesis_stream_example.py, with
``STREAM_EXAMPLE_REMOTE``) ships the package to the suite's real Connect server and registers
the data sources there (``connect_session``), and the query, the same code as on a local
session, reads the real broker (or Kinesis server, with the server's own AWS identity) on the
server, offsets in a checkpoint location the server sees, into Spark's file sink; run again,
it reads only what came since."""

import pytest

from devtools.services import create_topic
from streamslice.spark.connect import stream_session
from tests.support import kafka
from tests.support.dags import example
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration


def test_an_available_now_query_runs_on_spark_connect(spark_connect, broker, spark, tmp_path):
    dag = example("kafka_stream_example")
    with stream_session(spark_connect.remote) as remote:  # what the task's query runs on
        assert type(remote).__module__.startswith("pyspark.sql.connect"), type(remote)
    topic = unique("connect-stream")
    create_topic(broker.bootstrap, topic, 2)
    kafka.send(broker.bootstrap, topic, range(0, 10), 0)
    kafka.send(broker.bootstrap, topic, range(10, 20), 1)
    paths = (broker.bootstrap, topic, str(tmp_path / "checkpoint"), str(tmp_path / "out"))
    batches = dag.available_now(*paths, max_offsets="7", remote=spark_connect.remote)
    rows = [n for n in batches.values() if n]
    assert sum(rows) == 20 and max(rows) <= 7 + 1 and len(rows) >= 3, batches
    kafka.send(broker.bootstrap, topic, range(20, 25), 1)
    again = dag.available_now(*paths, max_offsets="7", remote=spark_connect.remote)
    assert [n for n in again.values() if n] == [5]
    out = spark.read.parquet(str(tmp_path / "out")).collect()  # as Spark reads a file sink's
    assert sorted(int(r.value) for r in out) == list(range(25))
    assert len({(r.partition, r.offset) for r in out}) == 25


def test_the_kinesis_example_query_runs_on_spark_connect(spark_connect, kinesis, spark, tmp_path):
    """The Kinesis example's query on the server, which signs with its own AWS identity (the
    task sends no keys): each record PutRecords stored lands once across two runs."""
    dag = example("kinesis_stream_example")
    client = kinesis.client()
    stream = unique("connect-kinesis")
    create_stream(client, stream, 2)
    at = put(client, stream, [str(v).encode() for v in range(20)])
    args = (stream, "us-east-1", str(tmp_path / "checkpoint"), str(tmp_path / "out"))
    kw = {"endpoint": kinesis.endpoint, "consumer_type": "GetRecords",
          "remote": spark_connect.remote}
    assert sum(dag.available_now(*args, **kw).values()) == 20
    at += put(client, stream, [str(v).encode() for v in range(20, 25)])
    assert [n for n in dag.available_now(*args, **kw).values() if n] == [5]
    out = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.shardId, r.sequenceNumber, int(r.data)) for r in out) == sorted(
        (shard, seq, v) for (shard, seq), v in zip(at, range(25)))
