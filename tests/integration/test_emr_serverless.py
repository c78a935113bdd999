"""``spark.runner: emr-serverless`` against a local EMR Serverless: moto's server, whose job
runs really run here (``devtools.emr_serverless``: spark-submit on local[2] with what the read
task uploaded to its S3). The read task starts the run and defers to the amazon provider's
trigger, so no worker slot is held; the run's end resumes it. A task killed before it defers,
or a deferred task cleared by a user, cancels its job run."""
import asyncio
import json
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from devtools.services import EmrServerlessLocal, create_topic
from devtools.taxi import produce, trips
from tests.support.connections import aws_connection
from tests.support.pipelines import kafka_pipeline, run_dag, unique
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration
ROLE = "arn:aws:iam::123456789012:role/emr-job"


class EmrApps(EmrServerlessLocal):
    """The emulator, and its applications' ids by mode (``run``, ``hold``)."""

    apps: dict[str, str]


@pytest.fixture(scope="module")
def emr():
    server = EmrApps().start()
    client = server.client("emr-serverless")
    apps = {mode: client.create_application(name=f"streamslice-{mode}", type="SPARK",
                                            releaseLabel="emr-7.0.0",
                                            tags={"emulator": mode})["applicationId"]
            for mode in ("run", "hold")}
    for bucket in ("code", "lake"):
        server.client("s3").create_bucket(Bucket=bucket)
    server.apps = apps
    yield server
    server.stop()


@pytest.fixture
def aws(emr, monkeypatch):
    """This process (the commit reads the staging area) and the hooks reach the local AWS."""
    for key, value in {"AWS_ENDPOINT_URL": emr.endpoint, "AWS_ACCESS_KEY_ID": "test",
                       "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    aws_connection(monkeypatch, "emr_local", emr.endpoint)
    return emr


def pipeline(name, broker, topic, app, timeout="10m"):
    return kafka_pipeline(broker.bootstrap, topic, name=name, retries=0, spark={
        "runner": "emr-serverless",
        "emr_serverless": {"application_id": app, "execution_role_arn": ROLE,
                           "code_uri": "s3://code/streamslice", "aws_conn_id": "emr_local",
                           "poll_interval": "1s", "timeout": timeout}},
        output="s3://lake/out")


def test_the_read_defers_to_the_provider_trigger_and_the_run_commits(broker, aws, airflow_db,
                                                                     monkeypatch):
    from streamslice.airflow.emr import EmrJobRunTrigger
    from streamslice.airflow.operators import ReadOperator
    topic = unique("emr")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(1_714_521_600_000, 1, 200, seed=3))
    cfg = pipeline(unique("emr"), broker, topic, aws.apps["run"])
    resumed, polls = [], []
    real_done, real_run = ReadOperator.read_done, EmrJobRunTrigger.run

    def read_done(self, context, event=None):  # only a trigger's event leads here
        resumed.append(event)
        return real_done(self, context, event)

    async def run(self):
        polls.append(self.job_id)
        async for event in real_run(self):
            yield event
    monkeypatch.setattr(ReadOperator, "read_done", read_done)
    monkeypatch.setattr(EmrJobRunTrigger, "run", run)
    run_dag(cfg)
    job_id = polls[0]
    assert resumed == [{"status": "success", "job_details": {
        "application_id": aws.apps["run"], "job_id": job_id}}]
    job = aws.client("emr-serverless").get_job_run(applicationId=aws.apps["run"],
                                                   jobRunId=job_id)["jobRun"]
    assert job["state"] == "SUCCESS"
    driver = job["jobDriver"]["sparkSubmit"]
    assert driver["entryPoint"].startswith("s3://code/streamslice/")
    t = ds.dataset(f"lake/out/pipeline={cfg.name}/batch=00000001", format="parquet",
                   filesystem=_s3()).to_table()
    assert sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist())) == \
        sorted((p, o) for p, o, _ in sent)


def test_a_read_killed_before_it_defers_cancels_its_job_run(broker, aws, airflow_db):
    from streamslice.airflow.factory import build_dag
    cfg = pipeline(unique("emr-kill"), broker, "unused", aws.apps["hold"])
    client = aws.client("emr-serverless")
    job = {"application_id": aws.apps["hold"], "job_id": client.start_job_run(
        applicationId=aws.apps["hold"], executionRoleArn=ROLE, clientToken="k",
        jobDriver={"sparkSubmit": {"entryPoint": "s3://code/x.py"}})["jobRunId"]}
    read = build_dag(cfg).task_dict["read"]
    read.job_started(job)  # what the read task does once the run is started
    read.on_kill()
    assert _state(client, job) == "CANCELLED"


def test_a_deferred_read_cleared_by_a_user_cancels_its_job_run(aws, monkeypatch):
    """The trigger as Airflow 3.3's triggerer runs it: rebuilt from its serialized form, then
    cancelled with the user-action message and its on_kill awaited."""
    from airflow.sdk.module_loading import import_string

    from streamslice.airflow import emr
    from streamslice.airflow.emr import EmrJobRunTrigger
    asked, real_wait = [], emr._InThread.wait

    async def wait(self, **kwargs):
        asked.append(kwargs)
        await real_wait(self, **kwargs)
    monkeypatch.setattr(emr._InThread, "wait", wait)
    client = aws.client("emr-serverless")
    job = {"application_id": aws.apps["hold"], "job_id": client.start_job_run(
        applicationId=aws.apps["hold"], executionRoleArn=ROLE, clientToken="c",
        jobDriver={"sparkSubmit": {"entryPoint": "s3://code/x.py"}})["jobRunId"]}
    path, kwargs = EmrJobRunTrigger(application_id=job["application_id"], job_id=job["job_id"],
                                    waiter_delay=1, waiter_max_attempts=600,
                                    aws_conn_id="emr_local").serialize()
    trigger = import_string(path)(**kwargs)

    async def clear_while_waiting():
        task = asyncio.create_task(trigger.run().__anext__())
        deadline = time.monotonic() + 60
        while len(asked) < 2 and not task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # until the waiter has found the run RUNNING and asks again
        assert len(asked) >= 2 and not task.done(), "the trigger did not wait for its run"
        task.cancel("__airflow_user_action__")  # the triggerer's message for a user action
        with pytest.raises(asyncio.CancelledError):
            await task
        await trigger.on_kill()
    asyncio.run(clear_while_waiting())
    assert _state(client, job) == "CANCELLED"


def _runs(client, application_id):
    """The application's job runs (moto answers "does not exist" until it has one)."""
    try:
        return client.list_job_runs(applicationId=application_id)["jobRuns"]
    except client.exceptions.ResourceNotFoundException:
        return []


def _state(client, job):
    return client.get_job_run(applicationId=job["application_id"],
                              jobRunId=job["job_id"])["jobRun"]["state"]


def _s3():
    import pyarrow.fs as pafs
    return pafs.FileSystem.from_uri("s3://lake")[0]


def test_clearing_or_failing_a_deferred_read_under_the_scheduler_cancels_its_job_run(
        broker, emr, airflow_services):
    """The real scheduler and triggerer: the read defers while its run (on the application
    whose runs never end) is RUNNING and the trigger polls it. A user clears the task (the
    REST call behind the UI's Clear): that run is cancelled and the new try starts another.
    The user then marks the read failed: only the trigger's on_kill can cancel that one."""
    airflow = airflow_services
    client = emr.client("emr-serverless")
    airflow.api("PATCH", "/api/v2/connections", {"actions": [{
        "action": "create", "action_on_existence": "overwrite", "entities": [{
            "connection_id": "emr_local", "conn_type": "aws", "login": "test",
            "password": "test", "extra": json.dumps({"region_name": "us-east-1",
                                                     "endpoint_url": emr.endpoint})}]}]})
    topic, name = unique("emr-clear"), unique("emr_clear")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, trips(1_714_521_600_000, 1, 10, seed=2))
    before = {r["id"] for r in _runs(client, emr.apps["hold"])}
    cfg = pipeline(name, broker, topic, emr.apps["hold"])
    (airflow.pipelines / f"{name}.yaml").write_text(Path(cfg.file).read_text())
    airflow.wait_for_dag(name)
    airflow.airflow("dags", "unpause", name)
    run = airflow.api("POST", f"/api/v2/dags/{name}/dagRuns", {"logical_date": None})
    path = f"/api/v2/dags/{name}/dagRuns/{run['dag_run_id']}"

    def polled_while_deferred(known):
        """The new job run, once the read is deferred and the trigger has asked about it."""
        def asked():
            state = airflow.api("GET", f"{path}/taskInstances/read")["state"]
            jobs = [r for r in _runs(client, emr.apps["hold"]) if r["id"] not in known]
            assert state not in ("failed", "upstream_failed"), state
            if state == "deferred" and jobs and \
                    (jobs[0].get("stateDetails") or "").startswith("asked"):
                return jobs[0]["id"]
            return None
        return wait_for(asked, 300, f"the read to defer and poll: {airflow.home}", interval=1)

    def cancelled(job_id):
        return wait_for(lambda: next(r for r in _runs(client, emr.apps["hold"])
                                     if r["id"] == job_id)["state"] == "CANCELLED", 120,
                        f"job run {job_id} to be CANCELLED", interval=0.5)

    first = polled_while_deferred(before)
    airflow.api("POST", f"/api/v2/dags/{name}/clearTaskInstances", {
        "dry_run": False, "task_ids": ["read"], "dag_run_id": run["dag_run_id"],
        "only_failed": False})
    cancelled(first)  # clearing the deferred read cancels its job run
    second = polled_while_deferred(before | {first})
    airflow.api("PATCH", f"{path}/taskInstances/read", {"new_state": "failed"})
    cancelled(second)  # so does marking the deferred read failed
