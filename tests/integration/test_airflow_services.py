"""Against the real Airflow components (api-server, scheduler, dag-processor, triggerer;
SQLite, LocalExecutor): backfill by time range with Airflow's own backfill and with
`streamslice backfill`, deadline alerts from the triggerer, and the UI in headless Chromium."""
import json
import shutil
import subprocess
import sys
import urllib.error
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic, free_port
from devtools.taxi import produce, trips
from tests.conftest import ROOT, SESSION_DIR
from tests.support.pipelines import kafka_pipeline, unique
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000
HOUR = 3_600_000
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def airflow(airflow_services):
    return airflow_services


def runs(airflow, dag_id, run_type=None):
    query = f"?run_type={run_type}" if run_type else ""
    return airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns{query}&limit=100"
                       if query else f"/api/v2/dags/{dag_id}/dagRuns?limit=100")["dag_runs"]


def wait_runs(airflow, dag_id, count, run_type="backfill", timeout=300):
    def ended():
        got = runs(airflow, dag_id, run_type)
        if len(got) >= count and all(r["state"] in ("success", "failed") for r in got):
            return got
        return None
    return wait_for(ended, timeout, lambda: f"{dag_id}'s {count} runs to finish: "
                    f"{runs(airflow, dag_id, run_type)}", interval=2)


def create_backfill(airflow, body, timeout=300):
    """POST /api/v2/backfills, as the UI does. On SQLite under load Airflow may answer 503 (its
    database was locked) after it has committed the backfill but not its runs, and its own
    clean-up of that empty backfill can fail the same way: it then refuses new backfills (409)
    until the scheduler counts it abandoned, 2 minutes after its creation. The same lock met
    outside the part Airflow guards (the request's own reads) is a 500 whose log says
    "database is locked". So those are tried again, and so is 409, but only after them."""
    refused: list[urllib.error.HTTPError] = []  # Airflow's answers that are tried again

    def created():
        try:
            return airflow.api("POST", "/api/v2/backfills", body)
        except urllib.error.HTTPError as exc:
            busy = exc.code == 503 or (exc.code == 500 and "database is locked" in str(exc))
            if not (busy or (exc.code == 409 and refused)):
                raise
            refused.append(exc)
            return None
    return wait_for(created, timeout, lambda: f"Airflow to accept the backfill: {refused[-1]}",
                    interval=2)


def wait_run(airflow, dag_id, interval_start, timeout=300):
    """Until the run of the interval starting at ``interval_start`` has ended: what a backfill
    of it waits on (the scheduler's sweep marks the backfill complete later, and later the
    busier the machine is)."""
    def ended():
        run = next(r for r in runs(airflow, dag_id)
                   if r["data_interval_start"].startswith(interval_start))
        return run if run["state"] in ("success", "failed") else None
    return wait_for(ended, timeout, f"the {interval_start} run to finish", interval=2)


def partition_rows(dataset, hour):
    t = ds.dataset(f"{dataset}/interval=20240501T{hour:02d}0000Z", format="parquet").to_table(
        columns=["partition", "offset"])
    return list(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))


def test_backfill_by_time_range_and_the_ui(broker, airflow, spark_connect, tmp_path):
    topic, name = unique("backfill"), unique("backfill")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, hours=3, per_hour=150, seed=21))
    expected = Counter((ts - T0) // HOUR for _, _, ts in sent)
    kafka_pipeline(broker.bootstrap, topic, name=name, folder=airflow.pipelines,
                   mode="interval", schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                   end_date="2024-05-01T02:00:00Z", max_active_runs=2, retries=0,
                   # backfill runs read in parallel on one Spark Connect server, no JVM start
                   # per task
                   spark={"runner": "connect", "remote": spark_connect.remote}, output=tmp_path)
    airflow.wait_for_dag(name)
    airflow.airflow("dags", "unpause", name)
    airflow.airflow("backfill", "create", "--dag-id", name, "--from-date",
                    "2024-05-01T00:00:00+00:00", "--to-date", "2024-05-01T02:00:00+00:00")
    done = wait_runs(airflow, name, 3)
    assert {r["state"] for r in done} == {"success"}, done
    dataset = f"{tmp_path}/pipeline={name}"
    first = {}
    for hour in range(3):
        rows = partition_rows(dataset, hour)
        assert len(rows) == expected[hour] == len(set(rows))
        first[hour] = json.load(open(f"{dataset}/interval=20240501T{hour:02d}0000Z/"
                                     "_manifest.json"))["committed_at"]

    # The same through `streamslice backfill`, which thinks in timestamps and reprocesses.
    env = dict(airflow.env)
    cli = [str(Path(sys.executable).parent / "streamslice"), "--dir", str(airflow.pipelines),
           "backfill", name]
    out = subprocess.run(cli + ["--from", "2024-05-01T01:30:00Z", "--to", str(T0 // 1000 + 3 *
                                                                              3600)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "backfill " + name in out.stderr and "2/2" in out.stderr  # the progress bar
    assert "2024-05-01T01:00:00.000Z → 2024-05-01T02:00:00.000Z  success" in out.stdout
    for hour in range(3):
        manifest = json.load(open(f"{dataset}/interval=20240501T{hour:02d}0000Z/"
                                  "_manifest.json"))
        assert manifest["records"] == expected[hour]
        assert (manifest["committed_at"] == first[hour]) == (hour == 0), "replaced, not added"
    # The wrapper closed its backfill when its runs ended, without waiting for the scheduler's
    # sweep, so the UI can start the next one at once: through the REST API as the UI does
    # it, hour 2 only, replacing its partition.
    # (A try of the wrapper's that SQLite refused may have left a backfill of its own, closed.)
    mine = airflow.api("GET", f"/api/v2/backfills?dag_id={name}")["backfills"]
    assert len(mine) >= 2 and all(b["completed_at"] for b in mine), mine
    before = json.load(open(f"{dataset}/interval=20240501T020000Z/_manifest.json"))
    body = {"dag_id": name, "from_date": "2024-05-01T02:00:00Z", "to_date":
            "2024-05-01T02:00:00Z", "reprocess_behavior": "completed", "max_active_runs": 1}
    backfill = create_backfill(airflow, body)
    # While it has a run in flight (held by pausing it), a second backfill is refused at once.
    airflow.api("PUT", f"/api/v2/backfills/{backfill['id']}/pause")
    busy = subprocess.run(cli + ["--from", "2024-05-01T00:00:00Z", "--to", "2024-05-01T01:00Z"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert busy.returncode == 1
    assert busy.stderr.strip().splitlines()[-1] == (  # after any line on what it waited for
        f"streamslice: another backfill of {name} is still running (1 runs queued or running); "
        "wait for it or cancel it (Airflow UI → Backfills, or the REST API)")
    airflow.api("PUT", f"/api/v2/backfills/{backfill['id']}/unpause")
    assert wait_run(airflow, name, "2024-05-01T02:00:00")["state"] == "success"
    after = json.load(open(f"{dataset}/interval=20240501T020000Z/_manifest.json"))
    assert after["records"] == expected[2] and after["committed_at"] > before["committed_at"]

    bad = subprocess.run(cli + ["--from", "2024-05-01T03:00:00Z", "--to", "2024-05-01T01:00Z"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1
    assert bad.stderr.strip() == ("streamslice: the range is empty or reversed: --to must be "
                                  "after --from")

    # The UI shows the DAG, the run and its tasks (screenshot kept as a test artifact).
    run_id = sorted(r["dag_run_id"] for r in done)[0]
    url = f"{airflow.url}/dags/{name}/runs/{quote(run_id, safe='')}"
    dom = chromium(url, "--dump-dom").stdout
    for text in (name, run_id, "plan_read_commit"):  # its one task (Connect: tasks combined)
        assert text in dom, f"{text!r} not on {url}"
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "airflow-dag-run.png"
    chromium(url, f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000
    docs = chromium(f"{airflow.url}/dags/{name}", "--dump-dom").stdout
    assert "by record timestamp" in docs or name in docs


def chromium(url, *what):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "Chromium is missing: `make test` installs it (apt-get install chromium)"
    profile = SESSION_DIR / f"chromium-{free_port()}"
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", "--no-first-run", "--disable-quic",
                           f"--user-data-dir={profile}", "--window-size=1400,900",
                           "--virtual-time-budget=20000", *what, url],
                          capture_output=True, text=True, timeout=120)


def test_deadline_alert_from_the_triggerer(airflow, sns_queue):
    _, sns_topic, received = sns_queue
    name = unique("deadline")
    kafka_pipeline(f"127.0.0.1:{free_port()}", "nowhere", name=name, folder=airflow.pipelines,
                   retries=1, retry_delay="60s", alerts={"deadline": "3s", "notifiers": [
                       {"sns": {"topic_arn": sns_topic, "aws_conn_id": "alerts_aws"}}]},
                   output="/tmp/streamslice-deadline")
    received(wait=1)
    airflow.wait_for_dag(name)
    airflow.airflow("dags", "unpause", name)
    run = airflow.api("POST", f"/api/v2/dags/{name}/dagRuns", {"logical_date": None})
    alerts = received(wait=90, until="deadline")
    alert = next(a for a in alerts if a["kind"] == "deadline")
    assert alert["pipeline"] == name and alert["run_id"] == run["dag_run_id"]
    assert "has not finished 3s after it was queued" in alert["message"]
    assert alert["link"].startswith(airflow.url)
