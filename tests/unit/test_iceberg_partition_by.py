"""``output.partition_by`` on a real pyiceberg table (SQLite catalog): the table is partitioned by
a time transform of a record column, a filter on that column plans only the matching
partitions' files, a re-published run replaces exactly its rows in one transaction and a retry
finds its commit. The read job is stood in for by Parquet files written here."""
import shutil
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamslice.commit.protocol import publish_once
from streamslice.config import parse_pipeline
from streamslice.errors import CommitError, ConfigError
from streamslice.kafka.split import KafkaSplit
from streamslice.planning.plan import ReadPlan
from streamslice.planning.planner import check_columns
from streamslice.reading.staging import Staging
from streamslice.reading.stats import SplitSummary
from tests.support.checks import present

DAY = 86_400_000
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z


def target(tmp_path, partition_by="day(event_time)", fmt="iceberg"):
    by = f", partition_by: '{partition_by}'" if partition_by else ""
    cfg = parse_pipeline(f"mode: incremental\nkafka: {{bootstrap_servers: 'a:1', topics: [t]}}\n"
                         f"output: {{path: '{tmp_path}', format: {fmt}{by}}}\n",
                         default_name="p")
    return cfg.output.target("p")


def make_plan(output, batch=1, planned_at=0, records=1,
              schema=(("n", "long"), ("event_time", "timestamp"))):
    return ReadPlan(pipeline="p", source="kafka", mode="incremental", planned_at=planned_at,
                    splits=[KafkaSplit(0, "t", 0, 0, records)], partition=f"batch={batch:08d}",
                    batch=batch, next_positions={"t:0": records}, output=output,
                    decode={"value": "json", "key": "raw", "on_error": "dead_letter",
                            "schema": [list(f) for f in schema]},
                    source_info={"include_headers": False})


def stage(tmp_path, plan, times, name):
    from streamslice.commit.publishers.tables import table_schema
    schema = table_schema(plan)
    st = Staging(str(tmp_path / "staging" / name))
    (tmp_path / "staging" / name / "data").mkdir(parents=True)
    n = len(times)
    cols: dict[str, list[object]] = {f.name: [None] * n for f in schema}
    cols.update(topic=["t"] * n, partition=[0] * n, offset=list(range(n)),
                n=[plan.batch * 1000 + i for i in range(n)],
                event_time=[datetime.fromtimestamp(t / 1000, timezone.utc) for t in times],
                streamslice_partition=[plan.partition] * n)
    pq.write_table(pa.table(cols, schema=schema), st.root + "/data/part-0.parquet")
    st.write_summary(0, SplitSummary(0, "t:0", 0, n, records=n, reached_stop=True))
    return st


def publish_two_batches(tmp_path, out):
    """Batch 1 on days 1 and 2 (a run may span partitions: late and early records do), batch 2
    on day 3."""
    first = make_plan(out, 1, records=3)
    publish_once(first, stage(tmp_path, first, [T0 + 5, T0 + 7, T0 + DAY + 3], "b1"),
                 run_id="r1", now_ms=1)
    second = make_plan(out, 2, records=2)
    publish_once(second, stage(tmp_path, second, [T0 + 2 * DAY + 1, T0 + 2 * DAY + 2], "b2"),
                 run_id="r2", now_ms=2)


def table_of(output):
    from pyiceberg.catalog import load_catalog
    return load_catalog("streamslice", **output.catalog).load_table(output.table)


def test_a_filter_on_the_column_plans_only_its_partitions(tmp_path):
    out = target(tmp_path)
    publish_two_batches(tmp_path, out)
    table = table_of(out)
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == \
        [("event_time_day", "day")]
    assert table.scan().to_arrow().num_rows == 5
    day3 = table.scan(row_filter="event_time >= '2024-05-03T00:00:00+00:00'")
    files = list(day3.plan_files())
    assert len(files) == 1 and len(list(table.scan().plan_files())) == 3
    assert sorted(day3.to_arrow().column("n").to_pylist()) == [2000, 2001]
    assert all("event_time_day=2024-05-03" in f.file.file_path for f in files)
    # batch 1's records were written one file per day: day 2 plans a file of day 2's record
    # only (a file of the run, as add_files registers it, would span days 1 and 2)
    day2 = table.scan(row_filter="event_time >= '2024-05-02T00:00:00+00:00' and "
                                 "event_time < '2024-05-03T00:00:00+00:00'")
    assert [f.file.record_count for f in day2.plan_files()] == [1]

    # a re-planned batch 1 replaces exactly its rows, in one commit; batch 2 stays
    again = make_plan(out, 1, planned_at=9)
    publish_once(again, stage(tmp_path, again, [T0 + 9], "b1-again"), run_id="r3", now_ms=3)
    rows = sorted(table_of(out).scan().to_arrow().column("n").to_pylist())
    assert rows == [1000, 2000, 2001]
    # a retried commit (its staging area gone) finds its own snapshot instead of committing
    snapshots = len(table_of(out).snapshots())
    shutil.rmtree(tmp_path / "staging" / "b1-again", ignore_errors=True)
    retried = publish_once(again, Staging(str(tmp_path / "staging" / "b1-again")),
                           run_id="r3", now_ms=4)
    assert present(retried.published)["snapshot_id"] == \
        present(table_of(out).current_snapshot()).snapshot_id
    assert len(table_of(out).snapshots()) == snapshots


def test_a_table_partitioned_otherwise_is_refused_before_anything_lands(tmp_path):
    plain = target(tmp_path, partition_by=None)
    plan = make_plan(plain, 1)
    publish_once(plan, stage(tmp_path, plan, [T0], "b1"), run_id="r1", now_ms=1)
    by_day = make_plan(target(tmp_path), 2)
    with pytest.raises(CommitError, match=r"partitioned by identity\(streamslice_partition\), "
                                          r"the pipeline by day\(event_time\)"):
        publish_once(by_day, stage(tmp_path, by_day, [T0], "b2"), run_id="r2", now_ms=2)
    assert table_of(plain).scan().to_arrow().num_rows == 1


def test_without_the_setting_a_table_is_taken_as_it_is(tmp_path):
    """A table the user made, unpartitioned: published to as before partition_by existed."""
    from pyiceberg.catalog import load_catalog

    from streamslice.commit.publishers.tables import table_schema
    plain = target(tmp_path, partition_by=None)
    plan = make_plan(plain, 1)
    (tmp_path / "_streamslice").mkdir()  # where the default SQLite catalog lives
    catalog = load_catalog("streamslice", **plain.catalog)
    catalog.create_namespace_if_not_exists("streamslice")
    catalog.create_table(plain.table, schema=table_schema(plan))
    publish_once(plan, stage(tmp_path, plan, [T0], "b1"), run_id="r1", now_ms=1)
    publish_once(plan, Staging(str(tmp_path / "staging" / "b1")), run_id="r1", now_ms=2)
    table = table_of(plain)
    assert not table.spec().fields and table.scan().to_arrow().num_rows == 1


@pytest.mark.parametrize("value, fmt, message", [
    ("days(event_time)", "parquet", "output.partition_by: is for format iceberg"),
    ("bucket(16, id)", "iceberg", "'bucket(16, id)' is not a time transform of a column: "
                                  "hour(column), day(column), month(column), year(column)"),
    ("day(a.b)", "iceberg", "is not a time transform of a column"),
])
def test_bad_settings_are_refused_by_name(tmp_path, value, fmt, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        target(tmp_path, value, fmt)


def test_spark_ddl_plural_names_are_taken_too(tmp_path):
    assert target(tmp_path, "hours(event_time)").partition_by == "hours(event_time)"


@pytest.mark.parametrize("value, message", [
    ("day(nope)", "the records have no top-level column 'nope'"),
    ("day(n)", "column 'n' is int64; a time transform takes a timestamp or date column"),
])
def test_the_column_is_checked_against_the_records_at_plan_time(tmp_path, value, message):
    with pytest.raises(ConfigError, match=message):
        check_columns(make_plan(target(tmp_path, value)))
    check_columns(make_plan(target(tmp_path, "day(timestamp)")))  # Kafka's own timestamp
