"""Local services for the demo and the tests, started and stopped by the project itself."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from collections.abc import Mapping

StrPath = str | os.PathLike[str]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen[Any] | None, wait_s: float = 10) -> None:
    """Ask a process of ours to end (SIGTERM), and kill it if it has not within ``wait_s``."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()


def wait_for_port(port: int, host: str = "127.0.0.1", timeout: float = 30.0,
                  what: str = "service") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not open {host}:{port} within {timeout:.0f}s")


def _venv_bin(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else (shutil.which(name) or name)


class KafkaBroker:
    """A Kafka-protocol broker from the ``noida-db`` package, one per data directory."""

    def __init__(self, data_dir: StrPath, port: int | None = None,
                 host: str = "127.0.0.1") -> None:
        self.data_dir, self.host = str(data_dir), host
        self.port = port or free_port()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [_venv_bin("noida-db"), *args, "--data-dir", self.data_dir]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {out.stdout}{out.stderr}")
        return out

    def start(self) -> Self:
        os.makedirs(self.data_dir, exist_ok=True)
        self._run("up", "--only", "kafka", "--host", self.host, "--kafka-port", str(self.port))
        wait_for_port(self.port, self.host, what="Kafka broker (noida-db)")
        return self

    @property
    def pid(self) -> int:
        """The background server's process (``noida-db up`` returns once it runs)."""
        import json
        return int(json.loads((Path(self.data_dir) / "noida.control.json").read_text())["pid"])

    def stop(self) -> None:
        self._run("down", check=False)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def create_topic(bootstrap: str, topic: str, partitions: int,
                 config: Mapping[str, str] | None = None) -> None:
    """Create a topic (``retention.ms=-1`` by default, so old test timestamps are kept)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    conf = {"retention.ms": "-1", **(config or {})}
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=conf)])
    for f in futures.values():
        f.result(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=5)
        if topic in meta.topics and len(meta.topics[topic].partitions) == partitions:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} did not appear")


TOOLS = Path(__file__).resolve().parents[1] / ".tools" / "node"


def install_node_tools() -> Path:
    """Install the pinned Node packages (devtools/node) into .tools/node, once."""
    target = TOOLS / "node_modules" / "kinesis-local" / "main.js"
    if target.exists():
        return target.parent
    TOOLS.mkdir(parents=True, exist_ok=True)
    src = Path(__file__).resolve().parent / "node"
    for name in ("package.json", "package-lock.json"):
        shutil.copy(src / name, TOOLS / name)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=TOOLS,
                   check=True)
    return target.parent


class KinesisLocal:
    """kinesis-local (a build of kinesis-mock) behind the SubscribeToShard proxy.

    The server binds its ports on all interfaces (it cannot be told otherwise); everything
    here talks to it on 127.0.0.1 only, through the proxy's port."""

    def __init__(self, port: int | None = None, proxy_port: int | None = None,
                 log_file: StrPath | None = None) -> None:
        self.port, self.tls_port = port or free_port(), free_port()
        self.proxy_port = proxy_port or free_port()
        self.log_file = log_file
        self._server: subprocess.Popen[bytes] | None = None
        self._proxy: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    def start(self) -> Self:
        pkg = install_node_tools()
        env = dict(os.environ, KINESIS_MOCK_PLAIN_PORT=str(self.port),
                   KINESIS_MOCK_TLS_PORT=str(self.tls_port),
                   KINESIS_MOCK_CERT_PATH=str(pkg / "server.json"), LOG_LEVEL="WARN",
                   SHARD_LIMIT="1000", CREATE_STREAM_DURATION="200ms",
                   DELETE_STREAM_DURATION="200ms", REGISTER_STREAM_CONSUMER_DURATION="300ms",
                   START_STREAM_ENCRYPTION_DURATION="300ms",  # the deregister delay (its bug)
                   MERGE_SHARDS_DURATION="300ms", SPLIT_SHARD_DURATION="300ms",
                   UPDATE_SHARD_COUNT_DURATION="300ms")
        out = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL
        self._server = subprocess.Popen(["node", str(pkg / "main.js")], env=env, stdout=out,
                                        stderr=subprocess.STDOUT, cwd=str(pkg))
        wait_for_port(self.port, what="kinesis-local", timeout=60)
        self._proxy = subprocess.Popen(
            [sys.executable, "-m", "devtools.kinesis_proxy", "--listen-port",
             str(self.proxy_port), "--upstream-port", str(self.port)],
            cwd=str(Path(__file__).resolve().parents[1]), stdout=out, stderr=subprocess.STDOUT)
        wait_for_port(self.proxy_port, what="Kinesis proxy")
        return self

    def stop(self) -> None:
        for proc in (self._proxy, self._server):
            stop_process(proc)

    def calls(self, stream: str) -> dict[str, int]:
        """The calls the proxy relayed that name ``stream``, operation → count (tests judge
        by it which API a read used)."""
        import json
        import urllib.request

        from devtools.kinesis_proxy import CALLS_PATH
        with urllib.request.urlopen(self.endpoint + CALLS_PATH, timeout=30) as answer:
            calls = json.load(answer)
        return {op: streams[stream] for op, streams in calls.items() if stream in streams}

    def client(self) -> Any:  # a boto3 client
        import boto3
        return boto3.client("kinesis", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SchemaRegistry:
    """The local Confluent Schema Registry (``devtools.schema_registry``) in a process of its
    own on loopback; ``user`` ("name:password") requires basic auth, ``cert``/``key`` TLS."""

    def __init__(self, port: int | None = None, user: str | None = None,
                 cert: StrPath | None = None, key: StrPath | None = None,
                 data: StrPath | None = None, log_file: StrPath | None = None) -> None:
        self.port, self.user, self.cert, self.key = port or free_port(), user, cert, key
        self.data, self.log_file = data, log_file
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.cert else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> Self:
        cmd = [sys.executable, "-m", "devtools.schema_registry", "--port", str(self.port)]
        for flag, value in (("--user", self.user), ("--cert", self.cert), ("--key", self.key),
                            ("--data", self.data)):
            if value:
                cmd += [flag, str(value)]
        out = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL
        self._proc = subprocess.Popen(cmd, cwd=str(Path(__file__).resolve().parents[1]),
                                      stdout=out, stderr=subprocess.STDOUT)
        wait_for_port(self.port, what="schema registry")
        return self

    def stop(self) -> None:
        stop_process(self._proc)

    def faults(self, delay_s: float = 0.0, status: int = 0) -> dict[str, Any]:
        """Make every request slow (``delay_s``) or fail (``status``, e.g. 503)."""
        import json
        import ssl
        import urllib.request
        req = urllib.request.Request(f"{self.url}/_devtools/faults", method="PUT",
                                     data=json.dumps({"delay_s": delay_s,
                                                      "status": status}).encode())
        ctx = ssl._create_unverified_context() if self.cert else None
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return json.load(r)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SparkStandalone:
    """A Spark standalone master and one worker from the pyspark install, on loopback."""

    def __init__(self, work_dir: StrPath, cores: int = 2, memory: str = "2g") -> None:
        self.work_dir = Path(work_dir)
        self.port, self.ui_port, self.worker_ui = free_port(), free_port(), free_port()
        self.cores, self.memory = cores, memory
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self) -> Self:
        import json
        import urllib.request

        import pyspark
        spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
        self.work_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                   SPARK_WORKER_DIR=str(self.work_dir))
        log = open(self.work_dir / "standalone.log", "ab")
        self._procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(self.port), "--webui-port", str(self.ui_port)],
            env=env, stdout=log, stderr=subprocess.STDOUT))
        wait_for_port(self.port, what="Spark master", timeout=60)
        self._procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", self.master,
             "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
             "--webui-port", str(self.worker_ui), "--work-dir", str(self.work_dir)],
            env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 180  # a busy machine starts a JVM slowly
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/",
                                            timeout=2) as r:
                    if json.load(r).get("aliveworkers", 0) >= 1:
                        return self
            except (OSError, ValueError):  # not listening yet, or an empty page while it starts
                pass
            time.sleep(0.5)
        raise RuntimeError("the Spark worker did not register with the master")

    def stop(self) -> None:
        for proc in reversed(self._procs):
            stop_process(proc, 15)


class SparkConnect:
    """A Spark Connect server from the pyspark install (its ``spark-connect`` jar, started as
    ``sbin/start-connect-server.sh`` does), on loopback, running ``local[*]`` by default.
    ``conf`` takes Spark properties (e.g. the quick JVM flags the tests use), ``env`` more
    environment (e.g. the AWS identity it reads Kinesis with, as ``docker-compose.yml`` gives
    its server one)."""

    def __init__(self, work_dir: StrPath, port: int | None = None, master: str = "local[*]",
                 conf: Mapping[str, str] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.port, self.master, self.conf = port or free_port(), master, dict(conf or {})
        self.env = dict(env or {})
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def remote(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The server's JVM (``spark-submit`` execs it); its Python workers are its children."""
        if self._proc is None:
            raise RuntimeError("the Spark Connect server is not started")
        return self._proc.pid

    def start(self) -> Self:
        from streamslice.spark.local_server import server_command, server_env
        self.work_dir.mkdir(parents=True, exist_ok=True)
        cmd = server_command(self.port, self.master, self.conf)
        env = server_env(self.env)  # the package reaches the server as an artifact
        log = open(self.work_dir / "spark-connect.log", "ab")
        self._proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      cwd=str(self.work_dir), start_new_session=True)
        wait_for_port(self.port, what="Spark Connect server", timeout=120)
        return self

    def stop(self) -> None:
        """The server and the Python workers it started (they share its process group)."""
        import signal
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Postgres:
    """The machine's PostgreSQL cluster (Debian's ``pg_ctlcluster``), started if it is down,
    with a role and database for streamslice: the Iceberg SQL catalog that production and
    docker-compose use."""

    USER = PASSWORD = "streamslice"

    def __init__(self, database: str = "streamslice_test") -> None:
        self.database = database
        self.port = 5432

    @property
    def url(self) -> str:
        return (f"postgresql+psycopg2://{self.USER}:{self.PASSWORD}@127.0.0.1:{self.port}/"
                f"{self.database}")

    def start(self) -> Self:
        listed = subprocess.run(["pg_lsclusters", "--no-header"], capture_output=True,
                                text=True, check=True).stdout.split()
        if len(listed) < 4:
            raise RuntimeError("no PostgreSQL cluster (apt-get install postgresql)")
        version, cluster, self.port = listed[0], listed[1], int(listed[2])
        if listed[3] != "online":
            subprocess.run(["pg_ctlcluster", version, cluster, "start"], check=True)
        wait_for_port(self.port, what="PostgreSQL")
        self._sql(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
                  f"'{self.USER}') THEN CREATE ROLE {self.USER} LOGIN PASSWORD "
                  f"'{self.PASSWORD}'; END IF; END $$;")
        exists = self._sql(f"SELECT 1 FROM pg_database WHERE datname = '{self.database}'")
        if "1" not in exists:
            self._sql(f"CREATE DATABASE {self.database} OWNER {self.USER}")
        return self

    def recreate(self) -> Self:
        """The database dropped (its sessions closed) and created again, empty."""
        self.drop()
        self._sql(f"CREATE DATABASE {self.database} OWNER {self.USER}")
        return self

    def drop(self) -> None:
        self._sql(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")

    def _sql(self, statement: str) -> str:
        out = subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-p", str(self.port),
                              "-tAc", statement], capture_output=True, text=True, cwd="/")
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr.strip()}")
        return out.stdout


class MotoServer:
    """moto's AWS server (SNS, SQS…) on loopback, for notifier tests."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._proc = subprocess.Popen([_venv_bin("moto_server"), "-H", "127.0.0.1", "-p",
                                       str(self.port)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        wait_for_port(self.port, what="moto_server")
        return self

    def stop(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(10)

    def client(self, service: str) -> Any:  # a boto3 client
        import boto3
        return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test")


class EmrServerlessLocal(MotoServer):
    """moto's server whose EMR Serverless job runs run here (``devtools.emr_serverless``)."""

    def start(self) -> Self:
        self._proc = subprocess.Popen([sys.executable, "-m", "devtools.emr_serverless",
                                       "--port", str(self.port)],
                                      cwd=str(Path(__file__).resolve().parents[1]),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, what="EMR Serverless (moto)")
        return self


class AirflowServices:
    """Airflow's api-server, scheduler, dag-processor and triggerer on SQLite with the
    LocalExecutor, for tests that need the real scheduler (backfills, deadlines, the UI).
    All-admins auth, so scripts and a headless browser need no login."""

    COMPONENTS = (("api-server", "--host", "127.0.0.1", "--port", "{port}"),
                  ("scheduler", "--skip-serve-logs"), ("dag-processor",),
                  ("triggerer", "--skip-serve-logs"))

    def __init__(self, home: StrPath, dags_folder: StrPath,
                 env: Mapping[str, str] | None = None, port: int | None = None) -> None:
        self.home, self.dags_folder = Path(home), Path(dags_folder)
        self.port = port or free_port()
        self.env = dict(os.environ)
        self.env.update({
            "AIRFLOW_HOME": str(self.home), "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{self.port}",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__PARALLELISM": "4", "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            # SQLite has one writer: wait for the lock rather than fail at once.
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS":
                "devtools.airflow_db.SQLITE_CONNECT_ARGS",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING"})
        self.env.pop("AIRFLOW__CORE__UNIT_TEST_MODE", None)
        self.env.update(env or {})
        self._procs: list[subprocess.Popen[bytes]] = []
        self._names: dict[subprocess.Popen[bytes], str] = {}  # each process's component

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def airflow(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        for attempt in range(5):
            out = subprocess.run([_venv_bin("airflow"), *args], env=self.env,
                                 capture_output=True, text=True, timeout=300)
            if out.returncode == 0 or "database is locked" not in out.stderr:
                break
            time.sleep(2 + attempt)  # SQLite: the scheduler held the write lock
        if check and out.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
        return out

    def start(self) -> Self:
        self.home.mkdir(parents=True, exist_ok=True)
        self.airflow("db", "migrate")
        for name, *_ in self.COMPONENTS:
            self._start(name)
        self.wait_healthy()
        return self

    def _start(self, name: str) -> None:
        args = next(args for n, *args in self.COMPONENTS if n == name)
        log = open(self.home / f"{name}.log", "ab")
        cmd = [_venv_bin("airflow"), name, *(a.format(port=self.port) for a in args)]
        proc = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self._names[proc] = name
        self._procs.append(proc)

    def pids(self) -> dict[str, int]:
        """Each running component's main process: the scheduler's descendants are the
        LocalExecutor's workers and the task processes they start."""
        return {self._names[p]: p.pid for p in self._procs if p.poll() is None}

    def stop_component(self, name: str) -> None:
        """Stops one component (``scheduler``: as when its host goes down) and leaves the
        others running; ``start_component`` brings it back."""
        for proc in [p for p in self._procs if self._names[p] == name]:
            self._stop(proc)
            self._procs.remove(proc)
            del self._names[proc]

    def start_component(self, name: str) -> None:
        """Starts a component ``stop_component`` stopped, and waits until Airflow's health
        check counts it healthy again."""
        self._start(name)
        self.wait_healthy()

    def api(self, method: str, path: str, body: object = None, timeout: float = 30) -> Any:
        """The JSON Airflow's REST API answers (``None`` for an empty body)."""
        import json
        import urllib.error
        import urllib.request
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as exc:
            # Airflow's answer and, for a server error, the API server's last log lines: what
            # a failing test needs to say why.
            exc.msg = f"{exc.msg}: {exc.read().decode(errors='replace')[:2000]}"
            if exc.code >= 500:
                exc.msg += "\n" + self.log_tail("api-server")
            raise

    def log_tail(self, name: str, lines: int = 60) -> str:
        path = self.home / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"--- last lines of {name}.log ---\n" + "\n".join(text.splitlines()[-lines:])

    def wait_healthy(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                health = self.api("GET", "/api/v2/monitor/health", timeout=5)
                parts = ("metadatabase", "scheduler", "dag_processor", "triggerer")
                if all(health.get(p, {}).get("status") == "healthy" for p in parts):
                    return
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(f"Airflow did not become healthy in {timeout}s (logs: {self.home})")

    def wait_for_dag(self, dag_id: str, timeout: float = 120) -> dict[str, Any]:
        import urllib.error
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return self.api("GET", f"/api/v2/dags/{dag_id}")
            except urllib.error.HTTPError:
                time.sleep(1)
        raise RuntimeError(f"DAG {dag_id} was not parsed within {timeout}s")

    def stop(self) -> None:
        # The main process of each component, never the whole group: the LocalExecutor's
        # workers must outlive the scheduler's shutdown or it waits for them forever.
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            self._stop(proc)

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes]) -> None:
        import signal
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        try:  # then whatever the component left in its session (executor workers)
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
