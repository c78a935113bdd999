"""``tasks: combined``: plan, read and commit in one Airflow task (``dag.test()``, the real
task callable, Spark local[*] in the task's process, a real broker). A failed try resumes
where it stopped, as the three tasks do: the saved plan is reused, what a try read to the
end is committed without reading it again, a publish already made is found rather than
repeated, and the checkpoint advances once. The run is what the Streamslice page shows: its
plan's splits, and its figures on the output asset's event."""
import json

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000


def test_a_combined_run_resumes_each_try_where_the_last_one_stopped(
        broker, airflow_db, spark, tmp_path, monkeypatch):
    from airflow.utils.session import create_session

    from streamslice.airflow import tasks, ui_data
    from streamslice.airflow.checkpoint_store import OfflineCheckpointStore
    topic = unique("combined")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, hours=1, per_hour=80, seed=12,
                                                  late_share=0))
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("combined"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                         tasks="combined", retries=3, retry_delay="1s",
                         kafka={"max_records_per_split": 30}, spark={"runner": "local"},
                         output=tmp_path)
    # Each try fails at the next step (InjectedFault is transient, so Airflow retries it):
    # once the plan is saved, once the publish is made, once the checkpoint has advanced.
    faults = tmp_path / "faults"
    faults.write_text("plan\nafter_publish\nafter_checkpoint\n")
    monkeypatch.setenv("STREAMSLICE_INJECT_FAULT", f"@{faults}")
    reads = []
    read = tasks.TaskHost.read

    def counted(self, *a):
        reads.append(1)
        return read(self, *a)
    monkeypatch.setattr(tasks.TaskHost, "read", counted)

    run = run_dag(cfg, logical_date=utc(2024, 5, 1, 1))
    assert faults.read_text() == "", "a fault never fired"
    (ti,) = run.get_task_instances()
    assert (ti.task_id, ti.try_number, str(ti.state)) == ("plan_read_commit", 4, "success")
    assert len(reads) == 1, "a try read again what an earlier try had read"

    part = tmp_path / f"pipeline={cfg.name}" / "interval=20240501T000000Z"
    t = ds.dataset(str(part), format="parquet").to_table(columns=["partition", "offset"])
    got = sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))
    assert got == sorted((p, o) for p, o, _ in sent)
    manifest = json.loads((part / "_manifest.json").read_text())
    checkpoint = present(OfflineCheckpointStore(f"streamslice/{cfg.name}").get())
    assert checkpoint.interval_end == T0 + HOUR
    assert (checkpoint.partition, checkpoint.run_id) == (manifest["partition"], run.run_id)
    assert list((tmp_path / "_streamslice").rglob("staging/*/*")) == []

    with create_session() as session:  # what the Streamslice page reads of the run
        splits = ui_data.latest_plan_splits(session, cfg.name, run.run_id)
        assert len(splits) == len(manifest["plan"]["splits"]) > 1
        shown = ui_data.runs(session, cfg.name, ui_data.asset(session, cfg.name), limit=5)
    assert [(r.run_id, r.state, present(r.metrics).records) for r in shown] == \
        [(run.run_id, "success", len(sent))]
