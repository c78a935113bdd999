"""Deadline alerts: Airflow 3's DeadlineAlert with an AsyncCallback, so the callback runs in
the triggerer, where connections stored in the metadata database can be read (a SyncCallback
runs with a workload token that may not read them). Delivery is ``alerting.send`` in a worker
thread, so the triggerer's event loop never blocks and no async AWS client is needed.
Deadlines are evaluated by the scheduler; dag.test() does not fire them."""
from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..config import load_pipeline
from ..monitoring.alerts import Alert

if TYPE_CHECKING:
    from ..config.pipeline import PipelineConfig

CALLBACK = "streamslice.airflow.deadline.deadline_missed"


def deadline_for(cfg: PipelineConfig) -> Any:
    if not cfg.alerts or not cfg.alerts.deadline:
        return None
    from airflow.sdk import AsyncCallback, DeadlineAlert, DeadlineReference  # type: ignore[attr-defined]
    return DeadlineAlert(reference=DeadlineReference.DAGRUN_QUEUED_AT,
                         interval=timedelta(milliseconds=cfg.alerts.deadline),
                         callback=AsyncCallback(CALLBACK, kwargs={"pipeline_file": cfg.file}))


async def deadline_missed(context: dict[str, Any] | None = None,
                          pipeline_file: str | None = None, **_: Any) -> None:
    from .alerting import run_link, send
    if not pipeline_file:
        return
    cfg = load_pipeline(pipeline_file)
    deadline = cfg.alerts.deadline if cfg.alerts and cfg.alerts.deadline else 0
    run = (context or {}).get("dag_run") or {}
    run_id = run.get("dag_run_id") or run.get("run_id")
    interval = None
    if cfg.mode == "interval" and run.get("data_interval_start"):
        interval = {"start": str(run["data_interval_start"]),
                    "end": str(run["data_interval_end"])}
    alert = Alert(kind="deadline", pipeline=cfg.name, run_id=run_id, interval=interval,
                  link=run_link(cfg.name, run_id) if run_id else None,
                  message=f"run {run_id} has not finished {deadline // 1000}s after "
                          f"it was queued (state: {run.get('state')})",
                  details={"deadline_ms": deadline, "state": run.get("state")})
    await asyncio.to_thread(send, cfg, alert, context)
