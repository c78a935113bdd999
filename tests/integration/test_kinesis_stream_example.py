"""The Kinesis example DAG of docs/streaming.md (dags/kinesis_stream_example.py; that it
parses, test_stream_example_dag.py checks): its task's query reads a stream's records once
across runs, into Parquet, on the real Kinesis server and Spark, polling and over Enhanced
Fan-Out, in the task and under spark-submit. Each record is judged by what PutRecords said it
stored (shard and sequence number)."""
import sys

import pytest

from tests.conftest import ROOT
from tests.support.dags import example
from tests.support.kinesis import create_stream, put
from tests.support.kinesis import put_spread as spread
from tests.support.pipelines import unique
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration

# the suite's Kinesis server takes any keys; a deployment's come from the default chain
KEYS = {"kinesis.awsAccessKeyId": "test", "kinesis.awsSecretKey": "test"}


def payloads(start, stop):
    return [str(v).encode() for v in range(start, stop)]


def put_spread(client, stream, values):
    """Five records a PutRecords call, each call in an arrival millisecond of its own."""
    return spread(client, stream, values, 5, 0.01)


def stored(spark, output):
    """[(shard, sequence number, value)] of the Parquet output, one per row written."""
    rows = spark.read.parquet(output).select("shardId", "sequenceNumber", "data").collect()
    return sorted((r.shardId, r.sequenceNumber, r.data) for r in rows)


def ledger(positions, values):
    return sorted((shard, seq, v.decode()) for (shard, seq), v in zip(positions, values))


@pytest.mark.parametrize("kind", ["GetRecords", "SubscribeToShard"])
def test_the_kinesis_example_reads_each_record_once_across_runs(spark, kinesis, tmp_path, kind):
    """Two runs on one checkpoint, batches of at most 10 records a shard: the first reads
    what the stream held from TRIM_HORIZON, the second only what was put since; an EFO
    consumer is gone again when a run ends."""
    client = kinesis.client()
    stream = unique("kexample")
    arn = create_stream(client, stream, 2)
    first = payloads(0, 30)
    at = put_spread(client, stream, first)
    consumer = unique("kexample-efo") if kind == "SubscribeToShard" else None
    args = (stream, "us-east-1", str(tmp_path / "cp"), str(tmp_path / "out"))
    kw = {"endpoint": kinesis.endpoint, "max_fetch": "10", "consumer_type": kind,
          "consumer_name": consumer, "options": KEYS}
    batches = example("kinesis_stream_example").available_now(*args, **kw)
    rows = [n for n in batches.values() if n]
    assert sum(rows) == 30 and len(rows) >= 2 and max(rows) <= 2 * 10, batches
    assert stored(spark, str(tmp_path / "out")) == ledger(at, first)
    second = payloads(30, 45)
    at += put_spread(client, stream, second)
    assert sum(example("kinesis_stream_example").available_now(*args, **kw).values()) == 15
    assert stored(spark, str(tmp_path / "out")) == ledger(at, first + second)
    wait_for(lambda: not client.list_stream_consumers(StreamARN=arn)["Consumers"], 60,
             "the example's consumer to be deregistered")


def test_the_kinesis_example_runs_under_spark_submit(spark, kinesis, tmp_path):
    """``spark-submit dags/kinesis_stream_example.py STREAM REGION CHECKPOINT OUTPUT``, the
    endpoint from the environment and the keys from the default chain (the environment's)."""
    import os
    import subprocess

    from streamslice.spark.submit import spark_submit_binary
    client = kinesis.client()
    stream = unique("kexample-submit")
    create_stream(client, stream, 1)
    sent = payloads(0, 12)
    at = put(client, stream, sent)
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               KINESIS_EXAMPLE_ENDPOINT=kinesis.endpoint, AWS_ACCESS_KEY_ID="test",
               AWS_SECRET_ACCESS_KEY="test")  # the local server takes any keys
    out = subprocess.run([spark_submit_binary(), "--master", "local[2]",
                          str(ROOT / "dags" / "kinesis_stream_example.py"), stream, "us-east-1",
                          str(tmp_path / "cp"), str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert stored(spark, str(tmp_path / "out")) == ledger(at, sent)
