"""Read ahead through Airflow's own scheduler (LocalExecutor) with reads on a Spark Connect
server: ``streamslice backfill`` of six hourly intervals, one run at a time. The first run's
task reads the five queued runs' intervals in its own job; each of those runs commits what
was read for it, with the plan it was read by, in its own task: every interval is one DAG
run, exact, and no claim or staging area is left. A malformed record in one interval fails
that interval's run alone, with its own error: the runs reading it ahead fall back to their
own interval. A run that planned before (a failed try's saved plan) keeps its own plan even
when another run read its interval ahead. The same holds for a Kinesis stream, intervals by
arrival time.

Each test fills the session's fault file itself and leaves it empty."""
import json
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import Trip, produce, trips
from tests.chaos.test_airflow_retry import exactly_once
from tests.support.kinesis import all_records, create_stream, put
from tests.support.pipelines import kafka_pipeline, kinesis_pipeline, unique
from tests.support.wait import wait_until_clock

pytestmark = [pytest.mark.integration]
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000
HOURS = 6


def backfill(airflow, name, *extra, hours=HOURS, span=None):
    start, end = span or ("2024-05-01T00:00:00Z", f"2024-05-01T{hours:02d}:00:00Z")
    cli = [str(Path(sys.executable).parent / "streamslice"), "--dir", str(airflow.pipelines),
           "backfill", name, "--from", start, "--to", end, "--unpause", "--json", *extra]
    out = subprocess.run(cli, env=airflow.env, capture_output=True, text=True, timeout=1200)
    assert out.stdout, out.stderr[-3000:]
    # Creating the backfill in the command's own process logs none of Airflow's lines.
    assert "[warning" not in out.stderr and "Created backfill" not in out.stderr, out.stderr
    return out.returncode, json.loads(out.stdout)


def setup(broker, airflow, spark_connect, tmp_path, extra=()):
    topic, name = unique("ahead"), unique("ahead")
    create_topic(broker.bootstrap, topic, 2)
    records = sorted([*trips(T0, HOURS, 30, seed=5, late_share=0), *extra],
                     key=lambda t: t.timestamp)  # each record arrives in its own hour
    sent = produce(broker.bootstrap, topic, records, partitions=2)
    kafka_pipeline(broker.bootstrap, topic, name=name, folder=airflow.pipelines,
                   mode="interval", schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                   end_date=f"2024-05-01T{HOURS - 1:02d}:00:00Z", retries=0,
                   max_active_runs=1, format={"value": "json", "schema": {"trip_id": "string"},
                                              "on_error": "fail"},
                   spark={"runner": "connect", "remote": spark_connect.remote},
                   output=tmp_path)
    airflow.wait_for_dag(name)
    return name, sent


def plans_and_starts(airflow, name, digits=13):
    """Each run's plan (the task's XCom ``plan``), when its task started, its state and what
    it returned (``read_ahead``: the partitions it read for other runs), by the first
    ``digits`` of its logical date (the hour)."""
    out = {}
    runs = airflow.api("GET", f"/api/v2/dags/{name}/dagRuns?limit=100")["dag_runs"]
    for run in runs:
        path = f"/api/v2/dags/{name}/dagRuns/{run['dag_run_id']}/taskInstances/plan_read_commit"
        ti = airflow.api("GET", path)
        plan, returned = (xcom(airflow, f"{path}/xcomEntries/{key}")
                          for key in ("plan", "return_value"))
        started = datetime.fromisoformat(ti["start_date"].replace("Z", "+00:00"))
        out[run["logical_date"][:digits]] = {"plan": plan, "started": started.timestamp() * 1000,
                                         "state": ti["state"], "returned": returned}
    return dict(sorted(out.items()))


def xcom(airflow, path):
    try:
        value = airflow.api("GET", f"{path}?deserialize=true")["value"]
    except Exception:  # noqa: BLE001 - a failed try returned nothing
        return None
    return json.loads(value) if isinstance(value, str) else value


def claims_left(airflow):
    db = sqlite3.connect(airflow.home / "airflow.db")
    try:
        return db.execute("SELECT key FROM asset_state_store WHERE key LIKE 'read_ahead/%'"
                          ).fetchall()
    finally:
        db.close()


@pytest.mark.timeout(1200)
def test_the_first_run_reads_the_queued_runs_intervals_and_each_run_commits_its_own(
        broker, airflow_services, spark_connect, tmp_path):
    airflow = airflow_services
    name, sent = setup(broker, airflow, spark_connect, tmp_path)
    code, result = backfill(airflow, name)
    assert code == 0 and result["state"] == "success", result
    per_hour = Counter((t - T0) // HOUR for _, _, t in sent)
    assert [r["records"] for r in result["runs"]] == [per_hour[h] for h in range(HOURS)]
    exactly_once(f"{tmp_path}/pipeline={name}", [(p, o) for p, o, _ in sent])

    runs = list(plans_and_starts(airflow, name).values())
    assert len(runs) == HOURS
    assert runs[0]["returned"]["read_ahead"] == [
        f"interval=20240501T{h:02d}0000Z" for h in range(1, HOURS)]
    for hour, run in enumerate(runs[1:], start=1):
        assert run["state"] == "success" and "read_ahead" not in run["returned"]
        assert run["plan"]["interval"]["start"] == T0 + hour * HOUR
        # planned by the first run's task, before this run's own task started
        assert runs[0]["started"] < run["plan"]["planned_at"] < run["started"], hour
    assert claims_left(airflow) == []
    assert list(Path(tmp_path, "_streamslice", f"pipeline={name}").rglob("staging/*/*")) == []


@pytest.mark.timeout(1200)
def test_a_malformed_record_fails_its_own_interval_alone(broker, airflow_services,
                                                         spark_connect, tmp_path):
    airflow = airflow_services
    bad = Trip(b"bad", b"{not json", T0 + 2 * HOUR + 60_000)
    name, sent = setup(broker, airflow, spark_connect, tmp_path, extra=[bad])
    code, result = backfill(airflow, name)
    assert code == 1 and result["state"] == "failed", result
    assert [r["state"] for r in result["runs"]] == [
        "failed" if h == 2 else "success" for h in range(HOURS)], result["runs"]
    per_hour = Counter((t - T0) // HOUR for _, _, t in sent)
    assert [r["records"] for r in result["runs"] if r["state"] == "success"] == [
        per_hour[h] for h in range(HOURS) if h != 2]
    dataset = Path(tmp_path, f"pipeline={name}")
    assert sorted(p.name for p in dataset.iterdir()) == [
        f"interval=20240501T{h:02d}0000Z" for h in range(HOURS) if h != 2]
    runs = plans_and_starts(airflow, name)
    assert runs["2024-05-01T02"]["state"] == "failed"
    # the runs before it read it ahead, failed, and read their own interval alone
    assert "read_ahead" not in runs["2024-05-01T00"]["returned"]
    assert runs["2024-05-01T03"]["returned"]["read_ahead"] == [
        f"interval=20240501T{h:02d}0000Z" for h in (4, 5)]
    assert claims_left(airflow) == []


@pytest.fixture
def faults(airflow_services):
    yield airflow_services.faults
    airflow_services.faults.write_text("")


@pytest.mark.timeout(1200)
def test_a_run_with_a_saved_plan_keeps_it_when_its_interval_was_read_ahead(
        broker, airflow_services, spark_connect, tmp_path, faults):
    airflow = airflow_services
    name, sent = setup(broker, airflow, spark_connect, tmp_path)
    # the first two runs die right after saving their plans, before claiming anything
    faults.write_text("plan:action=kill_task\nplan:action=kill_task\n")
    code, first = backfill(airflow, name, hours=3)
    assert code == 1 and [r["state"] for r in first["runs"]] == ["failed", "failed", "success"]
    assert faults.read_text() == ""
    reprocessed = time.time() * 1000

    code, again = backfill(airflow, name, "--reprocess", "failed", hours=3)
    assert code == 0 and again["state"] == "success", again
    runs = plans_and_starts(airflow, name)
    # run 0 re-ran first (one run at a time): it reused its saved plan and read run 1's
    # interval ahead; run 1 committed its own saved plan (made before the re-run), read by
    # itself, not the plan run 0 read it by
    assert runs["2024-05-01T00"]["plan"]["planned_at"] < reprocessed
    assert runs["2024-05-01T00"]["returned"]["read_ahead"] == ["interval=20240501T010000Z"]
    assert runs["2024-05-01T01"]["plan"]["planned_at"] < reprocessed
    per_hour = Counter((t - T0) // HOUR for _, _, t in sent)
    assert [r["records"] for r in again["runs"]] == [per_hour[h] for h in range(3)]
    exactly_once(f"{tmp_path}/pipeline={name}",
                 [(p, o) for p, o, t in sent if t < T0 + 3 * HOUR])
    assert claims_left(airflow) == []
    assert list(Path(tmp_path, "_streamslice", f"pipeline={name}").rglob("staging/*/*")) == []


@pytest.mark.timeout(1200)
def test_kinesis_intervals_read_ahead_are_exact(kinesis, airflow_services, spark_connect,
                                                tmp_path):
    """The same through a Kinesis stream (kinesis-local), intervals by arrival time: the first
    run reads the other runs' intervals from AT_TIMESTAMP positions in its own job, and each
    interval holds exactly the records that arrived in it."""
    airflow = airflow_services
    client = kinesis.client()
    stream = unique("ahead")
    create_stream(client, stream, 2)
    width, n = 3, 5
    start = (int(time.time()) // width + 1) * width  # the next boundary
    wait_until_clock(start)
    for second in range(n * width):  # a wave a second, paced by the clock
        put(client, stream, [json.dumps({"n": second * 10 + i}).encode() for i in range(10)])
        wait_until_clock(start + second + 1)
    truth = all_records(client, stream)
    # Past the interval after the last one, so that unpausing the DAG (catchup off) makes
    # no scheduled run of its own: the backfill's runs are the only ones.
    wait_until_clock(start + (n + 1) * width + 1)
    iso = lambda t: datetime.fromtimestamp(t, tz=timezone.utc).isoformat()  # noqa: E731
    name = unique("ahead_kin")
    kinesis_pipeline(stream, name=name, folder=airflow.pipelines, mode="interval",
                     schedule=f"{width}s", start_date=iso(start),
                     end_date=iso(start + (n - 1) * width), retries=0, max_active_runs=1,
                     kinesis={"region": "us-east-1", "endpoint_url": kinesis.endpoint,
                              "credentials": {"access_key_id": "test",
                                              "secret_access_key": "test"},
                              "polling": {"interval": "50ms"}},
                     format={"value": "json", "schema": {"n": "long"}},
                     spark={"runner": "connect", "remote": spark_connect.remote},
                     output=tmp_path)
    airflow.wait_for_dag(name)
    code, result = backfill(airflow, name, span=(iso(start), iso(start + n * width)))
    assert code == 0 and result["state"] == "success", result
    runs = list(plans_and_starts(airflow, name, digits=19).values())
    assert len(runs) == n
    assert len(runs[0]["returned"]["read_ahead"]) == n - 1
    dataset = ds.dataset(Path(tmp_path, f"pipeline={name}"), format="parquet",
                         partitioning="hive")
    table = dataset.to_table(columns=["shardId", "sequenceNumber", "interval"])
    rows = list(zip(table.column("shardId").to_pylist(),
                    table.column("sequenceNumber").to_pylist(),
                    table.column("interval").to_pylist()))
    assert len(rows) == len(truth) == n * width * 10
    for shard, seq, interval in rows:
        k = (truth[(shard, seq)] // 1000 - start) // width
        assert interval == datetime.fromtimestamp(start + k * width, tz=timezone.utc
                                                  ).strftime("%Y%m%dT%H%M%SZ"), (shard, seq)
    assert claims_left(airflow) == []
