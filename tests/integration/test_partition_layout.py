"""``output.partition_path`` through Airflow's dag.test(), real Spark and a real broker: each
hourly interval lands in its Hive-style folder ``dt=…/hour=…``, which DuckDB
(``hive_partitioning``) and Spark (partition discovery) read as columns and prune on: a filter
on the hour reads only that hour's files. The manifest and a re-run work as with the default
layout."""
import re

import pytest

from devtools.duck import connect
from devtools.services import create_topic
from devtools.taxi import produce, trips
from streamslice.commit.manifest import read_manifest
from tests.support.checks import present
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000


def test_hive_folders_are_pruned_by_duckdb_and_spark(broker, spark, airflow_db, tmp_path):
    topic = unique("layout")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, 3, 60, seed=5, late_share=0),
                   partitions=2)
    by_hour: dict[int, set[tuple[int, int]]] = {}
    for part, off, ts in sent:
        by_hour.setdefault((ts - T0) // HOUR, set()).add((part, off))
    cfg = kafka_pipeline(broker.bootstrap, topic, name=unique("layout"), mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                         format={"value": "json", "schema": {"trip_id": "string"}},
                         output={"path": str(tmp_path), "format": "parquet",
                                 "partition_path": "dt=%Y-%m-%d/hour=%H"})
    for hour in range(3):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
    dataset = cfg.output.dataset(cfg.name)
    folders = sorted(p.relative_to(tmp_path).as_posix()
                     for p in tmp_path.glob(f"pipeline={cfg.name}/*/*"))
    assert folders == [f"pipeline={cfg.name}/dt=2024-05-01/hour={h:02d}" for h in range(3)]
    first_run = present(read_manifest(dataset, "dt=2024-05-01/hour=00"))["run_id"]
    for hour in range(3):
        manifest = present(read_manifest(dataset, f"dt=2024-05-01/hour={hour:02d}"))
        assert manifest["partition"] == f"interval=20240501T{hour:02d}0000Z"
        assert manifest["records"] == len(by_hour[hour])
    files = {h: sorted((tmp_path / f"pipeline={cfg.name}/dt=2024-05-01/hour={h:02d}")
                       .glob("*.parquet")) for h in range(3)}
    total = sum(len(f) for f in files.values())

    # DuckDB reads the folders as columns (dt a date, hour the text '01': a leading zero keeps
    # it text) and opens only hour 01's files
    con = connect()
    query = (f"SELECT partition, \"offset\", pipeline, dt, hour FROM read_parquet("
             f"'{dataset}/**/*.parquet', hive_partitioning = true) "
             "WHERE dt = DATE '2024-05-01' AND hour = 1")
    rows = con.sql(query).fetchall()
    assert {(p, o) for p, o, *_ in rows} == by_hour[1] and len(rows) == len(by_hour[1])
    assert {tuple(r[2:]) for r in rows} == {(cfg.name, utc(2024, 5, 1).date(), "01")}
    profile = "".join(r[1] for r in con.sql("EXPLAIN ANALYZE " + query).fetchall())
    assert f"Scanning Files: {len(files[1])}/{total}" in profile, profile

    # Spark's partition discovery: a partition filter, and only hour 1's files read
    df = spark.read.parquet(str(tmp_path)).where(f"pipeline = '{cfg.name}' AND hour = 1")
    got = {(r["partition"], r["offset"]) for r in df.select("partition", "offset").collect()}
    assert got == by_hour[1]
    assert re.search(r"PartitionFilters: \[.*hour", explained(df)), explained(df)
    assert files_read(df) == len(files[1])

    # a re-run of hour 0 replaces its folder: same records, once each
    run_dag(cfg, logical_date=utc(2024, 5, 1, 1))
    again = con.sql(f"SELECT hour, count(*), count(DISTINCT (partition, \"offset\")) FROM "
                    f"read_parquet('{dataset}/**/*.parquet', hive_partitioning = true) "
                    "GROUP BY hour ORDER BY hour").fetchall()
    assert again == [(f"{h:02d}", len(by_hour[h]), len(by_hour[h])) for h in range(3)]
    assert present(read_manifest(dataset, "dt=2024-05-01/hour=00"))["run_id"] != first_run


def explained(df):
    return df._jdf.queryExecution().executedPlan().toString()


def files_read(df):
    """The file scan's "number of files read" metric, after running ``df`` (its own query
    execution: ``collect`` runs it, ``count`` would run another)."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    if plan.nodeName() == "AdaptiveSparkPlan":
        plan = plan.executedPlan()
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        if node.nodeName().startswith("Scan parquet"):
            return node.metrics().apply("numFiles").value()
        children = node.children()
        nodes.extend(children.apply(i) for i in range(children.size()))
    raise AssertionError(f"no parquet scan in {plan}")


def test_an_iceberg_table_by_event_hour_is_pruned_by_a_filter_on_the_field(broker, spark,
                                                                             airflow_db,
                                                                             tmp_path):
    """``event_time`` owns the records by their field, ``partition_by: hour(event_time)``
    partitions the table by it: pyiceberg plans only the matching hour's files for a filter
    on the field, DuckDB reads every row, and a re-run of an hour replaces its rows."""
    from pyiceberg.catalog import load_catalog

    cfg, sent = _three_event_hours(broker, tmp_path, "iceberg", seed=8)
    target = cfg.output.target(cfg.name)
    props = dict(target.catalog)
    table = load_catalog(props.pop("name", "streamslice"), **props).load_table(target.table)
    assert [str(f.transform) for f in table.spec().fields] == ["hour"]
    rows = table.scan().to_arrow()
    assert sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist())) \
        == sorted((p, o) for p, o, _ in sent)
    hour1 = table.scan(row_filter="event_time >= '2024-05-01T01:00:00+00:00' and "
                                  "event_time < '2024-05-01T02:00:00+00:00'")
    planned = list(hour1.plan_files())
    assert planned and all("event_time_hour=2024-05-01-01" in f.file.file_path
                           for f in planned)
    assert len(planned) < len(list(table.scan().plan_files()))
    got = hour1.to_arrow()
    assert sum(f.file.record_count for f in planned) == got.num_rows
    assert got.num_rows == sum(1 for *_, ts in sent if T0 + HOUR <= ts < T0 + 2 * HOUR)
    con = connect()
    assert present(con.sql(f"SELECT count(*) FROM iceberg_scan('{table.metadata_location}')"
                           ).fetchone())[0] == len(sent)
    run_dag(cfg, logical_date=utc(2024, 5, 1, 1))  # hour 0 again: replaced, not added
    table = load_catalog(props.pop("name", "streamslice"), **props).load_table(target.table)
    assert table.scan().to_arrow().num_rows == len(sent)


def test_a_delta_table_by_event_hour_is_pruned_by_a_filter_on_its_hour_column(broker, spark,
                                                                              airflow_db,
                                                                              tmp_path):
    """``partition_by: hour(event_time)`` on Delta: the table is partitioned by the column
    ``event_time_hour``; DuckDB's delta extension reads only that hour's files for a filter on
    it, every record lands once, and a re-run of an hour replaces its rows in one commit."""
    from deltalake import DeltaTable

    cfg, sent = _three_event_hours(broker, tmp_path, "delta", seed=9)
    uri = cfg.output.target(cfg.name).table
    table = DeltaTable(uri)
    assert table.metadata().partition_columns == ["event_time_hour"]
    rows = table.to_pyarrow_table()
    assert sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist())) \
        == sorted((p, o) for p, o, _ in sent)
    con = connect()
    hour1 = f"FROM delta_scan('{uri}') WHERE event_time_hour = '2024-05-01-01'"
    assert present(con.sql(f"SELECT count(*) {hour1}").fetchone())[0] == \
        sum(1 for *_, ts in sent if T0 + HOUR <= ts < T0 + 2 * HOUR)
    plan = con.sql(f"EXPLAIN ANALYZE SELECT count(*) {hour1}").fetchall()[0][1]
    read, total = map(int, present(re.search(r"Scanning Files: (\d+)/(\d+)", plan)).groups())
    assert read == len(table.file_uris(partition_filters=[("event_time_hour", "=",
                                                           "2024-05-01-01")]))
    assert 0 < read < total and total == len(table.file_uris())
    version = table.version()
    run_dag(cfg, logical_date=utc(2024, 5, 1, 1))  # hour 0 again: replaced, not added
    table = DeltaTable(uri)
    assert table.version() == version + 1 and table.to_pyarrow_table().num_rows == len(sent)


def _three_event_hours(broker, tmp_path, fmt, seed):
    """Three hours of taxi trips (a fifth late, by up to two minutes) owned by their
    ``event_time`` field, landed hour by hour in a table of ``fmt`` partitioned by
    ``hour(event_time)``: the pipeline and the (partition, offset, timestamp) produced."""
    from devtools.taxi import TRIP_SCHEMA
    name = unique(f"{fmt}_hour")
    create_topic(broker.bootstrap, name, 2)
    sent = produce(broker.bootstrap, name, trips(T0, 3, 60, seed=seed, late_share=0.2,
                                                 max_delay_ms=120_000), partitions=2)
    cfg = kafka_pipeline(broker.bootstrap, name, name=name, mode="interval",
                         schedule="@hourly", start_date="2024-05-01T00:00:00Z", retries=0,
                         allowed_lateness="5m", event_time={"field": "event_time"},
                         format={"value": "json", "schema": dict(TRIP_SCHEMA),
                                 "epoch_unit": "millis"},  # taxi event_time: epoch ms
                         output={"path": str(tmp_path), "format": fmt,
                                 "partition_by": "hour(event_time)"})
    for hour in range(3):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
    return cfg, sent
