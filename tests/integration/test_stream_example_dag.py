"""The example DAGs of docs/streaming.md: both parse; dags/kafka_stream_example.py's
task's query reads a topic's records once across runs, into Parquet, on the real broker and
Spark."""
import pytest

from devtools.services import create_topic
from tests.conftest import ROOT
from tests.support.dags import example
from tests.support.kafka import producer
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", ["kafka_stream_example", "kinesis_stream_example"])
def test_the_example_dags_parse_paused_and_unscheduled(name):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.definitions.timetables.simple import NullTimetable
    bag = DagBag(dag_folder=str(ROOT / "dags" / f"{name}.py"))
    assert bag.import_errors == {}
    dag = bag.dags[name]
    assert [t.task_id for t in dag.tasks] == ["read_available_now"]
    assert dag.is_paused_upon_creation is True
    assert isinstance(dag.timetable, NullTimetable)  # runs only when triggered
    assert dag.max_active_runs == 1  # one query at a time on its checkpoint location


def test_the_example_query_reads_each_record_once_across_runs(spark, broker, tmp_path):
    available_now = example("kafka_stream_example").available_now
    topic = unique("example")
    create_topic(broker.bootstrap, topic, 2)

    def send(values):
        with producer(broker.bootstrap) as p:
            for v in values:
                p.produce(topic, value=str(v).encode(), partition=v % 2)

    send(range(30))
    paths = (broker.bootstrap, topic, str(tmp_path / "cp"), str(tmp_path / "out"))
    assert sum(available_now(*paths, max_offsets="10").values()) == 30
    send(range(30, 45))
    assert sum(available_now(*paths, max_offsets="10").values()) == 15
    rows = spark.read.parquet(str(tmp_path / "out")).select("value").collect()
    assert sorted(int(r.value) for r in rows) == list(range(45))


def test_the_example_runs_under_spark_submit(spark, broker, tmp_path):
    """``spark-submit dags/kafka_stream_example.py BOOTSTRAP TOPIC CHECKPOINT OUTPUT``, as the
    streaming page says a cluster runs it; the checkpoint is then the next run's."""
    import os
    import subprocess
    import sys

    from streamslice.spark.submit import spark_submit_binary
    topic = unique("example-submit")
    create_topic(broker.bootstrap, topic, 1)
    with producer(broker.bootstrap) as p:
        for v in range(12):
            p.produce(topic, value=str(v).encode(), partition=0)
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    out = subprocess.run([spark_submit_binary(), "--master", "local[2]",
                          str(ROOT / "dags" / "kafka_stream_example.py"), broker.bootstrap, topic,
                          str(tmp_path / "cp"), str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = spark.read.parquet(str(tmp_path / "out")).select("value").collect()
    assert sorted(int(r.value) for r in rows) == list(range(12))
