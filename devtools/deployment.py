"""Airflow as teams deploy it, started on this machine: the CeleryExecutor with Redis as its
broker, PostgreSQL as the metadata database and Celery's result backend, and Celery workers
that share no local disk with each other or with the scheduler (each has its own HOME,
AIRFLOW_HOME, working directory and temporary folder, and names itself as its own host). What
one task leaves for another must therefore be on storage every worker reaches (S3), as on
separate hosts. The DAGs folder is the one thing they share, as a team ships its DAGs to
every worker."""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Self

from devtools.services import (
    AirflowServices,
    _venv_bin,
    free_port,
    stop_process,
    wait_for_port,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from devtools.services import StrPath


def worker_host() -> str:
    """The host name a worker's tasks report to Airflow (``[core] hostname_callable``): the
    worker's own name where several run on one machine, so each try says where it ran."""
    return os.environ.get("STREAMSLICE_WORKER_HOST") or socket.getfqdn()


def kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid``: a worker with its Celery pool, the tasks'
    supervisors and task processes, as when its host dies."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getsid(int(entry)) == sid:
                os.kill(int(entry), signal.SIGKILL)
        except OSError:  # gone already
            continue


class Redis:
    """Debian's ``redis-server`` on loopback, in memory only: the Celery broker."""

    def __init__(self, work_dir: StrPath, port: int | None = None) -> None:
        self.work_dir, self.port = Path(work_dir), port or free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Self:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.work_dir / "redis.log", "ab")
        self._proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.work_dir)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_port(self.port, what="Redis")
        return self

    def stop(self) -> None:
        stop_process(self._proc)


class CeleryDeployment(AirflowServices):
    """The api-server, scheduler, dag-processor and triggerer (one host: ``home``), Redis, and
    Celery workers named ``workers``, each in a folder of its own beside ``home``. A worker
    killed by ``kill_worker`` dies with its tasks, as its host would; the scheduler fails its
    running tries once their heartbeats stop (``heartbeat_timeout`` seconds) and Airflow
    retries them on a worker that is alive."""

    def __init__(self, home: StrPath, dags_folder: StrPath, database_url: str,
                 env: Mapping[str, str] | None = None, port: int | None = None,
                 workers: Iterable[str] = ("worker-a", "worker-b"), concurrency: int = 2,
                 heartbeat_timeout: int = 20) -> None:
        super().__init__(home, dags_folder, env=env, port=port)
        self.redis = Redis(self.home / "redis")
        self.env.pop("AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS", None)  # SQLite's
        self.env.update({
            "AIRFLOW__CORE__EXECUTOR":
                "airflow.providers.celery.executors.celery_executor.CeleryExecutor",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url,
            "AIRFLOW__CELERY__BROKER_URL": self.redis.url,
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{database_url}",
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(concurrency),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            # Every host signs and checks the same tokens (tasks call the execution API).
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(heartbeat_timeout),
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
            "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.2"})
        self.workers = {name: self.home.parent / name for name in workers}  # beside home
        self._workers: dict[str, subprocess.Popen[bytes]] = {}

    def worker_env(self, name: str) -> dict[str, str]:
        """A worker's environment: the deployment's, with folders of its own."""
        folder = self.workers[name]
        return dict(self.env, HOME=str(folder / "home"), AIRFLOW_HOME=str(folder / "airflow"),
                    TMPDIR=str(folder / "tmp"), STREAMSLICE_WORKER_HOST=name,
                    AIRFLOW__CORE__HOSTNAME_CALLABLE="devtools.deployment.worker_host",
                    AIRFLOW__LOGGING__LOGGING_LEVEL="INFO")  # its "ready." line

    def start(self) -> Self:
        self.redis.start()
        super().start()
        for name in self.workers:
            self.start_worker(name)
        return self

    def start_worker(self, name: str, timeout: float = 180) -> None:
        """Starts worker ``name`` (again, after a kill) and waits until Celery says it is
        ready to take tasks."""
        folder = self.workers[name]
        for sub in ("home", "airflow", "tmp", "work"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        log_path = folder / "worker.log"
        seen = log_path.stat().st_size if log_path.exists() else 0
        cmd = [_venv_bin("airflow"), "celery", "worker", "--celery-hostname",
               f"{name}@%h", "--concurrency", self.env["AIRFLOW__CELERY__WORKER_CONCURRENCY"],
               "--skip-serve-logs"]
        self._workers[name] = subprocess.Popen(
            cmd, env=self.worker_env(name), cwd=folder / "work", stdout=open(log_path, "ab"),
            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log_path, "rb") as f:
                f.seek(seen)
                if b" ready." in f.read():
                    return
            if self._workers[name].poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError(f"Celery worker {name} did not become ready:\n"
                           + self.worker_log(name))

    def worker_log(self, name: str, lines: int = 60) -> str:
        path = self.workers[name] / "worker.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"--- last lines of {path} ---\n" + "\n".join(text.splitlines()[-lines:])

    def alive(self, name: str) -> bool:
        proc = self._workers.get(name)
        return proc is not None and proc.poll() is None

    def kill_worker(self, name: str) -> None:
        """SIGKILL worker ``name`` and every process it started, as when its host dies."""
        proc = self._workers[name]
        kill_session(proc.pid)
        proc.wait(30)

    def stop(self) -> None:
        for proc in self._workers.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self._workers.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
            kill_session(proc.pid)  # what a worker left running (its tasks' processes)
        super().stop()
        self.redis.stop()
