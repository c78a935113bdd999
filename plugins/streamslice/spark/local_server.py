"""The worker's Spark (``spark.runner: local``, by default): one Spark Connect server on
loopback per machine, user, master and Spark settings, started by the first read that needs
it, used by every later read there, and stopped once no read has used it for its idle time.

A JVM a run cost 8-10 CPU s and 10-40 s of a busy worker's wall, more than reading 300,000
records; a kept server costs a read only its Connect session (``spark.connect``). The server
runs under a keeper (``python -m streamslice.spark.local_server``), a small process of its
own session, apart from any task, which starts the JVM (``spark-submit`` of the server class,
as pyspark's ``sbin/start-connect-server.sh``), writes its address and stops it when idle.

Its folder (``STREAMSLICE_LOCAL_SERVER_DIR``, by default one per user under the temporary
folder; a subfolder per master and settings) holds:

- ``lock``: taken (``flock``) to find or start the server and to stop it, so two reads that
  start at once start one server; the kernel lets go of it when its holder is killed;
- ``server.json``: the keeper's pid and the port, written (atomically) once it listens;
- ``leases/<pid>-<id>``: one per read using it; a lease whose process is gone is ignored;
- ``used``: touched when a read starts and ends; its age is the server's idle time.

The keeper stops the server (and exits) when ``used`` is older than the idle time and no live
process holds a lease, deciding under the lock. A server found dead (its keeper or JVM
killed, its port closed) is cleaned up and replaced by the next read; one that cannot start
raises ``ServerUnavailable``, and the runner reads in its own JVM instead."""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .package import PACKAGE_ROOT, installed

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

IDLE_S = 3600.0  # the default idle time: an hourly pipeline finds it running
START_S = 300.0  # how long a read waits for a new server to listen (a JVM on a busy worker)
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DAEMON = "streamslice_warm_daemon"  # ``warm_daemon.py``, copied beside the server's state


class ServerUnavailable(Exception):
    """The worker's server could not be started (the reason and its log's path)."""


@dataclass(frozen=True)
class ServerSpec:
    """What a server is started with; reads with the same spec share it."""

    master: str = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict)
    idle_s: float = IDLE_S

    def folder(self) -> Path:
        root = os.environ.get("STREAMSLICE_LOCAL_SERVER_DIR") or \
            os.path.join(tempfile.gettempdir(), f"streamslice-spark-{os.getuid()}")
        key = json.dumps([self.master, sorted(self.conf.items()), sys.executable])
        return Path(root) / hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Server:
    pid: int  # the keeper: leader of the process group the JVM and its Python workers are in
    port: int

    @property
    def remote(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


@contextlib.contextmanager
def lease(spec: ServerSpec) -> Iterator[Server]:
    """The worker's server, started if none is alive, held for as long as the block runs."""
    folder = spec.folder()
    mine = folder / "leases" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        (folder / "leases").mkdir(parents=True, exist_ok=True)
        with locked(folder):
            server = running(folder) or _start(folder, spec)
            mine.touch()
            _touch(folder / "used")
    except OSError as exc:
        raise ServerUnavailable(f"the worker's Spark Connect server cannot be used: {exc}") \
            from None
    try:
        yield server
    finally:
        with contextlib.suppress(OSError):  # (a folder removed meanwhile: nothing to keep)
            mine.unlink(missing_ok=True)
            _touch(folder / "used")


def running(folder: Path) -> Server | None:
    """The server ``server.json`` names if it is alive; otherwise what is left of it is
    stopped and the file removed. Call it holding the lock."""
    server = _read_server(folder)
    if server is None:
        return None
    if alive(server.pid) and _listening(server.port):
        return server
    if _ours(server.pid):  # what is left of it (a JVM whose keeper was killed)
        _kill_group(server.pid)
    (folder / "server.json").unlink(missing_ok=True)
    return None


def _ours(group: int) -> bool:
    """Whether a process of the group is a keeper or a server (not a process that got a dead
    keeper's pid since)."""
    marks = (b"streamslice.spark.local_server", SERVER_CLASS.encode(), DAEMON.encode())
    for entry in os.listdir("/proc") if Path("/proc/self").exists() else ():
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != group:
                continue
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if any(mark in cmdline for mark in marks):
            return True
    return False


def stop(spec: ServerSpec) -> bool:
    """Stop the server of ``spec`` now (whether it is in use or not); False if none ran."""
    folder = spec.folder()
    if not folder.exists():
        return False
    with locked(folder):
        server = running(folder)
        (folder / "server.json").unlink(missing_ok=True)
    if server is None:
        return False
    if _ours(server.pid):
        _kill_group(server.pid, signal.SIGTERM)
    return True


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def alive(pid: int) -> bool:
    """A process that runs (a zombie has ended; where there is no /proc, as on macOS, a
    zombie counts as running until its parent reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        if Path("/proc/self").exists():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _start(folder: Path, spec: ServerSpec) -> Server:
    """Start a keeper (detached: it outlives this process) and wait until it says its
    server listens, or has given up."""
    (folder / "spec.json").write_text(json.dumps(
        {"master": spec.master, "conf": dict(spec.conf), "idle_s": spec.idle_s}))
    env = dict(os.environ)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not installed() and str(PACKAGE_ROOT) not in paths:
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *paths])
    started = folder / "keeper.pid"
    started.unlink(missing_ok=True)
    forked = subprocess.run([sys.executable, "-m", "streamslice.spark.local_server",
                             str(folder)], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, check=False)
    if forked.returncode != 0:
        last = (forked.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        raise ServerUnavailable(f"the worker's Spark Connect server did not start: {last}")
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        server = _read_server(folder)
        if server is not None:
            return server
        pid = _read_int(started)
        if pid is not None and not alive(pid):
            break
        time.sleep(0.1)
    pid = _read_int(started)
    if pid is not None:
        _kill_group(pid)
    raise ServerUnavailable(f"the worker's Spark Connect server did not start (its log: "
                            f"{folder / 'server.log'})")


def _read_server(folder: Path) -> Server | None:
    try:
        state = json.loads((folder / "server.json").read_text())
        return Server(int(state["pid"]), int(state["port"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def _touch(path: Path) -> None:
    path.touch()
    os.utime(path)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """The keeper's process group (its JVM and the JVM's Python workers)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def server_command(port: int, master: str, conf: Mapping[str, str]) -> list[str]:
    """``spark-submit`` of the Connect server from the pyspark install, on loopback."""
    home = spark_home()
    settings = {"spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(port),
                "spark.ui.showConsoleProgress": "false", **conf}
    cmd = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS,
           "--name", "Spark Connect server", "--master", master]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment: its Python workers run this interpreter, and get the
    package as each session's artifact, not from a path."""
    env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable)
    # (and a task's injected fault, a test's, stays with that task; ``extra`` goes last)
    for key in ("SPARK_REMOTE", "PYSPARK_GATEWAY_PORT", "PYTHONPATH", "STREAMSLICE_INJECT_FAULT"):
        env.pop(key, None)
    env.update(extra or {})
    return env


def spark_home() -> Path:
    found = importlib.util.find_spec("pyspark")
    if found is None or not found.submodule_search_locations:
        raise ServerUnavailable("pyspark is not installed")
    return Path(next(iter(found.submodule_search_locations)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _idle(folder: Path, idle_s: float) -> bool:
    """Unused for ``idle_s`` and no live lease (leases of ended processes are removed)."""
    try:
        if time.time() - (folder / "used").stat().st_mtime < idle_s:
            return False
    except OSError:
        pass
    for path in (folder / "leases").glob("*"):
        pid = path.name.split("-", 1)[0]
        if pid.isdigit() and alive(int(pid)):
            return False
        path.unlink(missing_ok=True)
    return True


def keep(folder: Path) -> int:
    """The keeper: start the JVM, say where it listens, stop it when idle or told to."""
    spec = json.loads((folder / "spec.json").read_text())
    idle_s = float(spec["idle_s"])
    (folder / "keeper.pid").write_text(str(os.getpid()))
    port = _free_port()
    # its Python workers fork from a daemon that has their imports loaded (``warm_daemon``)
    python = folder / "python"
    python.mkdir(exist_ok=True)
    shutil.copyfile(Path(__file__).with_name("warm_daemon.py"), python / f"{DAEMON}.py")
    conf = {"spark.python.daemon.module": DAEMON, **spec["conf"]}
    with open(folder / "server.log", "wb") as log:
        jvm = subprocess.Popen(server_command(port, spec["master"], conf),
                               env=server_env({"PYTHONPATH": str(python)}),
                               stdin=subprocess.DEVNULL, stdout=log,
                               stderr=subprocess.STDOUT, cwd=str(folder))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while not _listening(port):
            if jvm.poll() is not None:
                return 1
            time.sleep(0.2)
        _touch(folder / "used")
        _write_state(folder, {"pid": os.getpid(), "port": port})
        _watch(folder, jvm, idle_s)
    finally:
        _stop_jvm(folder, jvm)
    return 0


def _watch(folder: Path, jvm: subprocess.Popen[bytes], idle_s: float) -> None:
    every = min(5.0, max(0.2, idle_s / 10))
    while jvm.poll() is None:
        time.sleep(every)
        if _idle(folder, idle_s):
            with locked(folder):
                if _idle(folder, idle_s):
                    _forget(folder)
                    return


def _stop_jvm(folder: Path, jvm: subprocess.Popen[bytes]) -> None:
    with locked(folder):
        _forget(folder)
    if jvm.poll() is None:
        jvm.terminate()
        try:
            jvm.wait(30)
        except subprocess.TimeoutExpired:
            jvm.kill()
    # its Python workers, and anything else left in the group; the keeper's own last act
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _kill_group(os.getpid(), signal.SIGTERM)


def _forget(folder: Path) -> None:
    """Remove ``server.json`` if it is this keeper's (a replacement may have written its own)."""
    server = _read_server(folder)
    if server is not None and server.pid == os.getpid():
        (folder / "server.json").unlink(missing_ok=True)


def _write_state(folder: Path, state: dict[str, Any]) -> None:
    partial = folder / f".server.json.{os.getpid()}"
    partial.write_text(json.dumps(state))
    os.replace(partial, folder / "server.json")


def main(argv: list[str]) -> int:
    """``python -m streamslice.spark.local_server FOLDER``: fork the keeper and return, so
    the keeper is nobody's child (init reaps it) and the starting read is not kept waiting."""
    folder = Path(argv[0])
    if os.fork():
        return 0
    os.setsid()
    # let go of the starter's pipes (it waits for them to close); errors go to keeper.log
    with open(os.devnull, "rb") as null, open(folder / "keeper.log", "ab") as log:
        os.dup2(null.fileno(), 0)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    return keep(folder)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
