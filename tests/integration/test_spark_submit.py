"""The read job under spark-submit against a real standalone master + worker, and as a plain
script (in-process local[*]) with a clean error when the broker is unreachable."""
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pyarrow.dataset as ds
import pytest

from devtools.services import SparkStandalone, create_topic, free_port
from devtools.taxi import produce, trips
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import ReadPlan
from tests.support.connections import connection
from tests.support.pipelines import kafka_pipeline, run_dag, unique

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def standalone(session_dir):
    cluster = SparkStandalone(session_dir / "spark-standalone").start()
    yield cluster
    cluster.stop()


def test_pipeline_read_through_spark_submit(broker, standalone, airflow_db, tmp_path,
                                            monkeypatch):
    """The connection's SASL/PLAIN password reaches the executors only as the private file
    spark-submit ships with ``--files`` (librdkafka refuses PLAIN without it): it is in no
    command line, conf or log the cluster keeps, only in the shipped copies."""
    topic = unique("submit")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(1_714_521_600_000, 1, 300, seed=5))
    password = f"pw-{unique('submit')}"
    connection(monkeypatch, "submit_kafka", "kafka", login="svc", password=password,
               extra={"bootstrap.servers": broker.bootstrap,
                      "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    cfg = kafka_pipeline(None, topic, name=unique("submit"), retries=0,
                         kafka={"conn_id": "submit_kafka", "commit_offsets_to_group": False},
                         spark={"runner": "spark-submit", "master": standalone.master,
                                "conf": {"spark.executor.memory": "512m",
                                         "spark.cores.max": "2"}},
                         output=tmp_path)
    run_dag(cfg)
    t = ds.dataset(f"{cfg.output.dataset(cfg.name)}/batch=00000001").to_table()
    assert sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist())) == \
        sorted((p, o) for p, o, _ in sent)
    shipped: list[Path] = []
    leaks: list[Path] = []
    for path in standalone.work_dir.rglob("*"):  # executors' folders, their logs, launch cmds
        if path.is_file() and password.encode() in path.read_bytes():
            (shipped if path.name == "secrets.json" else leaks).append(path)
    assert shipped, "no executor got the private file through --files"
    assert not leaks, f"the password is in {leaks}"


def test_job_script_reports_a_clean_error(tmp_path):
    port = free_port()  # nothing listens here
    plan = ReadPlan(pipeline="p", source="kafka", mode="bounded", planned_at=0,
                    splits=[KafkaSplit(0, "t", 0, 0, 10)], partition="run=x")
    (tmp_path / "plan.json").write_text(plan.to_json())
    (tmp_path / "props.json").write_text(json.dumps(
        {"bootstrap.servers": f"127.0.0.1:{port}", "socket.connection.setup.timeout.ms": "2000"}))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "plugins"))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", "bounded_read.py"),
                          "--plan", str(tmp_path / "plan.json"), "--staging",
                          str(tmp_path / "staging"), "--properties", str(tmp_path / "props.json")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"streamslice[source@0]: t:0: cannot reach Kafka at 127.0.0.1:"
                           f"{port}"), last
    assert "Traceback" not in out.stderr
