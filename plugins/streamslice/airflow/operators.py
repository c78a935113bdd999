"""The read task's operator: a ``PythonOperator`` (so ``read_task`` stays a plain callable)
that can also wait for a job run elsewhere without holding a worker slot, and cancels that
run when the task is killed."""
from __future__ import annotations

import logging
from typing import Any

from airflow.providers.standard.operators.python import PythonOperator

log = logging.getLogger("streamslice")


class ReadOperator(PythonOperator):
    """``read_task`` runs the job; where it defers to a trigger (EMR Serverless), the task
    resumes in ``read_done``. ``on_kill`` cancels a job run started by this try that has
    not been handed to a trigger yet (once deferred, the trigger's ``on_kill`` does)."""

    def execute(self, context: Any) -> Any:
        self._job: dict[str, str] | None = None
        return super().execute(context)

    def job_started(self, job: dict[str, str]) -> None:
        self._job = job

    def read_done(self, context: Any, event: dict[str, Any] | None = None) -> Any:
        from .tasks import read_done
        return read_done(self.op_kwargs["pipeline_file"], event, **context)

    def on_kill(self) -> None:
        job = getattr(self, "_job", None)
        if job is None:
            return
        from ..config import load_pipeline
        from .emr import cancel_job_run
        cfg = load_pipeline(self.op_kwargs["pipeline_file"])
        cancel_job_run(cfg.spark.emr_serverless.get("aws_conn_id"), job)
