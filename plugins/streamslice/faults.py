"""Fault injection for crash tests:
``STREAMSLICE_INJECT_FAULT=point[:split=N][:after=M][:action=kill]``.

A no-op unless the variable is set. Points: ``plan`` (after the plan is saved), ``read``
(inside a reader, after M records of split N), ``before_publish``, ``publish_swap`` (the old
partition set aside, the new one not yet in place), ``publish_copy`` (object stores: once the
old partition is removed, or with ``after=M`` once M files are copied in),
``after_publish`` and ``after_checkpoint``.
The default action raises ``InjectedFault``; ``kill`` sends SIGKILL to every process of this
process's session — the run, its Spark JVM and Spark's Python workers (which sit in a process
group of their own) — as an operator's ``kill -9`` of the whole run would. Tests start the run
in a session of its own (``start_new_session``); never set it in an interactive shell. Spark
executors inherit the environment, so a test can make a read fail where a real crash would.
"""
from __future__ import annotations

import os

from .errors import InjectedFault


def current() -> str | None:
    """The fault spec of this process (the driver forwards it to Spark readers)."""
    return os.environ.get("STREAMSLICE_INJECT_FAULT")


def _spec(raw: str | None = None) -> tuple[str, dict[str, str]] | None:
    raw = raw or current()
    if not raw:
        return None
    point, *opts = raw.split(":")
    return point, dict(o.split("=", 1) for o in opts)


def check(point: str, split: int | None = None, records: int = 0,
          spec: str | None = None) -> None:
    parsed = _spec(spec)
    if not parsed or parsed[0] != point:
        return
    opts = parsed[1]
    if "split" in opts and split is not None and int(opts["split"]) != split:
        return
    if records < int(opts.get("after", 0)):
        return
    if opts.get("action") == "kill":
        kill_session()
    raise InjectedFault(f"injected fault at {point} (STREAMSLICE_INJECT_FAULT)", split=split)


def kill_session() -> None:
    import signal
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
