"""Which executor Airflow runs tasks with, read as Airflow reads it (without importing Airflow:
``streamslice validate`` stays quick), and the pipelines whose staging its workers would not
share: on a distributed executor every task may run on another host, so a run whose commit (or
another run) reads what a read task staged needs its staging where every worker sees it."""
from __future__ import annotations

import configparser
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pipeline import PipelineConfig

# Executors whose tasks run on hosts of their own (by class name, whatever module or alias)
DISTRIBUTED = ("CeleryExecutor", "KubernetesExecutor", "CeleryKubernetesExecutor",
               "LocalKubernetesExecutor", "EdgeExecutor", "AwsEcsExecutor", "AwsBatchExecutor",
               "AwsLambdaExecutor")


def configured_executor(environ: dict[str, str] | None = None) -> str | None:
    """``[core] executor`` as Airflow finds it: ``AIRFLOW__CORE__EXECUTOR``, else the
    ``airflow.cfg`` at ``AIRFLOW_CONFIG`` or in ``AIRFLOW_HOME`` (``~/airflow``); None when
    neither sets it (Airflow's default, the LocalExecutor)."""
    env = os.environ if environ is None else environ
    if env.get("AIRFLOW__CORE__EXECUTOR"):
        return env["AIRFLOW__CORE__EXECUTOR"]
    home = env.get("AIRFLOW_HOME") or str(Path("~/airflow").expanduser())
    path = env.get("AIRFLOW_CONFIG") or os.path.join(home, "airflow.cfg")
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None  # Airflow itself says what is wrong with its file
    return parser.get("core", "executor", fallback=None) or None


def distributed_executors(executor: str | None) -> list[str]:
    """The executors of ``executor`` (one, or Airflow's comma-separated list, each a name, a
    module path or ``alias:path``) whose tasks may run on other hosts."""
    found = []
    for entry in (executor or "").split(","):
        name = entry.strip().rsplit(":", 1)[-1].rsplit(".", 1)[-1]
        if name in DISTRIBUTED:
            found.append(name)
    return found


def unshared_staging(cfg: PipelineConfig, executor: str | None) -> str | None:
    """Why ``cfg``'s staging would not reach the task that reads it back under ``executor``,
    and what to do instead; None when it would (or nothing is staged between tasks)."""
    remote = distributed_executors(executor)
    work = cfg.output.target(cfg.name).work
    if not remote or not _local(work):
        return None
    between = ("tasks: separate (its commit task reads what its read task staged)"
               if cfg.tasks == "separate" else
               f"read_ahead: {cfg.read_ahead} (its runs commit what another run's task "
               "read for them)" if cfg.read_ahead else None)
    if between is None:
        return None
    return (f"{cfg.name}: stages under {work} on the local disk of the worker a task runs "
            f"on, and the {remote[0]} may run the next task on another worker; with "
            f"{between} that task finds nothing. Put output.path on object storage (s3://…) "
            "or on a file system every worker mounts at that path, or use tasks: combined "
            "with read_ahead: 0 (each run then stages and publishes on its worker's disk)")


def _local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")
