"""The task callables of a pipeline DAG: plan → read → commit, each its own task, or the three
steps in one task (``tasks: combined``). Thin: the work is in the core.

Only the plan step reads the pipeline file's source and output settings; read and commit use
what the plan recorded, so an edit between the steps cannot change where a run publishes."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from .. import faults
from ..commit.lease import Lease
from ..commit.manifest import plan_id
from ..commit.protocol import attempt_name, staging_for
from ..config import load_pipeline
from ..errors import CommitError, StreamsliceError
from ..metrics import RunMetrics, run_figures, step_timing
from ..planning.planner import partition_name, plan_run
from ..reading.sink import direct_codec
from ..reading.staging import Staging
from ..sources import CommitListener, lifecycle_tasks, read_plan
from ..timeutil import from_ms, iso, to_ms
from .ahead import Claims
from .errors import operator_errors
from .hooks import pipeline_properties, source_properties, with_catalog_connection
from .metrics import emit
from .runs import alive, run_cycle
from .store import TaskCheckpointStore, TaskMarks, output_asset

if TYPE_CHECKING:
    from ..commit.checkpoint import Checkpoint
    from ..commit.manifest import Manifest
    from ..config.pipeline import PipelineConfig
    from ..planning.plan import Interval, ReadPlan
    from ..reading.ahead import ReadAhead

log = logging.getLogger("streamslice")


def plan_task(pipeline_file: str, **context: Any) -> dict[str, Any]:
    with operator_errors(context):
        return _plan(load_pipeline(pipeline_file), context)


def _plan(cfg: PipelineConfig, context: dict[str, Any]) -> dict[str, Any]:
    """The run's plan: the one an earlier try saved in this task's state, or a new one,
    saved before it is returned."""
    started = time.monotonic()
    saved = context["task_state_store"].get("plan")
    # Read as read and commit will (an upgrade since may have to migrate or refuse it: a
    # plan this release cannot read fails here, naming why), and reused while it holds.
    reused = run_cycle(cfg, context).saved_plan(saved)
    if saved and reused is not None:
        log.info("Reusing the plan saved by an earlier try of this run (version %d, "
                 "%d splits).", saved.get("version"), len(reused.splits))
        return dict(saved)
    interval = None
    if cfg.mode == "interval":
        interval = _interval(cfg, context)
        _wait_until_closed(interval)
    checkpoint = TaskCheckpointStore(context, output_asset(cfg)).get()
    plan = _new_plan(cfg, interval, checkpoint, context["run_id"], context)
    log.info("Planned %d splits, %d records to %s; lag %s", len(plan.splits),
             plan.total_records_hint, plan.partition,
             {s.key: s.lag for s in plan.splits})
    for gap in plan.gaps:
        log.warning("Data loss skipped (on_data_loss: skip): %s", gap)
    data = plan.to_dict()
    context["task_state_store"].set("plan", data)
    faults.check("plan")
    emit([step_timing("plan", time.monotonic() - started)], cfg.name, cfg.source.kind)
    return data


def _new_plan(cfg: PipelineConfig, interval: Interval | None, checkpoint: Checkpoint | None,
              run_id: str, context: dict[str, Any]) -> ReadPlan:
    return plan_run(cfg.source, pipeline=cfg.name, mode=cfg.mode, decode=cfg.decode,
                    output=cfg.output.target(cfg.name), interval=interval,
                    checkpoint=checkpoint, run_id=run_id, properties=pipeline_properties(cfg),
                    marks=TaskMarks(context["asset_state_store"][output_asset(cfg)],
                                    lambda name: Lease(cfg.output.target(cfg.name), name,
                                                       run_id, alive=alive(context))))


def _wait_until_closed(interval: Interval) -> None:
    """An interval is read once it is over and its lateness has passed; until then the task
    is rescheduled rather than reading a range that can still grow."""
    from airflow.sdk.exceptions import AirflowRescheduleException
    ready_at = interval.end + interval.allowed_lateness
    if int(time.time() * 1000) < ready_at:
        log.info("Interval closes (with lateness) at %s; rescheduling.", iso(ready_at))
        raise AirflowRescheduleException(from_ms(ready_at))


def read_task(pipeline_file: str, **context: Any) -> str:
    """Runs the read job and returns the staging URI; a job that runs elsewhere and is waited
    for by a trigger (EMR Serverless) defers instead, and ``read_done`` returns it."""
    with operator_errors(context):
        cfg = load_pipeline(pipeline_file)
        plan = read_plan(context["ti"].xcom_pull(task_ids="plan"))
        run_cycle(cfg, context).check_holds(plan)  # a cleared read of a stale plan
        return _read(cfg, plan, context)


def _read(cfg: PipelineConfig, plan: ReadPlan, context: dict[str, Any],
          claims: Claims | None = None, read_ahead: list[str] | None = None) -> str:
    """Read every split into this try's staging area; its URI. With ``claims`` (a combined
    task reading ahead), the intervals of queued runs it claims are read in the same job, each
    into a staging area of its run's own, and recorded in their claims for those runs (and
    their partitions in ``read_ahead``)."""
    ti = context["ti"]
    staging = _read_staging(plan, context)
    remember(context, plan=plan)
    setup = {t.task_id: ti.xcom_pull(task_ids=t.task_id)
             for t in lifecycle_tasks(cfg.source) if t.role == "setup"}
    ahead = _plan_ahead(cfg, plan, context, claims) if claims and direct_codec(plan) else []
    from .runners import run_spark_read

    def run(also: list[tuple[ReadPlan, str]]) -> None:
        run_spark_read(cfg, plan, staging.uri, pipeline_properties(cfg),
                       cfg.source.read_options(setup),
                       started=lambda job: _job_started(context, job), ahead=also)
    started = time.monotonic()
    try:
        run(ahead)
    except StreamsliceError as exc:
        if not ahead or claims is None:
            raise
        log.warning("Reading %d queued runs' intervals with this one failed (%s); reading "
                    "this run's alone, and each of them reads its own.", len(ahead), exc)
        for other, _ in ahead:
            _quietly(lambda p=other.partition: claims.drop(p))
        ahead = []
        run(ahead)
    took = time.monotonic() - started
    log.info("Read %d splits into %s in %.1fs", len(plan.splits), staging.uri, took)
    for other, uri in ahead:
        assert claims is not None
        log.info("Read %s for run %s into %s", other.partition, other.run_id, uri)
        claims.complete(other.partition, other.to_dict(), uri)
        if read_ahead is not None:
            read_ahead.append(other.partition)
    emit([step_timing("read", took)], cfg.name, cfg.source.kind)
    remember(context, staging=staging.uri)
    return staging.uri


def _plan_ahead(cfg: PipelineConfig, plan: ReadPlan, context: dict[str, Any],
                claims: Claims) -> list[tuple[ReadPlan, str]]:
    """The claimed intervals' plans, each with the staging area it is read into."""
    assert plan.interval is not None
    started = time.monotonic()
    claimed = claims.claim(plan.interval)
    if not claimed:
        return []
    claimed_in = time.monotonic() - started
    checkpoint = TaskCheckpointStore(context, output_asset(cfg)).get()
    ahead = []
    for run_id, interval in claimed:
        try:
            other = _new_plan(cfg, interval, checkpoint, run_id, context)
        except StreamsliceError as exc:  # its own run plans it, and fails as it should
            log.warning("Not reading %s ahead: %s", partition_name("interval", interval), exc)
            claims.drop(partition_name("interval", interval))
            continue
        ahead.append((other, staging_for(other, attempt_name(run_id, "ahead")).uri))
    log.info("Reading %d queued runs' intervals with this one (claimed in %.1fs, planned in "
             "%.1fs).", len(ahead), claimed_in, time.monotonic() - started - claimed_in)
    return ahead


def read_done(pipeline_file: str, event: dict[str, Any] | None, **context: Any) -> str:
    """The read task resumed by its trigger: the job run's outcome, then the same staging
    URI the read task would have returned (the same try, so the same staging area)."""
    with operator_errors(context):
        cfg = load_pipeline(pipeline_file)
        from .emr import finish_job_run
        finish_job_run(cfg, event, context["task_state_store"].get(JOB_RUN))
        plan = read_plan(context["ti"].xcom_pull(task_ids="plan"))
        staging = _read_staging(plan, context).uri
        remember(context, plan=plan, staging=staging)
        return staging


JOB_RUN = "job_run"  # task state: the job run the read's latest try started elsewhere


def _job_started(context: dict[str, Any], job: dict[str, str]) -> None:
    """A job run elsewhere (EMR Serverless) started by this try: kept for ``on_kill`` and,
    in task state, for the resumed task to tell its own run's events from an earlier try's."""
    context["task_state_store"].set(JOB_RUN, job)
    found = getattr(context.get("task"), "job_started", None)
    if found is not None:
        found(job)


def _read_staging(plan: ReadPlan, context: dict[str, Any]) -> Staging:
    """This try's staging area: a retry reads into an area of its own."""
    return staging_for(plan, attempt_name(context["run_id"], f"try{context['ti'].try_number}"))


def commit_task(pipeline_file: str, **context: Any) -> dict[str, Any]:
    with operator_errors(context):
        plan = read_plan(context["ti"].xcom_pull(task_ids="plan"))
        return _commit(load_pipeline(pipeline_file), plan,
                       context["ti"].xcom_pull(task_ids="read"), context)


def _commit(cfg: PipelineConfig, plan: ReadPlan, staging_uri: str,
            context: dict[str, Any]) -> dict[str, Any]:
    """Verify and publish what ``staging_uri`` holds (or find this plan's earlier publish),
    then advance the checkpoint."""
    started = time.monotonic()
    plan.output = with_catalog_connection(plan.output)
    remember(context, plan=plan)
    staging = Staging(staging_uri, plan.output.auth if plan.output else None)
    asset = output_asset(cfg)
    manifest, checkpoint = run_cycle(cfg, context).commit(
        plan, staging, now_ms=int(time.time() * 1000),
        published=lambda m: remember(context, manifest=m))
    if isinstance(cfg.source, CommitListener):
        source = cfg.source
        source.after_commit(checkpoint.positions, lambda: source_properties(source))
    from .alerting import after_commit
    after_commit(cfg, manifest, context, context["asset_state_store"][asset])
    extra = run_metrics(manifest, checkpoint.positions).to_dict()
    context["outlet_events"][asset].extra = extra
    emit([*run_figures(manifest, int(time.time() * 1000), checkpoint.interval_end),
          step_timing("commit", time.monotonic() - started)], cfg.name, cfg.source.kind)
    log.info("Committed %s: %d records, %d dead letters; checkpoint advanced.",
             manifest.partition, manifest.records, manifest.dead_letters)
    return {**extra, "checkpoint": checkpoint.to_dict()}


STAGED = "staged"  # task state: what a try of the combined task read, until it is committed


def plan_read_commit_task(pipeline_file: str, **context: Any) -> dict[str, Any]:
    """Plan, read and commit in one task (``tasks: combined``): one task process instead of
    three, and no scheduler hand-off between them. The steps stay what they are as tasks, so a
    try resumes where the failed one stopped: the plan saved by an earlier try is reused, what
    an earlier try read to the end is committed without reading it again (``STAGED``, kept in
    this task's state until a try commits it), a publish already made is found rather than
    repeated, and the checkpoint advances once. What fails to commit is not kept, and after a
    successful try nothing is, so clearing the run then reads the plan again (and replaces
    the partition), as clearing the read task does. The plan is also this task's XCom
    ``plan``, where the page finds a plan task's."""
    with operator_errors(context):
        cfg = load_pipeline(pipeline_file)
        store = context["task_state_store"]
        claims = Claims(cfg, context) if cfg.read_ahead else None
        if claims is not None:
            mine = partition_name("interval", _interval(cfg, context))
            claim = claims.wait(mine)
            if claim is not None:
                if store.get("plan") is None:
                    return _adopt(cfg, claim, claims, mine, context)
                claims.drop(mine)  # this run planned before: its own plan stands
        data = _plan(cfg, context)
        context["ti"].xcom_push(key="plan", value=data)
        staged = store.get(STAGED)
        if staged and staged.get("plan_id") == plan_id(read_plan(data)):
            log.info("Committing what an earlier try of this task read into %s.",
                     staged["staging"])
            try:
                return _commit_and_forget(cfg, data, staged["staging"], context)
            except CommitError:  # it failed verification, or is gone unpublished
                store.delete(STAGED)  # so the next try (a clear) reads the plan again
                raise
        ahead: list[str] = []
        uri = _read(cfg, read_plan(data), context, claims, ahead)
        _note_staged(store, data, uri)
        result = _commit_and_forget(cfg, data, uri, context)
        return {**result, "read_ahead": ahead} if ahead else result


def _adopt(cfg: PipelineConfig, claim: ReadAhead, claims: Claims, partition: str,
           context: dict[str, Any]) -> dict[str, Any]:
    """Commit what another run's task read ahead for this run, with the plan it read by
    (saved as this run's own, so a retry commits or reads the same plan)."""
    assert claim.plan is not None and claim.staging is not None
    store, data, staging = context["task_state_store"], claim.plan, claim.staging
    store.set("plan", data)
    context["ti"].xcom_push(key="plan", value=data)
    log.info("Committing what run %s read ahead for this run into %s.", claim.by, staging)
    _note_staged(store, data, staging)
    try:
        return _commit_and_forget(cfg, data, staging, context)
    except CommitError:  # it failed verification, or is gone unpublished
        store.delete(STAGED)  # so the next try reads the plan itself
        raise
    finally:
        _quietly(lambda: claims.drop(partition))


def _interval(cfg: PipelineConfig, context: dict[str, Any]) -> Interval:
    return cfg.interval(to_ms(context["data_interval_start"]),
                        to_ms(context["data_interval_end"]))


def _quietly(call: Any) -> None:
    """A claim's clean-up: a claim left behind is dropped by the run it names."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - see above
        log.warning("Could not drop a read-ahead claim (%s).", exc)


def _commit_and_forget(cfg: PipelineConfig, data: dict[str, Any], staging_uri: str,
                       context: dict[str, Any]) -> dict[str, Any]:
    result = _commit(cfg, read_plan(data), staging_uri, context)
    remember(context, staging=None)  # committed and cleaned up: the manifest has the counts
    _note(lambda: context["task_state_store"].delete(STAGED))
    return result


def _note_staged(store: Any, data: dict[str, Any], staging_uri: str) -> None:
    """``STAGED``: the plan ``data``'s records are read to the end into ``staging_uri``."""
    _note(lambda: store.set(STAGED, {"plan_id": plan_id(read_plan(data)),
                                     "staging": staging_uri}))


def _note(write: Any) -> None:
    """``STAGED`` spares a retry a read; exactly once does not depend on it (a try without it
    reads the plan again and publishes the same records in the partition's place), so a
    metadata database too busy to keep it does not fail the run."""
    try:
        write()
    except Exception as exc:  # noqa: BLE001 - see above: only a read is at stake
        log.warning("Could not note in the task's state what this try read (%s); exactly "
                    "once does not depend on it.", exc)


def run_metrics(manifest: Manifest,
                positions: dict[str, Any] | None = None) -> RunMetrics:
    """What downstream DAGs and the Streamslice page see as the asset event's extra."""
    return RunMetrics.of(manifest, positions)


def remember(context: Any, **facts: Any) -> None:
    """Tell the task's operator what its run did (a no-op for other operators)."""
    found = getattr(context.get("task"), "remember", None)
    if found is not None:
        found(**facts)
