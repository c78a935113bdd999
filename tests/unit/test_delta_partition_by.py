"""``output.partition_by`` on a real Delta table (delta-rs): the table is partitioned by a column
of the time transform's values (``event_time_day``), DuckDB's delta extension reads only the
matching partitions' files for a filter on it, a re-published run replaces exactly its rows in
one commit and a retry finds its commit. The read job is stood in for by Parquet files written
here (the same stand-in as the Iceberg tests)."""
import re
import shutil
from datetime import date, datetime, timezone

import pyarrow as pa
import pytest

from devtools.duck import connect
from streamslice.commit.protocol import publish_once
from streamslice.commit.publishers.transforms import delta_partition_field, delta_partition_values
from streamslice.errors import CommitError, ConfigError
from streamslice.planning.planner import check_columns
from streamslice.reading.staging import Staging
from tests.support.checks import present
from tests.unit.test_iceberg_partition_by import (
    DAY,
    T0,
    make_plan,
    publish_two_batches,
    stage,
    target,
)

HOUR = 3_600_000


def table(out):
    from deltalake import DeltaTable
    return DeltaTable(out.table)


def files_scanned(sql):
    """DuckDB's own count of the files its scan reads, from EXPLAIN ANALYZE."""
    plan = connect().sql(f"EXPLAIN ANALYZE {sql}").fetchall()[0][1]
    found = re.search(r"Scanning Files: (\d+)/(\d+)", plan)
    assert found, plan
    return int(found.group(1)), int(found.group(2))


def test_a_filter_on_the_day_column_reads_only_its_files_and_a_rerun_replaces_exactly(tmp_path):
    out = target(tmp_path, fmt="delta")
    publish_two_batches(tmp_path, out)
    dt = table(out)
    assert dt.metadata().partition_columns == ["event_time_day"]
    assert pa.schema(dt.schema().to_arrow()).field("event_time_day").type == pa.date32()
    assert sorted(u.split("/")[-2] for u in dt.file_uris()) == \
        ["event_time_day=2024-05-01", "event_time_day=2024-05-02", "event_time_day=2024-05-03"]
    uri = out.table
    day3 = f"FROM delta_scan('{uri}') WHERE event_time_day = DATE '2024-05-03'"
    assert sorted(r[0] for r in connect().sql(f"SELECT n {day3}").fetchall()) == [2000, 2001]
    assert files_scanned(f"SELECT count(*) {day3}") == (1, 3)
    assert files_scanned(f"SELECT count(*) FROM delta_scan('{uri}') WHERE event_time_day "
                         ">= DATE '2024-05-02'") == (2, 3)
    # delta-rs's own partition filter finds the same one file
    assert len(dt.file_uris(partition_filters=[("event_time_day", "=", "2024-05-03")])) == 1

    # a re-planned batch 1 replaces exactly its rows, in one commit; batch 2 stays
    version = dt.version()
    again = make_plan(out, 1, planned_at=9)
    publish_once(again, stage(tmp_path, again, [T0 + 9], "b1-again"), run_id="r3", now_ms=3)
    dt = table(out)
    assert dt.version() == version + 1
    assert sorted(dt.to_pyarrow_table().column("n").to_pylist()) == [1000, 2000, 2001]
    last = dt.history(1)[0]
    assert last["operationParameters"]["predicate"] == "streamslice_partition = 'batch=00000001'"
    # batch 1's two files were removed whole, nothing of batch 2 was rewritten
    assert (last["operationMetrics"]["num_removed_files"],
            last["operationMetrics"]["num_added_files"]) == (2, 1)
    assert dt.transaction_version("p") == 1  # the app transaction, as without partition_by
    # a retried commit (its staging area gone) finds its own commit instead of committing
    shutil.rmtree(tmp_path / "staging" / "b1-again", ignore_errors=True)
    retried = publish_once(again, Staging(str(tmp_path / "staging" / "b1-again")),
                           run_id="r3", now_ms=4)
    assert present(retried.published)["version"] == dt.version() == table(out).version()


def test_hours_are_texts_that_sort_in_time_order_and_prune(tmp_path):
    out = target(tmp_path, "hour(event_time)", fmt="delta")
    plan = make_plan(out, 1, records=4)
    times = [T0 + 1, T0 + HOUR + 1, T0 + 2 * HOUR + 1, T0 + DAY + 1]
    publish_once(plan, stage(tmp_path, plan, times, "b1"), run_id="r1", now_ms=1)
    dt = table(out)
    assert dt.metadata().partition_columns == ["event_time_hour"]
    values = sorted(dt.to_pyarrow_table().column("event_time_hour").to_pylist())
    assert values == ["2024-05-01-00", "2024-05-01-01", "2024-05-01-02", "2024-05-02-00"]
    sql = (f"SELECT count(*) FROM delta_scan('{out.table}') WHERE event_time_hour >= "
           "'2024-05-01-01' AND event_time_hour < '2024-05-01-03'")
    assert present(connect().sql(sql).fetchone())[0] == 2
    assert files_scanned(sql) == (2, 4)


def test_a_table_partitioned_otherwise_is_refused_before_anything_lands(tmp_path):
    plain = target(tmp_path, partition_by=None, fmt="delta")
    plan = make_plan(plain, 1)
    publish_once(plan, stage(tmp_path, plan, [T0], "b1"), run_id="r1", now_ms=1)
    assert table(plain).metadata().partition_columns == ["streamslice_partition"]  # as before
    by_day = make_plan(target(tmp_path, fmt="delta"), 2)
    with pytest.raises(CommitError, match=r"is partitioned by streamslice_partition, the "
                                          r"pipeline by event_time_day \(output.partition_by: "
                                          r"day\(event_time\)\); nothing was published"):
        publish_once(by_day, stage(tmp_path, by_day, [T0], "b2"), run_id="r2", now_ms=2)
    by_hour = make_plan(target(tmp_path, "hour(event_time)", fmt="delta"), 2)
    with pytest.raises(CommitError, match="the pipeline by event_time_hour"):
        publish_once(by_hour, stage(tmp_path, by_hour, [T0], "b3"), run_id="r2", now_ms=2)
    assert table(plain).version() == 0 and table(plain).to_pyarrow_table().num_rows == 1
    # and the other way round: a pipeline without the setting on a table by day
    day_dir = tmp_path / "by_day"
    by_day = make_plan(target(day_dir, fmt="delta"), 1)
    publish_once(by_day, stage(day_dir, by_day, [T0], "b1"), run_id="r1", now_ms=1)
    plain = make_plan(target(day_dir, partition_by=None, fmt="delta"), 2)
    with pytest.raises(CommitError, match="partitioned by event_time_day, the pipeline by "
                                          "streamslice_partition; nothing was published"):
        publish_once(plain, stage(day_dir, plain, [T0], "b2"), run_id="r2", now_ms=2)


def test_values_are_utc_whatever_the_column_zone_and_a_null_time_has_no_partition():
    utc = datetime(2024, 12, 31, 23, 30, tzinfo=timezone.utc)
    # the same instants, typed in Tokyo's zone (where it is already 2025-01-01 08:30)
    tokyo = pa.array([utc, None], pa.timestamp("us", tz="UTC")).cast(
        pa.timestamp("us", tz="Asia/Tokyo"))
    naive = pa.array([utc.replace(tzinfo=None), None], pa.timestamp("ms"))
    dates = pa.array([date(2024, 12, 31), None], pa.date32())
    for values in (tokyo, naive):
        assert delta_partition_values("day(t)", values).to_pylist() == [date(2024, 12, 31), None]
        assert delta_partition_values("hours(t)", values).to_pylist() == ["2024-12-31-23", None]
        assert delta_partition_values("month(t)", values).to_pylist() == ["2024-12", None]
        assert delta_partition_values("year(t)", values).to_pylist() == [2024, None]
    assert delta_partition_values("day(d)", dates).to_pylist() == [date(2024, 12, 31), None]
    assert delta_partition_values("hour(d)", dates).to_pylist() == ["2024-12-31-00", None]
    assert [(f.name, f.type) for f in map(delta_partition_field, (
        "day(t)", "hour(t)", "month(t)", "year(t)"))] == [
        ("t_day", pa.date32()), ("t_hour", pa.string()), ("t_month", pa.string()),
        ("t_year", pa.int32())]


def test_a_record_column_named_like_the_partition_column_is_refused_at_plan_time(tmp_path):
    clash = make_plan(target(tmp_path, fmt="delta"),
                      schema=(("event_time", "timestamp"), ("Event_Time_Day", "string")))
    with pytest.raises(ConfigError, match="the Delta table's partition column 'event_time_day' "
                                          "would be a second column of that name"):
        check_columns(clash)
    check_columns(make_plan(target(tmp_path, "hour(event_time)", fmt="delta"),
                            schema=(("event_time", "timestamp"), ("event_time_day", "string"))))
    check_columns(make_plan(target(tmp_path),  # Iceberg's partition field is no column
                            schema=(("event_time", "timestamp"), ("event_time_day", "string"))))
