"""Alert delivery through Airflow notifiers: always the task log, then each configured
notifier (the amazon provider's SnsNotifier, or any BaseNotifier by class path). Delivery
trouble is logged, never allowed to change the run's own outcome."""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow.sdk import BaseNotifier

from ..config import load_pipeline
from ..monitoring.alerts import Alert, SentAlert, evaluate
from ..registry import load
from ..timestamps import iso, to_ms
from .checkpoint_store import output_asset
from .failures import original_error

if TYPE_CHECKING:
    from ..commit.manifest import Manifest
    from ..config.pipeline import PipelineConfig

log = logging.getLogger("streamslice")
STREAK_KEY = "empty_streak"
ALERT_PREFIX = "alert/"  # one asset state key per alert sent: no read-modify-write race
RECENT_ALERTS = 20


def dag_link(dag_id: str) -> str:
    from airflow.configuration import conf
    base = conf.get("api", "base_url", fallback=None) or "http://localhost:8080"
    return f"{base.rstrip('/')}/dags/{quote(dag_id)}"


def run_link(dag_id: str, run_id: str) -> str:
    return f"{dag_link(dag_id)}/runs/{quote(run_id, safe='')}"


def make_alert(cfg: PipelineConfig, kind: str, message: str, context: Any,
               details: dict[str, Any] | None = None) -> Alert:
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    interval = {"start": iso(to_ms(start)), "end": iso(to_ms(end))} \
        if cfg.mode == "interval" and start and end else None
    run_id = context.get("run_id")
    return Alert(kind=kind, pipeline=cfg.name, message=message, run_id=run_id,
                 interval=interval, link=run_link(cfg.name, run_id) if run_id else None,
                 details=details or {})


def send(cfg: PipelineConfig, alert: Alert, context: dict[str, Any] | None = None) -> None:
    """The one delivery path for every alert (task callbacks, commit, deadlines)."""
    log.warning("streamslice alert: %s", alert.to_json())
    record(cfg, alert, context)
    for spec in cfg.alerts.notifiers if cfg.alerts else ():
        try:
            notifier = _notifier(spec, alert)
            ctx = {**(context or {}), "streamslice_alert": alert}
            try:
                notifier.notify(ctx)
            except NotImplementedError:  # an async-only notifier
                asyncio.run(notifier.async_notify(ctx))
        except Exception as exc:  # noqa: BLE001 - a broken notifier must not turn into a failed run
            log.error("delivering the %s alert via %s failed: %s", alert.kind,
                      spec.get("class") or spec["type"], exc)


def record(cfg: PipelineConfig, alert: Alert, context: dict[str, Any] | None) -> None:
    """Keep the alert in the output asset's state under a key of its own
    (``alert/<ms>-<random>``: runs alerting at once never overwrite each other's), where the
    Streamslice page counts and lists them (only from tasks that have the asset as inlet or
    outlet)."""
    try:
        state = (context or {})["asset_state_store"][output_asset(cfg)]
        now = int(time.time() * 1000)
        state.set(f"{ALERT_PREFIX}{now:015d}-{uuid.uuid4().hex[:8]}",
                  SentAlert.of(alert, now).to_dict())
    except Exception as exc:  # noqa: BLE001 - no state here (deadline callbacks) or it failed: log only
        log.debug("alert not recorded in the asset state: %s", exc)


def _notifier(spec: dict[str, Any], alert: Alert) -> Any:
    if spec["type"] == "sns":
        from airflow.providers.amazon.aws.notifications.sns import SnsNotifier
        return SnsNotifier(aws_conn_id=spec.get("aws_conn_id", "aws_default"),
                           region_name=spec.get("region"), target_arn=spec["topic_arn"],
                           message=alert.to_json(), subject=alert.subject,
                           message_attributes={"kind": alert.kind, "pipeline": alert.pipeline})
    if spec["type"] == "log":
        return _LogNotifier()
    return load(spec["class"])(**spec.get("args", {}))


class _LogNotifier(BaseNotifier):
    def notify(self, context: Any) -> None:
        log.warning("streamslice alert: %s", context["streamslice_alert"].to_json())

    async def async_notify(self, context: Any) -> None:
        self.notify(context)


def after_commit(cfg: PipelineConfig, manifest: Manifest, context: Any,
                 state: Any) -> None:
    """Threshold alerts for a committed run; ``state`` is the asset state accessor (for the
    consecutive-empty count, written only when it changes: one API call less a run)."""
    before = state.get(STREAK_KEY) or 0
    streak = before + 1 if manifest.records == 0 else 0
    if streak != before:
        state.set(STREAK_KEY, streak)
    if cfg.alerts is None:
        return
    for kind, message, details in evaluate(cfg.alerts, manifest, streak):
        send(cfg, make_alert(cfg, kind, message, context, details), context)


class FailureAlert(BaseNotifier):
    """Task ``on_failure_callback``: one run_failed (or data_loss) alert with the error and,
    when the error names it, the failed split."""

    template_fields = ()

    def __init__(self, pipeline_file: str) -> None:
        super().__init__()
        self.pipeline_file = pipeline_file

    def notify(self, context: Any) -> None:
        cfg = load_pipeline(self.pipeline_file)
        exception = context.get("exception")
        error = str(exception or "unknown error")
        ours = original_error(exception)
        kind = "data_loss" if ours is not None and ours.kind == "data_loss" else "run_failed"
        ti = context.get("ti") or context.get("task_instance")
        details = {"task": getattr(ti, "task_id", None), "error": error,
                   "try_number": getattr(ti, "try_number", None)}
        if ours is not None:
            details["error_kind"] = ours.kind
            if ours.split is not None:
                details["failed_split"] = ours.split
        send(cfg, make_alert(cfg, kind, f"task {details['task']} failed: {error}", context,
                             details), context)
