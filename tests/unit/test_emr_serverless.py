"""The EMR Serverless runner's own logic, against fake hooks (no EMR here): what it uploads,
how it submits, how it follows the job run's state."""
import json

import pytest

from streamslice.airflow.emr import run_emr_serverless
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
    JOB_SUCCESS_STATES = {"SUCCESS"}
    JOB_FAILURE_STATES = {"FAILED", "CANCELLING", "CANCELLED"}

    def __init__(self, states, details=""):
        self.states, self.details, self.started, self.cancelled = list(states), details, None, []
        self.conn = self

    def start_job_run(self, **kw):
        self.started = kw
        return {"jobRunId": "jr-1"}

    def get_job_run(self, applicationId, jobRunId):
        return {"jobRun": {"state": self.states.pop(0), "stateDetails": self.details}}

    def cancel_job_run(self, **kw):
        self.cancelled.append(kw)


def run(emr, staging="s3://lake/data/pipeline=p/_staging/batch=00000001/t1", **kw):
    s3 = FakeS3()
    run_emr_serverless(CFG, PLAN, staging, {"bootstrap.servers": "b:9092", "sasl.password": "x"},
                       emr_hook=emr, s3_hook=s3, sleep=lambda s: None, **kw)
    return s3


def test_uploads_and_submits_then_waits_for_success():
    emr = FakeEmr(["PENDING", "RUNNING", "SUCCESS"])
    s3 = run(emr)
    job = emr.started
    assert job["applicationId"] == "00app" and job["executionRoleArn"].endswith("role/emr")
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
    assert encrypted and json.loads(data)["sasl.password"] == "x"
    assert read_plan(s3.objects[uploaded["plan.json"]][0]).partition == "batch=00000001"


def test_a_failed_job_run_is_reported_with_its_details():
    with pytest.raises(SourceError, match="job run jr-1 ended FAILED: Driver OOM"):
        run(FakeEmr(["RUNNING", "FAILED"], details="Driver OOM"))


def test_the_staging_area_must_be_on_s3():
    with pytest.raises(ConfigError, match="set output.path to an s3:// location"):
        run(FakeEmr(["SUCCESS"]), staging="/tmp/lake/_staging")


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
