"""The read and commit tasks' operators: ``PythonOperator``s (the task callables stay plain
functions) that report their inputs and outputs to Airflow's OpenLineage provider, and, for
the read, can wait for a job run elsewhere without holding a worker slot and cancel that run
when the task is killed."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from airflow.providers.standard.operators.python import PythonOperator

from .tasks import read_done

if TYPE_CHECKING:
    from ..commit.manifest import Manifest
    from ..planning.plan import ReadPlan

log = logging.getLogger("streamslice")


class RunFacts(TypedDict, total=False):
    """What a task's run did, as far as it got (``remember``)."""

    plan: ReadPlan[Any]
    staging: str | None  # the staging area's URI, until the commit cleans it up
    manifest: Manifest  # once published


class StreamsliceOperator(PythonOperator):
    """Its callable tells it what the run did (``remember``: the plan, and the staging area
    or the published manifest); OpenLineage's listener asks for it when it is configured."""

    def execute(self, context: Any) -> Any:
        self._facts = RunFacts()
        return super().execute(context)

    def remember(self, **facts: Unpack[RunFacts]) -> None:
        known: RunFacts = getattr(self, "_facts", None) or RunFacts()
        known.update(facts)
        self._facts = known

    def get_openlineage_facets_on_start(self) -> Any:
        """Before the callable runs, the output is known (the plan is not yet): it, rather
        than the Airflow asset the task declares as an inlet."""
        from ..config import load_pipeline
        from .lineage import output_lineage
        cfg = load_pipeline(self.op_kwargs["pipeline_file"])
        return output_lineage(cfg.output.target(cfg.name))

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        facts = getattr(self, "_facts", {})
        if "plan" not in facts:
            return self.get_openlineage_facets_on_start()
        from .lineage import operator_lineage
        summaries = None
        if facts.get("staging"):
            from ..reading.staging import Staging
            output = facts["plan"].output
            summaries = list(Staging(facts["staging"], output.auth if output else None)
                             .summaries().values())
        return operator_lineage(facts["plan"], summaries, facts.get("manifest"))

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """What a failed run got to: its plan's datasets, without counts."""
        facts = getattr(self, "_facts", {})
        if "plan" not in facts:
            return self.get_openlineage_facets_on_start()
        from .lineage import operator_lineage
        return operator_lineage(facts["plan"])


class ReadOperator(StreamsliceOperator):
    """``read_task`` runs the job; where it defers to a trigger (EMR Serverless), the task
    resumes in ``read_done``. ``on_kill`` cancels a job run started by this try that has
    not been handed to a trigger yet (once deferred, the trigger's ``on_kill`` does)."""

    def execute(self, context: Any) -> Any:
        self._job: dict[str, str] | None = None
        return super().execute(context)

    def job_started(self, job: dict[str, str]) -> None:
        self._job = job

    def read_done(self, context: Any, event: dict[str, Any] | None = None) -> Any:
        self._facts = RunFacts()
        return read_done(self.op_kwargs["pipeline_file"], event, **context)

    def on_kill(self) -> None:
        job = getattr(self, "_job", None)
        if job is None:
            return
        from ..config import load_pipeline
        from .emr import cancel_job_run
        cfg = load_pipeline(self.op_kwargs["pipeline_file"])
        cancel_job_run(getattr(cfg.spark, "aws_conn_id", None), job)
