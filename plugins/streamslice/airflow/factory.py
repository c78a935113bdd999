"""One DAG per pipeline file: ``[efo_register] → plan → read → commit [→ efo_deregister]``,
or with ``tasks: combined`` (the default on Spark Connect) ``[efo_register] → plan_read_commit
[→ efo_deregister]``: the same steps in one task process."""
from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import load_pipelines
from ..config.schedule import PRESETS, schedule_delta_ms
from ..config.task_args import LAYOUT_TASKS, OperatorArgs
from ..sources import lifecycle_tasks
from ..timestamps import from_ms
from .checkpoint_store import output_asset
from .deadline import deadline_for
from .docs import dag_doc, error_doc
from .freshness import WATCHDOG, build_watchdog
from .tasks import commit_task, plan_read_commit_task, plan_task, read_task

if TYPE_CHECKING:
    import os

    from airflow.sdk import DAG

    from ..config.pipeline import PipelineConfig
    from ..errors import ConfigError

log = logging.getLogger("streamslice")


def build_dags(folder: str | os.PathLike[str]) -> dict[str, DAG]:
    """``{dag_id: DAG}`` for every pipeline file in ``folder``. A file that does not validate
    becomes a DAG whose only task fails with the error, so the UI shows it where it belongs.
    When a pipeline sets ``alerts.freshness``, the freshness watchdog DAG is one more.

    A task process needs one DAG, and Airflow says which (its parsing context, as in its
    "optimizing DAG parsing delays during execution"): there only the files that decide that
    DAG are loaded and built, so a task does not load every other pipeline's source, format
    and output modules nor build their DAGs. The DAG is the one the whole folder gives."""
    from airflow.sdk import get_parsing_context
    running = get_parsing_context().dag_id
    if running is not None and running != WATCHDOG:
        dags = _dags(*load_pipelines(folder, only=running), watchdog=False)
        if running in dags:
            return {running: dags[running]}
    return _dags(*load_pipelines(folder))


def _dags(configs: list[PipelineConfig], errors: list[ConfigError],
          watchdog: bool = True) -> dict[str, DAG]:
    dags = {cfg.name: build_dag(cfg) for cfg in configs}
    found = build_watchdog(configs) if watchdog else None
    if found is not None and WATCHDOG not in dags:
        dags[WATCHDOG] = found
    for err in errors:
        log.error("streamslice: %s", err)
        stem = Path(err.file).stem if err.file else "unknown"
        dags.setdefault(stem, _error_dag(stem, err))
    return dags


def _timetable(cfg: PipelineConfig) -> Any:
    from airflow.sdk import (
        CronDataIntervalTimetable,
        CronTriggerTimetable,
        DeltaDataIntervalTimetable,
        DeltaTriggerTimetable,
    )
    if not cfg.schedule:
        return None
    delta = schedule_delta_ms(cfg.schedule)
    if delta:
        every = timedelta(milliseconds=delta)
        return DeltaDataIntervalTimetable(every) if cfg.mode == "interval" \
            else DeltaTriggerTimetable(every)
    cron = PRESETS.get(cfg.schedule, cfg.schedule)
    if cfg.mode == "interval":  # real [start, end) intervals, not zero-width ones
        return CronDataIntervalTimetable(cron, timezone="UTC")
    return CronTriggerTimetable(cron, timezone="UTC")


def build_dag(cfg: PipelineConfig) -> Any:
    from airflow.providers.standard.operators.python import PythonOperator
    from airflow.sdk import DAG
    asset = output_asset(cfg)
    from .alerting import FailureAlert
    args = {"owner": "streamslice", "retries": cfg.retries,
            "retry_delay": timedelta(milliseconds=cfg.retry_delay),
            "on_failure_callback": [FailureAlert(cfg.file)]}
    tags = ["streamslice", cfg.source.kind, cfg.mode, *cfg.tags]
    with DAG(dag_id=cfg.name, schedule=_timetable(cfg), default_args=args,
             start_date=from_ms(cfg.start_date) if cfg.start_date is not None else None,
             end_date=from_ms(cfg.end_date) if cfg.end_date is not None else None,
             catchup=cfg.catchup, max_active_runs=cfg.max_active_runs, tags=tags,
             description=cfg.description or _default_description(cfg, asset.uri),
             doc_md=dag_doc(cfg), deadline=deadline_for(cfg)) as dag:
        kwargs = {"pipeline_file": cfg.file}
        from .operators import ReadOperator, StreamsliceOperator
        plan: Any
        read: Any  # the tasks that setup and teardown tasks attach to
        if cfg.tasks == "combined":
            plan = read = StreamsliceOperator(
                task_id=COMBINED, python_callable=plan_read_commit_task, op_kwargs=kwargs,
                inlets=[asset], outlets=[asset], **task_args(cfg, COMBINED),
                doc_md="Plan, read and commit in one task process: a retry reuses the saved "
                "plan and what an earlier try read, and finds a publish already made.")
        else:
            plan = PythonOperator(task_id="plan", python_callable=plan_task,
                                  op_kwargs=kwargs, inlets=[asset], **task_args(cfg, "plan"),
                                  doc_md="Resolve start/stop into splits; the plan is saved "
                                  "so a retry reads the same ranges.")
            read = ReadOperator(task_id="read", python_callable=read_task, op_kwargs=kwargs,
                                inlets=[asset],  # its failure alerts are counted in the state
                                **task_args(cfg, "read"),
                                doc_md="Spark reads every split into a staging location.")
            commit = StreamsliceOperator(task_id="commit", python_callable=commit_task,
                                         op_kwargs=kwargs, inlets=[asset], outlets=[asset],
                                         **task_args(cfg, "commit"),
                                         doc_md="Verify, publish atomically, then advance the "
                                         "checkpoint.")
            plan >> read >> commit
        _lifecycle_tasks(cfg, plan, read, kwargs, asset)
    return dag


COMBINED = LAYOUT_TASKS["combined"][0]  # the one task of ``tasks: combined``


def task_args(cfg: PipelineConfig, task_id: str) -> OperatorArgs:
    """The task's queue, pool, pool_slots, priority_weight and executor_config, as the
    pipeline sets them. A ``pod_override`` becomes the pod object the KubernetesExecutor
    takes, where its provider is installed (no other executor reads it)."""
    args = cfg.routing.kwargs(task_id)
    config = args.get("executor_config")
    pod = config.get("pod_override") if config else None
    if pod is not None:
        try:
            from airflow.providers.cncf.kubernetes.pod_generator import PodGenerator
        except ImportError:
            return args
        args["executor_config"] = {**(config or {}),
                                   "pod_override": PodGenerator.deserialize_model_dict(pod)}
    return args


def _default_description(cfg: PipelineConfig, uri: str) -> str:
    """``kafka → s3://lake/orders``; a folder on the server's own disk by its last part only:
    every reader of the DAG sees its description, and that path is the server's business."""
    if uri.startswith("file:"):
        folder = uri.rstrip("/").rsplit("/", 1)[-1]
        return f"{cfg.source.kind} → {cfg.output.format} files ({folder})"
    return f"{cfg.source.kind} → {uri}"


def _lifecycle_tasks(cfg: PipelineConfig, plan: Any, read: Any, kwargs: dict[str, str],
                     asset: Any) -> None:
    """Tasks a source needs around the read (Kinesis EFO consumers): ``before_setup`` →
    ``setup`` → plan, and read → ``teardown``, which also runs when the read failed (with
    ``tasks: combined`` plan and read are the one task). Each
    has the output asset as an inlet, as plan and read do: a task's failure alert is kept in
    the asset's state only from a task that has it, and the page reads it from there."""
    from airflow.providers.standard.operators.python import PythonOperator

    from .lifecycle import lifecycle_task
    ops = {t.role: PythonOperator(task_id=t.task_id, python_callable=lifecycle_task,
                                  op_kwargs={**kwargs, "step": t.callable}, doc_md=t.doc,
                                  inlets=[asset], **task_args(cfg, t.task_id))
           for t in lifecycle_tasks(cfg.source)}
    setup, teardown, before = ops.get("setup"), ops.get("teardown"), ops.get("before_setup")
    if setup is None:
        return
    setup >> plan
    if before is not None:
        before >> setup
    if teardown is not None:
        read >> teardown
        setup.as_setup()  # type: ignore[no-untyped-call]  # Airflow: BaseOperator's is unannotated
        teardown.as_teardown(setups=setup)


def _error_dag(dag_id: str, err: ConfigError) -> DAG:
    from airflow.providers.standard.operators.python import PythonOperator
    from airflow.sdk import DAG
    # The description is shown to every reader: the file by its name, not its server path.
    where = str(err).replace(f"{Path(err.file).parent}/", "") if err.file else str(err)
    with DAG(dag_id=dag_id, schedule=None, tags=["streamslice", "config-error"],
             description=f"invalid pipeline file: {where}", doc_md=error_doc(err)) as dag:
        PythonOperator(task_id="invalid_config", python_callable=_fail, op_args=[str(err)])
    return dag


def _fail(message: str) -> None:
    from airflow.sdk.exceptions import AirflowFailException
    raise AirflowFailException(message)
