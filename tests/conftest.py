"""Test session set-up. Airflow reads its configuration when first imported, so the
environment is set here, before any test module imports it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from devtools.spark_cds import QUICK_JVM, java_options
from tests.support.cpu_hog import CpuHog

ROOT = Path(__file__).resolve().parents[1]
SESSION_DIR = Path(tempfile.mkdtemp(prefix="streamslice-tests-"))

os.environ["AIRFLOW_HOME"] = str(SESSION_DIR / "airflow")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(SESSION_DIR / "dags")
os.environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(ROOT / "plugins")
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "False"
os.environ["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "WARNING"
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
# runner local reads in the test's own Spark (the session fixture's), not on a kept server
# that would outlive the test: tests/integration/test_local_server.py covers that server
os.environ["STREAMSLICE_LOCAL_SERVER"] = "false"
# A quicker JVM start for short test jobs; the controller adds the class archive's flags
# (pytest_configure) and its workers inherit them.


def _spark_conf(java_options):
    os.environ["STREAMSLICE_SPARK_CONF"] = json.dumps({
        "spark.driver.extraJavaOptions": java_options,
        "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"})


_spark_conf(os.environ.get("STREAMSLICE_TEST_JAVA_OPTIONS", QUICK_JVM))
# The session's DAGs folder runs the real DAG factory file over its own pipelines folder.
(SESSION_DIR / "dags" / "pipelines").mkdir(parents=True, exist_ok=True)
shutil.copy(ROOT / "dags" / "streamslice_pipelines.py", SESSION_DIR / "dags")
PIPELINES_DIR = SESSION_DIR / "dags" / "pipelines"
_HOG = pytest.StashKey[CpuHog]()
_HOG_SHARE = pytest.StashKey[float]()
_AIRFLOW = pytest.StashKey[object]()  # the running Airflow services, once started


def pytest_addoption(parser):
    parser.addoption("--cpu-hog", action="store_true",
                     default=os.environ.get("STREAMSLICE_CPU_HOG") == "1",
                     help="run every test with one busy process per core beside it "
                          "(tests/support/cpu_hog.py); also STREAMSLICE_CPU_HOG=1")


def pytest_configure(config):
    """Spark jobs start on a class-data-sharing archive (``devtools.spark_cds``: ~40% less
    CPU a JVM start), made once per machine, unless only unit tests run."""
    if hasattr(config, "workerinput") or "STREAMSLICE_TEST_JAVA_OPTIONS" in os.environ:
        return
    if all(Path(a.split("::")[0]).resolve().is_relative_to(ROOT / "tests" / "unit")
           for a in config.args):
        return
    os.environ["STREAMSLICE_TEST_JAVA_OPTIONS"] = java_options(QUICK_JVM)
    _spark_conf(os.environ["STREAMSLICE_TEST_JAVA_OPTIONS"])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """The tests on the shared Airflow components run first, one after another, and the
    components stop after the last of them (``pytest_runtest_teardown``): they start once,
    the longest group of tests starts first (so no worker ends the run alone on it) and they
    do not poll their database beside the other tests. The Celery deployment's tests
    (marker ``deploy``, the next longest group, with Airflow components of their own) come
    right after them, so another worker starts them early. First of the hooks: an xdist
    worker reads the groups in a hook of its own."""
    items.sort(key=lambda item: (not _uses_airflow(item),
                                 item.get_closest_marker("deploy") is None))
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            item.add_marker(pytest.mark.xdist_group(_worker_group(item)))


@pytest.hookimpl(optionalhook=True)  # xdist's hook: pytest -p no:xdist runs without it
def pytest_xdist_node_collection_finished(node, ids):
    """Grouping must be in effect, or every worker sets up every module's fixtures and the
    Airflow components: pytest-xdist 3.8 marks a test's group in its node id, which pytest
    9.2 no longer lets it change (pytest-xdist#1386), so that pair ran ungrouped, silently."""
    if node.config.getvalue("dist") == "loadgroup" and not any("@" in i for i in ids):
        raise pytest.UsageError(
            "pytest-xdist's loadgroup does not group these tests (no node id carries a group):"
            " use the pytest and pytest-xdist pinned in requirements.txt")


def _uses_airflow(item):
    return "airflow_services" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test that uses the Airflow services, they stop: found in the stash,
    not in the test's arguments, which a skipped test never gets."""
    if _uses_airflow(item) and (nextitem is None or not _uses_airflow(nextitem)):
        services = item.config.stash.get(_AIRFLOW, None)
        if services is not None:
            services.stop()


def _worker_group(item):
    """Under ``pytest -n N --dist loadgroup`` (``make test``): the Airflow-component tests
    share one worker, as do an integration module's tests (their module fixtures and the
    machine-wide services some use, e.g. PostgreSQL, are set up once); unit and chaos tests,
    each on its own topic and folders, go wherever a worker is free."""
    if _uses_airflow(item):
        return "airflow"
    path = item.nodeid.split("::")[0]
    return path if path.startswith("tests/integration/") else item.nodeid


def pytest_sessionstart(session):
    """With --cpu-hog the machine is kept busy from before the first service starts until the
    last test ends, so fixtures' set-up and every wait run against a loaded machine."""
    is_xdist_worker = hasattr(session.config, "workerinput")
    if session.config.getoption("--cpu-hog") and not is_xdist_worker:
        session.config.stash[_HOG] = CpuHog().start()


def pytest_terminal_summary(terminalreporter, config):
    # Where the run's time went, by folder (set-up, call and tear-down of each test summed);
    # pytest.ini's --durations lists the slowest tests themselves.
    spent: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                folder = report.nodeid.split("/")[1] if report.nodeid.count("/") > 1 else "?"
                spent[folder] = spent.get(folder, 0.0) + report.duration
    if spent:
        terminalreporter.write_line("time by folder: " + ", ".join(
            f"{folder} {seconds:.0f}s" for folder, seconds in
            sorted(spent.items(), key=lambda kv: -kv[1])) +
            f"; total {sum(spent.values()):.0f}s")
    share = config.stash.get(_HOG_SHARE, None)
    if share is not None:
        terminalreporter.write_line(
            f"cpu hog: {os.cpu_count()} busy processes beside the tests used {share:.0%} of "
            "the machine's cores over the run")


def pytest_sessionfinish(session, exitstatus):
    hog = session.config.stash.get(_HOG, None)
    if hog is not None:
        session.config.stash[_HOG_SHARE] = hog.busy_share()
        hog.stop()
    if os.environ.get("STREAMSLICE_KEEP_TEST_DIR"):
        print(f"\ntest session files kept in {SESSION_DIR}")
    else:
        shutil.rmtree(SESSION_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def session_dir():
    return SESSION_DIR


@pytest.fixture(scope="session")
def pipelines_dir():
    return PIPELINES_DIR


@pytest.fixture(scope="session")
def broker():
    """A real Kafka-protocol broker over TCP, checked for Kafka conformance before use."""
    from devtools.conformance import check_broker
    from devtools.services import KafkaBroker
    b = KafkaBroker(SESSION_DIR / "kafka").start()
    try:
        check_broker(b.bootstrap)
    except AssertionError as exc:
        b.stop()
        pytest.exit(f"the local Kafka broker does not behave like Kafka: {exc}", returncode=3)
    yield b
    b.stop()


@pytest.fixture(scope="session")
def kinesis():
    """A real Kinesis-compatible HTTP server (kinesis-local) behind the SubscribeToShard proxy."""
    from devtools.services import KinesisLocal
    k = KinesisLocal(log_file=SESSION_DIR / "kinesis.log").start()
    yield k
    k.stop()


@pytest.fixture(scope="session")
def postgres():
    """The machine's PostgreSQL, started by the project's own script if it is down."""
    from devtools.services import Postgres
    return Postgres().start()


@pytest.fixture(scope="session")
def sns_queue():
    """An SNS topic on a local moto_server with an SQS queue subscribed (raw delivery);
    yields (moto, topic ARN, received()) where received() drains the queue."""
    from tests.support.alerts import sns_to_sqs
    moto, topic, received = sns_to_sqs()
    yield moto, topic, received
    moto.stop()


@pytest.fixture(scope="session")
def spark():
    from streamslice.spark.session import spark_session
    s = spark_session()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def spark_connect():
    """A Spark Connect server (local[*], the quick JVM flags above) for the whole session,
    with an AWS identity of its own for the local Kinesis server, as ``docker-compose.yml``
    gives its server: a read task never sends it the connection's keys."""
    from devtools.services import SparkConnect
    server = SparkConnect(SESSION_DIR / "spark-connect",
                          conf=json.loads(os.environ["STREAMSLICE_SPARK_CONF"]),
                          env={"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
                               "AWS_DEFAULT_REGION": "us-east-1"}).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def airflow_db():
    """A migrated SQLite metadata database for this session."""
    out = subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
                         capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{out.stdout}\n{out.stderr}")
    return os.environ["AIRFLOW_HOME"]


@pytest.fixture(scope="session")
def airflow_services(request, sns_queue):
    """Airflow's api-server, scheduler, dag-processor and triggerer (SQLite, LocalExecutor),
    started once for every test that needs the real scheduler: starting them takes about a
    minute on a busy machine. Their DAGs folder holds only those tests' pipelines
    (``services.pipelines``), so each task parses little. Their tasks fire the faults listed
    in ``services.faults`` (``STREAMSLICE_INJECT_FAULT=@FILE``), empty unless a test fills it."""
    from devtools.services import AirflowServices
    from tests.support.connections import aws_environment
    moto, _, _ = sns_queue
    dags = SESSION_DIR / "airflow-dags"
    (dags / "pipelines").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "dags" / "streamslice_pipelines.py", dags)
    faults = SESSION_DIR / "airflow-faults"
    faults.write_text("")
    class Services(AirflowServices):
        faults: Path
        pipelines: Path

    services = Services(SESSION_DIR / "airflow-services", dags, env={
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"), "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]),
        **aws_environment("alerts_aws", moto.endpoint),
        "STREAMSLICE_INJECT_FAULT": f"@{faults}"})
    services.faults, services.pipelines = faults, dags / "pipelines"
    request.config.stash[_AIRFLOW] = services.start()
    yield services
    services.stop()
