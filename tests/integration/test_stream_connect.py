"""A team's Trigger.AvailableNow query on Spark Connect: the example DAG's task
(dags/kafka_stream_example.py, with ``STREAM_EXAMPLE_REMOTE``) ships the package to the
suite's real Connect server and registers the data sources there (``connect_session``), and
the query, the same code as on a local session, reads the real broker on the server, offsets
in a checkpoint location the server sees, into Spark's file sink; run again, it reads only
what came since."""
import sys

import pytest

from devtools.services import create_topic
from tests.conftest import ROOT
from tests.support import kafka
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration


def example():
    sys.path.insert(0, str(ROOT / "dags"))
    try:
        import kafka_stream_example
    finally:
        sys.path.remove(str(ROOT / "dags"))
    return kafka_stream_example


def test_an_available_now_query_runs_on_spark_connect(spark_connect, broker, spark, tmp_path):
    dag = example()
    with dag.session(spark_connect.remote) as remote:  # what the task's query runs on
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
