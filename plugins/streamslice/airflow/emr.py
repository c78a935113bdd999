"""``spark.runner: emr-serverless``: the read job on an EMR Serverless application, through the
amazon provider's hooks. The job script, the package (for --py-files), the plan and the client
properties are uploaded under ``spark.emr_serverless.code_uri``; the staging area (and so the
pipeline's output path) must be on S3."""
import json
import logging
import time
import uuid

from ..errors import ConfigError, SourceError
from ..reading.job import ReadJob
from ..spark.submit import JOB, package_zip

log = logging.getLogger("streamslice")


def run_emr_serverless(cfg, plan, staging_uri, properties, options=None, *,
                       emr_hook=None, s3_hook=None, sleep=time.sleep, clock=time.monotonic):
    emr = cfg.spark.emr_serverless
    if not staging_uri.startswith("s3://"):
        raise ConfigError("spark.runner emr-serverless writes through S3: set output.path to "
                          "an s3:// location")
    if emr_hook is None or s3_hook is None:
        from airflow.providers.amazon.aws.hooks.emr import EmrServerlessHook
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook
        emr_hook = emr_hook or EmrServerlessHook(aws_conn_id=emr["aws_conn_id"])
        s3_hook = s3_hook or S3Hook(aws_conn_id=emr["aws_conn_id"])
    prefix = f"{emr['code_uri'].rstrip('/')}/{plan.pipeline}/{uuid.uuid4().hex[:12]}"
    uris = _upload(s3_hook, prefix, plan, properties)
    args = ReadJob(uris["plan"], staging_uri, uris["properties"], options or {}).argv()
    params = [f"--py-files {uris['package']}", "--conf spark.sql.session.timeZone=UTC"]
    if emr.get("venv_archive"):
        params += [f"--conf spark.archives={emr['venv_archive']}#environment",
                   "--conf spark.emr-serverless.driverEnv.PYSPARK_PYTHON=./environment/bin/python",
                   "--conf spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python"]
    params += [f"--conf {k}={v}" for k, v in cfg.spark.conf.items()]
    run = emr_hook.conn.start_job_run(
        applicationId=emr["application_id"], executionRoleArn=emr["execution_role_arn"],
        name=f"streamslice-{plan.pipeline}-{plan.partition}"[:256],
        jobDriver={"sparkSubmit": {"entryPoint": uris["job"], "entryPointArguments": args,
                                   "sparkSubmitParameters": " ".join(params)}})
    job_id = run["jobRunId"]
    log.info("EMR Serverless job run %s started on application %s", job_id,
             emr["application_id"])
    deadline = clock() + emr["timeout"] / 1000
    while True:
        job = emr_hook.conn.get_job_run(applicationId=emr["application_id"],
                                        jobRunId=job_id)["jobRun"]
        state = job["state"]
        if state in emr_hook.JOB_SUCCESS_STATES:
            return staging_uri
        if state in emr_hook.JOB_FAILURE_STATES:
            raise SourceError(f"EMR Serverless job run {job_id} ended {state}: "
                              f"{job.get('stateDetails', 'no details')}")
        if clock() > deadline:
            emr_hook.conn.cancel_job_run(applicationId=emr["application_id"], jobRunId=job_id)
            raise SourceError(f"EMR Serverless job run {job_id} did not finish in "
                              f"{emr['timeout'] // 1000}s; cancelled")
        sleep(10)


def _upload(s3, prefix, plan, properties):
    import tempfile
    bucket, key = prefix[len("s3://"):].split("/", 1)
    uris = {}

    def put(name, data, encrypt=False):
        s3.load_bytes(data, key=f"{key}/{name}", bucket_name=bucket, replace=True,
                      encrypt=encrypt)
        uris[name.split(".")[0]] = f"s3://{bucket}/{key}/{name}"

    put("job.py", JOB.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        put("package.zip", package_zip(tmp).read_bytes())
    put("plan.json", plan.to_json().encode())
    put("properties.json", json.dumps(properties or {}).encode(), encrypt=True)
    return uris

