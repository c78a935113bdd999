"""The tasks a source needs around the read (``HasLifecycleTasks.lifecycle_tasks``, e.g. Kinesis EFO
consumers registered in setup and deregistered in teardown), run as Airflow tasks. The work is
the source's own core function; this only hands it the run and the connection's properties."""
from __future__ import annotations

from typing import Any

from ..config import load_pipeline
from ..sources import LifecycleRun, call
from .failures import operator_errors
from .hooks import source_properties


def lifecycle_task(pipeline_file: str, step: str, **context: Any) -> Any:
    """Run ``step`` (a LifecycleTask's ``callable``) for this run; its result is the task's
    XCom (a setup's result reaches the read through ``Source.read_options``)."""
    with operator_errors(context):
        cfg = load_pipeline(pipeline_file)
        run = LifecycleRun(run_id=context["run_id"],
                           properties=lambda: source_properties(cfg.source))
        return call(step)(cfg.source, run)
