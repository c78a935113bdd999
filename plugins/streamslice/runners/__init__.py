"""Where a run's read job runs: one class per ``spark.runner``, each registered by one line in
``RUNNERS`` and imported on first use.

A runner is a frozen dataclass of its own settings (parsed from the pipeline file's ``spark:``
block by its ``parse``, with errors naming the file, line and field) and ``run``, which runs
the read job (``reading.job.ReadJob``) through the Spark or Airflow glue. The glue is imported
inside ``run``, when a read runs there, so validating a pipeline needs neither PySpark nor
Airflow, and a pipeline never imports a runner it does not use.

A new runner is one module here with a ``Runner`` subclass (``kind``, its settings as fields,
``parse``, ``run``; ``keys`` for the ``spark:`` keys only it takes, ``extra`` for the package
extra it needs, ``own_identity`` where it reads with its own credentials) and one line in
``RUNNERS``; ``tasks`` and ``defers`` say how its read fits the run's Airflow tasks.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..registry import registered_class

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config.fields import Fields
    from ..config.pipeline import PipelineConfig
    from ..planning.plan import ReadPlan
    from ..sources import Properties

# spark.runner → "module:Class", imported on first use (its order: the choices errors list).
RUNNERS: dict[str, str] = {
    "local": "streamslice.runners.local:LocalRunner",
    "spark-submit": "streamslice.runners.spark_submit:SparkSubmitRunner",
    "emr-serverless": "streamslice.runners.emr_serverless:EmrServerlessRunner",
    "connect": "streamslice.runners.connect:ConnectRunner",
}


def runner_class(kind: str) -> type[Runner]:
    cls: type[Runner] = registered_class(RUNNERS, kind, "runner")
    return cls


@dataclass(frozen=True)
class RunRequest:
    """One read job to run: the same for every runner."""

    cfg: PipelineConfig
    plan: ReadPlan[Any]
    staging_uri: str
    properties: Properties  # the client properties, no secret (``config.secrets``)
    options: dict[str, Any]  # the readers' options (``Source.read_options``)
    secrets_path: str | None = None  # the private file of the secret properties, if any
    # told the job run elsewhere as soon as it exists (EMR Serverless: for ``on_kill``)
    started: Callable[[dict[str, str]], None] | None = None
    # other runs' intervals read in the same job, each into its own staging area
    ahead: tuple[tuple[ReadPlan[Any], str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Runner(ABC):
    """The ``spark:`` block as one runner reads it."""

    kind: ClassVar[str]  # its spark.runner value, its key in RUNNERS
    keys: ClassVar[tuple[str, ...]] = ()  # keys of spark: that only this runner takes
    extra: ClassVar[str] = "spark"  # the package extra it needs (``streamslice.config.extras``)
    # Where the read runs with its own identity, so secret properties are never sent there
    # (``airflow.runners``); None: they reach the readers in a private file.
    own_identity: ClassVar[str | None] = None
    # Its task layout by default (the pipeline's ``tasks``): ``combined`` where a task start-up
    # is a large share of a run, ``separate`` where the read starts a Spark JVM anyway.
    tasks: ClassVar[str] = "separate"
    # Whether its read waits for the job in a trigger, which needs a task of its own (so
    # never ``tasks: combined``).
    defers: ClassVar[bool] = False
    # Whether its job can also read other intervals' plans (``RunRequest.ahead``), so a
    # combined task can read queued runs' intervals with its own (``reading.ahead``).
    reads_ahead: ClassVar[bool] = False
    conf: dict[str, str] = field(default_factory=dict)  # spark.conf: Spark properties

    @classmethod
    @abstractmethod
    def parse(cls, f: Fields, conf: dict[str, str]) -> Runner:
        """Its settings from the ``spark:`` block ``f`` (``conf`` read already): only the
        keys it takes, each error raised with ``f.error(message, key)``."""

    @abstractmethod
    def run(self, request: RunRequest) -> None:
        """Run the read job; returns once its staging area is written (EMR Serverless
        raises ``TaskDeferred`` instead, and the task resumes when its job run ends)."""


def parse_runner(f: Fields) -> Runner:
    """The ``spark:`` block: ``runner`` picks the class, which reads its own keys."""
    conf = f.raw("conf", {}) or {}
    if not isinstance(conf, dict):
        raise f.error("must map Spark properties to values", "conf")
    # A deployment may set the defaults (docker-compose points them at its Spark cluster).
    # SPARK_REMOTE is PySpark's own: where it is set, PySpark code runs on Spark Connect.
    default = os.environ.get("STREAMSLICE_SPARK_RUNNER") or \
        ("connect" if os.environ.get("SPARK_REMOTE") else "local")
    kind = f.str("runner", default, choices=tuple(RUNNERS))
    runner = runner_class(kind).parse(f, {str(k): str(v) for k, v in conf.items()})
    _others_keys(f, kind)
    f.done()
    return runner


def _others_keys(f: Fields, kind: str) -> None:
    """A key another runner takes: said so (the other classes are imported only then)."""
    f.others_keys(lambda key: next((f"is only used with runner: {other}" for other in RUNNERS
                                    if other != kind and key in runner_class(other).keys),
                                   None), nothing=({},))
