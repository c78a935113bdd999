"""Where and how urgently Airflow runs a pipeline's tasks: ``queue``, ``pool``, ``pool_slots``,
``priority_weight`` and ``executor_config``, under Airflow's own names, for every task of the
pipeline (top-level keys) and for one task (``per_task: {<task id>: {...}}``), so a team can
send Spark reads to workers that have Java, or size a task's pod."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from .fields import Fields

# A run's tasks by layout (``PipelineConfig.tasks``); a source's own (EFO) come on top.
LAYOUT_TASKS: dict[str, tuple[str, ...]] = {"separate": ("plan", "read", "commit"),
                                            "combined": ("plan_read_commit",)}
KEYS = ("queue", "pool", "pool_slots", "priority_weight", "executor_config")
# Airflow keeps priority weights in a 32-bit column
PRIORITY_RANGE = (-(2**31), 2**31 - 1)
# As the executor takes it: a KubernetesExecutor pod (its YAML form) or pod_template_file.
ExecutorConfig = dict[str, Any]


class OperatorArgs(TypedDict, total=False):
    """The ``KEYS`` a task's operator is given (those set)."""

    queue: str
    pool: str
    pool_slots: int
    priority_weight: int
    executor_config: ExecutorConfig


@dataclass(frozen=True)
class TaskArgs:
    """Operator arguments; None: Airflow's default."""

    queue: str | None = None
    pool: str | None = None
    pool_slots: int | None = None
    priority_weight: int | None = None
    executor_config: ExecutorConfig | None = None

    def kwargs(self) -> OperatorArgs:
        """The ones set, as the operator takes them."""
        args = OperatorArgs()
        if self.queue is not None:
            args["queue"] = self.queue
        if self.pool is not None:
            args["pool"] = self.pool
        if self.pool_slots is not None:
            args["pool_slots"] = self.pool_slots
        if self.priority_weight is not None:
            args["priority_weight"] = self.priority_weight
        if self.executor_config is not None:
            args["executor_config"] = self.executor_config
        return args


@dataclass(frozen=True)
class TaskRouting:
    """The pipeline's arguments and each task's own; a task's key replaces the pipeline's
    (an ``executor_config`` whole, not merged)."""

    pipeline: TaskArgs = TaskArgs()
    tasks: dict[str, TaskArgs] = field(default_factory=dict)

    def kwargs(self, task_id: str) -> OperatorArgs:
        args = self.pipeline.kwargs()
        args.update(self.tasks.get(task_id, TaskArgs()).kwargs())
        return args


def parse_task_routing(f: Fields, task_ids: tuple[str, ...], layout: str) -> TaskRouting:
    """The top-level keys of ``f`` and its ``per_task`` block, whose keys must be tasks the
    pipeline's DAG has (``task_ids``, with ``layout`` to say why one is not)."""
    per_task = f.child("per_task")
    tasks = {}
    for task_id in per_task.mapping:
        if task_id not in task_ids:
            why = (" (tasks: combined plans, reads and commits in one task, plan_read_commit)"
                   if task_id in LAYOUT_TASKS["separate"] and layout == "combined" else
                   " (tasks: separate plans, reads and commits in three tasks)"
                   if task_id in LAYOUT_TASKS["combined"] else "")
            raise per_task.error(f"{task_id!r} is not a task of this pipeline{why}; its "
                                 f"tasks are {', '.join(task_ids)}", task_id)
        one = per_task.child(task_id, required=True)
        tasks[str(task_id)] = _task_args(one)
        one.done()
    per_task.done()
    return TaskRouting(_task_args(f), tasks)


def _task_args(f: Fields) -> TaskArgs:
    low, high = PRIORITY_RANGE
    return TaskArgs(queue=f.str("queue", None), pool=f.str("pool", None),
                    pool_slots=f.int("pool_slots", None, minimum=1),
                    priority_weight=f.int("priority_weight", None, minimum=low, maximum=high),
                    executor_config=_executor_config(f))


def _executor_config(f: Fields) -> ExecutorConfig | None:
    """A mapping as the executor takes it: the KubernetesExecutor's ``pod_override`` (a pod
    in Kubernetes' own YAML form) or ``pod_template_file``; other executors ignore it."""
    value = f.raw("executor_config", None)
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise f.error("must be a non-empty mapping (for the KubernetesExecutor: "
                      "{pod_override: {spec: ...}} or {pod_template_file: path})",
                      "executor_config")
    pod = value.get("pod_override")
    if pod is not None and not isinstance(pod, dict):
        raise f.child("executor_config").error(
            "must be a pod as a mapping, as in a pod's YAML (metadata, spec)", "pod_override")
    plain: ExecutorConfig = _plain(value)
    return plain


def _plain(value: Any) -> Any:
    """Plain dicts and lists (the YAML loader's mappings remember their lines)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
