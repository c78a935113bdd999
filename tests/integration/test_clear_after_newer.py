"""An operator clears a failed incremental run after a newer run has published: the cleared
run's saved plan is stale (the checkpoint it planned from has moved) and must never replace
what the newer run published. Real broker, real Spark, real Airflow (``dag.test()``'s loop
over the cleared run, which keeps its saved plan as the scheduler would)."""
import os
from collections import Counter

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
from tests.support.checks import present
from tests.support.pipelines import clear_and_rerun, kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000
HOUR = 3_600_000


def _published(cfg):
    dataset = cfg.output.dataset(cfg.name)
    out = {}
    for name in sorted(os.listdir(dataset)) if os.path.isdir(dataset) else []:
        t = ds.dataset(f"{dataset}/{name}", format="parquet").to_table(
            columns=["partition", "offset"])
        out[name] = sorted(zip(t.column("partition").to_pylist(),
                               t.column("offset").to_pylist()))
    return out


def _failed_then_newer(broker, monkeypatch, tasks):
    """Run A fails in its read (its plan saved), then run B plans from the same checkpoint
    and publishes batch 1; (cfg, topic, run A, records sent, B's rows)."""
    topic = unique("clear")
    create_topic(broker.bootstrap, topic, 2)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("clear_incr"), retries=0,
                         tasks=tasks, spark={"runner": "local"})
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 100, seed=21))
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "read:after=1")
    run_a = run_dag(cfg, logical_date=utc(2024, 5, 1, 1), expect="failed")
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    assert _published(cfg) == {}
    sent += produce(broker.bootstrap, topic, trips(T0 + HOUR, 1, 50, seed=22))
    run_dag(cfg, logical_date=utc(2024, 5, 1, 2))
    newer = _published(cfg)
    assert list(newer) == ["batch=00000001"]
    assert newer["batch=00000001"] == sorted((p, o) for p, o, _ in sent)
    return cfg, topic, run_a, sent, newer


def _exactly_once(cfg, sent):
    everything = Counter(r for rows in _published(cfg).values() for r in rows)
    assert sorted(everything) == sorted((p, o) for p, o, _ in sent)
    assert set(everything.values()) == {1}


def test_separate_tasks_clearing_the_failed_read_refuses_the_stale_plan(
        broker, spark, airflow_db, monkeypatch):
    cfg, topic, run_a, sent, newer = _failed_then_newer(broker, monkeypatch, "separate")
    again = clear_and_rerun(cfg, run_a, expect="failed")  # read and commit, not the plan
    assert _published(cfg) == newer, "the cleared run replaced the newer run's batch"
    states = {ti.task_id: str(ti.state) for ti in again.get_task_instances()}
    assert states["read"] == "failed", states  # refused before it read anything
    assert present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get()).batch == 1

    # Cleared whole, the run plans again from the checkpoint the newer run left.
    sent += produce(broker.bootstrap, topic, trips(T0 + 2 * HOUR, 1, 30, seed=23))
    clear_and_rerun(cfg, run_a, only_failed=False, expect="success")
    assert list(_published(cfg)) == ["batch=00000001", "batch=00000002"]
    assert _published(cfg)["batch=00000001"] == newer["batch=00000001"]
    assert present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get()).batch == 2
    _exactly_once(cfg, sent)


def test_combined_task_cleared_after_a_newer_run_plans_again(broker, spark, airflow_db,
                                                             monkeypatch):
    cfg, topic, run_a, sent, newer = _failed_then_newer(broker, monkeypatch, "combined")
    sent += produce(broker.bootstrap, topic, trips(T0 + 2 * HOUR, 1, 30, seed=24))
    clear_and_rerun(cfg, run_a, expect="success")
    published = _published(cfg)
    assert published["batch=00000001"] == newer["batch=00000001"], \
        "the cleared run replaced the newer run's batch"
    assert list(published) == ["batch=00000001", "batch=00000002"]
    checkpoint = present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get())
    assert (checkpoint.batch, checkpoint.run_id) == (2, run_a.run_id)
    _exactly_once(cfg, sent)



def test_a_manual_run_of_an_interval_beside_its_failed_run_stays_exact(broker, spark, airflow_db,
                                                                       monkeypatch):
    """The interval's own run fails in its read; a manual run of the same interval publishes
    it and removes the failed run's staging area (that run is done, Airflow says); clearing
    the failed run then publishes the interval again, whole: each record once."""
    from streamslice.config.schedule import interval_containing
    from streamslice.timestamps import from_ms
    from tests.support.pipelines import run_interval
    topic = unique("clear_iv")
    create_topic(broker.bootstrap, topic, 2)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("clear_iv"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                         spark={"runner": "local"}, kafka={"max_records_per_split": 40})
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 120, seed=25, late_share=0))
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "read:after=1")
    own = run_interval(cfg, utc(2024, 5, 1, 0), expect="failed")
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    work = f"{cfg.output.path}/_streamslice/pipeline={cfg.name}/staging"
    assert os.listdir(work), "the failed read left no staging area"
    iv = interval_containing(cfg, T0)
    manual = run_dag(cfg, logical_date=from_ms(iv.end))
    assert manual.run_id != own.run_id
    assert (to_ms(manual.data_interval_start), to_ms(manual.data_interval_end)) == \
        (iv.start, iv.end)
    assert not os.path.exists(work) or os.listdir(work) == []
    _exactly_once(cfg, sent)

    clear_and_rerun(cfg, own, expect="success")
    _exactly_once(cfg, sent)
    assert list(_published(cfg)) == ["interval=20240501T000000Z"]


def to_ms(date):
    return int(date.timestamp() * 1000)


def test_a_manual_run_keeps_the_staging_area_of_a_run_waiting_to_commit(broker, spark,
                                                                        airflow_db,
                                                                        monkeypatch):
    """The interval's own run has read and its commit waits for a retry; a manual run of the
    same interval commits meanwhile. It must leave the waiting run's read in place, which
    that run's commit then publishes (the same records: the partition stays exact)."""
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState

    from streamslice.config.schedule import interval_containing
    from streamslice.timestamps import from_ms
    from tests.support.pipelines import run_interval
    topic = unique("wait_iv")
    create_topic(broker.bootstrap, topic, 2)
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("wait_iv"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                         spark={"runner": "local"})
    sent = produce(broker.bootstrap, topic, trips(T0, 1, 80, seed=26, late_share=0))
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", "before_publish")
    own = run_interval(cfg, utc(2024, 5, 1, 0), expect="failed")
    monkeypatch.delenv("STREAMSLICE_INJECT_FAULT")
    with create_session() as session:  # as Airflow leaves it while the retry's delay runs
        (commit,) = [ti for ti in own.get_task_instances(session=session)
                     if ti.task_id == "commit"]
        commit.state = TaskInstanceState.UP_FOR_RETRY
        session.merge(commit)
    iv = interval_containing(cfg, T0)
    run_dag(cfg, logical_date=from_ms(iv.end))  # the manual run of the same interval
    _exactly_once(cfg, sent)
    again = clear_and_rerun(cfg, own, expect="success")  # its commit publishes its read
    reads = [ti for ti in again.get_task_instances() if ti.task_id == "read"]
    assert [ti.try_number for ti in reads] == [1], "the waiting run read again"
    _exactly_once(cfg, sent)
