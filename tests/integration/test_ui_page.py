"""The Streamslice page in the Airflow UI, end to end: pipelines run through dag.test() with
real Spark and the local broker (one with a hole, one with late records, one failed interval),
then the real Airflow api-server with the plugin, opened in headless Chromium with a real
login. Screenshots are kept in test-artifacts/."""
import os

import pytest

from devtools.airflow_ui import ApiServer, chromium_executable
from devtools.services import create_topic
from devtools.taxi import Trip, produce
from tests.conftest import PIPELINES_DIR, ROOT, SESSION_DIR
from tests.support.pipelines import run_dag, unique, utc, write_pipeline

pytestmark = pytest.mark.integration
ARTIFACTS = ROOT / "test-artifacts"
HOUR, MIN = 3_600_000, 60_000
T0 = int(utc(2024, 5, 1).timestamp() * 1000)
SECRET = "s3cr3t-sasl-pw-4711"


@pytest.fixture(scope="module")
def scene(broker, spark, airflow_db, tmp_path_factory):
    """Pipeline ``cover``: hour 0 published, hour 1 with a late record, hour 2 never run, hour 3
    failed, hour 4 published. Pipeline ``other``: one incremental batch."""
    out = tmp_path_factory.mktemp("ui")
    topic, other_topic = unique("ui"), unique("ui-other")
    create_topic(broker.bootstrap, topic, 1)
    create_topic(broker.bootstrap, other_topic, 1)
    # Event minutes in produce order; the 00:10 record arrives at 01:30, after 01:00 + 5m.
    minutes = [5, 20, 50, 70, 90, 10, 100, 130, 150, 190, 250, 260]
    produce(broker.bootstrap, topic, [Trip(b"k", b"{}", T0 + m * MIN) for m in minutes])
    produce(broker.bootstrap, other_topic, [Trip(b"k", b"{}", T0 + i) for i in range(7)])
    cover = write_pipeline(unique("ui-cover"), f"""
mode: interval
schedule: "@hourly"
start_date: "2024-05-01T00:00:00Z"
allowed_lateness: 5m
retries: 0
kafka:
  bootstrap_servers: {broker.bootstrap}
  topics: [{topic}]
  properties: {{sasl.password: {SECRET}}}
output:
  path: {out}
""")
    other = write_pipeline(unique("ui-other"), f"""
mode: incremental
kafka:
  bootstrap_servers: {broker.bootstrap}
  topics: [{other_topic}]
output:
  path: {out}
""")
    for hour in (0, 1, 4):
        run_dag(cover, logical_date=utc(2024, 5, 1, hour + 1))
    os.environ["STREAMSLICE_INJECT_FAULT"] = "before_publish"
    try:
        run_dag(cover, logical_date=utc(2024, 5, 1, 4), expect="failed")
    finally:
        del os.environ["STREAMSLICE_INJECT_FAULT"]
    run_dag(other)
    server = ApiServer(SESSION_DIR / "ui-api", PIPELINES_DIR.parent, [cover.name]).start()
    yield server, cover, other
    server.stop()


def test_unauthenticated_requests_are_refused(scene):
    server, cover, _ = scene
    for path in ("/streamslice/", f"/streamslice/pipelines/{cover.name}"):
        status, body = server.get(path)
        assert status == 401, (path, status, body[:200])
        assert cover.name not in body


def test_a_user_sees_only_the_pipelines_airflow_lets_them_read(scene):
    server, cover, other = scene
    admin, ops = server.token("admin"), server.token("ops")
    status, page = server.get("/streamslice/", admin)
    assert status == 200 and cover.name in page and other.name in page
    status, page = server.get("/streamslice/", ops)
    assert status == 200 and cover.name in page and other.name not in page
    assert server.get(f"/streamslice/pipelines/{other.name}", ops)[0] == 404
    assert server.get(f"/streamslice/pipelines/{cover.name}", ops)[0] == 200


def test_nothing_secret_is_rendered(scene):
    server, cover, _ = scene
    token = server.token("admin")
    for path in ("/streamslice/", f"/streamslice/pipelines/{cover.name}"):
        status, page = server.get(path, token)
        assert status == 200 and SECRET not in page


def test_the_strip_shows_the_hole_the_late_interval_and_the_failure(scene):
    from playwright.sync_api import sync_playwright
    server, cover, _ = scene
    token = server.token("admin")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_executable(), args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_cookies([{"name": "_token", "value": token, "url": server.url}])
        page = context.new_page()
        url = (f"{server.url}/streamslice/pipelines/{cover.name}"
               "?start=2024-05-01T00:00:00Z&end=2024-05-01T05:00:00Z")
        page.goto(url)
        cells = page.locator("#coverage g.cell")
        states = [cells.nth(i).get_attribute("data-status") for i in range(cells.count())]
        assert states == ["published", "late", "missing", "failed", "published"]
        starts = [int(cells.nth(i).get_attribute("data-start")) for i in range(5)]
        assert starts == [T0 + h * HOUR for h in range(5)]
        bars = page.locator("rect.bar")
        values = sorted(bars.nth(i).get_attribute("data-value") for i in range(bars.count()))
        assert values == ["", "2", "3", "4"], values  # 3, 4 (one late), 2, and the failure
        assert page.locator("#checkpoint").inner_text().count(":0") == 1
        page.screenshot(path=str(ARTIFACTS / "streamslice-pipeline.png"), full_page=True)
        # The same page inside the Airflow UI (its navigation entry and iframe).
        page.goto(f"{server.url}/plugin/streamslice")
        frame = page.frame_locator("iframe")
        frame.locator("tr[data-pipeline]").first.wait_for(timeout=30_000)
        assert frame.locator(f'tr[data-pipeline="{cover.name}"]').count() == 1
        page.screenshot(path=str(ARTIFACTS / "streamslice-overview.png"))
        browser.close()
