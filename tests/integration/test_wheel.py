"""The package proved from the wheel alone, as a team with its own Airflow installs it: the
wheel (built with ``python -m build``, as released) goes into a fresh virtual environment that
holds only Airflow (from constraints.txt) and ``streamslice[kafka,spark]``, with no path to
this checkout, no plugins folder, an empty AIRFLOW_HOME and a DAGs folder of another name
than ``dags`` (AIRFLOW__CORE__DAGS_FOLDER), run from a folder without ``dags/`` in it.
``streamslice init`` writes the DAGs folder, ``streamslice validate`` finds the example there
and validates it, the DAG file parses, one interval of a Kafka pipeline runs through
``airflow dags test`` dated as docs/getting-started.md dates it (inside the next interval)
into Parquet on the real broker, and an api-server of that environment
serves the Streamslice page, found through the package's entry points. A dependency the
wheel does not declare, or a plugin it does not register, fails here. uv makes the
environment (seconds from its cache; the first run on a machine downloads Airflow and
PySpark)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic, free_port
from devtools.spark_cds import QUICK_JVM
from tests.support.checks import present
from tests.support.kafka import producer
from tests.support.wait import wait_for

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).with_name("uv")
EXTRAS = "kafka,spark"


def pinned(name):
    text = (ROOT / "constraints.txt").read_text()
    return present(re.search(rf"^{re.escape(name)}==(\S+)$", text, re.M | re.I)).group(1)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, timings): the wheel with EXTRAS in a venv beside Airflow."""
    work = tmp_path_factory.mktemp("wheel")
    timings = {}
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(work / "dist"), str(ROOT)],
                   check=True, capture_output=True, text=True)
    timings["build_s"] = time.monotonic() - started
    wheel = next((work / "dist").glob("streamslice-*.whl"))
    venv = work / "venv"
    python = venv / "bin" / "python"
    started = time.monotonic()
    uv(["venv", "--quiet", "--python", sys.executable, str(venv)])
    constraints = ["--constraint", str(ROOT / "constraints.txt"),
                   "--find-links", str(built_wheels())]
    airflow = pinned("apache-airflow")
    uv(["pip", "install", "--quiet", "--python", str(python), *constraints,
        f"apache-airflow=={airflow}"])  # the team's Airflow, there before us
    uv(["pip", "install", "--quiet", "--python", str(python), *constraints,
        f"streamslice[{EXTRAS}] @ {wheel.as_uri()}"])
    timings["install_s"] = time.monotonic() - started
    print(f"wheel build {timings['build_s']:.1f} s, venv install {timings['install_s']:.1f} s")
    (work / "airflow").mkdir()  # an empty AIRFLOW_HOME
    versions = run(python, "-c", "import importlib.metadata as m; print(m.version("
                   "'apache-airflow'), m.version('streamslice'))", env=clean_env(work, venv))
    assert versions.split() == [airflow, wheel.name.split("-")[1]]  # Airflow left as it was
    return python, work


def built_wheels():
    """PyPI has PySpark only as a 450 MB source distribution, which uv would download and
    build each time: pip built it for this venv (``make venv``) and keeps the wheel in its
    cache, so it is taken from there once per machine, into a folder uv also looks in."""
    folder = Path(sys.prefix) / "wheels"
    spark = pinned("pyspark")
    if not list(folder.glob(f"pyspark-{spark}-*.whl")):
        partial = Path(tempfile.mkdtemp(dir=sys.prefix))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        f"pyspark=={spark}", "--wheel-dir", str(partial)], check=True)
        folder.mkdir(exist_ok=True)
        for wheel in partial.glob("*.whl"):
            os.replace(wheel, folder / wheel.name)
        shutil.rmtree(partial)
    return folder


def uv(args):
    proc = subprocess.run([str(UV), *args], capture_output=True, text=True,
                          env=dict(os.environ, UV_NO_PROGRESS="1"))
    assert proc.returncode == 0, f"uv {' '.join(args)}: {proc.stderr[-3000:]}"


def clean_env(work, venv):
    """What a worker of the team's Airflow has: its own venv first on PATH, an AIRFLOW_HOME,
    Java; nothing of this checkout (no PYTHONPATH, no plugins folder, no test settings)."""
    keep = ("HOME", "LANG", "LC_ALL", "TMPDIR", "JAVA_HOME", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
               AIRFLOW_HOME=str(work / "airflow"), AIRFLOW__CORE__LOAD_EXAMPLES="False",
               AIRFLOW__CORE__DAGS_FOLDER=str(work / "airflow" / "team-dags"),
               AIRFLOW__LOGGING__LOGGING_LEVEL="WARNING",
               STREAMSLICE_SPARK_CONF=json.dumps({
                   "spark.driver.extraJavaOptions": QUICK_JVM,
                   "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}))
    return env


def run(python, *args, env, check=True, cwd=None):
    proc = subprocess.run([str(python), *args], capture_output=True, text=True, env=env,
                          cwd=cwd or env["AIRFLOW_HOME"])
    if check:
        assert proc.returncode == 0, f"{args}: {proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        return proc.stdout
    return proc


def test_from_the_wheel_alone(installed, broker):
    python, work = installed
    venv = python.parent.parent
    env = clean_env(work, venv)
    home = Path(env["AIRFLOW_HOME"])
    assert list(home.iterdir()) == []
    cli = str(venv / "bin" / "streamslice")
    # Nothing of the checkout is importable from here.
    where = run(python, "-c", "import streamslice; print(streamslice.__file__)", env=env)
    assert where.startswith(str(venv)), where

    out = run(python, cli, "init", "--json", env=env, cwd=work)
    dags = home / "team-dags"
    assert json.loads(out)["written"] == [str(dags / "streamslice_pipelines.py"),
                                          str(dags / "pipelines" / "example_events.yaml")]
    env["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
    assert "ok     example_events" in run(python, cli, "validate", env=env, cwd=work)

    # A pipeline that needs an extra this install lacks names it (avro is not installed).
    example = (dags / "pipelines" / "example_events.yaml").read_text()
    avro = dags / "pipelines" / "needs_avro.yaml"
    avro.write_text(example.replace("value: json", "value: avro"))
    failed = run(python, cli, "validate", env=env, check=False)
    assert failed.returncode == 1
    wheel = next((work / "dist").glob("streamslice-*.whl"))
    assert f"pip install '{wheel.name}[avro]'" in failed.stdout, failed.stdout
    avro.unlink()

    # The example, on a topic of this test's own, one interval through dag.test().
    topic = f"wheel-events-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)  # kept: the records' timestamps are old
    (dags / "pipelines" / "example_events.yaml").write_text(
        example.replace("topics: [events]", f"topics: [{topic}]"))
    start = datetime(2026, 1, 1, 5, tzinfo=timezone.utc)
    base = int(start.timestamp() * 1000)
    with producer(broker.bootstrap) as p:
        for i in range(20):
            p.produce(topic, key=str(i).encode(), value=json.dumps(
                {"id": i, "kind": "k", "amount": i / 2}).encode(), timestamp=base + i * 1000)
        p.produce(topic, value=b'{"id": 99}', timestamp=base + 3_600_000)  # next interval
    run(python, "-m", "airflow", "db", "migrate", env=env)
    script = ("import sys\nfrom airflow.dag_processing.dagbag import DagBag\n"
              "bag = DagBag(sys.argv[1])\nassert not bag.import_errors, bag.import_errors\n")
    run(python, "-c", script, str(dags), env=env)
    # as the page runs its interval: a manual run dated inside the next hour
    run(python, "-m", "airflow", "dags", "test", "example_events", "2026-01-01T06:30:00+00:00",
        env=env)
    interval = home / "output" / "pipeline=example_events" / "interval=20260101T050000Z"
    manifest = json.loads((interval / "_manifest.json").read_text())
    assert manifest["records"] == 20, manifest
    rows = ds.dataset(sorted(interval.glob("*.parquet"))).to_table().to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(20))
    assert {r["amount"] for r in rows} == {i / 2 for i in range(20)}

    # The api-server of that environment has the Streamslice page and the provider.
    port = free_port()
    env.update(AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="True",
               AIRFLOW__API__BASE_URL=f"http://127.0.0.1:{port}")
    log = home / "api-server.log"
    server = subprocess.Popen([str(venv / "bin" / "airflow"), "api-server", "--host",
                               "127.0.0.1", "--port", str(port)], env=env, cwd=home,
                              stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_up(server, f"{url}/api/v2/version", log)
        token = json.loads(urllib.request.urlopen(f"{url}/auth/token", timeout=30).read())
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        plugins = get(f"{url}/api/v2/plugins", auth)
        assert [p["name"] for p in json.loads(plugins)["plugins"]] == ["streamslice"]
        providers = json.loads(get(f"{url}/api/v2/providers", auth))["providers"]
        assert "streamslice" in [p["package_name"] for p in providers]
        page = get(f"{url}/streamslice/", auth)
        assert "example_events" in page, page[:2000]
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


def get(url, headers):
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def wait_up(proc, url, log, timeout=240):
    def answers():
        try:
            urllib.request.urlopen(url, timeout=5)
        except urllib.error.HTTPError:
            pass  # an answer all the same
        except OSError:
            assert proc.poll() is None, f"api-server exited: {log.read_text()[-4000:]}"
            return False
        return True
    wait_for(answers, timeout, lambda: f"the api-server to answer: {log.read_text()[-4000:]}",
             interval=1)


def test_uv_is_the_pinned_one():
    """The venv above is made by the uv of requirements.txt, found beside this Python."""
    assert shutil.which(str(UV)), "uv is missing: `make venv` installs requirements.txt"
