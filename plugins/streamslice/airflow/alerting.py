"""Alert delivery through Airflow notifiers: always the task log, then each configured
notifier (the amazon provider's SnsNotifier, or any BaseNotifier by class path). Delivery
trouble is logged, never allowed to change the run's own outcome."""
import logging
import re
from urllib.parse import quote

from airflow.sdk import BaseNotifier

from ..alerts import Alert, evaluate
from ..config import load_pipeline
from ..timeutil import iso, to_ms

log = logging.getLogger("streamslice")
STREAK_KEY = "empty_streak"


def run_link(dag_id, run_id):
    from airflow.configuration import conf
    base = conf.get("api", "base_url", fallback=None) or "http://localhost:8080"
    return f"{base.rstrip('/')}/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}"


def make_alert(cfg, kind, message, context, details=None):
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    interval = {"start": iso(to_ms(start)), "end": iso(to_ms(end))} \
        if cfg.mode == "interval" and start and end else None
    run_id = context.get("run_id")
    return Alert(kind=kind, pipeline=cfg.name, message=message, run_id=run_id,
                 interval=interval, link=run_link(cfg.name, run_id) if run_id else None,
                 details=details or {})


def send(cfg, alert, context=None):
    log.warning("streamslice alert: %s", alert.to_json())
    for spec in cfg.alerts.notifiers if cfg.alerts else ():
        try:
            _notifier(spec, alert).notify({**(context or {}), "streamslice_alert": alert})
        except Exception as exc:  # a broken notifier must not turn into a failed run
            log.error("delivering the %s alert via %s failed: %s", alert.kind,
                      spec.get("class") or spec["type"], exc)


def _notifier(spec, alert):
    if spec["type"] == "sns":
        from airflow.providers.amazon.aws.notifications.sns import SnsNotifier
        return SnsNotifier(aws_conn_id=spec.get("aws_conn_id", "aws_default"),
                           region_name=spec.get("region"), target_arn=spec["topic_arn"],
                           message=alert.to_json(), subject=alert.subject,
                           message_attributes={"kind": alert.kind, "pipeline": alert.pipeline})
    if spec["type"] == "log":
        return _LogNotifier()
    from airflow.utils.module_loading import import_string
    return import_string(spec["class"])(**spec.get("args", {}))


class _LogNotifier(BaseNotifier):
    def notify(self, context):
        log.warning("streamslice alert: %s", context["streamslice_alert"].to_json())

    async def async_notify(self, context):
        self.notify(context)


def after_commit(cfg, manifest, context, state):
    """Threshold alerts for a committed run; ``state`` is the asset state accessor (for the
    consecutive-empty count)."""
    streak = state.get(STREAK_KEY) or 0
    streak = streak + 1 if manifest["records"] == 0 else 0
    state.set(STREAK_KEY, streak)
    for kind, message, details in evaluate(cfg.alerts, manifest, streak):
        send(cfg, make_alert(cfg, kind, message, context, details), context)


_SPLIT = re.compile(r"(?:split (\d+)|^(?:\w+: )*([\w.-]+:(?:\d+|shardId-\d+)):)")


class FailureAlert(BaseNotifier):
    """Task ``on_failure_callback``: one run_failed (or data_loss) alert with the error and,
    when the error names it, the failed split."""

    template_fields = ()

    def __init__(self, pipeline_file):
        super().__init__()
        self.pipeline_file = pipeline_file

    def notify(self, context):
        cfg = load_pipeline(self.pipeline_file)
        error = str(context.get("exception") or "unknown error")
        kind = "data_loss" if "DataLossError" in error or "records expired" in error \
            else "run_failed"
        ti = context.get("ti") or context.get("task_instance")
        details = {"task": getattr(ti, "task_id", None), "error": error,
                   "try_number": getattr(ti, "try_number", None)}
        found = _SPLIT.search(error)
        if found:
            details["failed_split"] = found.group(1) and int(found.group(1)) or found.group(2)
        send(cfg, make_alert(cfg, kind, f"task {details['task']} failed: {error}", context,
                             details), context)
