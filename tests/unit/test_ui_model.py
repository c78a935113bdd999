"""The Streamslice page's data and rendering, from plain rows (no Airflow)."""
from streamslice.ui import pages, svg
from streamslice.ui.model import Cell, Overview, Run, checkpoint_rows, coverage, lag_series

H = 3_600_000


def run(run_id, state, start=None, records=None, late=0, at=0, **metrics):
    m = None if records is None else {"records": records, "late_records": late, **metrics}
    return Run(run_id, state, start, start + H if start is not None else None, at, at, m)


def test_every_expected_interval_gets_a_cell_and_holes_are_missing():
    runs = [run("a", "success", 0, 5), run("b", "success", H, 4, late=1),
            run("d", "failed", 3 * H), run("e", "running", 4 * H), run("f", "success", 5 * H, 0)]
    cells = coverage(runs, [(i * H, (i + 1) * H) for i in range(6)])
    assert [c.status for c in cells] == ["published", "late", "missing", "failed", "running",
                                         "empty"]
    assert [c.records for c in cells] == [5, 4, None, None, None, 0]


def test_a_failed_rerun_does_not_hide_an_earlier_publish_but_a_rerun_in_flight_shows():
    ok, failed_later = run("a", "success", 0, 5, at=1), run("b", "failed", 0, at=2)
    assert coverage([ok, failed_later], [(0, H)])[0].status == "published"
    again = run("c", "queued", 0, at=3)
    assert coverage([ok, failed_later, again], [(0, H)])[0].status == "running"
    assert coverage([failed_later], [(0, H)])[0].status == "failed"


def test_incremental_pipelines_get_one_cell_per_batch_in_run_order():
    cells = coverage([run("b", "success", records=3, at=2), run("a", "failed", at=1)], None)
    assert [(c.run.run_id, c.status) for c in cells] == [("a", "failed"), ("b", "published")]


def test_lag_per_split_over_runs_skips_runs_without_figures():
    runs = [run("a", "success", records=1, at=1, lag_by_split={"t:0": 9, "t:1": None}),
            run("b", "failed", at=2), run("c", "success", records=1, at=3,
                                          lag_by_split={"t:0": 2, "t:1": 4})]
    assert lag_series(runs) == {"t:0": [(0, 9.0), (2, 2.0)], "t:1": [(2, 4.0)]}


def test_checkpoint_next_to_where_the_last_plan_ended_and_its_lag():
    split = {"id": 0, "topic": "t", "partition": 0, "start": 3, "stop": 10,
             "high_watermark": 10}
    last = run("a", "success", records=7, lag_by_split={"t:0": 7}, lag_unit="records")
    rows = checkpoint_rows({"positions": {"t:0": 10, "t:1": 4}}, [split], "kafka", last)
    assert [(r["split"], r["next"].short, r["planned_end"].short, r["lag_text"])
            for r in rows] == [("t:0", "10", "10", "7 records"), ("t:1", "4", "-", "-")]


def test_kinesis_checkpoint_rows_show_short_sequence_numbers_and_time_behind():
    seq = "49651234567890123456789012345678901234567890123456789012"
    split = {"id": 0, "stream": "s", "shard_id": "shardId-1", "start": {"type": "TRIM_HORIZON"},
             "stop_before": 1_714_521_600_000}
    last = run("a", "success", records=1, lag_by_split={"s:shardId-1": 2500},
               millis_behind_latest=2500)
    (row,) = checkpoint_rows({"positions": {"s:shardId-1": {"after": seq}}}, [split], "kinesis",
                             last)
    assert (row["next"].short, row["next"].full) == ("after 4965…12", f"after {seq}")
    assert row["planned_end"].short == "arrived before 2024-05-01T00:00:00.000Z"
    assert row["lag_text"] == "2.5 s behind"


def test_names_and_messages_are_escaped_everywhere():
    hostile = '<script>alert(1)</script>"'
    row = Overview(hostile, "kafka", "interval", "@hourly", False, hostile,
                   last=Run(hostile, "success", 0, H, 0, 0, {"records": 1, "partition": hostile}))
    html = pages.overview([row], "/streamslice", "")
    cell = Cell(0, H, "published", row.last)
    view = pages.PipelineView(row=row, cells=[cell], recent=[row.last], checkpoint=None,
                              plan_splits=[], range_start=0, range_end=H, output=hostile,
                              alerts=[{"at": 0, "kind": "lag", "message": hostile}])
    for text in (html, pages.pipeline(view, "/streamslice", "")):
        assert "<script>" not in text and "&lt;script&gt;" in text


def test_the_strip_marks_each_cell_with_its_state_and_start():
    cells = [Cell(0, H, "published"), Cell(H, 2 * H, "missing")]
    out = svg.strip(cells, lambda c: c.status, lambda c: None)
    assert out.count('class="cell"') == 2
    assert 'data-status="missing" data-start="3600000"' in out
    assert svg.strip([], str, str).startswith("<p")


def test_a_table_run_names_its_snapshot_or_version_and_a_file_run_its_uri():
    def page(published):
        r = run("r", "success", 0, 3, partition="interval=1", published=published)
        row = Overview("p", "kafka", "interval", "@hourly", False, "", last=r)
        return pages.pipeline(pages.PipelineView(
            row=row, cells=[], recent=[r], checkpoint=None, plan_splits=[], range_start=0,
            range_end=H, output="o", alerts=[]), "/streamslice", "")
    iceberg = page({"uri": "iceberg:db.t/interval=1", "snapshot_id": 8123})
    assert 'data-snapshot="8123"' in iceberg and "VERSION AS OF 8123" in iceberg
    assert 'data-version="4"' in page({"uri": "/lake/t#interval=1", "version": 4})
    files = page({"uri": "s3://b/lake/interval=1"})
    assert 'title="s3://b/lake/interval=1"' in files and "table-version" not in files
    assert "table-version" not in page(None)  # runs committed before this was recorded
