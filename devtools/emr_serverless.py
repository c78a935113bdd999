"""A local EMR Serverless for tests: moto's server (its EMR Serverless API, S3, STS, …) whose
job runs really run.

moto answers the EMR Serverless API but runs nothing (a job run is SUCCESS as soon as it is
started), and its state manager has no model for job runs. Here a started run is SCHEDULED,
then RUNNING while its ``sparkSubmit`` job runs on this machine (spark-submit on local[2];
the entry point and ``--py-files`` fetched from this server's own S3, the other
``sparkSubmitParameters`` kept, the job's AWS calls sent back to this server), then SUCCESS,
or FAILED with the job's last stderr line as ``stateDetails``. CancelJobRun kills the job
(CANCELLED). Runs on an application tagged ``{"emulator": "hold"}`` never start: they stay
RUNNING until cancelled, as a long job would, and their ``stateDetails`` count the GetJobRun
calls that asked after them (``asked N``: a waiter is polling); ListJobRuns shows it without
counting.

  python -m devtools.emr_serverless --port 5000      (then use http://127.0.0.1:5000)
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moto.emrserverless.models import EMRServerlessBackend, JobRun

REGION, KEY = "us-east-1", "test"


def _patch(port: int) -> None:
    from moto.emrserverless import models
    backend_class = models.EMRServerlessBackend
    start, cancel = backend_class.start_job_run, backend_class.cancel_job_run
    get = backend_class.get_job_run
    processes: dict[str, subprocess.Popen[str]] = {}
    asked: dict[str, int] = {}  # a held run's id → the GetJobRun calls that asked after it

    def get_job_run(self: EMRServerlessBackend, application_id: str, job_run_id: str) -> JobRun:
        run = get(self, application_id, job_run_id)
        if run.id in asked and run.state == "RUNNING":
            asked[run.id] += 1
            run.state_details = f"asked {asked[run.id]}"
        return run

    def start_job_run(self: EMRServerlessBackend, application_id: str, *args: Any,
                      **kwargs: Any) -> JobRun:
        run = start(self, application_id, *args, **kwargs)
        run.state = "SCHEDULED"
        hold = self.get_application(application_id).tags.get("emulator") == "hold"
        if hold:
            run.state, asked[run.id] = "RUNNING", 0
        else:
            threading.Thread(target=_run_job, args=(run, port, processes), daemon=True).start()
        return run

    def cancel_job_run(self: EMRServerlessBackend, application_id: str,
                       job_run_id: str) -> tuple[str, str]:
        out = cancel(self, application_id, job_run_id)
        proc = processes.pop(job_run_id, None)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        return out

    for name, method in (("start_job_run", start_job_run), ("cancel_job_run", cancel_job_run),
                         ("get_job_run", get_job_run)):
        setattr(backend_class, name, method)  # moto's own methods, patched in this process


def _run_job(run: JobRun, port: int, processes: dict[str, subprocess.Popen[str]]) -> None:
    import boto3
    endpoint = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                      aws_access_key_id=KEY, aws_secret_access_key=KEY)
    assert run.job_driver is not None, "StartJobRun takes a job driver"
    driver = run.job_driver["sparkSubmit"]
    entry, arguments = driver["entryPoint"], driver.get("entryPointArguments", [])
    submit = driver.get("sparkSubmitParameters", "")
    assert isinstance(entry, str) and isinstance(submit, str) and isinstance(arguments, list)
    with tempfile.TemporaryDirectory(prefix="emr-job-") as work:
        def fetch(uri: str) -> str:
            bucket, key = uri[len("s3://"):].split("/", 1)
            local = os.path.join(work, key.rsplit("/", 1)[-1])
            s3.download_file(bucket, key, local)
            return local

        params = shlex.split(submit)
        if "--py-files" in params:
            at = params.index("--py-files")
            params[at + 1] = ",".join(fetch(u) for u in params[at + 1].split(","))
        import pyspark
        spark_submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
        cmd = [spark_submit, "--master", "local[2]",
               "--conf", f"spark.pyspark.python={sys.executable}", *params,
               fetch(entry), *arguments]
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID=KEY,
                   AWS_SECRET_ACCESS_KEY=KEY, AWS_DEFAULT_REGION=REGION,
                   PYSPARK_PYTHON=sys.executable)
        for name in ("SPARK_REMOTE", "PYSPARK_GATEWAY_PORT", "PYTHONPATH"):
            env.pop(name, None)  # the job has what --py-files gives it, as on EMR
        if run.state == "CANCELLED":
            return
        run.state = "RUNNING"
        proc = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        processes[run.id] = proc
        _, err = proc.communicate()
        processes.pop(run.id, None)
        if run.state == "CANCELLED":
            return
        if proc.returncode == 0:
            run.state = "SUCCESS"
        else:
            lines = [ln for ln in err.strip().splitlines() if ln.strip()]
            run.state, run.state_details = "FAILED", (lines[-1] if lines else
                                                      f"exit {proc.returncode}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    _patch(args.port)
    from moto.server import main as moto_main
    moto_main(["-H", "127.0.0.1", "-p", str(args.port)])


if __name__ == "__main__":
    main()
