"""The Streamslice page over Airflow's own api-server, scheduler, dag-processor and triggerer
(the session's ``airflow_services``), in headless Chromium: each failure an operator meets,
made by real runs the scheduler ran (real broker, real Spark on a Spark Connect server, a
Kinesis endpoint that is down), and what the page says about it.

- a failed setup task: the Kinesis endpoint is down, so the run's EFO sweep fails; the page
  gives that task's own error, the tasks it kept from running apart (no log links), and the
  run_failed alert it sent;
- a backfill conflict: a manual run dated 07:00 (Airflow's trigger form gives it the interval
  06:00-07:00) holds the logical date a backfill of 07:00-08:00 needs; the page names that
  date and the run, and its one button fills the interval;
- a stale pipeline: the freshness watchdog DAG, run by the scheduler, sends the stale alert;
- a stopped scheduler: no run starts, yet the page marks the data stale, says the scheduler
  is not running, and ``streamslice freshness`` (what cron runs) sends the alert.

The tests run in this order, each on the state the one before left, and each passes alone
too (it publishes what it needs that an earlier test would have). Screenshots of each
state are kept in test-artifacts/ (docs/images/ holds them)."""
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from devtools.services import create_topic, free_port
from devtools.taxi import produce, trips
from tests.support.browser import ARTIFACTS
from tests.support.pipelines import kafka_pipeline, kinesis_pipeline, unique
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration
HOUR = 3_600_000
T0 = 1_714_521_600_000  # 2024-05-01 00:00 UTC
RANGE = "?start=2024-05-01T06:00&end=2024-05-01T10:00"
WATCHDOG = "streamslice_freshness"


class Live:
    """The session's Airflow and this module's two pipelines: ``down`` (Kinesis EFO, endpoint
    down) and ``hourly`` (Kafka, by the hour, a freshness limit of 2 h)."""

    failed: str  # down's run, which failed
    holder: str  # hourly's run of 06:00-07:00, which succeeded

    def __init__(self, airflow, received, down, hourly):
        self.airflow, self.received, self.down, self.hourly = airflow, received, down, hourly

    def trigger(self, dag_id, **body):
        # A busy machine's api-server on SQLite may take long to answer; asking twice could
        # make two runs, so it is given the time.
        return self.airflow.api("POST", f"/api/v2/dags/{dag_id}/dagRuns",
                                {"logical_date": None, **body}, timeout=180)["dag_run_id"]

    def run(self, dag_id, run_id):
        return self.airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}",
                                timeout=180)

    def finished(self, dag_id, run_id, timeout=600):
        """The run once the scheduler has ended it."""
        return wait_for(lambda: (r := self.run(dag_id, run_id))["state"] in ("success", "failed")
                        and r, timeout, f"run {run_id} of {dag_id} to end", interval=1)

    def runs(self, dag_id):
        return self.airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100")["dag_runs"]

    def publish(self, dag_id, start, end):
        """A successful run of exactly ``start``-``end`` (ISO, UTC), triggered as the page's
        backfill button triggers one (a logical date 1 ms past the start, which a manual run
        of the previous interval cannot hold) unless one already succeeded: a test that needs
        the interval published does not depend on an earlier test having published it."""
        if any(r["data_interval_start"] == start and r["data_interval_end"] == end
               and r["state"] == "success" for r in self.runs(dag_id)):
            return
        run = self.trigger(dag_id, logical_date=start.replace("Z", ".001Z"),
                           data_interval_start=start, data_interval_end=end)
        assert self.finished(dag_id, run)["state"] == "success"

    def alerts(self, kind, pipeline, wait, complete_to=None):
        """The ``kind`` alerts for ``pipeline`` (of the stretch complete to ``complete_to``)
        that reached the SNS topic (the queue drained)."""
        return [a for a in self.received(wait=wait, until=kind)
                if a["kind"] == kind and a["pipeline"] == pipeline and
                (complete_to is None or a["details"]["complete_to"] == complete_to)]


@pytest.fixture(scope="module")
def live(broker, airflow_services, spark_connect, sns_queue, tmp_path_factory):
    airflow = airflow_services
    _, sns_topic, received = sns_queue
    out = tmp_path_factory.mktemp("ui-live")
    topic = unique("live")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, trips(T0 + 6 * HOUR, 4, 20, seed=5, late_share=0))
    notify = [{"sns": {"topic_arn": sns_topic, "aws_conn_id": "alerts_aws"}}]
    down = kinesis_pipeline(
        "taxi-trips", name=unique("live-down"), folder=airflow.pipelines, output=out,
        retries=0, alerts={"notifiers": notify},
        description="Kinesis through enhanced fan-out; its endpoint is down.",
        kinesis={"region": "us-east-1", "endpoint_url": f"http://127.0.0.1:{free_port()}",
                 "credentials": {"access_key_id": "test", "secret_access_key": "test"},
                 "reader": "efo", "efo": {"consumer_name": "ss-live",
                                          "registration": "per_run"}})
    # Scheduled by the hour in May 2024 only (end_date): every run here is one the test
    # asks for, and its newest data is from then, so it is stale past its 2 h.
    hourly = kafka_pipeline(
        broker.bootstrap, topic, name=unique("live-hourly"), folder=airflow.pipelines,
        output=out, mode="interval", schedule="@hourly", start_date="2024-05-01T00:00:00Z",
        end_date="2024-05-01T12:00:00Z", retries=0,
        description=f"Hourly slices of the {topic} topic, by event time.",
        spark={"runner": "connect", "remote": spark_connect.remote},
        alerts={"freshness": "2h", "notifiers": notify})
    for cfg in (down, hourly):
        airflow.wait_for_dag(cfg.name)
        airflow.airflow("dags", "unpause", cfg.name)
    airflow.wait_for_dag(WATCHDOG)  # added by the factory for hourly's freshness; paused
    received(wait=1)  # what earlier tests sent
    scene = Live(airflow, received, down, hourly)
    failed = scene.trigger(down.name)
    # As Airflow's own trigger form dates it: 07:00, which gives the interval 06:00-07:00.
    holder = scene.trigger(hourly.name, logical_date="2024-05-01T07:00:00Z")
    assert scene.finished(down.name, failed)["state"] == "failed"
    assert scene.finished(hourly.name, holder)["state"] == "success"
    scene.failed, scene.holder = failed, holder
    return scene


def open_page(browser, live, path):
    """A laptop-sized page; the session's Airflow signs every request in as an admin."""
    page = browser.new_context(viewport={"width": 1366, "height": 800}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live.airflow.url}/streamslice{path}")
    return page, errors


def shot(page, name, full_page=True):
    """A screenshot in test-artifacts/, the output's folder on this machine masked."""
    page.screenshot(path=str(ARTIFACTS / f"streamslice-live-{name}.png"),
                    full_page=full_page,
                    mask=[page.locator("code.output")])


def cell(page, hour):
    return page.locator(f'#coverage .cell[data-start="{T0 + hour * HOUR}"]')


def test_a_failed_setup_task_says_its_own_error(live, browser):
    """The run failed in its EFO sweep: the page gives the error that task recorded and, apart,
    the tasks Airflow did not run because of it (no log links: they have none), and lists
    the run_failed alert, which reached SNS."""
    dag = live.down.name
    tis = live.airflow.api("GET", f"/api/v2/dags/{dag}/dagRuns/{quote(live.failed, safe='')}"
                                  "/taskInstances")["task_instances"]
    failed = [t["task_id"] for t in tis if t["state"] == "failed"]
    held = sorted(t["task_id"] for t in tis if t["state"] == "upstream_failed")
    assert failed in (["efo_sweep"], ["efo_register"]) and held, tis  # a setup task
    sent = live.alerts("run_failed", dag, wait=30)
    assert len(sent) == 1 and f"task {failed[0]} failed" in sent[0]["message"], sent
    page, errors = open_page(browser, live, f"/pipelines/{dag}")
    row = page.locator(f'#runs tr[data-run="{live.failed}"]')
    why = row.locator(".why").inner_text()
    assert why.startswith(f"task {failed[0]} failed: SourceError: Kinesis "), why
    assert "Check that the source can be reached" in why
    assert why.endswith(f"Not run because of it: {', '.join(held)}."), why
    links = row.locator("a", has_text=" log")
    assert links.all_inner_texts() == [f"{failed[0]} log"]
    assert links.first.get_attribute("href").endswith(
        f"/dags/{dag}/runs/{quote(live.failed, safe='')}/tasks/{failed[0]}")
    assert f"task {failed[0]} failed: SourceError" in page.locator("#headline").inner_text()
    alerts = page.locator("section", has_text="Alerts").locator("tr", has_text="run_failed")
    assert alerts.count() == 1 and f"task {failed[0]} failed" in alerts.inner_text()
    shot(page, "failed-setup")
    assert errors == []


def test_a_blocked_backfill_names_the_logical_date_and_one_click_fills_it(live, browser):
    """07:00-08:00 never ran, and the manual run of 06:00-07:00 holds its logical date:
    Airflow's backfill would make no run. The page names the date and the run holding it,
    and its one button triggers a run of exactly 07:00-08:00, which the scheduler runs."""
    dag = live.hourly.name
    page, errors = open_page(browser, live, f"/pipelines/{dag}{RANGE}")
    assert cell(page, 6).get_attribute("data-status") == "published"
    assert cell(page, 7).get_attribute("data-status") == "missing"
    cell(page, 7).click()
    page.get_by_role("button", name="Backfill 1 missing/failed").click()
    dialog = page.locator("dialog#confirm")
    what = dialog.locator(".what")
    what.locator("p").first.wait_for()
    assert "Airflow's backfill will not run 2024-05-01 07:00 → 08:00: another run already " \
        f"holds its logical date, 2024-05-01T07:00:00.000Z by run {live.holder} (the " \
        "interval 2024-05-01 06:00 → 07:00)." in what.inner_text()
    assert what.get_by_role("link", name=live.holder).get_attribute("href").endswith(
        f"/runs/{quote(live.holder, safe='')}")
    assert "Trigger a run of exactly 2024-05-01 07:00 → 08:00 with the logical date " \
        "2024-05-01T07:00:00.001Z" in what.inner_text()
    shot(page, "backfill-conflict", full_page=False)
    dialog.get_by_role("button", name="Trigger the run").click()
    answer = dialog.locator(".answer.good")
    answer.wait_for(timeout=30_000)
    assert re.match(r"Airflow queued run \S+ for 2024-05-01 07:00 → 08:00\.$",
                    answer.inner_text()), answer.inner_text()
    made = answer.locator("code").inner_text()
    run = live.run(dag, made)
    assert (run["data_interval_start"], run["data_interval_end"], run["logical_date"]) == (
        "2024-05-01T07:00:00Z", "2024-05-01T08:00:00Z", "2024-05-01T07:00:00.001000Z")
    assert live.finished(dag, made)["state"] == "success"
    with page.expect_navigation():  # closing Airflow's good answer reloads the page
        dialog.get_by_role("button", name="Close").click()
    assert cell(page, 7).get_attribute("data-status") == "published"
    n = int(page.locator(f'#runs tr[data-run="{made}"] td.n').first.inner_text())
    assert n > 0  # the interval's trips, read by the run the button made
    # No backfill was made: Airflow's could not have filled the interval.
    found = live.airflow.api("GET", f"/api/v2/backfills?dag_id={dag}")
    assert found["total_entries"] == 0
    shot(page, "backfill-conflict-fixed", full_page=False)
    assert errors == []


def test_a_stale_pipeline_is_alerted_by_the_watchdog_the_scheduler_runs(live, browser):
    """Its data is complete to 2024-05-01 08:00, far past 2 h: the page marks it, and the
    streamslice_freshness DAG, run by the scheduler, sends one stale alert the page lists."""
    dag = live.hourly.name
    # Complete to 08:00: the backfill test before this one fills 07:00-08:00; run alone,
    # this test publishes it itself.
    live.publish(dag, "2024-05-01T07:00:00Z", "2024-05-01T08:00:00Z")
    live.airflow.airflow("dags", "unpause", WATCHDOG)
    try:
        run = live.trigger(WATCHDOG)
        assert live.finished(WATCHDOG, run)["state"] == "success"
    finally:  # its next stale alert is the stopped scheduler test's, from the command
        live.airflow.airflow("dags", "pause", WATCHDOG)
    sent = live.alerts("stale", dag, wait=30, complete_to="2024-05-01T08:00:00.000Z")
    assert len(sent) == 1, sent
    page, errors = open_page(browser, live, "/")
    marks = page.locator(f'tr[data-pipeline="{dag}"] .needs .badge').all_inner_texts()
    assert re.fullmatch(r"stale: \d+ d(?: \d+ h)? old", marks[0]), marks
    page, errors = open_page(browser, live, f"/pipelines/{dag}{RANGE}")
    assert re.search(r"The newest complete data is \d+ d(?: \d+ h)? old, past its freshness limit "
                     r"of 2 h\.", page.locator("#headline").inner_text())
    assert "STALE: limit 2 h" in page.locator(".tile", has_text="Data age").inner_text()
    stale = page.locator("section", has_text="Alerts").locator("tr", has_text="stale")
    assert stale.count() == 1
    assert "complete to 2024-05-01T08:00:00.000Z; freshness limit 2 h" in stale.inner_text()
    shot(page, "stale")
    assert errors == []


def freshness_command(live):
    """``streamslice freshness`` as cron runs it: the pipeline files and Airflow's settings."""
    cli = [str(Path(sys.executable).parent / "streamslice"), "--dir",
           str(live.airflow.pipelines), "freshness", "--json"]
    return subprocess.run(cli, env=live.airflow.env, capture_output=True, text=True,
                          timeout=300)


def test_a_stopped_scheduler_starts_no_run_yet_stale_data_is_marked_and_alerted(live, browser):
    """08:00-09:00 is published (the data is complete to 09:00, a stretch not alerted yet),
    then the scheduler stops. A run asked for now stays queued; the page says the scheduler
    is not running and that the data is stale (computed when the page is asked), and
    ``streamslice freshness`` sends the stale alert without it."""
    dag = live.hourly.name
    live.publish(dag, "2024-05-01T07:00:00Z", "2024-05-01T08:00:00Z")
    published = live.trigger(dag, logical_date="2024-05-01T08:00:00Z",
                             data_interval_start="2024-05-01T08:00:00Z",
                             data_interval_end="2024-05-01T09:00:00Z")
    assert live.finished(dag, published)["state"] == "success"
    live.airflow.stop_component("scheduler")
    queued = None
    try:
        queued = live.trigger(dag, logical_date="2024-05-01T09:00:00Z",
                              data_interval_start="2024-05-01T09:00:00Z",
                              data_interval_end="2024-05-01T10:00:00Z")
        page, errors = open_page(browser, live, f"/pipelines/{dag}{RANGE}")
        said = page.locator("#headline").inner_text()
        assert said.startswith("Airflow's scheduler is not running (last heard from "), said
        assert "the streamslice freshness command, run from cron, still alerts" in said
        assert re.search(r"The newest complete data is \d+ d(?: \d+ h)? old, past its freshness "
                         r"limit of 2 h\.", said), said
        assert cell(page, 9).get_attribute("data-status") == "running"  # queued, not started
        out = freshness_command(live)
        assert out.returncode == 3, (out.stdout, out.stderr)
        assert json.loads(out.stdout)["pipelines"][dag] == "stale"
        sent = live.alerts("stale", dag, wait=30, complete_to="2024-05-01T09:00:00.000Z")
        assert len(sent) == 1, sent
        page.reload()
        stale = page.locator("section", has_text="Alerts").locator("tr", has_text="stale")
        assert stale.filter(has_text="complete to 2024-05-01T09:00:00.000Z").count() == 1
        assert "complete to 2024-05-01T09:00:00.000Z" in stale.first.inner_text()
        shot(page, "scheduler-stopped")
        overview, errors_too = open_page(browser, live, "/")
        assert overview.locator("#scheduler").inner_text().startswith(
            "Airflow's scheduler is not running")
        assert live.run(dag, queued)["state"] == "queued"  # nothing started it meanwhile
        assert errors == errors_too == []
    finally:
        if queued is not None:
            live.airflow.api("DELETE", f"/api/v2/dags/{dag}/dagRuns/{quote(queued, safe='')}")
        live.airflow.start_component("scheduler")
