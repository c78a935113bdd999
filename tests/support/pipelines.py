"""Helpers to write pipeline files and run their DAGs through ``dag.test()``.

Pipelines are built by one helper per source (``kafka_pipeline``, ``kinesis_pipeline``,
``files_pipeline``) from plain mappings, written as YAML the way a user writes the file and
loaded through the real config parser; ``parsed`` gives the same file's configuration without
writing it (for tests that plan or build an output target without a DAG). ``write_pipeline``
stays for tests whose point is the YAML text itself."""
import json
import os
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

import yaml

from streamslice.config import load_pipeline, parse_pipeline
from tests.support.checks import present


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


def pipeline_yaml(kind, block, *, mode="incremental", output=None, **settings):
    """The text of a pipeline file reading a ``kind`` source (``block``: its YAML mapping).
    ``settings`` are the file's other top-level keys (``format``, ``alerts``, ``spark``,
    ``schedule``, ``retries``…; ``None`` values are left out). ``output`` is a path or the
    whole output mapping (default: the session's lake folder)."""
    if output is None:
        output = f"{os.environ['AIRFLOW_HOME']}/../lake"
    data = {"mode": mode, **{k: v for k, v in settings.items() if v is not None}, kind: block,
            "output": output if isinstance(output, dict) else {"path": str(output)}}
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def pipeline(kind, block, *, name=None, folder=None, **kw):
    """``pipeline_yaml(kind, block, **kw)`` written as ``name`` (into ``folder``, by default
    the session's DAGs folder) and loaded."""
    return write_pipeline(name or unique(kind), pipeline_yaml(kind, block, **kw), folder)


def parsed(kind, block, *, name="pipeline", **kw):
    """``pipeline_yaml(kind, block, **kw)`` parsed, written nowhere."""
    return parse_pipeline(pipeline_yaml(kind, block, **kw), default_name=name)


def kafka_pipeline(bootstrap, topics, *, name=None, **kw):
    """``kafka: {bootstrap_servers, topics}``; ``kafka={…}`` adds to the block (``client``,
    ``start``, ``max_records_per_split``…, or ``conn_id`` instead of the servers with
    ``bootstrap=None``)."""
    block = {"bootstrap_servers": bootstrap} if bootstrap else {}
    block.update(topics=[topics] if isinstance(topics, str) else list(topics))
    block.update(kw.pop("kafka", {}))
    return pipeline("kafka", block, name=name or unique("kafka"), **kw)


def kinesis_pipeline(stream, *, name=None, **kw):
    """``kinesis: {stream}``; ``kinesis={…}`` adds to the block (``conn_id``, ``endpoint_url``,
    ``region``, ``reader``, ``efo``, ``start``, ``stop``…)."""
    block = {"stream": stream, **kw.pop("kinesis", {})}
    return pipeline("kinesis", block, name=name or unique("kinesis"), **kw)


def files_pipeline(path, *, name=None, **kw):
    """``files: {path}``; ``files={…}`` adds to the block (``pattern``, ``start``)."""
    block = {"path": str(path), **kw.pop("files", {})}
    return pipeline("files", block, name=name or unique("files"), **kw)


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


def clear_and_rerun(cfg, run, *, only_failed=True, expect=None):
    """Clear ``run``'s failed tasks (``only_failed``) or all its tasks, as an operator does in
    the UI (Airflow's ``clear_task_instances``: task state and XComs of the run stay), then
    run them with ``dag.test()``'s loop in this process; returns the DagRun. ``dag.test()``
    alone would delete the run and start a new one with nothing saved."""
    from unittest import mock

    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import clear_task_instances
    from airflow.serialization.definitions.dag import SerializedDAG
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState
    from sqlalchemy import select

    from streamslice.airflow.factory import build_dag
    finished_badly = {"failed", "upstream_failed", "up_for_retry"}
    with create_session() as session:
        found = session.scalar(select(DagRun).where(DagRun.dag_id == cfg.name,
                                                    DagRun.run_id == run.run_id))
        tis = [ti for ti in present(found).get_task_instances(session=session)
               if not only_failed or str(ti.state) in finished_badly]
        assert tis, f"nothing to clear in {run.run_id}"
        clear_task_instances(tis, session, dag_run_state=DagRunState.RUNNING)

    def same_run(*, dag, session, **_):
        found = session.scalar(select(DagRun).where(DagRun.dag_id == cfg.name,
                                                    DagRun.run_id == run.run_id))
        found.dag = dag
        return found
    with mock.patch("airflow.models.dagrun.get_or_create_dagrun", same_run), \
            mock.patch.object(SerializedDAG, "clear_dags", lambda *a, **k: 0):
        again = build_dag(cfg).test(logical_date=run.logical_date)
    if expect and str(again.state) != expect:
        states = {ti.task_id: ti.state for ti in again.get_task_instances()}
        raise AssertionError(f"run {again.run_id} ended {again.state}, expected {expect}: "
                             f"{states}")
    return again


def utc(year, month, day, hour=0, minute=0, second=0):
    return datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)


def run_interval(cfg, start, expect="success"):
    """Run the interval that starts at ``start`` once with ``dag.test()``, dated as the
    scheduler and Airflow's backfill date it: logical date = the interval's start. (Given a
    logical date, ``dag.test()`` alone makes a manual run of the interval that *ends* there,
    and Airflow's backfill, which finds existing runs by logical date, would then take it for
    the next interval's run.)"""
    from unittest import mock

    import pendulum
    from airflow.timetables.base import DataInterval

    from streamslice.config.schedule import interval_containing
    from streamslice.timestamps import from_ms, to_ms

    def starting_at(self, *, run_after):
        iv = interval_containing(cfg, to_ms(run_after))
        return DataInterval(pendulum.instance(from_ms(iv.start)),
                            pendulum.instance(from_ms(iv.end)))
    from airflow.timetables.interval import CronDataIntervalTimetable, DeltaDataIntervalTimetable
    with mock.patch.object(CronDataIntervalTimetable, "infer_manual_data_interval", starting_at), \
            mock.patch.object(DeltaDataIntervalTimetable, "infer_manual_data_interval",
                              starting_at):
        return run_dag(cfg, logical_date=start, expect=expect)


def modules_loaded_parsing(text, prefixes):
    """The modules named with one of ``prefixes`` that a fresh interpreter has loaded once
    it has parsed the pipeline ``text``: what validating that pipeline imports."""
    return _modules_loaded("from streamslice.config import parse_pipeline\n"
                           f"parse_pipeline({text!r})\n", prefixes)


def modules_loaded_building(folder, prefixes, dag_id=None):
    """The same once a fresh interpreter has built the DAGs of the pipelines in ``folder``
    as the DAG file does: in the DAG processor, or with ``dag_id`` in a task process of that
    DAG (Airflow's parsing context names it)."""
    env = {"AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
           **{k: v for k, v in os.environ.items() if k in ("AIRFLOW_HOME", "HOME")}}
    if dag_id is not None:
        from airflow.sdk.definitions.context import _AIRFLOW_PARSING_CONTEXT_DAG_ID
        env[_AIRFLOW_PARSING_CONTEXT_DAG_ID] = dag_id
    return _modules_loaded("from streamslice.airflow.factory import build_dags\n"
                           f"assert build_dags({str(folder)!r})\n", prefixes, env)


def _modules_loaded(code, prefixes, env=None):
    code = ("import json, sys\n" + code +
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith("
            f"{tuple(prefixes)!r}))))\n")
    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": f"{root / 'plugins'}:{root}", "PATH": "/usr/bin:/bin", **(env or {})}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    return json.loads(out)
