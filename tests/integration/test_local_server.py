"""``spark.runner: local`` on the worker's kept Spark Connect server
(``streamslice.spark.local_server``): real servers from the pyspark install, real Airflow
runs through ``dag.test()`` and a real broker. Two reads that start at once start one server;
later runs reuse it; it stops once idle and not before; a killed server is replaced; a
server that cannot be used falls back to the task's own Spark. Every test stops what it
started (the suite otherwise reads without the kept server: tests/conftest.py)."""
import json
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, cast

import pyarrow.dataset as ds
import pytest

from devtools.services import create_topic
from devtools.taxi import produce, trips
from streamslice.spark import local_server
from streamslice.spark.local_server import ServerSpec, alive, lease
from tests.conftest import ROOT
from tests.support.pipelines import kafka_pipeline, run_dag, unique, utc
from tests.support.wait import wait_for

if TYPE_CHECKING:
    from pyspark.sql._typing import UserDefinedFunctionLike

pytestmark = pytest.mark.integration
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
HOUR = 3_600_000
QUICK = {**json.loads(os.environ.get("STREAMSLICE_SPARK_CONF") or "{}"),
         "spark.ui.enabled": "false"}

HOLD = """
import json, sys, time
from streamslice.spark.local_server import ServerSpec, lease
with lease(ServerSpec(sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]))) as s:
    print(s.pid, s.port, flush=True)
    time.sleep(float(sys.argv[4]))
"""


@pytest.fixture
def servers(tmp_path, monkeypatch):
    """A folder of kept servers of this test's own; whatever is left in it is killed after."""
    folder = tmp_path / "servers"
    monkeypatch.setenv("STREAMSLICE_LOCAL_SERVER_DIR", str(folder))
    monkeypatch.delenv("STREAMSLICE_LOCAL_SERVER", raising=False)
    yield folder
    for pid_file in folder.glob("*/keeper.pid"):
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def gone(pid):
    """The keeper and every process of its group (the JVM, its Python workers) ended."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def hold(spec, seconds):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    return subprocess.Popen([sys.executable, "-c", HOLD, spec.master, json.dumps(dict(spec.conf)),
                             str(spec.idle_s), str(seconds)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def local_pipeline(broker, topic, path, **spark):
    return kafka_pipeline(broker.bootstrap, topic, name=unique("local-server"), mode="interval",
                          schedule="@hourly", start_date="2024-05-01T00:00:00Z",
                          kafka={"max_records_per_split": 100}, output=path,
                          spark={"runner": "local", "master": "local[2]", **spark})


def hour_rows(cfg, hour):
    part = f"{cfg.output.dataset(cfg.name)}/interval=20240501T{hour:02d}0000Z"
    t = ds.dataset(part, format="parquet").to_table(columns=["partition", "offset"])
    return sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))


def expected_rows(sent, hour):
    return sorted((p, o) for p, o, ts in sent if (ts - T0) // HOUR == hour)


def keepers(folder):
    """Keeper processes running for ``folder`` (by their command lines)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or not alive(int(entry)):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"streamslice.spark.local_server" in args and str(folder).encode() in args:
            found.append(int(entry))
    return found


def test_two_first_reads_at_once_start_one_server(servers):
    spec = ServerSpec("local[1]", QUICK, idle_s=600)
    first, second = hold(spec, 1), hold(spec, 1)
    outs = [p.communicate(timeout=600) for p in (first, second)]
    assert first.returncode == second.returncode == 0, outs
    (a, _), (b, _) = outs
    assert a.split() == b.split(), outs  # the same keeper, the same port
    pid = int(a.split()[0])
    assert keepers(spec.folder()) == [pid]
    assert local_server.stop(spec)
    wait_for(lambda: gone(pid), 120, "the stopped server's processes to end")
    assert not (spec.folder() / "server.json").exists()


def test_a_server_stops_once_idle_and_not_while_a_read_holds_it(servers):
    spec = ServerSpec("local[1]", QUICK, idle_s=2)
    reader = hold(spec, 8)  # a read longer than the idle time
    pid = int(reader.stdout.readline().split()[0])
    assert reader.wait(600) == 0, reader.stderr.read()
    # the lease ended just now: still running, then gone within the idle time and a poll
    assert alive(pid)
    wait_for(lambda: gone(pid), 120, "the idle server to stop")
    assert not (spec.folder() / "server.json").exists()
    assert not list((spec.folder() / "leases").iterdir())


def test_a_killed_server_is_replaced(servers):
    spec = ServerSpec("local[1]", QUICK, idle_s=600)
    with lease(spec) as first:
        pass
    jvm = next(p for p in os.listdir("/proc") if p.isdigit() and p != str(first.pid)
               and _group(int(p)) == first.pid and b"SparkConnectServer" in _cmdline(int(p)))
    os.kill(int(jvm), signal.SIGKILL)  # the JVM alone: its keeper sees it and leaves
    wait_for(lambda: gone(first.pid), 60, "the keeper of the killed JVM to leave")
    with lease(spec) as second:
        pass
    assert second.pid != first.pid
    os.killpg(second.pid, signal.SIGKILL)  # keeper and JVM at once: server.json is left
    wait_for(lambda: gone(second.pid), 60, "the killed server's processes to end")
    assert (spec.folder() / "server.json").exists()
    with lease(spec) as third:
        assert third.pid not in (first.pid, second.pid) and alive(third.pid)
    assert local_server.stop(spec)


def _group(pid):
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_runs_reuse_the_server_and_land_every_record_once(broker, airflow_db, servers,
                                                          tmp_path):
    """Two hourly runs on the default runner read on one kept server (its first read starts
    it), exactly; the second run's server is the first's."""
    topic = unique("local-server")
    create_topic(broker.bootstrap, topic, 3)
    sent = produce(broker.bootstrap, topic, trips(T0, hours=2, per_hour=200, seed=45,
                                                  late_share=0))
    cfg = local_pipeline(broker, topic, tmp_path / "lake")
    pids = []
    for hour in range(2):
        run_dag(cfg, logical_date=utc(2024, 5, 1, hour + 1))
        (state,) = list(servers.glob("*/server.json"))
        pids.append(json.loads(state.read_text())["pid"])
    assert pids[0] == pids[1] and alive(pids[0])
    for hour in range(2):
        got = hour_rows(cfg, hour)
        assert got == expected_rows(sent, hour), f"hour {hour}"
        assert len(got) == len(set(got)), "a record landed twice"
    (folder,) = {p.parent for p in servers.glob("*/server.json")}
    assert keepers(folder) == [pids[0]]
    port = json.loads((folder / "server.json").read_text())["port"]
    assert worker_modules(f"sc://127.0.0.1:{port}") == ["streamslice_warm_daemon", True, True]


def worker_modules(remote):
    """What a Python worker of the server has imported before it runs anything: the daemon
    it was forked from, and whether pyarrow and pandas came with it (``warm_daemon``)."""
    from pyspark.sql.connect.functions import udf
    from pyspark.sql.types import StringType

    from streamslice.spark.connect import connect_session

    def loaded(_):
        import json
        import sys
        main = getattr(sys.modules["__main__"], "__spec__", None)
        return json.dumps([main.name if main else None, "pyarrow" in sys.modules,
                           "pandas" in sys.modules])

    with connect_session(remote) as spark:
        # Connect's udf() is typed as a UDF or a decorator; given a function it is a UDF
        on_executor = cast("UserDefinedFunctionLike", udf(loaded, StringType()))
        return json.loads(spark.range(1).select(on_executor("id")).collect()[0][0])


def test_a_server_that_cannot_be_used_falls_back_to_the_tasks_own_spark(
        broker, airflow_db, servers, tmp_path, monkeypatch, caplog):
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("STREAMSLICE_LOCAL_SERVER_DIR", str(tmp_path / "not-a-folder" / "x"))
    topic = unique("local-fallback")
    create_topic(broker.bootstrap, topic, 2)
    sent = produce(broker.bootstrap, topic, trips(T0, hours=1, per_hour=100, seed=46,
                                                  late_share=0))
    cfg = local_pipeline(broker, topic, tmp_path / "lake")
    with caplog.at_level("WARNING", logger="streamslice"):
        run_dag(cfg, logical_date=utc(2024, 5, 1, 1))
    assert hour_rows(cfg, 0) == expected_rows(sent, 0)
    assert any("reading in this task's own Spark instead" in r.getMessage()
               for r in caplog.records), caplog.text


def test_local_server_false_reads_in_the_tasks_own_spark(servers):
    from tests.support.pipelines import parsed
    cfg = parsed("kafka", {"bootstrap_servers": "x:9092", "topics": ["t"]},
                 spark={"runner": "local", "local_server": False})
    assert cfg.spark.local_server is False
    cfg = parsed("kafka", {"bootstrap_servers": "x:9092", "topics": ["t"]},
                 spark={"runner": "local", "local_server_idle": "90s"})
    assert cfg.spark.local_server is True and cfg.spark.local_server_idle_s == 90
