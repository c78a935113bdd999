"""The task callables of a pipeline DAG: plan → read → commit, each its own task, or the three
steps in one task (``tasks: combined``). Thin: each turns Airflow's context into a run
(``commit.run.Run``) once, at the top, and hands over; ``TaskHost`` is what the run asks of
Airflow and Spark.

Only the plan step reads the pipeline file's source and output settings; read and commit use
what the plan recorded, so an edit between the steps cannot change where a run publishes."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack, cast

from ..commit.lease import Lease
from ..commit.run import Outcome, Run
from ..config import load_pipeline
from ..monitoring.metrics import RunMetrics, run_figures, step_timing
from ..planning.planner import plan_run
from ..records import JsonObject
from ..sources import CommitListener, lifecycle_tasks, read_plan
from ..timestamps import from_ms, iso, to_ms
from .checkpoint_store import TaskMarks, output_asset
from .claims import Claims
from .failures import operator_errors
from .hooks import pipeline_properties, source_properties, with_catalog_connection
from .metrics import emit
from .runs import alive, run_cycle

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

    from ..commit.checkpoint import Checkpoint
    from ..commit.manifest import Manifest
    from ..config.pipeline import PipelineConfig
    from ..planning.plan import Interval, ReadPlan
    from ..splits import Positions

log = logging.getLogger("streamslice")
JOB_RUN = "job_run"  # task state: the job run the read's latest try started elsewhere
XCom = JsonObject  # a task's return value: JSON, read back by its name


def plan_task(pipeline_file: str, **context: Unpack[Context]) -> XCom:
    with operator_errors(context):
        return task_run(load_pipeline(pipeline_file), context).plan().to_dict()


def read_task(pipeline_file: str, **context: Unpack[Context]) -> str:
    """Runs the read job and returns the staging URI; a job that runs elsewhere and is waited
    for by a trigger (EMR Serverless) defers instead, and ``read_done`` returns it."""
    with operator_errors(context):
        run = task_run(load_pipeline(pipeline_file), context)
        return run.read(planned(context))[0]


def read_done(pipeline_file: str, event: dict[str, Any] | None,
              **context: Unpack[Context]) -> str:
    """The read task resumed by its trigger: the job run's outcome, then the same staging
    URI the read task would have returned (the same try, so the same staging area)."""
    with operator_errors(context):
        cfg = load_pipeline(pipeline_file)
        from .emr import finish_job_run
        job: dict[str, str] | None = cast("Any", context["task_state_store"].get(JOB_RUN))
        finish_job_run(cfg, event, job)
        plan, run = planned(context), task_run(cfg, context)
        staging = run.staging(plan)
        run.host.report(plan=plan, staging=staging)
        return staging


def commit_task(pipeline_file: str, **context: Unpack[Context]) -> XCom:
    with operator_errors(context):
        run = task_run(load_pipeline(pipeline_file), context)
        return result(run.commit(planned(context), context["ti"].xcom_pull(task_ids="read")))


def plan_read_commit_task(pipeline_file: str, **context: Unpack[Context]) -> XCom:
    """Plan, read and commit in one task (``tasks: combined``): one task process instead of
    three, and no scheduler hand-off between them. The steps stay what they are as tasks, so a
    try resumes where the failed one stopped (``Run.combined``): the plan saved by an earlier
    try is reused, what an earlier try read to the end is committed without reading it again
    (the staged note, kept in this task's state until a try commits it), a publish already
    made is found rather than repeated, and the checkpoint advances once. What fails to commit
    is not kept, and after a successful try nothing is, so clearing the run then reads the
    plan again (and replaces the partition), as clearing the read task does. The plan is also
    this task's XCom ``plan``, where the page finds a plan task's."""
    with operator_errors(context):
        cfg = load_pipeline(pipeline_file)
        outcome = task_run(cfg, context, claims=bool(cfg.read_ahead)).combined()
        done = result(outcome)
        return {**done, "read_ahead": list(outcome.read_ahead)} if outcome.read_ahead else done


def task_run(cfg: PipelineConfig, context: Context, claims: bool = False) -> Run:
    """This task's try of its run, from Airflow's context."""
    host = TaskHost(cfg, context)
    return Run(run_cycle(cfg, context), context["task_state_store"], host,
               f"try{context['ti'].try_number}", Claims(cfg, context) if claims else None)


def planned(context: Context) -> ReadPlan[Any]:
    """The run's plan, as the plan task saved and returned it."""
    return read_plan(context["ti"].xcom_pull(task_ids="plan"))


def result(outcome: Outcome) -> XCom:
    """A commit's XCom: the run's metrics and the checkpoint it left."""
    extra = run_metrics(outcome.manifest, outcome.checkpoint.positions).to_dict()
    return {**extra, "checkpoint": outcome.checkpoint.to_dict()}


@dataclass(frozen=True)
class TaskHost:
    """What a run's steps ask of the Airflow task they run in (``commit.run.Host``)."""

    cfg: PipelineConfig
    context: Context

    def interval(self) -> Interval | None:
        if self.cfg.mode != "interval":
            return None
        start, end = self.context["data_interval_start"], self.context["data_interval_end"]
        assert start is not None and end is not None  # an interval run's are set
        return self.cfg.interval(to_ms(start), to_ms(end))

    def wait_closed(self, interval: Interval) -> None:
        _wait_until_closed(interval)

    def new_plan(self, interval: Interval | None, checkpoint: Checkpoint | None,
                 run_id: str) -> ReadPlan[Any]:
        cfg = self.cfg
        lease_alive = alive(self.context)
        marks = TaskMarks(self.context["asset_state_store"][output_asset(cfg)],
                          lambda name: Lease(cfg.output.target(cfg.name), name, run_id,
                                             alive=lease_alive))
        return plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, decode=cfg.decode,
                        output=cfg.output.target(cfg.name), interval=interval,
                        checkpoint=checkpoint, run_id=run_id,
                        properties=pipeline_properties(cfg), marks=marks)

    def read(self, plan: ReadPlan[Any], staging: str, ahead: Sequence[tuple[ReadPlan[Any], str]]
             ) -> None:
        cfg, ti = self.cfg, self.context["ti"]
        setup = {t.task_id: ti.xcom_pull(task_ids=t.task_id)
                 for t in lifecycle_tasks(cfg.source) if t.role == "setup"}
        from .runners import run_spark_read
        run_spark_read(cfg, plan, staging, pipeline_properties(cfg),
                       cfg.source.read_options(setup), started=self.job_started,
                       ahead=list(ahead))

    def job_started(self, job: dict[str, str]) -> None:
        """A job run elsewhere (EMR Serverless) started by this try: kept for ``on_kill``
        and, in task state, for the resumed task to tell its own run's events from an
        earlier try's."""
        self.context["task_state_store"].set(JOB_RUN, cast("Any", job))
        found = getattr(self.context.get("task"), "job_started", None)
        if found is not None:
            found(job)

    def connect(self, plan: ReadPlan[Any]) -> None:
        plan.output = with_catalog_connection(plan.output)

    def show(self, plan: ReadPlan[Any]) -> None:
        self.context["ti"].xcom_push(key="plan", value=plan.to_dict())

    def report(self, **facts: Any) -> None:
        """Tell the task's operator what its run did (a no-op for other operators)."""
        found = getattr(self.context.get("task"), "remember", None)
        if found is not None:
            found(**facts)

    def timed(self, step: str, seconds: float) -> None:
        emit([step_timing(step, seconds)], self.cfg.name, self.cfg.source.kind)

    def committed(self, plan: ReadPlan[Any], manifest: Manifest, checkpoint: Checkpoint,
                  seconds: float) -> None:
        cfg, asset = self.cfg, output_asset(self.cfg)
        if isinstance(cfg.source, CommitListener):
            source = cfg.source
            source.after_commit(checkpoint.positions, lambda: source_properties(source))
        from .alerting import after_commit
        after_commit(cfg, manifest, self.context, self.context["asset_state_store"][asset])
        extra = run_metrics(manifest, checkpoint.positions).to_dict()
        self.context["outlet_events"][asset].extra = extra
        emit([*run_figures(manifest, int(time.time() * 1000), checkpoint.interval_end),
              step_timing("commit", seconds)], cfg.name, cfg.source.kind)


def _wait_until_closed(interval: Interval) -> None:
    """An interval is read once it is over and its lateness has passed; until then the task
    is rescheduled rather than reading a range that can still grow."""
    from airflow.sdk.exceptions import AirflowRescheduleException
    ready_at = interval.end + interval.allowed_lateness
    if int(time.time() * 1000) < ready_at:
        log.info("Interval closes (with lateness) at %s; rescheduling.", iso(ready_at))
        raise AirflowRescheduleException(from_ms(ready_at))  # type: ignore[no-untyped-call]  # Airflow: unannotated __init__


def run_metrics(manifest: Manifest, positions: Positions | None = None) -> RunMetrics:
    """What downstream DAGs and the Streamslice page see as the asset event's extra."""
    return RunMetrics.of(manifest, positions)
