"""Read ahead through Airflow's own scheduler (LocalExecutor) with reads on a Spark Connect
server: ``streamslice backfill`` of six hourly intervals, one run at a time. The first run's
task reads the five queued runs' intervals in its own job; each of those runs commits what
was read for it, with the plan it was read by, in its own task: every interval is one DAG
run, exact, and no claim or staging area is left. A malformed record in one interval fails
that interval's run alone, with its own error: the runs reading it ahead fall back to their
own interval."""
import json
import sqlite3
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from devtools.services import create_topic
from devtools.taxi import Trip, produce, trips
from tests.chaos.test_airflow_retry import exactly_once
from tests.support.pipelines import kafka_pipeline, unique

pytestmark = [pytest.mark.integration]
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000
HOURS = 6


def backfill(airflow, name):
    cli = [str(Path(sys.executable).parent / "streamslice"), "--dir", str(airflow.pipelines),
           "backfill", name, "--from", "2024-05-01T00:00:00Z",
           "--to", f"2024-05-01T{HOURS:02d}:00:00Z", "--unpause", "--json"]
    out = subprocess.run(cli, env=airflow.env, capture_output=True, text=True, timeout=1200)
    assert out.stdout, out.stderr[-3000:]
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


def plans_and_starts(airflow, name):
    """Each run's plan (the task's XCom ``plan``) and when its task started."""
    out = {}
    runs = airflow.api("GET", f"/api/v2/dags/{name}/dagRuns?limit=100")["dag_runs"]
    for run in runs:
        path = f"/api/v2/dags/{name}/dagRuns/{run['dag_run_id']}/taskInstances/plan_read_commit"
        ti = airflow.api("GET", path)
        plan = airflow.api("GET", f"{path}/xcomEntries/plan?deserialize=true")["value"]
        if isinstance(plan, str):
            plan = json.loads(plan)
        started = datetime.fromisoformat(ti["start_date"].replace("Z", "+00:00"))
        out[run["logical_date"][:13]] = (plan, started.timestamp() * 1000, ti["state"])
    return dict(sorted(out.items()))


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
    first_plan, first_start, _ = runs[0]
    for hour, (plan, started, state) in enumerate(runs[1:], start=1):
        assert state == "success"
        assert plan["interval"]["start"] == T0 + hour * HOUR
        # planned by the first run's task, before this run's own task started
        assert first_start < plan["planned_at"] < started, hour
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
    failed = next(v for k, v in runs.items() if k.endswith("T02"))
    assert failed[2] == "failed"
    assert claims_left(airflow) == []
