"""Fault injection for crash tests: ``STREAMSLICE_INJECT_FAULT=point[:split=N][:after=M]``.

A no-op unless the variable is set. Points: ``read`` (inside a reader, after M records of split
N), ``before_publish`` and ``after_publish`` (in the commit step). Spark executors inherit the
environment, so a test can make a read fail where a real crash would.
"""
import os


class InjectedFault(RuntimeError):
    pass


def current():
    """The fault spec of this process (the driver forwards it to Spark readers)."""
    return os.environ.get("STREAMSLICE_INJECT_FAULT")


def _spec(raw=None):
    raw = raw or current()
    if not raw:
        return None
    point, *opts = raw.split(":")
    return point, dict(o.split("=", 1) for o in opts)


def check(point, split=None, records=0, spec=None):
    spec = _spec(spec)
    if not spec or spec[0] != point:
        return
    opts = spec[1]
    if "split" in opts and split is not None and int(opts["split"]) != split:
        return
    if records < int(opts.get("after", 0)):
        return
    where = f"split {split}: " if split is not None else ""
    raise InjectedFault(f"{where}injected fault at {point} (STREAMSLICE_INJECT_FAULT)")
