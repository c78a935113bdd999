"""Helpers to write pipeline files and run their DAGs through ``dag.test()``."""
import uuid
from datetime import datetime, timezone
from pathlib import Path

from streamslice.config import load_pipeline


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def write_pipeline(name, text, folder=None):
    """Write a pipeline file into the session's DAGs folder (where dag.test() finds it)."""
    from tests.conftest import PIPELINES_DIR
    folder = Path(folder or PIPELINES_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return load_pipeline(path)


def run_dag(cfg, logical_date=None, expect="success"):
    """Build the pipeline's DAG and run it once with ``dag.test()``; returns the DagRun."""
    from streamslice.airflow.factory import build_dag
    dag = build_dag(cfg)
    kwargs = {}
    if logical_date is not None:
        kwargs["logical_date"] = logical_date
    run = dag.test(**kwargs)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    if expect and str(run.state) != expect:
        raise AssertionError(f"run {run.run_id} ended {run.state}, expected {expect}: {states}")
    return run


def utc(*args):
    return datetime(*args, tzinfo=timezone.utc)
