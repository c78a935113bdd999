"""The streamslice command as a user runs it: validate, plan, offsets show/reset, efo list/sweep,
--json for scripts, one clear line and exit 1 for errors: one test per kind of failure (an
unmigrated metadata database, an undefined connection, an unreachable broker or stream, no
scheduler, an unknown DAG), each checking its message, that no traceback shows, and that
--debug shows it."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.conftest import PIPELINES_DIR, ROOT
from tests.support.checks import present
from tests.support.kinesis import all_records, create_stream, put
from tests.support.pipelines import kafka_pipeline, kinesis_pipeline, run_dag, unique
from tests.support.wait import wait_until_clock

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "streamslice")


def cli(*args, folder=PIPELINES_DIR, **env):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "plugins"), **env)
    return subprocess.run([CLI, "--dir", str(folder), *args], capture_output=True, text=True,
                          env=env, timeout=300)


def one_line(out):
    """A failure as a user sees it: exit 1, one line on stderr, no traceback."""
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stdout + out.stderr and out.stdout == "", out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("streamslice: "), out.stderr
    return lines[0].removeprefix("streamslice: ")


def test_validate_reports_each_bad_file_with_its_line(tmp_path):
    (tmp_path / "good.yaml").write_text("mode: incremental\nkafka: {bootstrap_servers: "
                                        "'a:1', topics: [t]}\noutput: {path: /x}\n")
    (tmp_path / "bad.yaml").write_text("mode: incremental\nkafka:\n  bootstrap_servers: a:1\n"
                                       "  topics: [t]\n  strat: earliest\noutput: {path: /x}\n")
    out = cli("validate", folder=tmp_path)
    assert out.returncode == 1
    assert "ok     good" in out.stdout
    assert f"error  {tmp_path / 'bad.yaml'}:5: kafka.strat: unknown key 'strat'" in out.stdout
    data = json.loads(cli("validate", "--json", folder=tmp_path).stdout)
    assert data["valid"] == ["good"] and len(data["errors"]) == 1
    # Bytes that are not UTF-8 and an alias bomb are one line each, not a traceback or a hang.
    from tests.unit.test_pipeline_files_fuzz import BAD_FILES
    for name in ("latin1", "bomb"):
        (tmp_path / f"{name}.yaml").write_bytes(BAD_FILES[name][0])
    out = cli("validate", folder=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr + out.stdout
    assert f"error  {tmp_path / 'latin1.yaml'}:1: is not UTF-8 text" in out.stdout
    assert f"error  {tmp_path / 'bomb.yaml'}: " in out.stdout and "ok     good" in out.stdout


def test_validate_warns_where_a_distributed_executors_workers_would_not_share_staging(
        tmp_path):
    """With the CeleryExecutor (or a list holding one, or the KubernetesExecutor named in
    airflow.cfg) a pipeline staging on a local disk between tasks is named with what to do
    instead; it stays valid (exit 0). Object storage, or one task without read ahead, is not
    warned about, nor is anything under the LocalExecutor."""
    head = "mode: interval\nschedule: '@hourly'\nstart_date: 2024-05-01T00:00:00Z\n" \
        "kafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
    files = {"separate": "output: {path: /lake}\n",
             "ahead": "output: {path: /lake}\ntasks: combined\n",
             "combined": "output: {path: /lake}\ntasks: combined\nread_ahead: 0\n",
             "on_s3": "output: {path: 's3://lake/out'}\n",
             "file_uri": "output: {path: 'file:///lake'}\nmode: incremental\n"}
    for name, text in files.items():
        body = head.replace("mode: interval\nschedule: '@hourly'\n", "") \
            if "incremental" in text else head
        (tmp_path / f"{name}.yaml").write_text(body + text)
    (tmp_path / "airflow.cfg").write_text("[core]\nexecutor = KubernetesExecutor\n")
    local = {"AIRFLOW__CORE__EXECUTOR": "", "AIRFLOW_CONFIG": str(tmp_path / "none.cfg")}
    for env, executor in [
            ({"AIRFLOW__CORE__EXECUTOR": "CeleryExecutor"}, "CeleryExecutor"),
            ({"AIRFLOW__CORE__EXECUTOR": "LocalExecutor,airflow.providers.celery.executors."
              "celery_executor.CeleryExecutor"}, "CeleryExecutor"),
            ({"AIRFLOW__CORE__EXECUTOR": "", "AIRFLOW_CONFIG": str(tmp_path / "airflow.cfg")},
             "KubernetesExecutor")]:
        out = cli("validate", folder=tmp_path, **env)
        assert out.returncode == 0 and out.stderr == "", out
        warned = [line for line in out.stdout.splitlines() if line.startswith("warn")]
        assert warned == [
            f"warn   ahead: stages under /lake/_streamslice/pipeline=ahead on the local disk "
            f"of the worker a task runs on, and the {executor} may run the next task on "
            "another worker; with read_ahead: 16 (its runs commit what another run's task "
            "read for them) that task finds nothing. Put output.path on object storage "
            "(s3://…) or on a file system every worker mounts at that path, or use tasks: "
            "combined with read_ahead: 0 (each run then stages and publishes on its worker's "
            "disk)",
            f"warn   file_uri: stages under file:///lake/_streamslice/pipeline=file_uri on the "
            f"local disk of the worker a task runs on, and the {executor} may run the next "
            "task on another worker; with tasks: separate (its commit task reads what its "
            "read task staged) that task finds nothing. Put output.path on object storage "
            "(s3://…) or on a file system every worker mounts at that path, or use tasks: "
            "combined with read_ahead: 0 (each run then stages and publishes on its worker's "
            "disk)",
            f"warn   separate: stages under /lake/_streamslice/pipeline=separate on the local "
            f"disk of the worker a task runs on, and the {executor} may run the next task "
            "on another worker; with tasks: separate (its commit task reads what its read "
            "task staged) that task finds nothing. Put output.path on object storage "
            "(s3://…) or on a file system every worker mounts at that path, or use tasks: "
            "combined with read_ahead: 0 (each run then stages and publishes on its worker's "
            "disk)"], out.stdout
        data = json.loads(cli("validate", "--json", folder=tmp_path, **env).stdout)
        assert [w.split(":")[0] for w in data["warnings"]] == ["ahead", "file_uri", "separate"]
        assert len(data["valid"]) == 5 and data["errors"] == []
    for env in (local, {"AIRFLOW__CORE__EXECUTOR": "LocalExecutor"}):
        out = cli("validate", folder=tmp_path, **env)
        assert out.returncode == 0 and "\nwarn   " not in out.stdout, out
        assert json.loads(cli("validate", "--json", folder=tmp_path, **env).stdout)[
            "warnings"] == []
    # a bad file is still an error (exit 1), and the warnings stay
    (tmp_path / "bad.yaml").write_text(head + "output: {path: /lake}\ntasks: sideways\n")
    out = cli("validate", folder=tmp_path, AIRFLOW__CORE__EXECUTOR="CeleryExecutor")
    assert out.returncode == 1 and out.stdout.count("\nwarn   ") == 3
    assert "bad.yaml:6: tasks: 'sideways' is not one of: separate, combined" in out.stdout


def test_plan_offsets_show_and_reset(broker, spark, airflow_db):
    topic = unique("cli")
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, trips(1_714_521_600_000, 1, 40, seed=6), partitions=2)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("cli"), retries=0,
                         kafka={"max_records_per_split": 15})
    plan = cli("plan", cfg.name)
    assert plan.returncode == 0, plan.stderr
    assert f"{cfg.name}: 4 splits → batch=00000001" in plan.stdout
    assert f"{topic}:0" in plan.stdout and "lag" in plan.stdout
    splits = json.loads(cli("plan", cfg.name, "--json").stdout)["splits"]
    assert [(s["partition"], s["start"], s["stop"]) for s in splits] == \
        [(0, 0, 10), (0, 10, 20), (1, 0, 10), (1, 10, 20)]

    assert "no checkpoint yet" in cli("offsets", "show", cfg.name).stdout
    run_dag(cfg)
    shown = json.loads(cli("offsets", "show", cfg.name, "--json").stdout)
    assert shown["positions"] == {f"{topic}:0": 20, f"{topic}:1": 20} and shown["batch"] == 1
    reset = cli("offsets", "reset", cfg.name, "--offsets", json.dumps({f"{topic}:0": 5}))
    assert reset.returncode == 0, reset.stderr
    assert json.loads(cli("offsets", "show", cfg.name, "--json").stdout)["positions"] == \
        {f"{topic}:0": 5, f"{topic}:1": 0}
    assert cli("plan", cfg.name, "--json").returncode == 0
    bad = cli("offsets", "reset", cfg.name, "--to", "yesterday")
    assert bad.returncode == 1 and bad.stderr.startswith("streamslice: --to: 'yesterday' is not")
    missing = cli("plan", "no-such-pipeline")
    assert missing.returncode == 1 and "no pipeline named 'no-such-pipeline'" in missing.stderr


def test_plan_at_a_time_for_an_interval_pipeline(broker):
    topic = unique("cli-at")
    create_topic(broker.bootstrap, topic, 1)
    sent = produce(broker.bootstrap, topic, trips(1_714_521_600_000, 2, 50, seed=8,
                                                  late_share=0), partitions=1)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("cli_at"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                         output="/tmp/unused")
    out = cli("plan", cfg.name, "--at", "2024-05-01T01:30:00Z", "--json")
    plan = json.loads(out.stdout)
    assert plan["partition"] == "interval=20240501T010000Z"
    first_of_hour_1 = min(o for _, o, ts in sent if ts >= 1_714_525_200_000)
    assert [(s["start"], s["stop"]) for s in plan["splits"]] == [(first_of_hour_1, 100)]
    text = cli("plan", cfg.name, "--at", "1714525200").stdout
    assert "[2024-05-01T01:00:00.000Z, 2024-05-01T02:00:00.000Z)" in text


def test_efo_list_and_sweep(kinesis, monkeypatch):
    client = kinesis.client()
    stream = unique("cli-efo")
    arn = create_stream(client, stream, 1)
    client.register_stream_consumer(StreamARN=arn, ConsumerName="ss-cli-0123456789")
    client.register_stream_consumer(StreamARN=arn, ConsumerName="ss-cli-team-b")
    args = ["--region", "us-east-1", "--endpoint-url", kinesis.endpoint]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    listed = json.loads(cli("efo", "list", stream, *args, "--json").stdout)
    assert sorted(c["ConsumerName"] for c in listed) == ["ss-cli-0123456789", "ss-cli-team-b"]
    created = [c["ConsumerCreationTimestamp"].timestamp()
               for c in client.list_stream_consumers(StreamARN=arn)["Consumers"]]
    wait_until_clock(max(created) + 1.5)  # both older than the sweep's 1s
    bad = cli("efo", "sweep", stream, "--prefix", "ss-cli", "--older-than", "banana", *args)
    assert bad.returncode == 1 and "--older-than: 'banana' is not a duration" in bad.stderr
    swept = cli("efo", "sweep", stream, "--prefix", "ss-cli", "--older-than", "1s", *args)
    assert swept.returncode == 0, swept.stderr
    assert swept.stdout.strip() == "deregistered ss-cli-0123456789"  # not another pipeline's
    assert "1 of 20 consumers" in cli("efo", "list", stream, *args).stdout


def test_kinesis_offsets_reset_then_runs_read_from_there(kinesis, spark, airflow_db, tmp_path):
    """Resets to TRIM_HORIZON, a timestamp, explicit sequence numbers and LATEST, each followed
    by a run that reads exactly from there."""
    client = kinesis.client()
    stream = unique("reset")
    create_stream(client, stream, 1)
    cfg = kinesis_pipeline(stream, name=unique("kreset"), retries=0, format={"value": "string"},
                           output=tmp_path, kinesis={
                               "region": "us-east-1", "endpoint_url": kinesis.endpoint,
                               "credentials": {"access_key_id": "test",
                                               "secret_access_key": "test"}})
    dataset = cfg.output.dataset(cfg.name)

    def run_and_read(batch):
        run_dag(cfg)
        table = ds.dataset(f"{dataset}/batch={batch:08d}").to_table()
        return sorted(table.column("data").to_pylist())

    def reset(*args):
        out = cli("offsets", "reset", cfg.name, *args, "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def send(prefix, n):
        return [seq for _, seq in put(client, stream, [f"{prefix}{i}".encode() for i in range(n)])]

    send("a", 3)
    assert run_and_read(1) == ["a0", "a1", "a2"]
    cp = reset("--to", "TRIM_HORIZON")
    assert cp["positions"] == {} and cp["source_state"]["initial_position"] == \
        {"type": "TRIM_HORIZON"} and cp["batch"] == 1
    assert run_and_read(2) == ["a0", "a1", "a2"]

    wait_until_clock(max(all_records(client, stream).values()) / 1000 + 1.2)  # a*: > 1.2s old
    mark = int(time.time() * 1000)
    wait_until_clock(mark / 1000 + 0.3)  # b* arrive after the mark
    b = send("b", 4)
    reset("--to", str(mark))
    assert run_and_read(3) == ["b0", "b1", "b2", "b3"]

    key = f"{stream}:shardId-000000000000"
    cp = reset("--offsets", json.dumps({key: b[2]}))
    assert cp["positions"] == {key: {"at": b[2]}}
    assert run_and_read(4) == ["b2", "b3"]

    reset("--to", "LATEST")
    send("c", 2)
    assert run_and_read(5) == ["c0", "c1"]

    bad = cli("offsets", "reset", cfg.name, "--offsets", json.dumps({f"{stream}:nope": "1"}))
    assert bad.returncode == 1 and "is not a shard this pipeline reads" in bad.stderr


def test_kinesis_offsets_reset_checks_sequence_numbers_and_asks_about_other_shards(
        kinesis, airflow_db, tmp_path):
    """--offsets for Kinesis: a sequence number not in its shard is refused (asked of the
    stream, not only checked for its format); naming some shards only sends the others back
    to TRIM_HORIZON, which the command says and does only with --yes (or a yes at the
    terminal), leaving the checkpoint as it was otherwise."""
    from streamslice.airflow.checkpoint_store import show_checkpoint
    client = kinesis.client()
    stream, name = unique("reset2"), unique("kreset2")
    create_stream(client, stream, 2)

    def pipeline(stream):
        return kinesis_pipeline(stream, name=name, retries=0, output=tmp_path, kinesis={
            "region": "us-east-1", "endpoint_url": kinesis.endpoint,
            "credentials": {"access_key_id": "test", "secret_access_key": "test"}})
    # Airflow learns the pipeline's asset (where its checkpoint lives) from a DAG run: one
    # whose plan fails at once, on a stream that does not exist, needs no Spark
    run_dag(pipeline(unique("nope")), expect="failed")
    cfg = pipeline(stream)
    shards = sorted(s["ShardId"] for s in client.list_shards(StreamName=stream)["Shards"])
    seqs: dict[str, str] = {}
    for i in range(40):  # until both shards hold a record
        r = client.put_record(StreamName=stream, Data=b"x", PartitionKey=f"k{i}")
        seqs.setdefault(r["ShardId"], r["SequenceNumber"])
        if len(seqs) == 2:
            break
    one, other = (f"{stream}:{sid}" for sid in shards)
    bogus = str(int(seqs[shards[0]]) + 10 ** 20)
    bad = cli("offsets", "reset", cfg.name, "--yes", "--offsets", json.dumps({one: bogus}))
    assert bad.returncode == 1, bad.stderr
    assert (f"--offsets: sequence number {bogus} is not in shard {shards[0]} of {stream}"
            in bad.stderr) and "Traceback" not in bad.stderr
    # the other shard's number, given for this one, is not in it either
    bad = cli("offsets", "reset", cfg.name, "--yes", "--offsets",
              json.dumps({one: seqs[shards[1]]}))
    assert bad.returncode == 1 and "is not in shard" in bad.stderr, bad.stderr

    good = json.dumps({one: seqs[shards[0]]})
    asked = cli("offsets", "reset", cfg.name, "--offsets", good)  # stdin is not a terminal
    assert asked.returncode == 1
    assert (f"1 shard(s) not named in --offsets go back to the trim horizon (TRIM_HORIZON) "
            f"and read, and publish again, what they already published: {other}") in \
        asked.stderr
    assert "reset not done" in asked.stderr and "--yes" in asked.stderr
    assert show_checkpoint(cfg) is None  # nothing was reset
    done = cli("offsets", "reset", cfg.name, "--offsets", good, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert "warning: 1 shard(s) not named in --offsets go back to the trim horizon" in \
        done.stderr
    cp = json.loads(done.stdout)
    assert cp["positions"] == {one: {"at": seqs[shards[0]]}}
    assert cp["source_state"]["initial_position"] == {"type": "TRIM_HORIZON"}
    every = json.dumps({one: seqs[shards[0]], other: seqs[shards[1]]})
    quiet = cli("offsets", "reset", cfg.name, "--offsets", every)  # nothing beyond: no ask
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr


INTERVAL = {"mode": "interval", "schedule": "@hourly", "start_date": "2024-05-01T00:00:00Z"}


def test_an_unmigrated_metadata_database_says_which_home_and_to_migrate(tmp_path):
    cfg = kafka_pipeline("127.0.0.1:1", "t", name=unique("nodb"), folder=tmp_path / "p",
                         output=tmp_path)
    home = tmp_path / "airflow-home"
    out = cli("offsets", "show", cfg.name, folder=tmp_path / "p", AIRFLOW_HOME=str(home))
    assert one_line(out) == (
        f"Airflow's metadata database for AIRFLOW_HOME={home} is not set up (no such table: "
        "asset): run `airflow db migrate` with that AIRFLOW_HOME, or set AIRFLOW_HOME to the "
        "home your Airflow uses")
    for debug in ({"args": ["--debug"]}, {"STREAMSLICE_DEBUG": "1"}):
        flag = debug.pop("args", [])
        shown = subprocess.run([CLI, *flag, "--dir", str(tmp_path / "p"), "offsets", "show",
                                cfg.name], capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, PYTHONPATH=str(ROOT / "plugins"),
                                        AIRFLOW_HOME=str(home), **debug))
        assert shown.returncode == 1 and "Traceback (most recent call last)" in shown.stderr
        assert shown.stderr.splitlines()[-1] == f"streamslice: {one_line(out)}"


def test_an_undefined_connection_says_which_and_how_then_works_once_defined(broker, airflow_db):
    """The connection is then defined the way the message says, in the metadata database
    (not the environment): the command finds it there, as a task would."""
    topic, conn_id = unique("cli-conn"), unique("cli_kafka").replace("-", "_")
    create_topic(broker.bootstrap, topic, 1)
    cfg = kafka_pipeline(None, topic, name=unique("cli_conn"), kafka={"conn_id": conn_id})
    line = one_line(cli("plan", cfg.name))
    assert line == (
        f"kafka.conn_id: Airflow has no connection {conn_id!r} (AIRFLOW_HOME={airflow_db}): "
        f"define it with `airflow connections add {conn_id} --conn-type kafka --conn-extra "
        f"'{{\"bootstrap.servers\": \"HOST:9092\"}}'` or the environment variable "
        f"AIRFLOW_CONN_{conn_id.upper()}")
    subprocess.run([str(Path(sys.executable).parent / "airflow"), "connections", "add",
                    conn_id, "--conn-type", "kafka", "--conn-extra",
                    json.dumps({"bootstrap.servers": broker.bootstrap})],
                   check=True, capture_output=True, env=os.environ.copy())
    out = cli("plan", cfg.name, "--json")
    assert out.returncode == 0, out.stderr
    assert [(s["topic"], s["partition"]) for s in json.loads(out.stdout)["splits"]] == \
        [(topic, 0)]


def test_an_unreachable_broker_or_stream_is_one_line(tmp_path):
    from devtools.services import free_port
    port = free_port()
    cfg = kafka_pipeline(f"127.0.0.1:{port}", "t", name=unique("down"), folder=tmp_path,
                         output=tmp_path, **INTERVAL)
    line = one_line(cli("plan", cfg.name, "--at", "2024-05-01T01:30:00Z", folder=tmp_path))
    assert line.startswith(f"cannot reach Kafka at 127.0.0.1:{port}: no broker answered")
    line = one_line(cli("efo", "list", "s", "--region", "us-east-1", "--endpoint-url",
                        f"http://127.0.0.1:{port}", folder=tmp_path, AWS_ACCESS_KEY_ID="k",
                        AWS_SECRET_ACCESS_KEY="s"))
    assert line == ("Kinesis DescribeStreamSummary(s) failed: Could not connect to the endpoint "
                    f'URL: "http://127.0.0.1:{port}/"')


def test_backfill_of_a_dag_airflow_does_not_know_says_where_it_looks(airflow_db):
    cfg = kafka_pipeline("127.0.0.1:1", "t", name=unique("cli_nodag"), **INTERVAL)
    line = one_line(cli("backfill", cfg.name, "--from", "2024-05-01", "--to",
                        "2024-05-01T02:00:00Z"))
    assert line == (
        f"Airflow (AIRFLOW_HOME={airflow_db}) does not know DAG {cfg.name!r} yet: its "
        "dag-processor (`airflow dag-processor`, or once `airflow dags reserialize`) parses the "
        f"DAGs folder {os.environ['AIRFLOW__CORE__DAGS_FOLDER']}; is the pipeline's file there?")


def test_backfill_without_a_scheduler_says_to_start_one(airflow_db):
    """The DAG is known, but no scheduler runs for this Airflow home: waiting for the backfill's
    runs would never end, so it is refused (--no-wait still creates it), before --unpause
    changes anything."""
    from airflow.models.dag import DagModel
    from airflow.models.dagbundle import DagBundleModel
    from airflow.utils.session import create_session
    cfg = kafka_pipeline("127.0.0.1:1", "t", name=unique("cli_nosched"), **INTERVAL)
    with create_session() as session:
        if session.get(DagBundleModel, "dags-folder") is None:
            session.add(DagBundleModel(name="dags-folder"))
            session.flush()
        session.add(DagModel(dag_id=cfg.name, bundle_name="dags-folder", is_paused=True))
    line = one_line(cli("backfill", cfg.name, "--from", "2024-05-01", "--to",
                        "2024-05-01T02:00:00Z", "--unpause"))
    assert re.fullmatch(
        rf"no Airflow scheduler is running for AIRFLOW_HOME={re.escape(airflow_db)}( \(last "
        rf"heartbeat [^)]*\))?, and the backfill of {re.escape(cfg.name)} would wait for one: "
        r"start `airflow scheduler` with that AIRFLOW_HOME, or pass --no-wait to create the "
        r"backfill and return", line), line
    assert present(DagModel.get_dagmodel(cfg.name)).is_paused
