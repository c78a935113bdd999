"""Incremental mode: each run reads checkpoint → tip; crashes anywhere leave exactly the source
records, once. Real broker, real Spark, real Airflow (dag.test)."""
import os
from collections import Counter

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
from tests.support.pipelines import kafka_pipeline, run_dag, unique

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000


def _pipeline(broker, topic, client="confluent-kafka"):
    return kafka_pipeline(broker.bootstrap, topic, name=unique("taxi_incr"), retries=0,
                          kafka={"client": client, "max_records_per_split": 200})


def _published(cfg):
    dataset = cfg.output.dataset(cfg.name)
    if not os.path.isdir(dataset):
        return {}
    out = {}
    for name in sorted(os.listdir(dataset)):
        if name.startswith("batch="):
            t = ds.dataset(f"{dataset}/{name}", format="parquet").to_table(
                columns=["partition", "offset"])
            out[name] = list(zip(t.column("partition").to_pylist(),
                                 t.column("offset").to_pylist()))
    return out


def _checkpoint(cfg):
    return OfflineCheckpointStore(f"streamslice/{cfg.name}").get()


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_three_runs_contiguous_no_gaps_no_duplicates(broker, spark, airflow_db, client):
    topic = unique("incr")
    create_topic(broker.bootstrap, topic, 3)
    cfg = _pipeline(broker, topic, client)
    sent = []
    for run in range(3):
        sent += produce(broker.bootstrap, topic, trips(T0 + run * 3_600_000, 1, 300, seed=run))
        run_dag(cfg)
        cp = _checkpoint(cfg)
        assert cp.batch == run + 1
        assert cp.positions == {f"{topic}:{p}": max(o for q, o, _ in sent if q == p) + 1
                                for p in range(3)}
    batches = _published(cfg)
    assert list(batches) == ["batch=00000001", "batch=00000002", "batch=00000003"]
    for p in range(3):  # each run starts exactly where the previous one stopped
        ranges = [sorted(o for q, o in rows if q == p) for rows in batches.values()]
        for earlier, later in zip(ranges, ranges[1:]):
            assert later[0] == earlier[-1] + 1
    everything = Counter(r for rows in batches.values() for r in rows)
    assert sorted(everything) == sorted((p, o) for p, o, _ in sent)
    assert set(everything.values()) == {1}


@pytest.mark.parametrize("point", ["before_publish", "after_publish"])
def test_crash_in_commit_then_rerun_is_exactly_once(broker, spark, airflow_db, monkeypatch,
                                                     point):
    topic = unique("crash")
    create_topic(broker.bootstrap, topic, 2)
    cfg = _pipeline(broker, topic)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 200, seed=3))
    run_dag(cfg)
    sent += produce(broker.bootstrap, topic, trips(T0 + 3_600_000, 1, 200, seed=4))

    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", point)
    run_dag(cfg, expect="failed")
    assert _checkpoint(cfg).batch == 1, "checkpoint advanced although the commit crashed"
    assert ("batch=00000002" in _published(cfg)) == (point == "after_publish")

    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    sent += produce(broker.bootstrap, topic, trips(T0 + 7_200_000, 1, 100, seed=5))
    run_dag(cfg)
    assert _checkpoint(cfg).batch == 2
    batches = _published(cfg)
    assert list(batches) == ["batch=00000001", "batch=00000002"]
    everything = Counter(r for rows in batches.values() for r in rows)
    assert sorted(everything) == sorted((p, o) for p, o, _ in sent)
    assert set(everything.values()) == {1}


def test_crash_inside_spark_job_then_rerun_is_exactly_once(broker, spark, airflow_db,
                                                           monkeypatch):
    topic = unique("sparkcrash")
    create_topic(broker.bootstrap, topic, 2)
    cfg = _pipeline(broker, topic)
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 900, seed=8))
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "read:split=2:after=1")
    run = run_dag(cfg, expect="failed")
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert states["read"] == "failed" and states["commit"] == "upstream_failed"
    assert _checkpoint(cfg) is None and _published(cfg) == {}

    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    run_dag(cfg)
    rows = _published(cfg)["batch=00000001"]
    assert sorted(rows) == sorted((p, o) for p, o, _ in sent)
    assert len(set(rows)) == len(rows)
    work = f"{cfg.output.path}/_streamslice/pipeline={cfg.name}/staging"
    leftovers = os.listdir(work) if os.path.exists(work) else []
    assert leftovers == [], "failed attempts left staging behind"
    dataset = cfg.output.dataset(cfg.name)
    assert sorted(os.listdir(dataset)) == ["batch=00000001"]  # only data under the dataset
