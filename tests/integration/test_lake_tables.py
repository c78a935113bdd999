"""Iceberg (pyiceberg, SQLite catalog) and Delta Lake (delta-rs) outputs through Airflow's
dag.test(), real Spark and a real broker: each interval is one atomic commit that holds exactly
its records, a re-run replaces them (no duplicates), every commit records what it holds, and the
previous snapshot / version still reads the old rows. Read back with pyiceberg's and delta-rs's
own scans."""
import json
from collections import Counter

import pytest

from devtools.duck import connect
from devtools.services import create_topic
from devtools.taxi import produce, trips
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000
HOUR = 3_600_000


def pipeline(broker, tmp_path, fmt, topic):
    return kafka_pipeline(broker.bootstrap, topic, name=unique(f"lake_{fmt}"), mode="interval",
                          schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                          format={"value": "json",
                                  "schema": {"trip_id": "string", "fare_amount": "double"}},
                          output={"path": str(tmp_path), "format": fmt})


def sent_by_hour(sent):
    hours: dict[int, set[tuple[int, int]]] = {}
    for part, off, ts in sent:
        hours.setdefault((ts - T0) // HOUR, set()).add((part, off))
    return hours


def rows_of(table):
    return Counter(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                       table.column("streamslice_partition").to_pylist()))


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_intervals_commit_atomically_and_replace_on_rerun(broker, spark, airflow_db, tmp_path,
                                                          fmt):
    topic = unique("lake")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 2, 80, seed=4, late_share=0), partitions=2)
    expected = sent_by_hour(sent)
    cfg = pipeline(broker, tmp_path, fmt, topic)
    for hour in (0, 1):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
    scan, versions, history = readers(cfg, fmt)
    rows = rows_of(scan())
    assert all(n == 1 for n in rows.values())  # once each
    for hour in (0, 1):
        got = {(p, o) for p, o, part in rows if part == f"interval=20240501T{hour:02d}0000Z"}
        assert got == expected[hour]
    con = connect()  # an engine that is not ours reads the same rows
    if fmt == "iceberg":
        query = f"SELECT count(*) FROM iceberg_scan('{metadata_location(cfg)}')"
    else:
        query = f"SELECT count(*) FROM delta_scan('{cfg.output.target(cfg.name).table}')"
    assert present(con.sql(query).fetchone())[0] == len(sent)
    before = versions()
    run = run_dag(cfg, logical_date=utc(2024, 5, 1, 1))  # hour 0 again: replaced, not added
    assert rows_of(scan()) == rows
    assert versions() > before
    # The run names the table version holding its state (the Streamslice page shows it).
    published = run.get_task_instance("commit").xcom_pull(task_ids="commit")["published"]
    assert published[{"iceberg": "snapshot_id", "delta": "version"}[fmt]] == versions()
    assert rows_of(scan(before)) == rows  # the previous snapshot / version still reads
    commits = history()
    last = commits[-1]
    assert last["streamslice.pipeline"] == cfg.name
    assert last["streamslice.partition"] == "interval=20240501T000000Z"
    assert json.loads(last["streamslice.manifest"])["records"] == len(expected[0])
    ends = json.loads(last["streamslice.end_positions"])
    assert set(ends) == {f"{topic}:0", f"{topic}:1"}


def readers(cfg, fmt):
    """(scan(at=None), current version, commit properties oldest first) for the output."""
    target = cfg.output.target(cfg.name)
    if fmt == "iceberg":
        from pyiceberg.catalog import load_catalog
        props = dict(target.catalog)
        catalog = load_catalog(props.pop("name", "streamslice"), **props)

        def table():
            return catalog.load_table(target.table)

        def scan(at=None):
            return table().scan(snapshot_id=at).to_arrow()

        def version():
            return table().current_snapshot().snapshot_id

        def history():
            return [s.summary.additional_properties for s in table().snapshots()
                    if "streamslice.plan_id" in s.summary.additional_properties]

        def versions():
            return version()
        return scan, _ordered(versions, table), history
    from deltalake import DeltaTable

    def delta_scan(at=None):
        return DeltaTable(target.table, version=at).to_pyarrow_table()

    def delta_versions():
        return DeltaTable(target.table).version()

    def delta_history():
        return [h for h in reversed(DeltaTable(target.table).history())
                if "streamslice.plan_id" in h]
    return delta_scan, delta_versions, delta_history


def _ordered(current, table):
    """Iceberg snapshot ids are not ordered: compare by position in the snapshot log."""
    class Version(int):
        def __gt__(self, other):
            ids = [s.snapshot_id for s in table().snapshots()]
            return ids.index(int(self)) > ids.index(int(other))
    return lambda: Version(current())


def metadata_location(cfg):
    from pyiceberg.catalog import load_catalog
    target = cfg.output.target(cfg.name)
    props = dict(target.catalog)
    return load_catalog(props.pop("name", "streamslice"), **props).load_table(
        target.table).metadata_location
