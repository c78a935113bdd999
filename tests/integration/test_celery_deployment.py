"""The deployment teams run (docs/deployment.md): Airflow with the CeleryExecutor, Redis as its
broker and PostgreSQL as its metadata database, two Celery workers that share no local disk
(devtools/deployment.py: each its own HOME, AIRFLOW_HOME, working and temporary folders and
host name), output and staging on an S3 API server (moto), reads on a Spark Connect server.
Pipelines run through the scheduler: intervals with plan, read and commit as three tasks
(each may land on either worker, so the commit finds the read's staging only on S3) and
incremental runs as one task. Then a worker is SIGKILLed with its tasks, as when its host
dies, in the middle of a read and in the middle of a commit's copy to S3: Airflow retries on
the other worker and every record is in the output once (pyarrow and DuckDB over S3, against
the ledger of what was produced)."""
import os
import shutil
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest

from devtools.deployment import CeleryDeployment
from devtools.duck import connect
from devtools.services import MotoServer, Postgres, create_topic
from devtools.taxi import produce, trips
from tests.chaos.test_airflow_retry import Run
from tests.integration.test_read_ahead import backfill, plans_and_starts
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kafka_pipeline, kinesis_pipeline, unique
from tests.support.wait import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.deploy]
ROOT = Path(__file__).resolve().parents[2]
BUCKET = "lake"
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
WORKERS = ("worker-a", "worker-b")


class Deployment(CeleryDeployment):
    """The deployment, its faults file and the folder its pipelines are written to."""

    faults: Path
    pipelines: Path


@pytest.fixture(scope="module")
def s3():
    moto = MotoServer().start()
    moto.client("s3").create_bucket(Bucket=BUCKET)
    yield moto
    moto.stop()


@pytest.fixture(scope="module")
def deployment(s3, tmp_path_factory):
    """The Celery deployment, started once for this module and stopped after it, with every
    process it started. Its tasks fire the faults listed in ``deployment.faults``."""
    # a database of its own: another test session on the machine may run this module too
    db = Postgres(database=f"streamslice_celery_{os.getpid()}").start().recreate()
    root = tmp_path_factory.mktemp("celery")
    dags = root / "dags"
    (dags / "pipelines").mkdir(parents=True)
    shutil.copy(ROOT / "dags" / "streamslice_pipelines.py", dags)
    faults = root / "faults"
    faults.write_text("")
    deployment = Deployment(root / "scheduler-host", dags, db.url, workers=WORKERS,
                                  concurrency=1, env={
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"), "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": f"{ROOT / 'plugins'}:{ROOT}", "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
        "STREAMSLICE_INJECT_FAULT": f"@{faults}"})
    deployment.faults, deployment.pipelines = faults, dags / "pipelines"
    try:
        yield deployment.start()
    finally:
        deployment.stop()
        db.drop()


@pytest.fixture
def celery(deployment):
    """The deployment with both workers up; faults a failed test leaves unfired do not
    outlive it."""
    for name in WORKERS:
        if not deployment.alive(name):
            deployment.start_worker(name)
    yield deployment
    deployment.faults.write_text("")
    Path(f"{deployment.faults}.paused").unlink(missing_ok=True)


def on_s3(s3, name, **output):
    """Output (and so staging) on S3, reached with the processes' own keys."""
    return {"path": f"s3://{BUCKET}/{name}",
            "aws": {"region": "us-east-1", "endpoint_url": s3.endpoint}, **output}


def pipeline(celery, broker, spark_connect, s3, topic, name, output=None, **settings):
    """A pipeline over ``topic`` reading on the Spark Connect server (unless ``spark`` says
    otherwise), its output and staging on S3 (no worker's disk), in the deployment's DAGs
    folder."""
    settings.setdefault("spark", {"runner": "connect", "remote": spark_connect.remote})
    cfg = kafka_pipeline(broker.bootstrap, topic, name=name, folder=celery.pipelines,
                         kafka={"max_records_per_split": 20}, retries=2, retry_delay="1s",
                         output=output or on_s3(s3, name), **settings)
    celery.wait_for_dag(name)
    return cfg


def hourly(hours=4, **settings):
    return dict(mode="interval", schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                end_date=f"2024-05-01T{hours - 1:02d}:00:00Z", **settings)


def hour(h):
    return f"2024-05-01T{h:02d}:00:00Z", f"2024-05-01T{h + 1:02d}:00:00Z"


def exactly_once(s3, cfg, sent):
    """The output holds every record produced once (pyarrow's dataset and DuckDB's glob over
    S3 agree), and only data files and manifests: no staging left under ``_streamslice``."""
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, access_key="test",
                           secret_key="test", region="us-east-1", scheme="http")
    dataset = cfg.output.dataset(cfg.name)
    table = ds.dataset(dataset.split("://", 1)[1], filesystem=fs, format="parquet",
                       partitioning="hive").to_table(columns=["partition", "offset"])
    expected = sorted((p, o) for p, o, _ in sent)
    assert sorted(zip(table.column("partition").to_pylist(),
                      table.column("offset").to_pylist())) == expected
    seen = connect(s3_endpoint=s3.endpoint).sql(
        f"SELECT count(*), count(DISTINCT (partition, \"offset\")) "
        f"FROM read_parquet('{dataset}/**/*.parquet')").fetchone()
    assert seen == (len(expected), len(expected))
    work = f"{BUCKET}/{cfg.name}/_streamslice/pipeline={cfg.name}/staging"
    left = fs.get_file_info(pafs.FileSelector(work, recursive=True, allow_not_found=True))
    assert [i.path for i in left if i.type == pafs.FileType.File] == []


def hosts(run, task_id):
    """Where each try of ``task_id`` ran (the worker's name), in order."""
    return [t["hostname"] for t in run.tries_detail(task_id)]


def test_intervals_and_increments_run_across_two_workers_exactly_once(celery, broker,
                                                                      spark_connect, s3):
    """Three-task intervals and one-task increments at once on two workers with one slot
    each: both take tasks, a commit publishes what a read on the Connect server staged on S3,
    and each pipeline's output is its source, once."""
    topic, inc_topic = unique("celery-iv"), unique("celery-inc")
    for t in (topic, inc_topic):
        create_topic(broker.bootstrap, t, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 2, 40, seed=21, late_share=0),
                   partitions=2)
    inc_sent = produce(broker.bootstrap, inc_topic, trips(T0, 1, 50, seed=22), partitions=2)
    interval = pipeline(celery, broker, spark_connect, s3, topic, unique("celery_iv"),
                        tasks="separate", **hourly(2))
    incremental = pipeline(celery, broker, spark_connect, s3, inc_topic,
                           unique("celery_inc"), mode="incremental")
    runs = [Run(celery, interval.name, *hour(h)) for h in (0, 1)]
    first = Run(celery, incremental.name)
    assert first.wait() == "success", first.describe()
    inc_sent += produce(broker.bootstrap, inc_topic, trips(T0 + 3_600_000, 1, 30, seed=23),
                        partitions=2)
    second = Run(celery, incremental.name)
    for run in [*runs, second]:
        assert run.wait() == "success", run.describe()
    exactly_once(s3, interval, sent)
    exactly_once(s3, incremental, inc_sent)
    ran_on = {h for run in runs for task in ("plan", "read", "commit") for h in hosts(run, task)}
    ran_on |= {h for run in (first, second) for h in hosts(run, "plan_read_commit")}
    assert ran_on == set(WORKERS)


def test_a_worker_killed_mid_read_and_mid_commit_is_retried_on_the_other(celery, broker,
                                                                         spark_connect, s3):
    """The worker running an interval's task is SIGKILLed while its read runs on the Connect
    server (paused there by the fault file), then, in the next interval, the worker running
    the commit kills itself once one file of the interval is copied to S3. Each time the
    scheduler fails the try once its heartbeats stop and Airflow retries it on the worker
    that is alive; the output is the source, once."""
    topic, name = unique("celery-kill"), unique("celery_kill")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 2, 60, seed=24, late_share=0),
                   partitions=2)
    cfg = pipeline(celery, broker, spark_connect, s3, topic, name, **hourly(2))
    task = "plan_read_commit"  # plan, read and commit in one task (the default on Connect)
    paused = Path(f"{celery.faults}.paused")

    celery.faults.write_text("read:split=1:after=1:action=pause\n")
    run = Run(celery, name, *hour(0))
    wait_for(paused.exists, 600, lambda: f"the read to pause\n{run.describe()}")
    victim = run.task(task)["hostname"]
    celery.kill_worker(victim)
    paused.unlink()  # the read goes on on the server, for a task that is gone
    assert run.wait() == "success", run.describe()
    assert run.tries(task) == ["failed", "success"]
    survivor = hosts(run, task)[1]
    assert hosts(run, task)[0] == victim and survivor != victim

    celery.start_worker(victim)
    celery.faults.write_text("publish_copy:after=1:action=kill\n")
    run = Run(celery, name, *hour(1))
    assert run.wait() == "success", run.describe()
    assert celery.faults.read_text() == ""  # the fault fired
    dead = [w for w in WORKERS if not celery.alive(w)]
    assert len(dead) == 1 and run.tries(task) == ["failed", "success"]
    assert hosts(run, task)[0] == dead[0] != hosts(run, task)[1]
    exactly_once(s3, cfg, sent)


def test_a_backfill_reads_ahead_and_its_runs_commit_on_either_worker(celery, broker,
                                                                     spark_connect, s3):
    """``streamslice backfill`` of four intervals against the Celery deployment: the first
    run's task reads the other runs' intervals in its own job on the Connect server, each
    into that run's staging area on S3, and each run commits its own on whichever worker
    takes it."""
    topic, name = unique("celery-ahead"), unique("celery_ahead")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 4, 20, seed=25, late_share=0),
                   partitions=2)
    cfg = pipeline(celery, broker, spark_connect, s3, topic, name, max_active_runs=1,
                   **hourly(4))
    code, result = backfill(celery, name, hours=4)
    assert code == 0 and result["state"] == "success", result
    exactly_once(s3, cfg, sent)
    runs = list(plans_and_starts(celery, name).values())
    assert runs[0]["returned"]["read_ahead"] == [
        f"interval=20240501T{h:02d}0000Z" for h in (1, 2, 3)]
    assert all(run["state"] == "success" for run in runs)


def test_an_iceberg_table_on_s3_with_its_catalog_in_postgres(celery, broker, spark_connect,
                                                             s3):
    """Iceberg output: staged on S3 by the Connect server's readers, committed by the
    workers to a table whose warehouse is on S3 and whose SQL catalog is in the deployment's
    PostgreSQL (as docker-compose keeps it)."""
    from pyiceberg.catalog import load_catalog
    topic, name = unique("celery-ice"), unique("celery_ice")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 2, 30, seed=26, late_share=0),
                   partitions=2)
    catalog = {"type": "sql", "uri": celery.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"],
               "warehouse": f"s3://{BUCKET}/warehouse"}
    table = f"lake.{name.replace('-', '_')}"
    cfg = pipeline(celery, broker, spark_connect, s3, topic, name, tasks="separate",
                   output=on_s3(s3, name, format="iceberg", table=table, catalog=catalog),
                   **hourly(2))
    runs = [Run(celery, cfg.name, *hour(h)) for h in (0, 1)]
    for run in runs:
        assert run.wait() == "success", run.describe()
    rows = load_catalog("streamslice", **catalog, **{
        "s3.endpoint": s3.endpoint, "s3.access-key-id": "test", "s3.secret-access-key": "test",
        "s3.region": "us-east-1"}).load_table(table).scan().to_arrow()
    assert sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist())) \
        == sorted((p, o) for p, o, _ in sent)


def test_kinesis_efo_consumers_are_set_up_and_torn_down_by_the_workers(celery, kinesis,
                                                                      spark_connect, s3):
    """A Kinesis pipeline read over Enhanced Fan-Out: a worker registers the run's consumer,
    the read subscribes to the shards from the Connect server, a worker deregisters it;
    every record is read once."""
    client = kinesis.client()
    stream, name = unique("celery-efo"), unique("celery_efo")
    arn = create_stream(client, stream, 2)
    sent = put(client, stream, [b'{"n": %d}' % i for i in range(200)])
    cfg = kinesis_pipeline(stream, name=name, folder=celery.pipelines, retries=2,
                           retry_delay="1s", output=on_s3(s3, name),
                           spark={"runner": "connect", "remote": spark_connect.remote},
                           kinesis={"region": "us-east-1", "endpoint_url": kinesis.endpoint,
                                    "credentials": {"access_key_id": "test",
                                                    "secret_access_key": "test"},
                                    "reader": "efo", "efo": {"consumer_name": "ss-celery",
                                                             "registration": "per_run"}})
    run = Run(celery, name)
    assert run.wait() == "success", run.describe()
    assert {task: run.tries(task) for task in ("efo_register", "efo_deregister")} == {
        "efo_register": ["success"], "efo_deregister": ["success"]}
    assert client.list_stream_consumers(StreamARN=arn)["Consumers"] == []
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, access_key="test",
                           secret_key="test", region="us-east-1", scheme="http")
    got = ds.dataset(cfg.output.dataset(cfg.name).split("://", 1)[1], filesystem=fs,
                     format="parquet", partitioning="hive").to_table(
        columns=["shardId", "sequenceNumber"])
    assert sorted(zip(got.column("shardId").to_pylist(),
                      got.column("sequenceNumber").to_pylist())) == sorted(sent)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A Spark standalone master and worker; its executors reach S3 with keys of their own,
    as a cluster's hosts have an identity of their own."""
    from devtools.services import SparkStandalone
    with pytest.MonkeyPatch.context() as env:
        for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                           "AWS_DEFAULT_REGION": "us-east-1"}.items():
            env.setenv(key, value)
        cluster = SparkStandalone(tmp_path_factory.mktemp("standalone"), cores=1,
                                  memory="1g").start()
    yield cluster
    cluster.stop()


def test_reads_submitted_to_a_standalone_cluster_from_the_workers(celery, broker, standalone,
                                                                  spark_connect, s3):
    """``spark.runner: spark-submit``: the worker that runs the read submits the job to the
    standalone master (the driver on the worker, the executors on the cluster), which
    stages on S3; the commit, a task of its own, publishes it from S3."""
    topic, name = unique("celery-submit"), unique("celery_submit")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 40, seed=27, late_share=0),
                   partitions=2)
    cfg = pipeline(celery, broker, spark_connect, s3, topic, name, tasks="separate",
                   spark={"runner": "spark-submit", "master": standalone.master,
                          "conf": {"spark.executor.memory": "512m", "spark.cores.max": "1"}},
                   **hourly(2))
    run = Run(celery, name, *hour(0))
    assert run.wait() == "success", run.describe()
    exactly_once(s3, cfg, sent)
