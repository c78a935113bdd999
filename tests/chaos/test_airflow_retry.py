"""Chaos under Airflow's own scheduler (api-server, scheduler, dag-processor, triggerer;
SQLite, LocalExecutor): a task's processes are SIGKILLed and Airflow retries the task in the
same DAG run, as after a ``kill -9`` on a worker. One interval run meets, in turn: the plan
task killed once its plan is saved in the task state store, the Spark JVM alone killed in the
middle of the read, the whole read task (task process and JVM) killed there, and the commit
task killed right after its publish. Every retry picks up what the killed try left: the same
plan, the same publish. The run ends with the interval exactly once and the checkpoint at its
end; the JVM's death is one clear line in the failed try's log.

The faults come from a file the scheduler's tasks all see (``STREAMSLICE_INJECT_FAULT=@FILE``),
one per line, each fired once."""
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from devtools.duck import connect
from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, unique
from tests.support.wait import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z


@pytest.fixture
def airflow(airflow_services):
    """The session's Airflow; faults a failed test leaves unfired do not outlive it."""
    yield airflow_services
    airflow_services.faults.write_text("")


class Run:
    """One DAG run triggered through the REST API, and what Airflow says about it."""

    def __init__(self, airflow, dag_id, start=None, end=None):
        """The run of the interval [start, end), or without them a manual run (incremental)."""
        self.airflow, self.dag_id = airflow, dag_id
        airflow.wait_for_dag(dag_id)
        airflow.airflow("dags", "unpause", dag_id)
        body = {"logical_date": start, "data_interval_start": start,
                "data_interval_end": end} if start else {"logical_date": None}
        self.info = airflow.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)
        self.path = f"/api/v2/dags/{dag_id}/dagRuns/{self.info['dag_run_id']}"

    def task(self, task_id):
        return self.airflow.api("GET", f"{self.path}/taskInstances/{task_id}")

    def tries_detail(self, task_id):
        tries = self.airflow.api("GET", f"{self.path}/taskInstances/{task_id}/tries")
        return sorted(tries["task_instances"], key=lambda t: t["try_number"])

    def tries(self, task_id):
        return [t["state"] for t in self.tries_detail(task_id)]

    def log(self, task_id, try_number):
        """The try's log events (structured, as the UI shows them)."""
        return self.airflow.api("GET", f"{self.path}/taskInstances/{task_id}/logs/"
                                       f"{try_number}?full_content=true")["content"]

    def describe(self):
        """Each task's tries and the error each failed try ended with (for failures)."""
        out = []
        tis = self.airflow.api("GET", f"{self.path}/taskInstances")["task_instances"]
        for task_id in [ti["task_id"] for ti in tis if ti["state"]]:
            for t in self.tries_detail(task_id):
                errors = [e.get("error_detail", [{}])[0].get("exc_value") or e.get("event")
                          for e in self.log(task_id, t["try_number"])
                          if e.get("level") == "error" and e.get("logger") != "task.stderr"]
                out.append(f"{task_id} try {t['try_number']}: {t['state']} {errors[-3:]}")
        return "\n".join(out)

    def wait(self, timeout=600):
        def ended():
            state = self.airflow.api("GET", self.path)["state"]
            return state if state in ("success", "failed") else None
        return wait_for(ended, timeout, f"{self.path} to finish ({self.airflow.home})",
                        interval=0.5)


def pipeline(airflow, name, broker, topic, output, **settings):
    # runner local: the JVM in the task's process group, which the faults kill
    return kafka_pipeline(broker.bootstrap, topic, name=name, folder=airflow.pipelines,
                          spark={"runner": "local"}, kafka={"max_records_per_split": 20},
                          output=output, **settings).file


def checkpoint(airflow, name):
    cli = [str(Path(sys.executable).parent / "streamslice"), "--dir", str(airflow.pipelines),
           "offsets", "show", name, "--json"]
    out = subprocess.run(cli, env=airflow.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def exactly_once(dataset, expected):
    table = ds.dataset(dataset, format="parquet", partitioning="hive").to_table(
        columns=["partition", "offset"])
    got = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert got == sorted(expected)
    glob = f"{dataset}/**/*.parquet"
    assert present(connect().sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchone())[0] == \
        len(expected)


def test_killed_tasks_retry_in_the_same_run(broker, airflow, tmp_path):
    topic, name = unique("chaos-retry"), unique("chaos_retry")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 60, seed=9, late_share=0),
                   partitions=2)
    pipeline(airflow, name, broker, topic, tmp_path, mode="interval", schedule="@hourly",
             start_date="2024-05-01T00:00:00Z", end_date="2024-05-01T01:00:00Z", retries=2,
             retry_delay="1s")
    airflow.faults.write_text("plan:action=kill_task\n"
                              "read:split=1:after=1:action=kill_jvm\n"
                              "read:split=1:after=1:action=kill_task\n"
                              "after_publish:action=kill_task\n")
    run = Run(airflow, name, "2024-05-01T00:00:00Z", "2024-05-01T01:00:00Z")
    assert run.wait() == "success", run.describe()
    assert airflow.faults.read_text() == ""  # every fault fired
    assert run.tries("plan") == ["failed", "success"]
    assert run.tries("read") == ["failed", "failed", "success"]
    assert run.tries("commit") == ["failed", "success"]

    failure = [e for e in run.log("read", 1) if e.get("event") == "Task failed with exception"]
    message = failure[0]["error_detail"][0]["exc_value"]  # what the UI shows as the error
    assert message.startswith("SourceError: the Spark JVM is gone (killed, or out of memory?): ")
    assert message.endswith(" (task read, try 1 of 3: Airflow retries it)")
    assert "\n" not in message
    dataset = f"{tmp_path}/pipeline={name}"
    exactly_once(dataset, [(p, o) for p, o, _ in sent])
    assert [p.name for p in Path(dataset).iterdir()] == ["interval=20240501T000000Z"]
    with open(f"{dataset}/interval=20240501T000000Z/_manifest.json") as f:
        manifest = json.load(f)
    killed_plan = run.tries_detail("plan")[0]["end_date"]
    assert manifest["plan"]["planned_at"] / 1000 < stamp(killed_plan), \
        "the plan's retry planned again instead of reusing the saved plan"
    assert manifest["committed_at"] / 1000 < stamp(run.task("commit")["start_date"]), \
        "the commit's retry published again instead of finding the first try's publish"
    cp = checkpoint(airflow, name)
    assert cp["interval_end"] == T0 + 3_600_000 and cp["partition"] == manifest["partition"]
    assert cp["positions"] == {f"{topic}:{p}": 1 + max(o for q, o, _ in sent if q == p)
                               for p in (0, 1)}
    assert list(Path(tmp_path, "_streamslice", f"pipeline={name}").rglob("staging/*/*")) == []


def test_killed_tries_of_the_combined_task_resume_in_the_same_run(broker, airflow, tmp_path):
    """tasks: combined (plan, read and commit in one task): its process is SIGKILLed once its
    plan is saved, in the middle of the read, after the publish and after the checkpoint.
    Each retry resumes where the killed try stopped: the plan is the saved one, the read
    that was cut short is done again but the one that ended is not, the publish is found
    rather than made again, and the checkpoint ends at the interval's end."""
    topic, name = unique("chaos-combined"), unique("chaos_combined")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 60, seed=11, late_share=0),
                   partitions=2)
    pipeline(airflow, name, broker, topic, tmp_path, mode="interval", schedule="@hourly",
             start_date="2024-05-01T00:00:00Z", end_date="2024-05-01T01:00:00Z", retries=4,
             retry_delay="1s", tasks="combined")
    airflow.faults.write_text("plan:action=kill_task\n"
                              "read:split=1:after=1:action=kill_task\n"
                              "after_publish:action=kill_task\n"
                              "after_checkpoint:action=kill_task\n")
    run = Run(airflow, name, "2024-05-01T00:00:00Z", "2024-05-01T01:00:00Z")
    assert run.wait() == "success", run.describe()
    assert airflow.faults.read_text() == ""  # every fault fired
    task = "plan_read_commit"
    assert run.tries(task) == ["failed"] * 4 + ["success"]
    dataset = f"{tmp_path}/pipeline={name}"
    exactly_once(dataset, [(p, o) for p, o, _ in sent])
    with open(f"{dataset}/interval=20240501T000000Z/_manifest.json") as f:
        manifest = json.load(f)
    tries = run.tries_detail(task)
    assert manifest["plan"]["planned_at"] / 1000 < stamp(tries[0]["end_date"]), \
        "a retry planned again instead of reusing the saved plan"
    # A try that read again would have published again: a staging area read to its end is
    # always published (a cleared run replaces its partition).
    assert manifest["committed_at"] / 1000 < stamp(tries[3]["start_date"]), \
        "a retry read and published again instead of finding the third try's publish"
    cp = checkpoint(airflow, name)
    assert cp["interval_end"] == T0 + 3_600_000 and cp["partition"] == manifest["partition"]
    assert list(Path(tmp_path, "_streamslice", f"pipeline={name}").rglob("staging/*/*")) == []


def stamp(iso):
    return datetime.fromisoformat(iso).timestamp()
