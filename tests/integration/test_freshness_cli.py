"""``streamslice freshness`` with no scheduler running at all: the watchdog's check from
outside Airflow, on the real metadata database, sending through the amazon provider's
SnsNotifier to an SNS topic on a local moto_server (read back from a subscribed SQS queue).
The checkpoints are left by real runs (dag.test(), real broker, real Spark)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.conftest import ROOT
from tests.support.connections import aws_connection
from tests.support.pipelines import kafka_pipeline, run_dag, run_interval, unique, utc

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "streamslice")
T0 = 1_714_521_600_000  # 2024-05-01 00:00 UTC


def freshness(folder, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    out = subprocess.run([CLI, "--dir", str(folder), "freshness", *args], capture_output=True,
                         text=True, env=env, timeout=300)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    return out


def test_the_command_alerts_a_stale_pipeline_once_without_a_scheduler(
        broker, spark, airflow_db, sns_queue, monkeypatch, tmp_path):
    moto, sns_topic, received = sns_queue
    aws_connection(monkeypatch, "alerts_aws", moto.endpoint)
    topic = unique("freshness")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, trips(T0, 1, 20, seed=3), partitions=1)
    alerts = {"freshness": "2h",
              "notifiers": [{"sns": {"topic_arn": sns_topic, "aws_conn_id": "alerts_aws"}}]}
    # Complete to 2024-05-01 01:00, far past 2 h; the other committed a moment ago.
    stale = kafka_pipeline(broker.bootstrap, topic, name=unique("stale"), mode="interval",
                           schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                           format={"value": "json", "schema": {"n": "long"}}, alerts=alerts)
    fresh = kafka_pipeline(broker.bootstrap, topic, name=unique("fresh"),
                           format={"value": "json", "schema": {"n": "long"}}, alerts=alerts)
    run_interval(stale, utc(2024, 5, 1, 0))
    run_dag(fresh)
    folder = tmp_path / "pipelines"  # just these two (the session's folder holds others)
    folder.mkdir()
    for cfg in (stale, fresh):
        shutil.copy(cfg.file, folder)
    received(wait=1)  # drain what the runs and other tests sent

    first = freshness(folder, "--json")
    assert first.returncode == 3, (first.stdout, first.stderr)
    assert json.loads(first.stdout)["pipelines"] == {stale.name: "stale", fresh.name: "fresh"}
    sent = [a for a in received(wait=5) if a["kind"] == "stale"]
    assert len(sent) == 1, sent
    assert sent[0]["pipeline"] == stale.name
    assert sent[0]["details"]["complete_to"] == "2024-05-01T01:00:00.000Z"
    assert "freshness limit 2 h" in sent[0]["message"]

    second = freshness(folder)  # told already: the same stretch is not alerted again
    assert second.returncode == 3, (second.stdout, second.stderr)
    assert f"{stale.name}  alerted" in second.stdout and f"{fresh.name}  fresh" in second.stdout
    assert [a for a in received(wait=3) if a["kind"] == "stale"] == []

    # The watchdog DAG reads the same bookkeeping: it does not alert the stretch either.
    from streamslice.airflow.freshness import build_watchdog
    build_watchdog([stale, fresh]).test()
    assert [a for a in received(wait=3) if a["kind"] == "stale"] == []

    # Recorded where the Streamslice page lists it: one stale alert on the stale pipeline.
    from airflow.utils.session import create_session

    from streamslice.airflow import ui_data
    with create_session() as session:
        _, kept = ui_data.alerts(session, ui_data.asset(session, stale.name))
        _, none = ui_data.alerts(session, ui_data.asset(session, fresh.name))
    assert [a.kind for a in kept] == ["stale"] and none == []
    assert_claims_are_atomic(f"streamslice/{stale.name}")

    # Only the fresh pipeline left: exit 0, nothing sent.
    (folder / f"{stale.name}.yaml").unlink()
    ok = freshness(folder)
    assert ok.returncode == 0, (ok.stdout, ok.stderr)
    assert received(wait=3) == []


def assert_claims_are_atomic(asset):
    """The command's claim on a stale stretch, on the real metadata database: of eight checks
    claiming at once, one holds it, whether the stretch was unclaimed (an insert) or held by
    a claim that may be taken over (an update of exactly the value read)."""
    from concurrent.futures import ThreadPoolExecutor

    from streamslice.airflow.checkpoint_store import OfflineAssetState
    state = OfflineAssetState(asset)
    for key, free in (("stale_alert/race-insert", lambda held: False),
                      ("stale_alert/race-update", lambda held: held["id"] == "left")):
        if "update" in key:
            state.set(key, {"id": "left"})
        with ThreadPoolExecutor(8) as pool:
            won = list(pool.map(lambda i, k=key, f=free: state.claim(k, {"id": i}, f),
                                range(8)))
        assert won.count(True) == 1, (key, won)
        assert state.get(key) == {"id": won.index(True)}
        assert state.claim(key, {"id": "late"}, free) is False


def test_a_check_that_cannot_run_is_one_line_and_exit_1(tmp_path):
    """No metadata database to read (an unmigrated AIRFLOW_HOME): exit 1, not the stale 3."""
    kafka_pipeline("127.0.0.1:1", "t", name=unique("nodb"), folder=tmp_path / "p",
                         output=tmp_path, alerts={"freshness": "2h"})
    home = tmp_path / "airflow-home"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "plugins"), AIRFLOW_HOME=str(home))
    out = subprocess.run([CLI, "--dir", str(tmp_path / "p"), "freshness"], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 1 and out.stdout == "", (out.stdout, out.stderr)
    assert out.stderr.splitlines() == [
        f"streamslice: Airflow's metadata database for AIRFLOW_HOME={home} is not set up (no "
        "such table: asset): run `airflow db migrate` with that AIRFLOW_HOME, or set "
        "AIRFLOW_HOME to the home your Airflow uses"]
