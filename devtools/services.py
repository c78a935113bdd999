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
