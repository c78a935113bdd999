"""The Streamslice page in the Airflow UI, end to end: pipelines run through dag.test() with
real Spark and the local broker, then the real Airflow api-server with the plugin, opened in
headless Chromium with real logins: ``admin`` may run every DAG, ``ops`` may read two of them
and run none. One api-server and one set of runs serve every test here; the tests that act
(backfill, re-run) come last. Screenshots of each state are kept in test-artifacts/."""
import re
import time
from datetime import datetime
from urllib.parse import quote

import pytest

from devtools.airflow_ui import ApiServer
from devtools.services import create_topic, free_port
from devtools.taxi import Trip, produce
from streamslice.config.pipeline import PipelineConfig
from tests.conftest import PIPELINES_DIR, SESSION_DIR
from tests.support.browser import ARTIFACTS
from tests.support.kinesis import create_stream
from tests.support.pipelines import (
    kafka_pipeline,
    kinesis_pipeline,
    run_dag,
    run_interval,
    unique,
    utc,
)
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration
HOUR, MIN = 3_600_000, 60_000
T0 = int(utc(2024, 5, 1).timestamp() * 1000)
SECRET = "s3cr3t-sasl-pw-4711"
AWS_SECRET = "aws-s3cr3t-0815"
SEQ = "49651234567890123456789012345678901234567890123456789012"
WIDE = 300  # partitions of the wide pipeline
RANGE = "?start=2024-05-01T00:00&end=2024-05-01T06:00"


class UiServer(ApiServer):
    """The api-server, and two pipelines the tests read although it does not serve them."""

    down: PipelineConfig  # its endpoint down: its runs fail
    stale: PipelineConfig  # past its freshness limit


@pytest.fixture(scope="module")
def scene(broker, kinesis, spark, airflow_db, tmp_path_factory):
    """``cover`` (hourly, by event time): 00:00 published, 01:00 with a late record, 02:00
    never run, 03:00 failed, 04:00 published, 05:00 empty. ``wide``: an incremental pipeline
    over 300 partitions with 24 batches (``wide_history``). ``kin``: Kinesis batches. ``fresh``:
    a Kinesis EFO pipeline never run, whose stream cannot be reached. ``efo``: a Kinesis EFO
    pipeline on the local Kinesis server whose stream has a leaked per-run consumer, the
    consumer of a queued run and another application's. ``stalled`` (hourly, with catchup):
    the scheduler made its first run, which stays queued, then stopped. ``ops`` may read
    ``cover``, ``fresh`` and ``efo`` only."""
    out = tmp_path_factory.mktemp("ui")
    topic = unique("ui")
    create_topic(broker.bootstrap, topic, 1)
    # Event minutes in produce order; the 00:10 record arrives at 01:30, after 01:00 + 5m.
    minutes = [5, 20, 50, 70, 90, 10, 100, 130, 150, 190, 250, 260]
    produce(broker.bootstrap, topic, [Trip(b"k", b"{}", T0 + m * MIN) for m in minutes])
    cover = kafka_pipeline(broker.bootstrap, topic, name=unique("ui-cover"),
                           description=f"Hourly slices of the {topic} topic, by event time.",
                           mode="interval", schedule="@hourly",
                           start_date="2024-04-30T00:00:00Z", allowed_lateness="5m",
                           retries=0, kafka={"properties": {"sasl.password": SECRET}},
                           output=out)
    wide = kafka_pipeline(broker.bootstrap, unique("ui-wide"), name=unique("ui-wide"),
                          output=out)
    kin = kinesis_pipeline("trips", name=unique("ui-kin"), output=out, kinesis={
        "region": "us-east-1", "endpoint_url": f"http://127.0.0.1:{free_port()}"})
    fresh = kinesis_pipeline(
        "nowhere", name=unique("ui-fresh"), output=out,
        description="A Kinesis pipeline that has not run yet.", kinesis={
            "region": "us-east-1", "endpoint_url": f"http://127.0.0.1:{free_port()}",
            "credentials": {"access_key_id": "test", "secret_access_key": AWS_SECRET},
            "reader": "efo", "efo": {"consumer_name": "ss-ui"}})
    stalled = kafka_pipeline(broker.bootstrap, topic, name=unique("ui-stalled"),
                             mode="interval", schedule="@hourly", catchup=True,
                             start_date="2024-05-01T00:00:00Z", output=out)
    # Hourly, data complete to 02:00 on May 1 2024, a freshness limit of 2 h: stale.
    stale = kafka_pipeline(broker.bootstrap, topic, name=unique("ui-stale"), mode="interval",
                           schedule="@hourly", start_date="2024-05-01T00:00:00Z", output=out,
                           catchup=True,  # its next run is due in 2024, whenever this runs
                           alerts={"freshness": "2h", "notifiers": [{"log": {}}]})
    client = kinesis.client()
    stream = unique("ui-efo")
    arn = create_stream(client, stream, 1)
    efo = kinesis_pipeline(stream, name=unique("ui-efo"), output=out, kinesis={
        "region": "us-east-1", "endpoint_url": kinesis.endpoint,
        "credentials": {"access_key_id": "test", "secret_access_key": AWS_SECRET},
        "reader": "efo", "efo": {"consumer_name": "ss-ui", "registration": "per_run"}})
    for hour in (0, 1, 4, 5):
        run_interval(cover, utc(2024, 5, 1, hour))
        if hour == 0:  # every dag.test() syncs the folder's DAGs: ``stalled``'s is there now
            stalled_history(stalled.name)
    # A manual run of 06:00-07:00, dated 07:00 as Airflow dates manual runs: it holds the
    # logical date a backfill of 07:00-08:00 would need.
    run_dag(cover, logical_date=utc(2024, 5, 1, 7))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STREAMSLICE_INJECT_FAULT", "before_publish")
        run_interval(cover, utc(2024, 5, 1, 3), expect="failed")
    wide_history(wide.name)
    kinesis_history(kin.name)
    # The Kinesis endpoint down: the EFO sweep fails, the five tasks after it never run.
    down = kinesis_pipeline("taxi-trips", name=unique("ui-down"), output=out, retries=0,
                            kinesis={"region": "us-east-1",
                                     "endpoint_url": f"http://127.0.0.1:{free_port()}",
                                     "credentials": {"access_key_id": "test",
                                                     "secret_access_key": AWS_SECRET},
                                     "reader": "efo",
                                     "efo": {"consumer_name": "ss-ui",
                                             "registration": "per_run"}})
    run_dag(down, expect="failed")
    stale_history(stale.name)
    from streamslice.airflow.freshness import build_watchdog
    for _ in range(2):  # the watchdog's runs: the second finds it told already
        build_watchdog([stale]).test()
    from devtools.airflow_history import History
    history = History(efo.name)  # a run queued now: its consumer is in use
    queued = history.run(start=utc(2024, 5, 4), end=utc(2024, 5, 4), state="queued",
                         run_type="manual")
    history.close()
    from streamslice.kinesis.consumers import run_consumer_name
    names = {"leaked": run_consumer_name("ss-ui", "manual__crashed"),
             "in use": run_consumer_name("ss-ui", queued), "other": "someone-else"}
    for name in names.values():
        client.register_stream_consumer(StreamARN=arn, ConsumerName=name)
    server = UiServer(SESSION_DIR / "ui-api", PIPELINES_DIR.parent,
                       [cover.name, fresh.name, efo.name]).start()
    server.down, server.stale = down, stale
    yield server, cover, wide, fresh, kin, (efo, client, arn, names), stalled
    server.stop()


def stalled_history(dag_id):
    """The first scheduled run of ``dag_id``, left queued: Airflow's next run is due after
    it, on a date fixed by the run and the start date alone (without catchup, Airflow dates
    the next run from the clock of its last parse: the top of the current hour)."""
    from devtools.airflow_history import History
    history = History(dag_id)
    history.run(start=utc(2024, 5, 1), end=utc(2024, 5, 1, 1), state="queued")
    history.close()


def stale_history(dag_id):
    """Two published hours, 00:00 and 01:00 on May 1 2024, and the checkpoint after them."""
    from devtools.airflow_history import History, commit_extra
    history = History(dag_id)
    for hour in (0, 1):
        run_id = history.run(start=utc(2024, 5, 1, hour), end=utc(2024, 5, 1, hour + 1),
                             extra=commit_extra(5, {"t:0": 0}, partition=f"h={hour}"))
    history.checkpoint({"positions": {}, "batch": 0, "run_id": run_id,
                        "interval_end": T0 + 2 * HOUR, "committed_at": T0 + 2 * HOUR + MIN})
    history.close()


def wide_history(dag_id):
    """24 hourly batches over 300 partitions, as their commits would have recorded them (see
    devtools.airflow_history: 300 Spark tasks a run take ~45 s here): most partitions a few
    records behind, partitions 0-7 far behind, one failed batch, the checkpoint of the last."""
    from datetime import timedelta

    from devtools.airflow_history import History, commit_extra
    history = History(dag_id)
    for i in range(24):
        at = utc(2024, 5, 2) + timedelta(hours=i)
        lag = {f"wide:{p}": (p * 7 + i * 3) % 40 + (400 + 60 * p * (i % 5) if p < 8 else 0)
               for p in range(WIDE)}
        positions = {f"wide:{p}": 1000 * (i + 1) + p for p in range(WIDE)}
        failed = i == 17
        extra = None if failed else commit_extra(
            sum(lag.values()), lag, partition=f"batch={i:08d}", positions=positions, batch=i)
        run_id = history.run(start=at, end=at, state="failed" if failed else "success",
                             extra=extra, run_type="manual", ran_at=at)
    history.checkpoint({"positions": positions, "batch": 23, "run_id": run_id,
                        "committed_at": int((at.timestamp() + 60) * 1000)})
    history.close()


def kinesis_history(dag_id):
    """Six batches of a 4-shard stream: time behind the tip per shard, and the checkpoint's
    ``after <sequence number>`` per shard (see ``wide_history``)."""
    from datetime import timedelta

    from devtools.airflow_history import History, commit_extra
    history = History(dag_id)
    for i in range(6):
        at = utc(2024, 5, 3) + timedelta(minutes=10 * i)
        behind = {f"trips:shardId-00000000000{s}": 800 * (s + 1) + 400 * i for s in range(4)}
        positions = {k: {"after": SEQ[:-2] + f"{i}{n}"} for n, k in enumerate(behind)}
        run_id = history.run(start=at, end=at, run_type="manual", ran_at=at, extra=commit_extra(
            100, behind, lag_unit="ms", partition=f"batch={i:08d}", positions=positions,
            batch=i))
    history.checkpoint({"positions": positions, "batch": 5, "run_id": run_id,
                        "committed_at": int((at.timestamp() + 60) * 1000)})
    history.close()


def open_page(browser, server, user, path):
    """A laptop-sized page signed in as ``user`` (Airflow's own session cookie)."""
    context = browser.new_context(viewport={"width": 1366, "height": 800})
    context.add_cookies([{"name": "_token", "value": server.token(user), "url": server.url}])
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server.url}{path}")
    return page, errors


def shot(page, name, full_page=True):
    """A screenshot in test-artifacts/ (docs/images/ holds some), the output's folder on this
    machine masked."""
    page.screenshot(path=str(ARTIFACTS / f"streamslice-{name}.png"), full_page=full_page,
                    mask=[page.locator("code.output")])


def statuses(page):
    cells = page.locator("#coverage .cell")
    return [cells.nth(i).get_attribute("data-status") for i in range(cells.count())]


def test_unauthenticated_requests_are_refused(scene):
    server, cover, *_ = scene
    for path in ("/streamslice/", f"/streamslice/pipelines/{cover.name}",
                 f"/streamslice/pipelines/{cover.name}/sections"):
        status, body = server.get(path)
        assert status == 401, (path, status, body[:200])
        assert cover.name not in body


def test_a_user_sees_only_the_pipelines_airflow_lets_them_read(scene):
    server, cover, wide, fresh, *_ = scene
    admin, ops = server.token("admin"), server.token("ops")
    status, page = server.get("/streamslice/", admin)
    assert status == 200 and all(p.name in page for p in (cover, wide, fresh))
    status, page = server.get("/streamslice/", ops)
    assert status == 200 and cover.name in page and wide.name not in page
    # Airflow's own answer to a DAG the user may not read: 403, as on its own routes.
    for path in ("", "/sections"):
        assert server.get(f"/streamslice/pipelines/{wide.name}{path}", ops)[0] == 403
        assert server.get(f"/streamslice/pipelines/{cover.name}{path}", ops)[0] == 200


def test_nothing_secret_is_rendered(scene):
    server, cover, _, fresh, _, (efo, *_), _ = scene
    token = server.token("admin")
    for path in ("/streamslice/", f"/streamslice/pipelines/{cover.name}",
                 f"/streamslice/pipelines/{fresh.name}",
                 f"/streamslice/pipelines/{fresh.name}/sections",
                 f"/streamslice/pipelines/{efo.name}/sections"):
        status, page = server.get(path, token)
        assert status == 200 and SECRET not in page and AWS_SECRET not in page


def test_server_paths_are_shown_only_to_who_may_change_the_pipeline(scene):
    """``cover`` writes to a folder on the Airflow server: ``ops`` may read it, not change
    it, and sees the folder's name only; ``admin`` sees where it is."""
    server, cover, *_ = scene
    folder = cover.output.dataset(cover.name).removeprefix("file://")
    for user, path, shown in (
            ("ops", "/streamslice/", False),
            ("ops", f"/streamslice/pipelines/{cover.name}{RANGE}", False),
            ("admin", f"/streamslice/pipelines/{cover.name}{RANGE}", True)):
        status, page = server.get(path, server.token(user))
        assert status == 200 and (folder in page) is shown, (user, path)
    status, page = server.get(f"/streamslice/pipelines/{cover.name}", server.token("ops"))
    assert f"…/pipeline={cover.name} (on the Airflow server)" in page


def test_gaps_the_late_interval_and_the_failure_read_at_a_glance(scene, browser):
    server, cover, *_ = scene
    page, errors = open_page(browser, server, "admin",
                             f"/streamslice/pipelines/{cover.name}{RANGE}")
    assert statuses(page) == ["published", "late", "missing", "failed", "published", "empty"]
    cells = page.locator("#coverage .cell")
    assert [int(cells.nth(i).get_attribute("data-start")) for i in range(6)] == \
        [T0 + h * HOUR for h in range(6)]
    assert page.locator("#headline").inner_text().startswith(
        "2 intervals without data: 1 missing (May 1 02:00); 1 failed (May 1 03:00).")
    assert "h-bad" in page.locator("#headline").get_attribute("class")
    # Time axis in the pipeline's zone, and the value axis says what it counts.
    assert "times in UTC" in page.locator(".facts").inner_text()
    assert page.locator("svg.strip text.tick").first.text_content() == "00:00"
    bars = page.locator("rect.bar")
    values = sorted(bars.nth(i).get_attribute("data-value") for i in range(bars.count()))
    assert values == ["", "0", "2", "3", "4"], values  # 3, 4 (one late), 2, 0, the failure
    assert "records behind the high watermark" in page.locator("h3", has_text="Lag").inner_text()
    # Hover values: the column under the mouse, straight down through the charts.
    box = page.locator("svg.bars").bounding_box()
    pitch = float(page.locator("svg.bars").get_attribute("data-pitch"))
    scale = box["width"] / float(page.locator("svg.bars").get_attribute("viewBox").split()[2])
    page.mouse.move(box["x"] + (56 + pitch * 1.5) * scale, box["y"] + 40)
    tip = page.locator("#tip")
    assert tip.is_visible()
    assert re.match(r"2024-05-01 01:00 → 02:00\s*late · 4 records · 1 late", tip.inner_text())
    assert "records" in tip.locator("table").inner_text()  # the lag, with its unit
    shot(page, "gaps")
    page.mouse.move(0, 0)
    # The failed interval: one sentence, what failed and what to do.
    cells.nth(3).click()
    detail = page.locator("#selection .detail").inner_text()
    assert "task commit failed: InjectedFault" in detail and "re-run" in detail
    assert page.locator("#runs tr", has_text="InjectedFault").count() == 1
    shot(page, "failed-run")
    cells.nth(1).click()
    assert "late · 4 records · 1 late" in page.locator("#selection .detail").inner_text()
    shot(page, "late-data", full_page=False)
    # Interval pipelines show the interval they committed last, not a batch counter.
    positions = page.locator("section", has_text="Positions").inner_text()
    assert "Last interval committed: 2024-05-01 06:00 → 07:00" in positions  # the manual run
    assert "Batch" not in positions
    assert errors == []


def test_a_failed_setup_task_shows_its_own_error_and_the_tasks_it_kept_from_running(
        scene, browser):
    """The Kinesis endpoint is down: efo_sweep failed with the cause it recorded; the other
    tasks were only upstream_failed, have no log and get no link; its run_failed alert is
    in the Alerts section."""
    server = scene[0]
    down = server.down
    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{down.name}")
    assert statuses(page) == ["failed"]
    row = page.locator("#runs tr[data-run]")
    why = row.locator(".why").inner_text()
    assert why.startswith("task efo_sweep failed: SourceError: Kinesis ")
    assert "Check that the source can be reached" in why
    assert why.endswith("Not run because of it: commit, efo_deregister, efo_register, "
                        "plan, read.")
    links = row.locator("a", has_text=" log")
    assert links.all_inner_texts() == ["efo_sweep log"]
    run_id = row.get_attribute("data-run")
    assert links.first.get_attribute("href").endswith(
        f"/dags/{down.name}/runs/{quote(run_id, safe='')}/tasks/efo_sweep")
    assert page.locator("#headline").inner_text().startswith(
        "The latest batch failed. task efo_sweep failed: SourceError: Kinesis ")
    alerts = page.locator("section", has_text="Alerts").locator("tr", has_text="run_failed")
    assert alerts.count() == 1 and "task efo_sweep failed" in alerts.inner_text()
    assert "1" in page.locator(".tile", has_text="Alerts sent").locator("b").inner_text()
    shot(page, "failed-setup", full_page=False)
    assert errors == []


def test_the_overview_lists_who_needs_a_person_first(scene, browser):
    server, cover, wide, fresh, *_ = scene
    page, errors = open_page(browser, server, "admin", "/streamslice/")
    rows = page.locator("tr[data-pipeline]")
    marked = [rows.nth(i).get_attribute("class") == "attention" for i in range(rows.count())]
    assert True in marked and marked == sorted(marked, reverse=True)  # marked ones first
    down = page.locator(f'tr[data-pipeline="{server.down.name}"]')
    assert down.locator(".needs .badge").all_inner_texts() == ["1 failed run", "1 alert sent"]
    never_run = page.locator(f'tr[data-pipeline="{fresh.name}"]')
    assert never_run.get_attribute("class") is None
    # Schedules in words, Airflow's own expression on hover.
    schedule = page.locator(f'tr[data-pipeline="{cover.name}"] .schedule')
    assert schedule.inner_text() == "Every hour" and schedule.get_attribute("title") == \
        "0 * * * *"
    shot(page, "overview-attention", full_page=False)
    assert errors == []


def test_a_stale_pipeline_whose_scheduler_stopped_is_marked_and_alerted(scene, browser):
    """Its data is complete to 2024-05-01 02:00, far past its 2 h freshness limit, and no
    scheduler runs here: the page marks it from the checkpoint on each request, and the
    watchdog DAG (run twice) sent one stale alert, through its notifier and onto the page."""
    server = scene[0]
    stale = server.stale
    token = server.token("admin")
    assert server.patch(f"/api/v2/dags/{stale.name}", {"is_paused": False}, token)[0] == 200
    page, errors = open_page(browser, server, "admin", "/streamslice/")
    row = page.locator(f'tr[data-pipeline="{stale.name}"]')
    marks = row.locator(".needs .badge").all_inner_texts()
    assert marks[0] == "overdue" and re.fullmatch(r"stale: \d+ d(?: \d+ h)? old", marks[1]), marks
    # The default range runs up to now: the 48 hours before it were never run.
    assert re.fullmatch(r"4[78] intervals missing", marks[2]) and marks[3:] == ["1 alert sent"]
    age = row.locator("[data-age]")
    assert "bad" in age.get_attribute("class")
    assert "complete to 2024-05-01 02:00; freshness limit 2 h" in age.get_attribute("title")
    assert abs(int(age.get_attribute("data-age")) - (time.time() * 1000 - T0 - 2 * HOUR)) \
        < 10 * MIN
    shot(page, "stale-overview", full_page=False)
    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{stale.name}")
    tile = page.locator(".tile", has_text="Data age").inner_text()
    assert "STALE: limit 2 h" in tile
    said = page.locator("#headline").inner_text()
    assert said.startswith("Airflow was due to start")
    assert re.search(r"The newest complete data is \d+ d(?: \d+ h)? old, past its freshness limit "
                     r"of 2 h\.", said), said
    alerts = page.locator("section", has_text="Alerts").locator("tr", has_text="stale")
    assert alerts.count() == 1
    assert "complete to 2024-05-01T02:00:00.000Z; freshness limit 2 h" in alerts.inner_text()
    shot(page, "stale", full_page=False)
    assert errors == []


def test_the_strip_is_reached_and_used_by_keyboard(scene, browser):
    server, cover, *_ = scene
    page, errors = open_page(browser, server, "admin",
                             f"/streamslice/pipelines/{cover.name}{RANGE}")
    page.get_by_role("button", name="Show").focus()
    page.keyboard.press("Tab")  # from the range form to the strip's first interval
    focused = page.evaluate("document.activeElement.dataset.i")
    assert focused == "0"
    style = page.evaluate("getComputedStyle(document.activeElement).strokeWidth")
    assert style == "3px"  # a visible focus ring
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")  # 02:00, missing
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+Enter")  # to 03:00, failed
    assert page.get_by_role("button", name="Backfill 2 missing/failed").is_enabled()
    shot(page, "keyboard", full_page=False)
    assert errors == []


def test_three_hundred_partitions_fit_on_one_screen(scene, browser):
    server, _, wide, *_ = scene
    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{wide.name}")
    assert statuses(page) == ["published"] * 17 + ["failed"] + ["published"] * 6
    legend = page.locator(".lag-legend li:not(.head)")
    assert legend.count() == 8 + 2  # the top 8, the band of the other 292, the total
    assert f"{WIDE - 8} other partitions" in legend.nth(8).inner_text()
    # Partitions 0-7 are hundreds of records behind, the rest < 40: they are the named eight.
    named = [legend.nth(i).locator(".k").inner_text() for i in range(8)]
    assert sorted(named) == [f"wide:{p}" for p in range(8)]
    assert page.locator("#headline").inner_text().startswith(
        "23 of 24 batches in view published; 1 failed earlier (May 2 17:00)")
    assert page.locator("svg.lines g.lag").count() == 8
    assert page.locator("svg.lines polygon.others").count() >= 1
    # The positions table shows the 12 furthest behind until asked for all 300.
    rows = page.locator("#checkpoint tr:visible")
    assert rows.count() == 1 + 12
    page.get_by_role("button", name=f"Show all {WIDE} partitions").click()
    assert rows.count() == 1 + WIDE
    page.reload()
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "300-partitions", full_page=False)
    assert errors == []


def test_an_empty_pipeline_and_an_unreachable_stream_say_what_to_do(scene, browser):
    server, _, _, fresh, *_ = scene
    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{fresh.name}")
    assert page.locator("#headline").inner_text().startswith("No runs yet.")
    efo = page.locator("section", has_text="Enhanced fan-out consumers").locator(".error")
    efo.wait_for()  # asked of the source after the page is shown
    text = efo.inner_text()
    assert text.count(". ") <= 2 and "Check that the stream can be reached" in text, text
    assert "Traceback" not in text
    shot(page, "empty")
    assert errors == []


def test_kinesis_lag_is_time_behind_and_positions_copy_whole(scene, browser):
    server, *_, kin, _, _ = scene
    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{kin.name}")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    assert "time behind the tip" in page.locator("h3", has_text="Lag").inner_text()
    legend = page.locator(".lag-legend li:not(.head)")
    assert legend.first.inner_text().split() == ["trips:shardId-000000000003", "5.2", "s",
                                                 "behind"]
    assert legend.last.inner_text().split()[-3:] == ["5.2", "s", "behind"]  # the worst
    assert page.locator("svg.lines text.tick.num").last.text_content() == "10.0 s"
    position = page.locator("#checkpoint code.pos").first
    assert position.inner_text() == "after 4965…53"  # shard 3, the furthest behind
    position.click()
    # The bare sequence number, as AT_SEQUENCE_NUMBER or `offsets reset --offsets` take it.
    assert page.evaluate("navigator.clipboard.readText()") == f"{SEQ[:-2]}53"
    positions = page.locator("section", has_text="Positions").inner_text()
    assert "{" not in positions and "each of the 4 shards" in positions
    assert page.locator("#checkpoint th").first.inner_text() == "Shard"
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "kinesis", full_page=False)
    assert errors == []


def consumer_states(client, arn):
    return {c["ConsumerName"]: c["ConsumerStatus"] for c in
            client.list_stream_consumers(StreamARN=arn)["Consumers"]}


def wait_active(client, arn, names):
    # kinesis-local makes a consumer ACTIVE after a moment
    wait_for(lambda: all(consumer_states(client, arn).get(n) == "ACTIVE" for n in names), 30,
             lambda: f"consumers {sorted(names)} ACTIVE: {consumer_states(client, arn)}")


def test_a_leaked_efo_consumer_is_deregistered_from_the_page(scene, browser):
    """Of the stream's consumers, only this pipeline's per-run consumer that no queued or
    running run uses offers Deregister; a reader sees it disabled and is refused."""
    server, *_, (efo, client, arn, names), _ = scene
    wait_active(client, arn, names.values())
    section = "section:has(h2:text('Enhanced fan-out consumers'))"

    def row(page, name):
        return page.locator(f"{section} tr", has_text=name)
    page, errors = open_page(browser, server, "ops", f"/streamslice/pipelines/{efo.name}")
    page.locator(section).wait_for()
    button = row(page, names["leaked"]).get_by_role("button", name="Deregister")
    assert button.is_disabled() and "not run it" in button.get_attribute("title")
    target = button.get_attribute("data-target")
    assert server.post(f"/streamslice/pipelines/{efo.name}/actions/deregister",
                       {"target": target}, server.token("ops"))[0] == 403
    page.context.close()

    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{efo.name}")
    page.locator(section).wait_for()
    assert row(page, names["other"]).locator("button").count() == 0  # not this pipeline's
    in_use = row(page, names["in use"]).get_by_role("button", name="Deregister")
    assert in_use.is_disabled() and "uses it" in in_use.get_attribute("title")
    # The server checks again: the consumer of the queued run is refused even if asked.
    status, answer = server.post(
        f"/streamslice/pipelines/{efo.name}/actions/deregister",
        {"target": in_use.get_attribute("data-target")}, server.token("admin"))
    assert status == 409 and "in use" in answer["detail"]
    row(page, names["leaked"]).get_by_role("button", name="Deregister").click()
    dialog = page.locator("dialog#confirm")
    assert "No queued or running run of this pipeline uses it" in \
        dialog.locator(".what").inner_text()
    shot(page, "efo-deregister", full_page=False)
    dialog.get_by_role("button", name="Confirm").click()
    dialog.locator(".answer.good").wait_for()
    assert f"Kinesis is deregistering {names['leaked']}" in dialog.locator(".answer").inner_text()
    assert consumer_states(client, arn).get(names["leaked"]) in ("DELETING", None)
    assert consumer_states(client, arn)[names["in use"]] == "ACTIVE"
    assert consumer_states(client, arn)["someone-else"] == "ACTIVE"
    # Both of admin's requests are in Airflow's audit log; the refused reader's is not.
    status, found = server.get_json(f"/api/v2/eventLogs?event=streamslice_action"
                                    f"&dag_id={efo.name}", server.token("admin"))
    assert status == 200 and [e["owner"] for e in found["event_logs"]] == ["admin", "admin"]
    assert errors == []


def test_the_overview_inside_airflows_own_ui(scene, browser):
    server, cover, *_ = scene
    page, errors = open_page(browser, server, "admin", "/plugin/streamslice")
    frame = page.frame_locator("iframe")
    frame.locator("tr[data-pipeline]").first.wait_for(timeout=30_000)
    assert frame.locator(f'tr[data-pipeline="{cover.name}"]').count() == 1
    shot(page, "overview", full_page=False)
    # The pipeline's page inside Airflow's frame talks to Airflow's API with the session:
    # a re-run's dry run lists the run's tasks (nothing is changed; cancelled).
    frame.get_by_role("link", name=cover.name).click()
    # The default view runs up to now: the hours since the pipeline stopped running (in
    # May 2024) are missing, up to the last one over.
    last = frame.locator("#coverage .cell").last
    assert last.get_attribute("data-status") == "missing"
    assert 0 <= time.time() * 1000 - (int(last.get_attribute("data-start")) + HOUR) < HOUR
    # Without catchup, Airflow skipped the day between the start date and the first run on
    # purpose: a range over it does not show it as missing.
    frame.locator("input[name=start]").fill("2024-04-30T00:00")
    frame.locator("input[name=end]").fill("2024-05-01T06:00")
    frame.get_by_role("button", name="Show").click()
    frame.locator(f'#coverage .cell[data-start="{T0 + 5 * HOUR}"]').wait_for()
    assert frame.locator("#coverage .cell").first.get_attribute("data-start") == str(T0)
    frame.locator("#coverage .cell").first.click()
    frame.get_by_role("button", name="Re-run this interval").click()
    frame.locator("dialog#confirm .what").get_by_text("run its").wait_for()
    frame.get_by_role("button", name="Cancel").click()
    assert errors == []


def test_a_reader_sees_the_actions_disabled_and_airflow_refuses_them(scene, browser):
    server, cover, *_ = scene
    page, errors = open_page(browser, server, "ops",
                             f"/streamslice/pipelines/{cover.name}{RANGE}")
    cells = page.locator("#coverage .cell")
    cells.nth(2).click()
    cells.nth(3).click(modifiers=["Shift"])
    backfill = page.get_by_role("button", name=re.compile("^Backfill"))
    assert backfill.is_disabled()
    assert "may read this DAG but not run it" in backfill.get_attribute("title")
    cells.nth(0).click()
    assert page.get_by_role("button", name="Re-run this interval").is_disabled()
    assert "not run it" in page.locator("#headline").inner_text()
    # What the buttons would call: Airflow itself refuses this user.
    body = {"dag_id": cover.name, "from_date": "2024-05-01T02:00:00Z",
            "to_date": "2024-05-01T03:00:00Z", "reprocess_behavior": "failed"}
    token = server.token("ops")
    assert server.post("/api/v2/backfills", body, token)[0] == 403
    run_id = page.evaluate("JSON.parse(document.getElementById('page-data').textContent)"
                           ".cols[0].run")
    assert server.post(f"/api/v2/dags/{cover.name}/dagRuns/{run_id}/clear",
                       {"dry_run": False}, token)[0] == 403
    assert errors == []


def test_a_backfill_airflow_cannot_make_is_explained_not_sent(scene, browser):
    """07:00-08:00 is missing, but the manual run of 06:00-07:00 is dated 07:00: Airflow's
    backfill finds runs by logical date and would make none. The page says so, and offers
    the run that fills it instead."""
    server, cover, *_ = scene
    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{cover.name}"
                             "?start=2024-05-01T06:00&end=2024-05-01T08:00")
    assert statuses(page) == ["empty", "missing"]
    page.locator("#coverage .cell").nth(1).click()
    page.get_by_role("button", name="Backfill 1 missing/failed").click()
    dialog = page.locator("dialog#confirm")
    dialog.locator(".what p").first.wait_for()
    holder = page.evaluate("JSON.parse(document.getElementById('page-data').textContent)"
                           ".cols[0].run")  # the manual run of 06:00-07:00
    what = dialog.locator(".what")
    assert "Airflow's backfill will not run 2024-05-01 07:00 → 08:00: another run already " \
        f"holds its logical date, 2024-05-01T07:00:00.000Z by run {holder} (the interval " \
        "2024-05-01 06:00 → 07:00)" in what.inner_text()
    assert what.get_by_role("link", name=holder).get_attribute("href").endswith(
        f"/runs/{quote(holder, safe='')}")
    # The one button is the run that fills the interval (clicked in test_ui_live, where a
    # scheduler runs it); Airflow's backfill is not offered.
    assert dialog.get_by_role("button", name="Trigger the run").is_visible()
    assert dialog.get_by_role("button", name="Confirm").count() == 0
    shot(page, "backfill-conflict", full_page=False)
    dialog.get_by_role("button", name="Cancel").click()
    status, found = server.get_json(f"/api/v2/backfills?dag_id={cover.name}",
                                    server.token("admin"))
    assert status == 200 and found["total_entries"] == 0
    assert errors == []


def runs_of(server, dag_id):
    status, found = server.get_json(f"/api/v2/dags/{dag_id}/dagRuns?limit=100",
                                    server.token("admin"))
    assert status == 200, found
    return {datetime.fromisoformat(r["data_interval_start"]): r for r in found["dag_runs"]}


def test_the_backfill_button_asks_airflow_to_fill_the_gaps(scene, browser):
    server, cover, *_ = scene
    page, errors = open_page(browser, server, "admin",
                             f"/streamslice/pipelines/{cover.name}{RANGE}")
    cells = page.locator("#coverage .cell")
    cells.nth(1).click()
    cells.nth(4).click(modifiers=["Shift"])  # 01:00-05:00: late, missing, failed, published
    page.get_by_role("button", name="Backfill 2 missing/failed").click()
    dialog = page.locator("dialog#confirm")
    dialog.locator(".what li").first.wait_for()
    assert dialog.locator(".what li").all_inner_texts() == [
        "2024-05-01 02:00 → 03:00 (missing)", "2024-05-01 03:00 → 04:00 (failed)"]
    shot(page, "backfill-confirm", full_page=False)
    dialog.get_by_role("button", name="Confirm").click()
    answer = dialog.locator(".answer.good")
    answer.wait_for()
    # Named as the intervals it fills, not by Airflow's logical dates.
    assert re.match(r"Airflow created backfill #\d+ for 2024-05-01 02:00 → 04:00: its runs "
                    "are queued", answer.inner_text())
    shot(page, "backfill-answer", full_page=False)
    # In Airflow: the backfill, a new run for 02:00 and the failed 03:00 run queued again.
    status, found = server.get_json(f"/api/v2/backfills?dag_id={cover.name}",
                                    server.token("admin"))
    assert status == 200 and found["total_entries"] == 1
    backfill = found["backfills"][0]
    assert backfill["from_date"].startswith("2024-05-01T02:00:00")
    assert backfill["to_date"].startswith("2024-05-01T03:00:00")
    runs = runs_of(server, cover.name)
    assert runs[utc(2024, 5, 1, 2)]["run_type"] == "backfill"
    assert runs[utc(2024, 5, 1, 2)]["state"] == "queued"
    assert runs[utc(2024, 5, 1, 3)]["state"] == "queued"
    assert runs[utc(2024, 5, 1, 1)]["state"] == "success"  # the late one is left alone
    with page.expect_navigation():  # closing Airflow's good answer reloads the page
        dialog.get_by_role("button", name="Close").click()
    page.locator("#coverage").wait_for()
    assert statuses(page)[2:4] == ["running", "running"]
    assert errors == []


def test_the_rerun_button_clears_one_interval_through_airflow(scene, browser):
    server, cover, *_ = scene
    page, errors = open_page(browser, server, "admin",
                             f"/streamslice/pipelines/{cover.name}{RANGE}")
    page.locator("#coverage .cell").nth(0).click()
    page.get_by_role("button", name="Re-run this interval").click()
    dialog = page.locator("dialog#confirm")
    what = dialog.locator(".what")
    what.get_by_text("run its").wait_for()
    assert "plan, read, commit" in what.inner_text()
    dialog.get_by_role("button", name="Confirm").click()
    dialog.locator(".answer.good").wait_for()
    assert "is queued now" in dialog.locator(".answer").inner_text()
    assert runs_of(server, cover.name)[utc(2024, 5, 1, 0)]["state"] == "queued"
    assert errors == []


def test_a_stalled_schedule_is_the_headline(scene, browser):
    """Unpaused, with no scheduler running here: Airflow's next run of ``stalled`` is overdue
    (the date is Airflow's own, next_dagrun_create_after) and the run it made stays queued,
    which does not excuse the stall."""
    server, *_, stalled = scene
    token = server.token("admin")
    assert server.patch(f"/api/v2/dags/{stalled.name}", {"is_paused": False}, token)[0] == 200
    status, dag = server.get_json(f"/api/v2/dags/{stalled.name}", token)
    assert status == 200 and dag["next_dagrun_run_after"].startswith("2024-05-01T02:00:00")
    page, errors = open_page(browser, server, "admin", f"/streamslice/pipelines/{stalled.name}"
                             "?start=2024-05-01T00:00&end=2024-05-01T01:00")
    assert page.locator("#headline").inner_text().startswith(
        "Airflow was due to start the next run at May 1 02:00 and has not")
    assert "1 interval running or queued (May 1 00:00)" in page.locator("#headline").inner_text()
    shot(page, "stalled", full_page=False)
    overview, _ = open_page(browser, server, "admin", "/streamslice/")
    assert overview.locator(f'tr[data-pipeline="{stalled.name}"] .badge',
                            has_text="overdue").count() == 1
    assert errors == []
