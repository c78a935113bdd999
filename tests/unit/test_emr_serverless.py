"""The EMR Serverless runner's own logic, against fake hooks (they stand in for the
provider's hooks to check what we send; tests/integration/test_emr_serverless.py runs it
against a local EMR Serverless): what it uploads, how it submits, what it defers to, how it
takes the trigger's event."""
import json
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred

from streamslice.airflow.emr import (
    EmrJobRunTrigger,
    cancel_job_run,
    finish_job_run,
    run_emr_serverless,
)
from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError, SourceError
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import ReadPlan
from streamslice.sources import read_plan

CFG = parse_pipeline("""
mode: incremental
kafka: {bootstrap_servers: "b:9092", topics: [t]}
spark:
  runner: emr-serverless
  conf: {spark.executor.memory: 4g}
  emr_serverless:
    timeout: 2m
    application_id: 00app
    execution_role_arn: arn:aws:iam::1:role/emr
    code_uri: s3://code/streamslice
    venv_archive: s3://code/venv.tar.gz
output:
  path: s3://lake/data
""")
PLAN = ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=0,
                splits=[KafkaSplit(0, "t", 0, 0, 5)], partition="batch=00000001")


class FakeS3:
    def __init__(self):
        self.objects = {}

    def load_bytes(self, data, key, bucket_name, replace, encrypt):
        self.objects[f"s3://{bucket_name}/{key}"] = (data, encrypt)


class FakeEmr:
    JOB_TERMINAL_STATES = {"SUCCESS", "FAILED", "CANCELLING", "CANCELLED"}
    JOB_INTERMEDIATE_STATES = {"PENDING", "RUNNING", "SCHEDULED", "SUBMITTED"}

    def __init__(self, state="RUNNING", running=()):
        self.state, self.cancelled = state, []
        self.started: dict[str, Any] = {}  # start_job_run's arguments, once called
        self.running = list(running)  # (id, name) of runs still going
        self.conn = self

    def list_job_runs(self, applicationId, states, nextToken=None):
        page = 0 if nextToken is None else int(nextToken)
        runs = [{"id": i, "name": n} for i, n in self.running[page * 2:page * 2 + 2]]
        more = len(self.running) > (page + 1) * 2
        return {"jobRuns": runs, **({"nextToken": str(page + 1)} if more else {})}

    def start_job_run(self, **kw):
        self.started = kw
        return {"jobRunId": "jr-1"}

    def get_job_run(self, applicationId, jobRunId):
        return {"jobRun": {"state": self.state}}

    def cancel_job_run(self, **kw):
        self.cancelled.append(kw)


def run(emr, staging="s3://lake/data/pipeline=p/_staging/batch=00000001/t1", **kw):
    s3 = FakeS3()
    started: list[dict[str, str]] = []
    with pytest.raises(TaskDeferred) as deferred:
        run_emr_serverless(CFG, PLAN, staging, {"bootstrap.servers": "b:9092"},
                           emr_hook=emr, s3_hook=s3, started=started.append, **kw)
    return s3, started, deferred.value


def test_uploads_and_submits_then_defers_to_the_provider_trigger():
    emr = FakeEmr()
    s3, started, deferred = run(emr)
    job = emr.started
    assert job["applicationId"] == "00app" and job["executionRoleArn"].endswith("role/emr")
    assert job["clientToken"]  # botocore's retries of the call start one run, not two
    driver = job["jobDriver"]["sparkSubmit"]
    uploaded = {uri.rsplit("/", 1)[1]: uri for uri in s3.objects}
    assert driver["entryPoint"] == uploaded["job.py"]
    args = driver["entryPointArguments"]
    assert args[args.index("--plan") + 1] == uploaded["plan.json"]
    assert args[args.index("--staging") + 1].startswith("s3://lake/")
    assert f"--py-files {uploaded['package.zip']}" in driver["sparkSubmitParameters"]
    assert "spark.archives=s3://code/venv.tar.gz#environment" in driver["sparkSubmitParameters"]
    assert "--conf spark.executor.memory=4g" in driver["sparkSubmitParameters"]
    data, encrypted = s3.objects[uploaded["properties.json"]]
    assert encrypted and json.loads(data) == {"bootstrap.servers": "b:9092"}
    assert read_plan(s3.objects[uploaded["plan.json"]][0]).partition == "batch=00000001"
    assert started == [{"application_id": "00app", "job_id": "jr-1"}]
    # the provider's trigger (its waiter, events and cancel on kill), 2 minutes at 30s a poll
    assert isinstance(deferred.trigger, EmrJobRunTrigger) and deferred.method_name == "read_done"
    path, kwargs = deferred.trigger.serialize()
    assert path == "streamslice.airflow.emr.EmrJobRunTrigger"
    assert kwargs["application_id"] == "00app" and kwargs["job_id"] == "jr-1"
    assert kwargs["cancel_on_kill"] and kwargs["aws_conn_id"] == "aws_default"
    assert (kwargs["waiter_delay"], kwargs["waiter_max_attempts"]) == (30, 4)
    assert deferred.timeout.total_seconds() > 120


def test_the_trigger_event_ends_the_read():
    finish_job_run(CFG, {"status": "success", "job_details": {"job_id": "jr-1"}})
    with pytest.raises(SourceError, match="without an event"):
        finish_job_run(CFG, None)


def test_a_run_that_failed_or_timed_out_is_cancelled_and_fails_the_read(monkeypatch):
    emr = FakeEmr("RUNNING")
    monkeypatch.setattr("streamslice.airflow.emr.EmrServerlessHook", lambda **kw: emr)
    with pytest.raises(SourceError, match="jr-1 did not succeed: Waiter error: max attempts"):
        finish_job_run(CFG, {"status": "error", "message": "Waiter error: max attempts reached",
                             "job_details": {"application_id": "00app", "job_id": "jr-1"}})
    assert emr.cancelled == [{"applicationId": "00app", "jobRunId": "jr-1"}]


def test_a_run_that_already_ended_is_not_cancelled():
    emr = FakeEmr("FAILED")
    cancel_job_run("c", {"application_id": "00app", "job_id": "jr-1"}, hook=emr)
    assert emr.cancelled == []


def test_the_staging_area_must_be_on_s3():
    with pytest.raises(ConfigError, match="set output.path to an s3:// location"):
        run(FakeEmr(), staging="/tmp/lake/_staging")


def test_emr_settings_are_validated():
    with pytest.raises(ConfigError, match="spark.emr_serverless.code_uri: must be an s3://"):
        parse_pipeline("""
mode: incremental
kafka: {bootstrap_servers: "b:9092", topics: [t]}
spark:
  runner: emr-serverless
  emr_serverless: {application_id: a, execution_role_arn: r, code_uri: /tmp/x}
output: {path: s3://lake}
""")
    with pytest.raises(ConfigError, match="poll_interval: must be at least 1s"):
        parse_pipeline("""
mode: incremental
kafka: {bootstrap_servers: "b:9092", topics: [t]}
spark:
  runner: emr-serverless
  emr_serverless: {application_id: a, execution_role_arn: r, code_uri: s3://c, poll_interval: 10ms}
output: {path: s3://lake}
""")


def test_runs_an_earlier_try_left_running_are_cancelled_before_a_new_one_starts():
    name = "streamslice-p-batch=00000001"
    emr = FakeEmr(running=[("old-1", "streamslice-p-batch=00000000"), ("old-2", name),
                           ("other", "not ours"), ("old-3", name)])
    run(emr)
    assert [c["jobRunId"] for c in emr.cancelled] == ["old-2", "old-3"]  # across pages
    assert emr.started["name"] == name


def test_an_earlier_tries_event_makes_this_try_wait_for_its_own_run():
    """A cleared task's old trigger may fire as the task is cleared, and Airflow may hand that
    event to the new try: it defers again, to its own run."""
    old = {"status": "failure", "message": "Serverless Job failed: CANCELLED",
           "job_details": {"application_id": "00app", "job_id": "jr-old"}}
    with pytest.raises(TaskDeferred) as deferred:
        finish_job_run(CFG, old, own={"application_id": "00app", "job_id": "jr-new"})
    assert deferred.value.trigger.serialize()[1]["job_id"] == "jr-new"
    finish_job_run(CFG, {"status": "success", "job_details": {"job_id": "jr-new"}},
                   own={"application_id": "00app", "job_id": "jr-new"})
