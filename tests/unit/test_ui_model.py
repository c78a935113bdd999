"""The Streamslice page's data and rendering, from plain rows (no Airflow)."""
import json
import re
from datetime import timezone

from streamslice.commit.checkpoint import Checkpoint
from streamslice.monitoring.alerts import SentAlert
from streamslice.ui import axis, pages, svg
from streamslice.ui.model import (
    AssetExtra,
    Cell,
    Overview,
    Run,
    checkpoint_rows,
    complete_until,
    coverage,
    explain_failures,
    headline,
    lag_chart,
)
from tests.support.checks import present
from tests.support.records import run_metrics

H = 3_600_000
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z


def run(run_id, state, start=None, records=None, late=0, at=0, **metrics):
    m = None if records is None else run_metrics(records=records, late_records=late, **metrics)
    return Run(run_id, state, start, start + H if start is not None else None, at, at, m)


def hours(n):
    return [(T0 + i * H, T0 + (i + 1) * H) for i in range(n)]


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
    assert [(present(c.run).run_id, c.status) for c in cells] == \
        [("a", "failed"), ("b", "published")]


def test_lag_names_the_top_partitions_and_bands_the_rest_per_column():
    lag = [{f"t:{p}": p * (i + 1) for p in range(12)} for i in range(3)]
    runs = [run(str(i), "success", T0 + i * H, 1, lag_records=1, lag_by_split=lag[i])
            for i in (0, 2)]  # interval 1 has no run: no figure there
    chart = present(lag_chart(coverage(runs, hours(3)), top=3))
    assert chart.unit == "records"
    assert list(chart.lines) == ["t:11", "t:10", "t:9"]
    assert chart.lines["t:11"] == [11.0, None, 33.0]
    assert chart.others_count == 9
    assert chart.low == [0.0, None, 0.0] and chart.high == [8.0, None, 24.0]
    assert chart.total == [66.0, None, 198.0]  # records behind add up
    assert chart.latest_total == 198.0


def test_the_named_lines_are_listed_furthest_behind_now_first():
    runs = [run("a", "success", T0, 1, lag_records=1, lag_by_split={"t:0": 100, "t:1": 50}),
            run("b", "success", T0 + H, 1, lag_records=1, lag_by_split={"t:0": 1, "t:1": 40})]
    assert list(present(lag_chart(coverage(runs, hours(2)))).lines) == ["t:1", "t:0"]


def test_time_behind_is_folded_as_the_worst_not_summed():
    runs = [run("k", "success", T0, 1, millis_behind_latest=900,
                lag_by_split={"s:shardId-0": 900, "s:shardId-1": 40})]
    chart = present(lag_chart(coverage(runs, hours(1)), top=1))
    assert chart.unit == "ms" and chart.total == [900.0] and chart.high == [40.0]
    legend = svg.lag_legend(chart, "shards")
    assert "0.9 s behind" in legend and "1 other shards" in legend
    assert lag_chart(coverage([run("n", "success", T0, 1)], hours(1))) is None


def test_a_line_breaks_where_a_column_has_no_figure():
    runs = [run(str(i), "success", T0 + i * H, 1, lag_records=1, lag_by_split={"t:0": i + 1})
            for i in (0, 1, 3)]
    cells = coverage(runs, hours(4))
    out = svg.lines(lag_chart(cells), svg.Columns(4), [c.start for c in cells], timezone.utc)
    assert out.count("<polyline") == 2  # [0, 1] and [3]
    assert out.count("<circle") == 3


def test_time_axis_labels_round_hours_in_the_pipelines_zone_and_names_each_day():
    berlin = axis.zone("Europe/Berlin")
    starts: list[int | None] = [T0 + i * H for i in range(48)]  # 2024-05-01 00:00Z = 02:00 CEST
    ticks = axis.time_ticks(starts, berlin, 840)
    assert ticks[0] == (4, "06:00", "May 1")  # the first round 6-hour mark in Berlin
    assert [t[1] for t in ticks[:4]] == ["06:00", "12:00", "18:00", "00:00"]
    assert ticks[3][2] == "May 2" and ticks[1][2] == ""
    assert axis.zone_label(berlin, T0) == "CEST" and axis.zone_label(axis.zone(None)) == "UTC"
    assert axis.when(T0, berlin) == "2024-05-01 02:00"
    assert axis.span(T0, T0 + H, berlin) == "2024-05-01 02:00 → 03:00"
    assert axis.zone("Not/AZone") is timezone.utc
    # A 10-second schedule: seconds are shown wherever a moment is not on a whole minute.
    assert axis.span(T0 + 20_000, T0 + 30_000, berlin) == "2024-05-01 02:00:20 → 02:00:30"
    assert axis.short(T0 + 20_000, timezone.utc) == "May 1 00:00:20"


def test_value_ticks_are_round_and_short():
    assert [axis.compact(v) for v in (0, 1250, 37_400, 2_500_000)] == ["0", "1,250", "37.4k",
                                                                       "2.5M"]
    assert [axis.duration(v) for v in (850, 4_500, 270_000)] == ["850 ms", "4.5 s", "4.5 min"]
    assert [axis.nice_top(v) for v in (0, 3, 7, 12, 2400)] == [1, 5, 10, 20, 2500]
    assert axis.nice_top(0, least=1000) == 1000 and axis.duration(0) == "0"


def test_the_headline_says_what_needs_doing_first():
    def say(runs, n=4, mode="interval", paused=False):
        return headline(coverage(runs, hours(n) if mode == "interval" else None), mode,
                        paused, lambda c: axis.short(c.start, timezone.utc))
    ok = [run(str(i), "success", T0 + i * H, 5) for i in range(4)]
    assert say(ok).level == "ok" and "All 4 intervals in view are published" in say(ok).text
    gaps = say([ok[0], run("f", "failed", T0 + 2 * H)])
    assert gaps.level == "bad"
    assert gaps.text.startswith("3 intervals without data: 2 missing (May 1 01:00, "
                                "May 1 03:00); 1 failed (May 1 02:00)")
    late = say([*ok[:3], run("l", "success", T0 + 3 * H, 5, late=2)])
    assert late.level == "warn" and "1 interval got late records (May 1 03:00)" in late.text
    assert say([], mode="incremental", paused=True).text == (
        "No runs yet. The DAG is paused: unpause it in Airflow to let runs start.")
    healed = say([run("a", "failed", at=T0), run("b", "success", records=3, at=T0 + H)],
                 mode="incremental")
    assert healed.level == "ok" and healed.text.startswith(
        "1 of 2 batches in view published; 1 failed earlier (May 1 00:00) and the batch after "
        "it read its records: nothing is missing.")
    broken = run("b", "failed", at=5)
    broken.reason = "task read failed: broker down. Check the broker."
    bad = say([run("a", "success", records=3, at=1), broken], mode="incremental")
    assert bad.level == "bad" and "task read failed: broker down" in bad.text


def test_data_is_complete_up_to_the_first_hole():
    cells = coverage([run("a", "success", T0, 1), run("b", "success", T0 + H, 0),
                      run("d", "success", T0 + 3 * H, 1)], hours(4))
    assert complete_until(cells) == T0 + 2 * H
    assert complete_until(cells[:2]) == T0 + 2 * H


def test_a_failed_run_gets_one_sentence_with_what_to_do():
    runs = [run("r1", "failed"), run("r2", "failed"), run("ok", "success", records=1)]
    runs[1].failed_tasks = ["commit"]
    explain_failures(runs, [SentAlert(0, "run_failed", run_id="r1", error_kind="source",
                                      message="task read failed: SourceError: no broker\n"
                                      "Traceback")])
    assert runs[0].reason == ("task read failed: SourceError: no broker. Check that the source "
                              "can be reached with the pipeline's connection (brokers or "
                              "stream, credentials, network), then re-run.")
    assert runs[1].reason == ("commit failed and recorded no error (it may have been killed "
                              "before it could): open its log, fix the cause, then re-run.")
    assert runs[2].reason is None


def test_the_reason_is_the_failed_tasks_own_error_and_the_tasks_it_kept_from_running():
    """A Kinesis endpoint down: efo_sweep failed, the other five never ran. The sweep's own
    alert is the reason (not a teardown's that came later), the rest are named as not run."""
    failed = run("r", "failed")
    failed.failed_tasks, failed.upstream_failed = ["efo_sweep"], ["efo_register", "plan"]
    explain_failures([failed], [
        SentAlert(0, "run_failed", run_id="r", task="efo_sweep", error_kind="source",
                  message="task efo_sweep failed: SourceError: Kinesis "
                          "DescribeStreamSummary(s) failed: Could not connect"),
        SentAlert(0, "run_failed", run_id="r", task="efo_deregister",
                  message="task efo_deregister failed: later"),
        SentAlert(0, "lag", run_id="r", message="not a failure")])
    assert failed.reason.startswith(
        "task efo_sweep failed: SourceError: Kinesis DescribeStreamSummary(s) failed: Could "
        "not connect. Check that the source can be reached")
    assert failed.reason.endswith(" Not run because of it: efo_register, plan.")


def test_logs_are_linked_only_for_tasks_that_ran():
    failed = run("r", "failed")
    failed.failed_tasks, failed.logged = ["efo_sweep", "killed"], ["efo_sweep"]
    failed.upstream_failed = ["plan"]
    html = pages._runs(pages.PipelineView(
        row=Overview("d", "kinesis", "incremental", "manual", False), cells=[],
        recent=[failed], checkpoint=None, plan_splits=[], range_start=None, range_end=None,
        output="-"), "/af")
    assert re.findall(r">(\w+) log</a>", html) == ["efo_sweep"]
    assert "/af/dags/d/runs/r/tasks/efo_sweep" in html


def test_checkpoint_next_to_where_the_last_plan_ended_and_its_lag():
    split = {"id": 0, "topic": "t", "partition": 0, "start": 3, "stop": 10,
             "high_watermark": 10}
    last = run("a", "success", records=7, lag_by_split={"t:0": 7}, lag_unit="records")
    rows = checkpoint_rows(Checkpoint({"t:0": 10, "t:1": 4}), [split], "kafka", last)
    assert [(r["split"], r["next"].short, r["planned_end"].short, r["lag_text"])
            for r in rows] == [("t:0", "10", "10", "7 records"), ("t:1", "4", "-", "-")]


def test_the_partitions_furthest_behind_come_first_then_partition_order():
    last = run("a", "success", records=1, lag_unit="records",
               lag_by_split={"t:2": 1, "t:10": 50, "t:9": 0, "t:1": 0})
    rows = checkpoint_rows(Checkpoint({k: 1 for k in ("t:1", "t:2", "t:9", "t:10")}), [],
                           "kafka", last)
    assert [r["split"] for r in rows] == ["t:10", "t:2", "t:1", "t:9"]


def test_kinesis_checkpoint_rows_show_short_sequence_numbers_and_time_behind():
    seq = "49651234567890123456789012345678901234567890123456789012"
    split = {"id": 0, "stream": "s", "shard_id": "shardId-1", "start": {"type": "TRIM_HORIZON"},
             "stop_before": 1_714_521_600_000}
    last = run("a", "success", records=1, lag_by_split={"s:shardId-1": 2500},
               millis_behind_latest=2500)
    (row,) = checkpoint_rows(Checkpoint({"s:shardId-1": {"after": seq}}), [split], "kinesis",
                             last)
    assert (row["next"].short, row["next"].full) == ("after 4965…12", f"after {seq}")
    assert row["planned_end"].short == "arrived before 2024-05-01T00:00:00.000Z"
    assert row["lag_text"] == "2.5 s behind"
    # On the page: the short form, the whole sequence number to copy on click.
    view = view_of(Overview("k", "kinesis", "incremental", "manual", False, ""), [], [last],
                   checkpoint=Checkpoint({"s:shardId-1": {"after": seq}}, batch=3,
                                             run_id="a"), plan_splits=[split])
    page = pages.pipeline(view, "/streamslice", "")
    assert f'<code class="pos" data-full="{seq}" title="after {seq}' in page  # bare to copy
    assert ">after 4965…12<" in page
    assert "Batch <b>#3</b>" in page


def view_of(row, cells, recent, **kw):
    return pages.PipelineView(**{"row": row, "cells": cells, "recent": recent,
                                 "checkpoint": None, "plan_splits": [], "range_start": T0,
                                 "range_end": T0 + H, "output": "o", **kw})


def test_names_and_messages_are_escaped_everywhere():
    hostile = '<script>alert(1)</script>"'
    row = Overview(hostile, "kafka", "interval", "@hourly", False, hostile,
                   last=Run(hostile, "success", T0, T0 + H, 0, 0,
                            run_metrics(records=1, partition=hostile)))
    html = pages.overview([row], "/streamslice", "")
    cell = Cell(T0, T0 + H, "published", row.last)
    page = pages.pipeline(view_of(row, [cell], [row.last], output=hostile,
                                  alerts=[SentAlert(0, "lag", hostile)]),
                          "/streamslice", "")
    for text in (html, page):
        assert "<script>alert" not in text and "&lt;script&gt;" in text
    # The script's data cannot end its <script> element early.
    blob = present(re.search(r'id="page-data">(.*?)</script>', page)).group(1)
    assert json.loads(blob)["dag_id"] == hostile


def test_the_strip_marks_each_cell_with_its_state_start_and_column():
    cells = [Cell(0, H, "published"), Cell(H, 2 * H, "missing")]
    out = svg.strip(cells, svg.Columns(2), timezone.utc)
    assert out.count('class="cell ') == 2
    assert 'data-i="1" data-status="missing" data-start="3600000"' in out
    assert svg.strip([], svg.Columns(0), timezone.utc).startswith("<p")


def test_what_a_user_may_do_is_in_the_page_and_a_reader_is_told_why_not():
    cells = coverage([run("f", "failed", T0)], hours(1))
    row = Overview("p", "kafka", "interval", "@hourly", True, "")
    reader = pages.pipeline(view_of(row, cells, [cells[0].run]), "/streamslice", "/af")
    data = json.loads(present(re.search(r'id="page-data">(.*?)</script>', reader)).group(1))
    assert data["can_run"] is False and data["can_clear"] is False
    assert data["api"] == "/af/api/v2" and data["paused"] is True
    assert data["cols"][0] == {"s": "failed", "t": T0, "e": T0 + H, "run": "f", "n": None}
    assert data["tz"] == "UTC"
    def told(page):
        return "may read this pipeline but not run it" in present(re.search(
            r'<p id="headline".*?</p>', page)).group(0)
    assert told(reader)
    runner = pages.pipeline(view_of(row, cells, [cells[0].run], can_run=True, can_clear=True),
                            "/streamslice", "/af")
    assert not told(runner)


def test_a_table_run_names_its_snapshot_or_version_and_a_file_run_its_uri():
    def page(published):
        r = run("r", "success", T0, 3, partition="interval=1", published=published)
        row = Overview("p", "kafka", "interval", "@hourly", False, "", last=r)
        return pages.pipeline(view_of(row, [], [r], alerts=[]), "/streamslice", "")
    iceberg = page({"uri": "iceberg:db.t/interval=1", "snapshot_id": 8123})
    assert 'data-snapshot="8123"' in iceberg and "VERSION AS OF 8123" in iceberg
    assert 'data-version="4"' in page({"uri": "/lake/t#interval=1", "version": 4})


def test_only_this_pipelines_idle_per_run_consumers_offer_deregister():
    from streamslice.config import parse_pipeline
    from streamslice.kinesis.consumers import run_consumer_name
    from streamslice.kinesis.lifecycle import leak_action

    def source(registration):
        return parse_pipeline(f"""
mode: incremental
kinesis: {{stream: s, region: us-east-1, reader: efo,
           efo: {{consumer_name: app, registration: {registration}}}}}
output: {{path: /lake}}
""", file="p.yaml", default_name="p").source
    mine = run_consumer_name("app", "manual__1")
    act = present(leak_action(source("per_run"), "s", mine, "ACTIVE", set()))
    assert (act.name, act.label, act.disabled) == ("deregister", "Deregister", None)
    assert json.loads(act.target) == {"stream": "s", "consumer": mine}
    in_use = present(leak_action(source("per_run"), "s", mine, "ACTIVE", {mine}))
    assert "uses it" in present(in_use.disabled)
    deleting = present(leak_action(source("per_run"), "s", mine, "DELETING", set()))
    assert "deleting" in present(deleting.disabled)
    for other in ("someone-else", "app", "app-2", "apple-0123456789"):
        assert leak_action(source("per_run"), "s", other, "ACTIVE", set()) is None
    assert leak_action(source("keep"), "s", mine, "ACTIVE", set()) is None  # kept on purpose


def test_a_source_sections_buttons_are_disabled_with_why_for_a_reader():
    from streamslice.sources import PageAction, PageSection
    part = PageSection("Things", ("Name",), (("a",), ("b",)),
                       actions=(PageAction("drop", '{"x": "<a>"}', "Drop", "Drops a."), None))
    runner = pages.section(part, "/ss/pipelines/p/actions", may_run=True)
    assert runner.count("<button") == 1 and 'data-action="/ss/pipelines/p/actions/drop"' in runner
    assert 'data-target="{&quot;x&quot;: &quot;&lt;a&gt;&quot;}"' in runner
    assert "disabled" not in runner
    reader = pages.section(part, "/ss/pipelines/p/actions", may_run=False)
    assert 'disabled title="Your Airflow role may read this DAG but not run it"' in reader
    broken = pages.section(PageSection("Things", error="Could not. Check it."), "", True)
    assert '<p class="error">Could not. Check it.</p>' in broken


def test_a_stalled_schedule_is_said_first():
    row = Overview("p", "kafka", "interval", "@hourly", False, "", next_due=T0)
    def asked():
        raise AssertionError("no need to ask for runs in flight")
    assert row.overdue(T0 + 9 * 60_000, asked) is None  # not yet 10 minutes late
    assert row.overdue(T0 + 11 * 60_000, lambda: False) == T0
    assert row.overdue(T0 + 11 * 60_000, lambda: True) is None  # a long run is not a stall
    row.paused = True
    assert row.overdue(T0 + 11 * 60_000, asked) is None
    ok = coverage([run("a", "success", T0, 5)], hours(1))
    stalled = headline(ok, "interval", False, overdue="May 1 01:00")
    assert stalled.level == "bad" and stalled.text == (
        "Airflow was due to start the next run at May 1 01:00 and has not: is its scheduler "
        "running (and not out of pool slots)?")
    gap = headline(coverage([], hours(1)), "interval", False, lambda c: "x",
                   overdue="May 1 01:00")
    assert gap.text.startswith("Airflow was due") and "1 interval without data" in gap.text


def test_a_stopped_scheduler_is_said_first_instead_of_asking_whether_it_runs():
    """Airflow's own health record says the scheduler stopped: the page says so, and what
    still works (stale data marked, the freshness command), instead of the overdue question."""
    cells = coverage([run("a", "success", T0, 1)], hours(1))
    told = headline(cells, "interval", False, overdue="May 1 01:00",
                    stale="3 d old, past its freshness limit of 2 h", scheduler="Nov 26 10:32:05")
    assert told.level == "bad" and told.text == (
        "Airflow's scheduler is not running (last heard from Nov 26 10:32:05): no run starts, "
        "and the streamslice_freshness watchdog does not check, until it is back. Stale data "
        "is still marked here, and the streamslice freshness command, run from cron, still "
        "alerts. The "
        "newest complete data is 3 d old, past its freshness limit of 2 h.")
    html = pages.overview([Overview("orders", "kafka", "interval", "@hourly", False)],
                          "/streamslice", "", scheduler_stopped=T0 + 5_000)
    assert '<p id="scheduler" class="headline h-bad">Airflow&#x27;s scheduler is not running ' \
        "(last heard from May 1 00:00:05)" in html
    assert 'id="scheduler"' not in pages.overview([], "/streamslice", "")


def test_the_overview_says_which_pipeline_files_do_not_validate():
    """A file that does not validate is a DAG tagged config-error (its only task fails with
    the message); the overview shows it as such, not as a pipeline that never ran."""
    good = Overview("orders", "kafka", "interval", "@hourly", False)
    broken = Overview("trips", "-", "-", "manual", False, config_error=True)
    html = pages.overview([good, broken], "/streamslice", "")
    rows = {m.group(1): m.group(0) for m in re.finditer(
        r'<tr data-pipeline="(\w+)">.*?</tr>', html, re.S)}
    assert "invalid pipeline file: open the DAG for the error" in rows["trips"]
    assert "never run" not in rows["trips"] and "never run" in rows["orders"]
    assert "invalid pipeline file" not in rows["orders"]


def test_schedules_are_said_in_words():
    from streamslice.ui.model import schedule_words
    assert schedule_words("0 * * * *", "Every hour") == "Every hour"  # Airflow's own text
    assert schedule_words("0:00:10") == "Every 10 seconds"
    assert schedule_words("1:00:00") == "Every hour"
    assert schedule_words("1 day, 0:00:00") == "Every day"
    assert schedule_words("2 days, 1:30:00") == "Every 2 days 1 hour 30 minutes"
    assert schedule_words("0 3 * * 1", "") == "0 3 * * 1"  # no description: as Airflow says it
    row = Overview("d", "kafka", "interval", "0 * * * *", False, schedule_text="Every hour")
    assert '<span class="schedule" title="0 * * * *">Every hour</span>' in \
        pages.overview([row], "/s", "/af")


def test_the_overview_says_what_needs_a_person():
    from streamslice.ui.model import needs_attention
    now = T0 + 10 * H
    row = Overview("d", "kafka", "interval", "0 * * * *", paused=True, next_due=now - H)
    cells = coverage([run("a", "success", T0, 1), run("b", "failed", T0 + H),
                      run("c", "failed", T0 + 3 * H)], hours(4))
    assert needs_attention(row, cells, 2, now) == [
        "2 failed runs", "1 interval missing", "paused with runs due", "2 alerts sent"]
    row = Overview("i", "kafka", "incremental", "manual", paused=False)
    healed = coverage([run("a", "failed", at=1), run("b", "success", records=1, at=2)], None)
    assert needs_attention(row, healed, 0, now) == []  # the next batch read its records
    assert needs_attention(row, healed[:1], 0, now) == ["1 failed run"]
    row.overdue_since = now - H
    assert needs_attention(row, [], 0, now) == ["overdue"]
    marked = pages.overview([Overview("x", "kafka", "interval", "manual", False,
                                      attention=["1 failed run"])], "/s", "/af")
    assert '<tr data-pipeline="x" class=attention>' in marked
    assert '<span class="badge s-failed">1 failed run</span>' in marked


def test_runs_of_interval_pipelines_are_listed_by_interval_newest_first():
    late_backfill = run("bf", "success", T0, 1, at=T0 + 9 * H)
    recent = [run("a", "success", T0 + H, 1, at=T0 + 2 * H),
              run("b", "success", T0 + 2 * H, 1, at=T0 + 3 * H), late_backfill]
    html = pages._runs(pages.PipelineView(
        row=Overview("d", "kafka", "interval", "manual", False), cells=[], recent=recent,
        checkpoint=None, plan_splits=[], range_start=None, range_end=None, output="-"), "")
    assert re.findall(r'data-run="(\w+)"', html) == ["b", "a", "bf"]


def test_a_folder_on_the_server_is_named_only_for_who_may_change_it():
    assert pages._where("file:///srv/lake/pipeline=o", True) == "file:///srv/lake/pipeline=o"
    assert pages._where("file:///srv/lake/pipeline=o/", False) == \
        "…/pipeline=o (on the Airflow server)"
    assert pages._where("s3://lake/pipeline=o", False) == "s3://lake/pipeline=o"  # read there


def test_tile_legend_and_positions_give_the_lag_of_the_run_planned_last():
    """Backfills of old intervals with nothing behind, planned after the newest interval's
    run that was 2,045 behind: all three say 0, measured when the backfill was planned."""
    newest = run("new", "success", T0 + 2 * H, 5, at=T0 + 3 * H, lag_records=2045,
                 lag_by_split={"t:0": 2045})
    backfill = run("bf", "success", T0, 0, at=T0 + 5 * H, lag_records=0,
                   lag_by_split={"t:0": 0})
    cells = coverage([newest, backfill], hours(3))
    chart = present(lag_chart(cells))
    assert chart.latest == 0 and chart.measured_at == T0 + 5 * H
    assert chart.latest_total == 0
    assert ">0 records<" in svg.lag_legend(chart, "partitions")
    page = pages.pipeline(view_of(Overview("d", "kafka", "interval", "manual", False), cells,
                                  [newest, backfill],
                                  checkpoint=Checkpoint({"t:0": 10}, run_id="new",
                                                         interval_end=T0 + 3 * H)), "/s", "")
    table = page.split('id="checkpoint"', 1)[1].split("</table>", 1)[0]
    assert '<td class="n">0 records</td>' in table and "2,045" not in table
    assert "planned 2024-05-01 05:00:00" in page


def test_stale_data_is_said_in_the_headline_after_a_stall():
    cells = coverage([run("a", "success", T0, 1)], hours(1))
    told = headline(cells, "interval", False, stale="3 d old, past its freshness limit of 2 h")
    assert told.level == "bad" and told.text == (
        "The newest complete data is 3 d old, past its freshness limit of 2 h.")
    both = headline(cells, "interval", False, overdue="May 1 01:00", stale="3 d old, past "
                    "its freshness limit of 2 h")
    assert both.text.startswith("Airflow was due to start the next run at May 1 01:00")
    assert "has not: is its scheduler running (and not out of pool slots)? The newest " \
        "complete data is 3 d old" in both.text


def test_the_assets_extra_is_read_as_a_record_and_written_as_before():
    """The output asset's definition extra (``checkpoint_store.output_asset``; read by the page)."""
    from streamslice.airflow.checkpoint_store import output_asset
    from streamslice.config import parse_pipeline
    extra = {"efo": True, "pipeline_file": "/p/orders.yaml", "source": "kinesis",
             "freshness_ms": 7_200_000}
    record = AssetExtra.read(extra)
    assert record == AssetExtra("/p/orders.yaml", "kinesis", 7_200_000, {"efo": True})
    assert list(record.to_dict().items()) == list(extra.items())
    assert AssetExtra.read(None) == AssetExtra()
    text = ("mode: interval\nschedule: '@hourly'\nstart_date: '2024-05-01T00:00:00Z'\n"
            "kafka: {bootstrap_servers: 'a:1', topics: [t]}\noutput: {path: /lake}\n")
    plain = parse_pipeline(text, file="/p/o.yaml", default_name="o")
    fresh = parse_pipeline(text + "alerts: {freshness: 2h}\n", file="/p/o.yaml",
                           default_name="o")
    assert output_asset(plain).extra == {"pipeline_file": "/p/o.yaml", "source": "kafka"}
    assert output_asset(fresh).extra == {"pipeline_file": "/p/o.yaml", "source": "kafka",
                                         "freshness_ms": 7_200_000}
