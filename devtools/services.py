"""Local services for the demo and the tests, started and stopped by the project itself."""
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, host="127.0.0.1", timeout=30.0, what="service"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not open {host}:{port} within {timeout:.0f}s")


def _venv_bin(name):
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else (shutil.which(name) or name)


class KafkaBroker:
    """A Kafka-protocol broker from the ``noida-db`` package, one per data directory."""

    def __init__(self, data_dir, port=None, host="127.0.0.1"):
        self.data_dir, self.host = str(data_dir), host
        self.port = port or free_port()

    @property
    def bootstrap(self):
        return f"{self.host}:{self.port}"

    def _run(self, *args, check=True):
        cmd = [_venv_bin("noida-db"), *args, "--data-dir", self.data_dir]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {out.stdout}{out.stderr}")
        return out

    def start(self):
        os.makedirs(self.data_dir, exist_ok=True)
        self._run("up", "--only", "kafka", "--host", self.host, "--kafka-port", str(self.port))
        wait_for_port(self.port, self.host, what="Kafka broker (noida-db)")
        return self

    def stop(self):
        self._run("down", check=False)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def create_topic(bootstrap, topic, partitions, config=None):
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


def install_node_tools():
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

    def __init__(self, port=None, proxy_port=None, log_file=None):
        self.port, self.tls_port = port or free_port(), free_port()
        self.proxy_port = proxy_port or free_port()
        self.log_file = log_file
        self._server = self._proxy = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.proxy_port}"

    def start(self):
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

    def stop(self):
        for proc in (self._proxy, self._server):
            if proc and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def client(self):
        import boto3
        return boto3.client("kinesis", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class SparkStandalone:
    """A Spark standalone master and one worker from the pyspark install, on loopback."""

    def __init__(self, work_dir, cores=2, memory="2g"):
        self.work_dir = Path(work_dir)
        self.port, self.ui_port, self.worker_ui = free_port(), free_port(), free_port()
        self.cores, self.memory = cores, memory
        self._procs = []

    @property
    def master(self):
        return f"spark://127.0.0.1:{self.port}"

    def start(self):
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
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/",
                                            timeout=2) as r:
                    if json.load(r).get("aliveworkers", 0) >= 1:
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError("the Spark worker did not register with the master")

    def stop(self):
        for proc in reversed(self._procs):
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


class MotoServer:
    """moto's AWS server (SNS, SQS…) on loopback, for notifier tests."""

    def __init__(self, port=None):
        self.port = port or free_port()
        self._proc = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self._proc = subprocess.Popen([_venv_bin("moto_server"), "-H", "127.0.0.1", "-p",
                                       str(self.port)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        wait_for_port(self.port, what="moto_server")
        return self

    def stop(self):
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(10)

    def client(self, service):
        import boto3
        return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test")
