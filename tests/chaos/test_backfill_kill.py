"""Chaos in a backfill, under Airflow's own scheduler (LocalExecutor, reads on a Spark Connect
server): ``streamslice backfill`` of five hourly intervals, one run at a time, meets a
``kill -9`` of a task's processes in each phase of a run in turn: once the plan is saved,
after the read before the publish, right after the publish, and right after the checkpoint
advanced; with plan, read and commit as three tasks (``tasks: separate``: the plan task, then
the commit task three times) and as one (``tasks: combined``, Spark Connect's default: the one
task, in each of its steps). With ``retries: 0`` each of those intervals fails and the
backfill says which; the same command again (``--reprocess failed``) re-runs those four
alone. Then every interval holds its hour's records exactly once (pyarrow and DuckDB's glob
agree), the interval that never failed was not published again, and the checkpoint is at the
last interval's end.

The faults come from the file every task of the session's scheduler reads
(``STREAMSLICE_INJECT_FAULT=@FILE``), one per line, each fired once, in order. (A kill in the
middle of the read itself happens on the Spark Connect server here, not in the task: the
read's kills are in test_airflow_retry and test_airflow_kill, with the JVM in the task.)"""
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.chaos.test_airflow_retry import checkpoint, exactly_once
from tests.support.pipelines import kafka_pipeline, unique

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000
PHASES = ("plan", "before_publish", "after_publish", "after_checkpoint")


@pytest.fixture
def airflow(airflow_services):
    """The session's Airflow; faults a failed test leaves unfired do not outlive it."""
    yield airflow_services
    airflow_services.faults.write_text("")


def backfill(airflow, name, *extra):
    cli = [str(Path(sys.executable).parent / "streamslice"), "--dir", str(airflow.pipelines),
           "backfill", name, "--from", "2024-05-01T00:00:00Z", "--to", "2024-05-01T05:00:00Z",
           "--unpause", "--json", *extra]
    out = subprocess.run(cli, env=airflow.env, capture_output=True, text=True, timeout=1800)
    assert out.stdout, out.stderr[-3000:]
    return out.returncode, json.loads(out.stdout)


def manifest(dataset, hour):
    with open(f"{dataset}/interval=20240501T{hour:02d}0000Z/_manifest.json") as f:
        return json.load(f)


@pytest.mark.parametrize("tasks", ["separate", "combined"])
@pytest.mark.timeout(1800)  # nine runs one at a time, on a machine CI may share
def test_a_backfill_killed_in_each_phase_is_exact_after_its_rerun(broker, airflow,
                                                                   spark_connect, tmp_path,
                                                                   tasks):
    topic, name = unique("chaos-backfill"), unique("chaos_backfill")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 5, 40, seed=31, late_share=0),
                   partitions=2)
    per_hour = Counter((t - T0) // HOUR for _, _, t in sent)
    kafka_pipeline(broker.bootstrap, topic, name=name, folder=airflow.pipelines,
                   mode="interval", schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                   end_date="2024-05-01T04:00:00Z", retries=0, max_active_runs=1, tasks=tasks,
                   spark={"runner": "connect", "remote": spark_connect.remote},
                   output=tmp_path)
    airflow.wait_for_dag(name)
    airflow.faults.write_text("".join(f"{phase}:action=kill_task\n" for phase in PHASES))

    code, first = backfill(airflow, name)
    assert code == 1 and first["state"] == "failed", first
    assert airflow.faults.read_text() == ""  # every kill happened
    states = Counter(r["state"] for r in first["runs"])
    assert states == {"failed": 4, "success": 1}, first["runs"]
    dataset = f"{tmp_path}/pipeline={name}"
    survivor = next(h for h, r in enumerate(first["runs"]) if r["state"] == "success")
    kept = manifest(dataset, survivor)["committed_at"]

    code, again = backfill(airflow, name, "--reprocess", "failed")
    assert code == 0 and again["state"] == "success", again
    assert [r["records"] for r in again["runs"]] == [per_hour[h] for h in range(5)]
    exactly_once(dataset, [(p, o) for p, o, _ in sent])
    assert sorted(p.name for p in Path(dataset).iterdir()) == [
        f"interval=20240501T{h:02d}0000Z" for h in range(5)]
    for hour in range(5):
        assert manifest(dataset, hour)["records"] == per_hour[hour]
    assert manifest(dataset, survivor)["committed_at"] == kept, "re-run, not only the failed"
    assert checkpoint(airflow, name)["interval_end"] == T0 + 5 * HOUR
    assert list(Path(tmp_path, "_streamslice", f"pipeline={name}").rglob("staging/*/*")) == []
