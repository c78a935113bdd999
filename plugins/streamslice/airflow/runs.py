"""What the run life cycle (``commit.lifecycle``) asks Airflow about other runs of a
pipeline's DAG, from a running task through the task SDK: whether a run still reads or
commits its staging areas (``busy``), and whether the run holding a lease is still at work
(``alive``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..commit.lifecycle import RunCycle
from ..commit.protocol import safe_name
from .checkpoint_store import TaskCheckpointStore, output_asset

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from airflow.sdk import Context

    from ..config.pipeline import PipelineConfig

# A task in one of these states will not touch its run's staging areas again.
DONE = frozenset({"success", "failed", "upstream_failed", "skipped", "removed"})


def run_cycle(cfg: PipelineConfig, context: Context) -> RunCycle:
    """This task's run's life cycle, its checkpoint on the output asset's state."""
    return RunCycle(context["run_id"], TaskCheckpointStore(context, output_asset(cfg)),
                    busy=busy(context), alive=alive(context))


def busy(context: Context) -> Callable[[str], bool]:
    """Whether the run whose staging areas are named ``owner`` (``protocol.safe_name`` of its
    id) may still read or commit them: the runs of this run's interval (its logical dates)
    are looked up once, on the first question; a run not among them counts as busy."""
    ti = context["ti"]
    found: dict[str, bool] | None = None

    def ask(owner: str) -> bool:
        nonlocal found
        if found is None:
            dates: list[datetime] = list({d for d in (context.get("logical_date"),
                                      context.get("data_interval_start")) if d is not None})
            states = ti.get_task_states(dag_id=ti.dag_id, logical_dates=dates) if dates \
                else {}
            found = {safe_name(run): any(s not in DONE for s in tasks.values())
                     for run, tasks in states.items()}
        return found.get(owner, True)
    return ask


def alive(context: Context) -> Callable[[str], bool]:
    """Whether run ``run_id`` of this DAG has a task running (a lease's holder commits in a
    running task); a run this DAG does not know is left to the lease's age."""
    ti = context["ti"]

    def ask(run_id: str) -> bool:
        tasks = ti.get_task_states(dag_id=ti.dag_id, task_ids=None,
                                   run_ids=[run_id]).get(run_id)
        return not tasks or any(s == "running" for s in tasks.values())
    return ask
