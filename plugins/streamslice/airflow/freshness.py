"""The freshness watchdog: a small DAG of its own (``streamslice_freshness``) that the factory
adds when a pipeline sets ``alerts.freshness``. It checks every such pipeline's newest complete
data against its limit and sends a ``stale`` alert (through the pipeline's own notifiers,
kept in its asset state) once per stale stretch.

Why a DAG apart: a pipeline whose DAG is paused, failing or whose runs hang makes no runs, so
no check inside its own runs would ever fire. The watchdog runs on its own schedule, whatever
the pipelines' DAGs do. It needs Airflow's scheduler like every DAG: for a stopped scheduler,
``streamslice freshness`` (the CLI) runs the same ``check`` from outside Airflow (cron, a
Kubernetes CronJob), on the metadata database directly, and exits non-zero while a pipeline
is stale."""
from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..alerts import Alert, complete_to, stale
from ..config import load_pipeline
from ..timeutil import iso
from .alerting import dag_link, send
from .store import KEY, output_asset

if TYPE_CHECKING:
    from ..config.pipeline import PipelineConfig

log = logging.getLogger("streamslice")
WATCHDOG = "streamslice_freshness"
EVERY = timedelta(minutes=5)
ALERTED = "stale_alerted"  # asset state: the complete_to value the last stale alert was for


def watched(configs: list[PipelineConfig]) -> list[PipelineConfig]:
    return [c for c in configs if c.alerts is not None and c.alerts.freshness is not None]


def build_watchdog(configs: list[PipelineConfig]) -> Any:
    """The watchdog DAG over ``configs`` that set a freshness limit; None when none does."""
    from airflow.providers.standard.operators.python import PythonOperator
    from airflow.sdk import DAG, DeltaTriggerTimetable
    found = watched(configs)
    if not found:
        return None
    with DAG(dag_id=WATCHDOG, schedule=DeltaTriggerTimetable(EVERY),
             start_date=datetime(2024, 1, 1, tzinfo=timezone.utc), catchup=False,
             max_active_runs=1, tags=["streamslice-watchdog"],
             description="Sends a stale alert for each pipeline whose newest complete data "
             "is older than its alerts.freshness") as dag:
        PythonOperator(task_id="check_freshness", python_callable=check_freshness,
                       op_kwargs={"pipeline_files": [str(c.file) for c in found]},
                       inlets=[output_asset(c) for c in found])
    return dag


def check_freshness(pipeline_files: list[str], **context: Any) -> dict[str, str]:
    """The watchdog task: ``check`` over the files that still load (a file that no longer
    loads is skipped, its own DAG says why)."""
    configs = []
    for path in pipeline_files:
        try:
            configs.append(load_pipeline(path))
        except Exception as exc:  # noqa: BLE001 - one broken file must not stop the others' check
            log.warning("freshness: %s", exc)
    return check(configs, context)


def check(configs: list[PipelineConfig], context: dict[str, Any]) -> dict[str, str]:
    """Each pipeline's verdict (``fresh``, ``stale``: alerted now, ``alerted``: stale and
    already told, ``never published``), sending one ``stale`` alert per stale stretch through
    the pipeline's notifiers. ``context`` holds ``asset_state_store`` (a task's, or
    ``store.OfflineAssetStates`` outside Airflow's scheduler: ``streamslice freshness``); the
    stretch alerted is kept under ``stale_alerted``, so the watchdog and the command never
    both alert the same one."""
    now = int(time.time() * 1000)
    verdicts = {}
    for cfg in watched(configs):
        assert cfg.alerts is not None
        state = context["asset_state_store"][output_asset(cfg)]
        newest = complete_to(state.get(KEY))
        message = stale(cfg.alerts.freshness, newest, now)
        if newest is None:
            verdicts[cfg.name] = "never published"
        elif message is None:
            verdicts[cfg.name] = "fresh"
        elif state.get(ALERTED) == newest:
            verdicts[cfg.name] = "alerted"
        else:
            alert = Alert(kind="stale", pipeline=cfg.name, message=message,
                          link=dag_link(cfg.name),
                          details={"complete_to": iso(newest),
                                   "freshness_ms": cfg.alerts.freshness})
            send(cfg, alert, context)
            state.set(ALERTED, newest)
            verdicts[cfg.name] = "stale"
    log.info("freshness: %s", verdicts)
    return verdicts
