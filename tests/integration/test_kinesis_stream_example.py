"""The Kinesis example DAG of docs/streaming.md (dags/kinesis_stream_example.py): it parses,
and its task's query reads a stream's records once across runs, into Parquet, on the real
Kinesis server and Spark, polling and over Enhanced Fan-Out, in the task and under
spark-submit. Each record is judged by what PutRecords said it stored (shard and sequence
number)."""
import sys
import time

import pytest

from tests.conftest import ROOT
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import unique
from tests.support.wait import wait_for, wait_until_clock

pytestmark = pytest.mark.integration

# the suite's Kinesis server takes any keys; a deployment's come from the default chain
KEYS = {"kinesis.awsAccessKeyId": "test", "kinesis.awsSecretKey": "test"}


def example():
    sys.path.insert(0, str(ROOT / "dags"))
    try:
        import kinesis_stream_example
    finally:
        sys.path.remove(str(ROOT / "dags"))
    return kinesis_stream_example


def payloads(start, stop):
    return [str(v).encode() for v in range(start, stop)]


def put_spread(client, stream, values):
    """PutRecords five at a time, each five in an arrival millisecond of its own: a batch
    cuts a shard only between two arrival times, so maxFetchRecordsPerShard can bound it."""
    at = []
    for lo in range(0, len(values), 5):
        at += put(client, stream, values[lo:lo + 5])
        wait_until_clock(time.time() + 0.01)
    return at


def stored(spark, output):
    """[(shard, sequence number, value)] of the Parquet output, one per row written."""
    rows = spark.read.parquet(output).select("shardId", "sequenceNumber", "data").collect()
    return sorted((r.shardId, r.sequenceNumber, r.data) for r in rows)


def ledger(positions, values):
    return sorted((shard, seq, v.decode()) for (shard, seq), v in zip(positions, values))


def test_the_kinesis_example_dag_parses_paused_and_unscheduled():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.definitions.timetables.simple import NullTimetable
    bag = DagBag(dag_folder=str(ROOT / "dags" / "kinesis_stream_example.py"))
    assert bag.import_errors == {}
    dag = bag.dags["kinesis_stream_example"]
    assert [t.task_id for t in dag.tasks] == ["read_available_now"]
    assert dag.is_paused_upon_creation is True
    assert isinstance(dag.timetable, NullTimetable)  # runs only when triggered
    assert dag.max_active_runs == 1  # one query at a time on its checkpoint location


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
    batches = example().available_now(*args, **kw)
    rows = [n for n in batches.values() if n]
    assert sum(rows) == 30 and len(rows) >= 2 and max(rows) <= 2 * 10, batches
    assert stored(spark, str(tmp_path / "out")) == ledger(at, first)
    second = payloads(30, 45)
    at += put_spread(client, stream, second)
    assert sum(example().available_now(*args, **kw).values()) == 15
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
