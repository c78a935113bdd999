"""Chaos through Airflow: a whole DAG run — the Airflow task process, its Spark JVM and the
Spark Python workers — is SIGKILLed after planning, in the middle of a read, after the publish
and after the checkpoint, with plan, read and commit as three tasks and as one (``tasks:
combined``); the next run of the DAG recovers. The dataset then holds the source
range exactly once (pyarrow and DuckDB's glob agree) and the checkpoint in Airflow's asset
state is at the end of the range."""
import os
import signal
import subprocess
import sys

import pyarrow.dataset as ds
import pytest

from devtools.duck import connect
from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.conftest import ROOT
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, run_dag, unique

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
T0 = 1_714_521_600_000


def dag_run(cfg, fault=None):
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'plugins'}{os.pathsep}{ROOT}")
    env.pop("STREAMSLICE_INJECT_FAULT", None)
    if fault:
        env["STREAMSLICE_INJECT_FAULT"] = fault if fault.startswith("@") else \
            f"{fault}:action=kill"
    return subprocess.run([sys.executable, "-m", "tests.chaos.dag_run", cfg.file], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600,
                          start_new_session=True)


@pytest.mark.parametrize("tasks", ["separate", "combined"])
@pytest.mark.parametrize("point", ["plan", "read:split=1:after=1", "after_publish",
                                   "after_checkpoint"])
def test_kill_a_dag_run_then_the_next_run_recovers(broker, airflow_db, spark, tmp_path, point,
                                                   tasks):
    topic, sent, cfg = incremental(broker, tmp_path, "af", seed=8, retries=0, tasks=tasks)
    victim = dag_run(cfg, point)
    assert victim.returncode == -signal.SIGKILL, victim.stderr[-2000:]
    # The next run recovers from what the killed one left behind (its plan, staging, publish,
    # checkpoint), none of which lives in a process: it runs here, on the session's Spark,
    # without another Airflow import and JVM start.
    run_dag(cfg)
    exactly_once(cfg, topic, sent)


def test_a_dead_jvm_is_replaced_on_the_retry_in_the_same_process(broker, airflow_db,
                                                                  tmp_path):
    """dag.test runs Airflow's retry in the process whose JVM died: the retry must start a new
    JVM rather than get PySpark's cached session for the dead one back."""
    topic, sent, cfg = incremental(broker, tmp_path, "jvm", seed=9, retries=1,
                                   retry_delay="1s")
    faults = tmp_path / "faults"
    faults.write_text("read:split=1:after=1:action=kill_jvm\n")  # fired once
    run = dag_run(cfg, f"@{faults}")
    assert run.returncode == 0, run.stderr[-3000:]
    assert faults.read_text().strip() == "", "the JVM was never killed"
    assert "the Spark JVM is gone" in run.stderr + run.stdout
    assert "(task read, try 1 of 2: Airflow retries it)" in run.stderr + run.stdout
    assert "EOFError" not in run.stderr  # PySpark's accumulator server stays quiet
    exactly_once(cfg, topic, sent)


def test_a_dead_jvm_without_retries_says_it_is_not_retried(broker, airflow_db, tmp_path):
    """retries: 0: the read whose JVM died fails the run, and its message says which task
    failed and that it is not retried (it used to say "the read will be retried")."""
    topic, sent, cfg = incremental(broker, tmp_path, "jvm0", seed=10, retries=0)
    faults = tmp_path / "faults"
    faults.write_text("read:split=1:after=1:action=kill_jvm\n")
    run = dag_run(cfg, f"@{faults}")
    assert run.returncode == 1, run.stderr[-3000:]
    assert faults.read_text().strip() == "", "the JVM was never killed"
    out = run.stderr + run.stdout
    assert "the Spark JVM is gone" in out
    assert "(task read, try 1 of 1: not retried, retries: 0)" in out
    assert "will be retried" not in out and "Airflow retries it" not in out


def incremental(broker, tmp_path, name, seed, **settings):
    """A 2-partition topic with 60 records and an incremental pipeline over it (splits of at
    most 20 records): (topic, records sent, pipeline)."""
    topic = unique(f"chaos-{name}")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 60, seed=seed, late_share=0),
                   partitions=2)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique(f"chaos_{name}"), output=tmp_path,
                         kafka={"max_records_per_split": 20}, **settings)
    return topic, sent, cfg


def exactly_once(cfg, topic, sent):
    from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
    dataset = cfg.output.dataset(cfg.name)
    table = ds.dataset(dataset, format="parquet", partitioning="hive").to_table(
        columns=["partition", "offset"])
    got = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert got == sorted((p, o) for p, o, _ in sent)
    glob = f"{dataset}/**/*.parquet"
    assert present(connect().sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchone())[0] == \
        len(sent)
    cp = present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get())
    assert cp.positions == {f"{topic}:{p}": 1 + max(o for q, o, _ in sent if q == p)
                            for p in (0, 1)}
