"""The streamslice command as a user runs it: validate, plan, offsets show/reset, efo list/sweep,
--json for scripts, one clear line and exit 1 for errors."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.conftest import PIPELINES_DIR, ROOT
from tests.support.kinesis import create_stream, put
from tests.support.pipelines import kafka_pipeline, kinesis_pipeline, run_dag, unique

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "streamslice")


def cli(*args, folder=PIPELINES_DIR):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "plugins"))
    return subprocess.run([CLI, "--dir", str(folder), *args], capture_output=True, text=True,
                          env=env, timeout=300)


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


def test_efo_list_and_sweep(kinesis):
    client = kinesis.client()
    stream = unique("cli-efo")
    arn = create_stream(client, stream, 1)
    client.register_stream_consumer(StreamARN=arn, ConsumerName="ss-cli-0123456789")
    client.register_stream_consumer(StreamARN=arn, ConsumerName="ss-cli-team-b")
    args = ["--region", "us-east-1", "--endpoint-url", kinesis.endpoint]
    env_keys = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
    os.environ.update(env_keys)
    try:
        listed = json.loads(cli("efo", "list", stream, *args, "--json").stdout)
        assert sorted(c["ConsumerName"] for c in listed) == ["ss-cli-0123456789",
                                                             "ss-cli-team-b"]
        time.sleep(1.5)
        bad = cli("efo", "sweep", stream, "--prefix", "ss-cli", "--older-than", "banana", *args)
        assert bad.returncode == 1 and "--older-than: 'banana' is not a duration" in bad.stderr
        swept = cli("efo", "sweep", stream, "--prefix", "ss-cli", "--older-than", "1s", *args)
        assert swept.returncode == 0, swept.stderr
        assert swept.stdout.strip() == "deregistered ss-cli-0123456789"  # not another pipeline's
        assert "1 of 20 consumers" in cli("efo", "list", stream, *args).stdout
    finally:
        for key in env_keys:
            os.environ.pop(key)


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

    time.sleep(1.2)
    mark = int(time.time() * 1000)
    time.sleep(0.3)
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
