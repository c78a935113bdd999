"""``spark.runner: emr-serverless``: the read job on an EMR Serverless application, waited for
as the amazon provider's ``EmrServerlessStartJobOperator`` waits in deferrable mode.

The read task uploads the job script, the package (for --py-files), the plan and the public
client properties under ``spark.emr_serverless.code_uri``, starts the job run and defers to
``EmrJobRunTrigger`` (the provider's ``EmrServerlessStartJobTrigger``): no worker slot is held
while the job runs, and the task resumes in ``ReadOperator.read_done`` once the run ends.
A cleared, failed-by-hand or killed task cancels its job run: the trigger's ``on_kill`` when
the task is deferred (Airflow 3.3's triggerer calls it on such user actions), the operator's
``on_kill`` before it defers. A run that outlives ``timeout`` is cancelled. The staging area
(and so the pipeline's output path) must be on S3.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from airflow.providers.amazon.aws.hooks.emr import EmrServerlessHook
from airflow.providers.amazon.aws.triggers.emr import EmrServerlessStartJobTrigger
from airflow.providers.amazon.aws.utils.waiter_with_logging import async_wait
from airflow.triggers.base import TriggerEvent

from ..errors import ConfigError, SourceError
from ..reading.job import ReadJob
from ..spark.package import LAUNCHER
from ..spark.submit import package_zip

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from ..config.pipeline import PipelineConfig
    from ..planning.plan import ReadPlan
    from ..runners.emr_serverless import EmrServerlessRunner
    from ..sources import Properties

log = logging.getLogger("streamslice")


def run_emr_serverless(cfg: PipelineConfig, plan: ReadPlan[Any], staging_uri: str,
                       properties: Properties, options: dict[str, Any] | None = None, *,
                       emr_hook: Any = None, s3_hook: Any = None,
                       started: Callable[[dict[str, str]], None] | None = None) -> None:
    """Start the read job run, then defer to its trigger (raises ``TaskDeferred``).
    ``started(job)`` is told the job run as soon as it exists (for ``on_kill``)."""
    job = start_job_run(cfg, plan, staging_uri, properties, options, emr_hook=emr_hook,
                        s3_hook=s3_hook)
    if started is not None:
        started(job)
    defer_to(cfg, job)


def defer_to(cfg: PipelineConfig, job: dict[str, str]) -> None:
    """Wait for ``job`` without a worker slot: raises ``TaskDeferred`` (``read_done`` next)."""
    from airflow.sdk.exceptions import TaskDeferred
    emr = settings(cfg)
    attempts = max(1, math.ceil(emr.timeout / emr.poll_interval))
    trigger = EmrJobRunTrigger(application_id=job["application_id"], job_id=job["job_id"],
                               waiter_delay=max(1, emr.poll_interval // 1000),
                               waiter_max_attempts=attempts, aws_conn_id=emr.aws_conn_id,
                               cancel_on_kill=True)
    # The waiter gives up (and the run is cancelled) after ``timeout``; Airflow's own
    # deferral timeout is only a backstop for a trigger that never answers.
    backstop = timedelta(milliseconds=emr.timeout + 2 * emr.poll_interval + 60_000)
    raise TaskDeferred(trigger=trigger, method_name="read_done", timeout=backstop)


def start_job_run(cfg: PipelineConfig, plan: ReadPlan[Any], staging_uri: str,
                  properties: Properties, options: dict[str, Any] | None = None, *,
                  emr_hook: Any = None, s3_hook: Any = None) -> dict[str, str]:
    emr = settings(cfg)
    if not staging_uri.startswith("s3://"):
        raise ConfigError("spark.runner emr-serverless writes through S3: set output.path to "
                          "an s3:// location")
    emr_hook = emr_hook or EmrServerlessHook(aws_conn_id=emr.aws_conn_id)
    if s3_hook is None:
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook
        s3_hook = S3Hook(aws_conn_id=emr.aws_conn_id)
    prefix = f"{emr.code_uri.rstrip('/')}/{plan.pipeline}/{uuid.uuid4().hex[:12]}"
    uris = _upload(s3_hook, prefix, plan, properties)
    args = ReadJob(uris["plan"], staging_uri, uris["properties"], options or {}).argv()
    params = [f"--py-files {uris['package']}", "--conf spark.sql.session.timeZone=UTC"]
    if emr.venv_archive:
        params += [f"--conf spark.archives={emr.venv_archive}#environment",
                   "--conf spark.emr-serverless.driverEnv.PYSPARK_PYTHON=./environment/bin/python",
                   "--conf spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python"]
    params += [f"--conf {k}={v}" for k, v in emr.conf.items()]
    name = f"streamslice-{plan.pipeline}-{plan.partition}"[:256]
    cancel_superseded(emr_hook, emr.application_id, name)
    run = emr_hook.conn.start_job_run(
        clientToken=str(uuid.uuid4()),  # the same for botocore's retries: one run, not two
        applicationId=emr.application_id, executionRoleArn=emr.execution_role_arn,
        name=name,
        jobDriver={"sparkSubmit": {"entryPoint": uris["job"], "entryPointArguments": args,
                                   "sparkSubmitParameters": " ".join(params)}})
    job = {"application_id": emr.application_id, "job_id": run["jobRunId"]}
    log.info("EMR Serverless job run %s started on application %s; waiting for it without "
             "a worker slot (deferred)", job["job_id"], job["application_id"])
    return job


def settings(cfg: PipelineConfig) -> EmrServerlessRunner:
    """The pipeline's ``spark.emr_serverless`` settings (its runner is EMR Serverless)."""
    if cfg.spark.kind != "emr-serverless":
        raise ConfigError(f"spark.runner is {cfg.spark.kind} now, not emr-serverless",
                          file=cfg.file, field="spark.runner")
    return cast("EmrServerlessRunner", cfg.spark)


def cancel_superseded(hook: Any, application_id: str, name: str) -> None:
    """Runs of the same read (pipeline and partition) that an earlier try left running: a
    worker killed before it deferred, a task cleared before the triggerer took up its
    trigger. This try reads the partition again, so they are cancelled, never left to run
    beside it."""
    token = None
    while True:
        try:
            page = hook.conn.list_job_runs(applicationId=application_id,
                                           states=sorted(hook.JOB_INTERMEDIATE_STATES),
                                           **({"nextToken": token} if token else {}))
        except hook.conn.exceptions.ResourceNotFoundException:
            return  # no such application: starting the run says so
        for run in page.get("jobRuns", []):
            if run.get("name") == name:
                log.warning("EMR Serverless job run %s of this read was left by an earlier "
                            "try; cancelling it", run["id"])
                cancel_job_run(None, {"application_id": application_id, "job_id": run["id"]},
                               hook)
        token = page.get("nextToken")
        if not token:
            return


def finish_job_run(cfg: PipelineConfig, event: dict[str, Any] | None,
                   own: dict[str, str] | None = None) -> None:
    """What the trigger said: success, or the run failed / timed out (then it is cancelled,
    as the provider's operator does, and the read fails with the run's state). An event
    about another run than this try's ``own`` is an earlier try's, whose trigger fired as
    the task was cleared (Airflow may still hand it to the new try): this try waits on."""
    if not event:
        raise SourceError("EMR Serverless: the trigger ended without an event")
    job = event.get("job_details") or {}
    if own and job.get("job_id") != own["job_id"]:
        log.warning("EMR Serverless: an event about job run %s of an earlier try; this try "
                    "waits for its own run %s", job.get("job_id"), own["job_id"])
        defer_to(cfg, own)
    if event.get("status") == "success":
        log.info("EMR Serverless job run %s succeeded", job.get("job_id"))
        return
    if job.get("job_id"):
        cancel_job_run(settings(cfg).aws_conn_id, job)
    raise SourceError(f"EMR Serverless job run {job.get('job_id')} did not succeed: "
                      f"{event.get('message', 'no details')}")


def cancel_job_run(aws_conn_id: str | None, job: dict[str, str], hook: Any = None) -> None:
    """Cancel a job run (a cleared or killed task, a timed-out run); one that already ended
    is left as it is."""
    hook = hook or EmrServerlessHook(aws_conn_id=aws_conn_id)
    try:
        state = hook.conn.get_job_run(applicationId=job["application_id"],
                                      jobRunId=job["job_id"])["jobRun"]["state"]
        if state in hook.JOB_TERMINAL_STATES:
            return
        hook.conn.cancel_job_run(applicationId=job["application_id"], jobRunId=job["job_id"])
        log.info("EMR Serverless job run %s cancelled (was %s)", job["job_id"], state)
    except Exception as exc:  # noqa: BLE001 - a cleanup: the task fails anyway, say why it was not
        log.warning("could not cancel EMR Serverless job run %s: %s", job["job_id"], exc)


class EmrJobRunTrigger(EmrServerlessStartJobTrigger):
    """The provider's ``EmrServerlessStartJobTrigger`` (its waiter definition, polling loop,
    events and cancel on kill) run on the provider's sync client in threads. Its own ``run``
    polls through aiobotocore, and no aiobotocore release supports the botocore this project
    pins (1.44); and nothing here blocks the triggerer's event loop, which Airflow 3.3 takes
    for deadlocked after 30 s without a word from it (making a boto3 client, reading a
    connection, waiting for an answer: all in threads)."""

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            hook = self.hook()
            client = await asyncio.to_thread(lambda: hook.conn)
            waiter = await asyncio.to_thread(hook.get_waiter, self.waiter_name, None,
                                             self.waiter_config_overrides, False, client)
            await async_wait(_InThread(waiter), self.waiter_delay, self.attempts,
                             self.waiter_args, self.failure_message, self.status_message,
                             self.status_queries)
        except asyncio.CancelledError:
            raise  # a user's clear or kill: the triggerer calls on_kill (Airflow 3.3)
        except Exception as exc:  # noqa: BLE001 - any failure is the trigger's failure event
            yield TriggerEvent({"status": "failure", "message": str(exc),  # type: ignore[no-untyped-call]
                                self.return_key: self.return_value})
            return
        yield TriggerEvent(  # type: ignore[no-untyped-call]  # Airflow: unannotated __init__
            {"status": "success", self.return_key: self.return_value})

    async def on_kill(self) -> None:
        if self.job_id and self.cancel_on_kill:
            await asyncio.to_thread(cancel_job_run, self.aws_conn_id,
                                    {"application_id": self.application_id,
                                     "job_id": self.job_id}, self.hook())


class _InThread:
    """A botocore waiter whose ``wait`` is awaited (one attempt per call, as ``async_wait``
    calls it) and runs in a thread."""

    def __init__(self, waiter: Any) -> None:
        self.waiter = waiter

    async def wait(self, **kwargs: Any) -> None:
        await asyncio.to_thread(self.waiter.wait, **kwargs)


def _upload(s3: Any, prefix: str, plan: ReadPlan[Any],
            properties: Properties | None) -> dict[str, str]:
    import tempfile
    bucket, key = prefix[len("s3://"):].split("/", 1)
    uris: dict[str, str] = {}

    def put(name: str, data: bytes, encrypt: bool = False) -> None:
        s3.load_bytes(data, key=f"{key}/{name}", bucket_name=bucket, replace=True,
                      encrypt=encrypt)
        uris[name.split(".")[0]] = f"s3://{bucket}/{key}/{name}"

    put("job.py", LAUNCHER.encode())
    with tempfile.TemporaryDirectory() as tmp:
        put("package.zip", package_zip(tmp).read_bytes())
    put("plan.json", plan.to_json().encode())
    put("properties.json", json.dumps(properties or {}).encode(), encrypt=True)
    return uris
