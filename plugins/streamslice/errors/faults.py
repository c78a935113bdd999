"""Fault injection for crash tests:
``STREAMSLICE_INJECT_FAULT=point[:split=N][:after=M][:action=kill|kill_task|kill_jvm]``, or
``@FILE``: then the spec is FILE's first line, and a fault that fires removes that line first,
so each line fires once, in order (for tasks that a long-running Airflow scheduler starts,
whose environment a test can set only once).

A no-op unless the variable is set. Points: ``plan`` (after the plan is saved), ``read``
(inside a reader, after M records of split N), ``before_publish``, ``publish_swap`` (the old
partition set aside, the new one not yet in place), ``publish_renamed`` (the new partition
in place, the old one still in the trash), ``publish_copy`` (object stores: once the
old partition is removed, or with ``after=M`` once M files are copied in),
``after_publish`` and ``after_checkpoint``.
The default action raises ``InjectedFault``; ``kill`` sends SIGKILL to every process of this
process's session — the run, its Spark JVM and Spark's Python workers (which sit in a process
group of their own) — as an operator's ``kill -9`` of the whole run would. Tests start the run
in a session of its own (``start_new_session``); never set it in an interactive shell.
``kill_task`` SIGKILLs the process group of the Spark driver: an Airflow task process with its
Spark JVM (the Python workers then exit), leaving the scheduler and the task's supervisor
alive, so Airflow retries the task. ``kill_jvm`` (in a Spark Python worker) SIGKILLs the Spark
JVM alone, as an out-of-memory killer would. Spark executors inherit the environment, so a
test can make a read fail where a real crash would. ``pause`` (``@FILE`` specs only) writes
``FILE.paused`` (this process's id) and waits until the test removes it, at most 15 minutes:
the test then knows where the run is and does what it came for (SIGKILLs the Celery worker
whose task waits on a read that runs on a Spark Connect server, say).
"""
from __future__ import annotations

import os
import signal

from . import InjectedFault


def current() -> str | None:
    """The fault spec of this process (the driver forwards it to Spark readers)."""
    return os.environ.get("STREAMSLICE_INJECT_FAULT")


def check(point: str, split: int | None = None, records: int = 0,
          spec: str | None = None) -> None:
    raw = spec or current()
    if not raw:
        return
    path = raw[1:] if raw.startswith("@") else None
    line = _first_line(path) if path else raw
    point_, *rest = line.split(":")
    opts = dict(o.split("=", 1) for o in rest)
    if point_ != point:
        return
    if "split" in opts and split is not None and int(opts["split"]) != split:
        return
    if records < int(opts.get("after", 0)):
        return
    if path and not _claim(path, line):
        return  # another process fired this one
    action = opts.get("action")
    if action == "pause" and path:
        _pause(f"{path}.paused")
        return
    if action == "kill":
        kill_session()
    if action in ("kill_task", "kill_jvm"):
        jvm = _spark_jvm()
        if action == "kill_task":
            os.killpg(os.getpgid(jvm or os.getpid()), signal.SIGKILL)
        elif jvm:
            os.kill(jvm, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    raise InjectedFault(f"injected fault at {point} (STREAMSLICE_INJECT_FAULT)", split=split)


def _first_line(path: str) -> str:
    try:
        with open(path) as f:
            return next((line.strip() for line in f if line.strip()), "")
    except OSError:
        return ""


def _claim(path: str, line: str) -> bool:
    """Remove ``line`` from the head of the fault file; False if another process did."""
    import fcntl
    with open(path, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        lines = [x.strip() for x in f.read().splitlines() if x.strip()]
        if not lines or lines[0] != line:
            return False
        f.seek(0)
        f.truncate()
        f.write("".join(f"{x}\n" for x in lines[1:]))
        return True


def _pause(marker: str, limit_s: float = 900.0) -> None:
    import time
    with open(marker, "w") as f:
        f.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + limit_s
    while os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.1)


def _spark_jvm() -> int | None:
    """The Spark JVM this process runs under (a Python worker's ancestor), if any."""
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "java":
                    return pid
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None


def kill_session() -> None:
    sid, me = os.getsid(0), os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if os.getsid(int(entry)) == sid:
                os.kill(int(entry), signal.SIGKILL)
        except OSError:  # gone already, or not ours to signal
            continue
    os.kill(me, signal.SIGKILL)
