"""``spark.runner: connect``: reads run on a long-running Spark Connect server (the
``spark_connect`` fixture: the server from the pyspark install on local[*]) through real
Airflow runs and a real broker, each run one task (``tasks: combined``, the default there).
Runs of several intervals share the server at once; a server that is down, or dies
mid-read, fails the read as a retryable source error and nothing is published twice."""
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from typing import TYPE_CHECKING, cast

import pyarrow.dataset as ds
import pytest

from devtools.services import SparkConnect, create_topic, free_port
from devtools.taxi import produce, trips
from streamslice.errors import SourceError
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import ReadPlan
from tests.conftest import ROOT
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

if TYPE_CHECKING:
    from pyspark.sql._typing import UserDefinedFunctionLike

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000


def connect_pipeline(broker, topic, remote, path, retries=0, retry_delay="1s", conf=None):
    return kafka_pipeline(broker.bootstrap, topic, name=unique("connect"), mode="interval",
                          schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                          retries=retries, retry_delay=retry_delay,
                          kafka={"max_records_per_split": 100},
                          spark={"runner": "connect", "remote": remote, "conf": conf or {}},
                          output=path)


def hour_rows(cfg, hour):
    part = f"{cfg.output.dataset(cfg.name)}/interval=20240501T{hour:02d}0000Z"
    t = ds.dataset(part, format="parquet").to_table(columns=["partition", "offset"])
    return list(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))


def expected_rows(sent, hour):
    return sorted((p, o) for p, o, ts in sent if (ts - T0) // HOUR == hour)


def test_interval_runs_through_airflow_on_spark_connect(broker, spark_connect, airflow_db,
                                                        tmp_path):
    from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
    topic = unique("connect")
    create_topic(broker.bootstrap, topic, 3)
    sent = produce(broker.bootstrap, topic, trips(T0, hours=2, per_hour=250, seed=31,
                                                  late_share=0))
    cfg = connect_pipeline(broker, topic, spark_connect.remote, tmp_path)
    for hour in range(2):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
    for hour in range(2):
        got = hour_rows(cfg, hour)
        assert sorted(got) == expected_rows(sent, hour), f"hour {hour}"
        assert len(got) == len(set(got)), "a record landed twice"
        part = f"{cfg.output.dataset(cfg.name)}/interval=20240501T{hour:02d}0000Z"
        assert all(re.fullmatch(r"part-\d{5}\.parquet|_manifest\.json", name)
                   for name in os.listdir(part))  # the readers wrote them (direct path)
    checkpoint = present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get())
    assert checkpoint.interval_end == T0 + 2 * HOUR


def test_the_package_reaches_the_server_as_an_artifact(spark_connect):
    """The server's Python workers import streamslice from the zip the task uploaded (the
    same code as the task), not from whatever the server's own Python has."""
    from pyspark.sql.connect.functions import udf
    from pyspark.sql.types import StringType

    from streamslice.spark.connect import connect_session

    def where(_):
        import streamslice
        return streamslice.__file__

    with connect_session(spark_connect.remote) as spark:
        # Connect's udf() is typed as a UDF or a decorator; given a function it is a UDF
        on_executor = cast("UserDefinedFunctionLike", udf(where, StringType()))
        found = spark.range(1).select(on_executor("id")).collect()[0][0]
    # the zip is named by a hash of the sources (other work may change them meanwhile)
    assert re.search(r"/streamslice-[0-9a-f]{16}\.zip/streamslice/__init__\.py$", found), found


def test_spark_conf_is_session_settings_and_a_server_setting_is_refused_by_name(spark_connect):
    """With runner connect, ``spark.conf`` holds session settings (``spark.sql.*``); one only
    a server start can set is refused naming it, as the pipeline reference says."""
    from streamslice.errors import ConfigError
    from streamslice.spark.connect import connect_session
    with connect_session(spark_connect.remote, {"spark.sql.shuffle.partitions": "3"}) as spark:
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    with pytest.raises(ConfigError, match=r"^spark.conf: spark.executor.memory cannot be set "
                                          r"per session on a Spark Connect server; set it "
                                          r"where the server starts$"):
        with connect_session(spark_connect.remote, {"spark.executor.memory": "1g"}):
            pass


def test_executor_errors_keep_their_kind_and_split(spark_connect, tmp_path):
    from streamslice.spark.connect import run_connect_read
    port = free_port()  # no broker here
    plan = ReadPlan(pipeline="p", source="kafka", mode="bounded", planned_at=0,
                    splits=[KafkaSplit(0, "t", 0, 0, 10)], partition="run=x")
    with pytest.raises(SourceError) as err:
        run_connect_read(spark_connect.remote, plan, str(tmp_path / "staging"), properties={
            "bootstrap.servers": f"127.0.0.1:{port}",
            "socket.connection.setup.timeout.ms": "2000"})
    assert err.value.split == 0
    assert str(err.value).startswith(f"t:0: cannot reach Kafka at 127.0.0.1:{port}")


def test_a_server_that_is_down_is_a_retryable_source_error(broker, airflow_db, tmp_path):
    from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
    from streamslice.spark.connect import run_connect_read
    remote = f"sc://127.0.0.1:{free_port()}"  # nothing listens here
    plan = ReadPlan(pipeline="p", source="kafka", mode="bounded", planned_at=0,
                    splits=[KafkaSplit(0, "t", 0, 0, 10)], partition="run=x")
    with pytest.raises(SourceError) as err:
        run_connect_read(remote, plan, str(tmp_path / "staging"))
    assert err.value.transient
    message = str(err.value)
    assert message.startswith("the Spark Connect server cannot be reached") and \
        "\n" not in message and remote.removeprefix("sc://") in message, message

    topic = unique("connect-down")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, trips(T0, hours=1, per_hour=20, seed=3, late_share=0))
    cfg = connect_pipeline(broker, topic, remote, tmp_path / "lake")
    run = run_dag(cfg, logical_date=utc(2024, 5, 1, 1), expect="failed")
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert states == {"plan_read_commit": "failed"}, states  # tasks: combined, by default
    assert not os.path.exists(cfg.output.dataset(cfg.name))
    assert OfflineCheckpointStore(f"streamslice/{cfg.name}").get() is None


def test_server_killed_mid_read_then_the_retry_publishes_once(broker, airflow_db, session_dir,
                                                              tmp_path, monkeypatch):
    """A fault in a server-side reader SIGKILLs the whole server (JVM and Python workers)
    mid-read; a watcher starts it again on the same port; Airflow's retry of the read task
    then publishes the interval exactly once."""
    topic = unique("connect-kill")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, hours=1, per_hour=300, seed=4,
                                                  late_share=0))
    server = SparkConnect(session_dir / f"spark-connect-{topic}",
                          conf=json.loads(os.environ["STREAMSLICE_SPARK_CONF"])).start()
    restarted = threading.Event()

    def restart_when_killed():
        present(server._proc).wait()
        monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")  # the retry reads undisturbed
        server.start()
        restarted.set()

    watcher = threading.Thread(target=restart_when_killed, daemon=True)
    try:
        cfg = connect_pipeline(broker, topic, server.remote, tmp_path, retries=6,
                               retry_delay="15s")
        monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "read:split=1:after=10:action=kill")
        watcher.start()
        run = run_dag(cfg, logical_date=utc(2024, 5, 1, 1))
        assert restarted.is_set(), "the server was never killed"
        (read,) = run.get_task_instances()  # plan, read and commit: one task on Connect
        assert read.task_id == "plan_read_commit" and read.try_number > 1
        got = hour_rows(cfg, 0)
        assert sorted(got) == expected_rows(sent, 0) and len(got) == len(set(got))
    finally:
        watcher.join(120)
        server.stop()


def test_concurrent_interval_runs_share_one_server(broker, spark_connect, airflow_db,
                                                   tmp_path):
    """Four intervals at once, each an Airflow run in its own process (as a backfill's task
    processes are), all reading on one Connect server. Settings no other test uses give them
    a session of their own, new to the server, so they also race to create it and to upload
    the package."""
    topic = unique("connect-par")
    create_topic(broker.bootstrap, topic, 4)
    sent = produce(broker.bootstrap, topic, trips(T0, hours=4, per_hour=300, seed=17,
                                                  late_share=0))
    cfg = connect_pipeline(broker, topic, spark_connect.remote, tmp_path,
                           conf={"spark.sql.shuffle.partitions": "3"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))

    def dag_run(hour, *flags):
        return subprocess.Popen([sys.executable, "-m", "devtools.dag_run", cfg.file,
                                 f"2024-05-01T{hour + 1:02d}:00:00+00:00", *flags], cwd=ROOT,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    noop = dag_run(20, "--noop")  # puts the DAG in the database before the rush
    assert noop.wait(600) == 0, noop.stderr.read()[-3000:]
    procs = [dag_run(hour) for hour in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, (out + err)[-4000:]
    reads = [json.loads(out.strip().splitlines()[-1])["tasks"]["plan_read_commit"]
             for out, _ in outs]
    assert all(r["state"] == "success" for r in reads)
    overlapping = [(a, b) for i, a in enumerate(reads) for b in reads[i + 1:]
                   if a["start"] < b["end"] and b["start"] < a["end"]]
    assert overlapping, f"the runs' tasks never ran at the same time: {reads}"
    seen: Counter[tuple[int, int]] = Counter()
    for hour in range(4):
        got = hour_rows(cfg, hour)
        assert sorted(got) == expected_rows(sent, hour), f"hour {hour}"
        seen.update(got)
    assert sorted(seen) == sorted((p, o) for p, o, _ in sent)
    assert set(seen.values()) == {1}, "a record landed twice"


def test_a_shared_session_is_set_up_once(spark_connect, monkeypatch):
    """The first run on a shared session sets it up (settings, the package, the data
    sources) and marks it; the next finds the mark and does none of it again, and reads."""
    from streamslice.spark import connect
    set_up = []
    original = connect._set_up

    def counted(*a):
        set_up.append(a)
        original(*a)
    monkeypatch.setattr(connect, "_set_up", counted)
    conf = {"spark.sql.shuffle.partitions": "7"}  # a session of this test's own
    for _ in range(2):
        with connect.connect_session(spark_connect.remote, conf) as spark:
            assert spark.conf.get("spark.sql.shuffle.partitions") == "7"
            rows = spark.read.format("streamslice-kafka").option("plan", ReadPlan(
                pipeline="p", source="kafka", mode="bounded", planned_at=0, splits=[],
                partition="run=x").to_json()).load().count()
            assert rows == 0
    assert len(set_up) == 1
